"""Tidy, self-describing result files: the JSON schema of every sweep, written atomically.

Schema (one entry per (batch, lr0) in `runs`):
    {batch, lr, lr0, lr_rule, optimizer,
     progress_samples, failure_samples, progress_updates: {median, ci: [lo, hi], reached, seeds},
     diverged: {runs, median_samples}, <model extras>}
plus top-level `critical_batch` [{lr0, batch, ci, found}], `config`, `versions`.
A censored median (fewer than half the seeds crossed) is null with reached < seeds. Any other
non-finite number is null too, listed under top-level `non_finite` {JSON pointer: what it was}.
"""
from dataclasses import asdict, is_dataclass
import json
import platform

import numpy as np

from twoclock.analysis import clocks
from twoclock.config import DELTA
from twoclock.atomic import atomic_write, dumps
from twoclock.version import __version__

# 2: OptimConfig's beta1/beta2 (were b1/b2), ckpt "progress_frac", schedules' batch1/batch2
SCHEMA = 2


def versions() -> dict:
    """The versions a result was computed with, and the JAX backend (imports JAX: call it where
    something was simulated)."""
    import jax
    import matplotlib
    import optax
    return {"twoclock": __version__, "jax": jax.__version__, "optax": optax.__version__,
            "numpy": np.__version__, "matplotlib": matplotlib.__version__,
            "python": platform.python_version(), "backend": jax.default_backend()}


def config_dict(**parts) -> dict:
    """JSON-ready dict of dataclass configs and plain values."""
    out = {}
    for k, v in parts.items():
        out[k] = asdict(v) if is_dataclass(v) else v
    return json.loads(json.dumps(out, default=_jsonable))


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(f"not JSON serialisable: {type(v)}")


def run_entries(res, opt, extra_summaries: tuple = ()) -> list:
    """One entry per (batch, lr0) of a SweepResult, in sweep order."""
    S = res.prog_n.shape[-1]
    idx = clocks.bootstrap_indices(S)
    runs = []
    for i, b in enumerate(res.batches):
        for j, lr0 in enumerate(res.lr0s):
            div = clocks.censored(res.div_n[i, j])
            entry = {
                "batch": int(b), "lr": float(res.lrs_BxL[i, j]), "lr0": float(lr0),
                "lr_rule": opt.lr_rule, "optimizer": opt.name,
                "progress_samples": clocks.summarize(res.prog_n[i, j], idx=idx),
                "failure_samples": clocks.summarize(res.fail_n[i, j], idx=idx),
                "progress_updates": clocks.summarize(res.prog_t[i, j], idx=idx),
                "diverged": {"runs": int(np.isfinite(div).sum()),
                             "median_samples": (float(np.median(div[np.isfinite(div)]))
                                                if np.isfinite(div).any() else None)},
            }
            for name in extra_summaries:  # "collapse_n" -> "collapse_samples"
                entry[name.removesuffix("_n") + "_samples"] = clocks.summarize(
                    res.extra[name][i, j], idx=idx)
            runs.append(entry)
    return runs


def analysis_bytes(sweep) -> int:
    """Host memory of run_entries and critical_batches: the paired bootstrap resamples every
    batch's seeds N_BOOT times (float64), and the medians copy that (x2.5, measured)."""
    return int(2.5 * 8 * len(sweep.batches) * clocks.N_BOOT * sweep.seeds)


def critical_batches(res, delta: float = DELTA) -> list:
    out = []
    S = res.prog_n.shape[-1]
    for j, lr0 in enumerate(res.lr0s):
        cb = clocks.critical_batch(list(res.batches), res.prog_n[:, j], delta=delta,
                                   idx=clocks.bootstrap_indices(S))
        out.append({"lr0": float(lr0), **cb})
    return out


def write_json(path: str, obj: dict) -> None:
    """Write strict JSON atomically, with the umask's mode (twoclock.atomic): every non-finite
    number becomes null and is listed under "non_finite" (twoclock.atomic)."""
    text = dumps(obj)  # before touching the disk: a TypeError leaves the old file
    atomic_write(path, lambda f: f.write(text))


def read_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)
