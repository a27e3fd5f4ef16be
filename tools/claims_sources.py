"""The committed sources of docs/claims.md: each default run's per-seed clocks, small enough to
keep in the repository (docs/claim_sources/), so every number the claims table states can be
recomputed from the repository without JAX (`python -m twoclock.analysis.claims`).

    python tools/claims_sources.py [--only NAME ...] [--out docs/claim_sources]

Each source is one model's default sweep (`Model.default_sweep`) under one lr rule: per-seed
first crossings in samples (0 = never crossed) for every (batch, lr0, seed), and the model's
theory columns per (batch, lr0). About 1 minute on 2 cores for all of them.
"""
import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

from twoclock import OptimConfig, SweepConfig, run_sweep
from twoclock.atomic import atomic_write
from twoclock.models import MODELS
from twoclock.studies.assemble import assemble

# name: (model, lr rule, the model's config fields changed from its defaults, extra per-seed
# clocks kept). bandit_signal: docs/bandit.md's signal-dominated counter-example.
SOURCES = {
    "quadratic_sqrt": ("quadratic", "sqrt", {}, ()),
    "quadratic_fixed": ("quadratic", "fixed", {}, ()),
    "bandit_sqrt": ("bandit", "sqrt", {}, ("collapse_n",)),
    "bandit_signal": ("bandit", "sqrt", {"drift_noise": 0.01, "drift_threshold": 10.0,
                                         "drift_scale": 0.05}, ("collapse_n",)),
}


def _round(a) -> list:
    """Crossings to 6 significant digits (interpolated samples; exact to far below a seed's
    spread), as nested lists."""
    return np.vectorize(lambda v: float(f"{v:.6g}"))(np.asarray(a, np.float64)).tolist()


def source(name: str) -> dict:
    model_name, rule, changed, extra = SOURCES[name]
    m = MODELS[model_name]
    sweep = SweepConfig(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in m.default_sweep.items()})
    opt, cfg = OptimConfig(lr_rule=rule), dataclasses.replace(m.config(), **changed)
    t0 = time.perf_counter()
    res = run_sweep(m, cfg, opt, sweep, quiet=True)
    runs, _ = assemble(m, cfg, opt, sweep, res)
    theory = {k: [[None] * len(res.lr0s) for _ in res.batches]
              for k in ("progress_samples", "failure_samples")}
    for r in runs:
        i, j = list(res.batches).index(r["batch"]), list(res.lr0s).index(r["lr0"])
        for k in theory:
            theory[k][i][j] = (r.get("theory") or {}).get(k)
    per_seed = {"progress": res.prog_n, "failure": res.fail_n, "progress_updates": res.prog_t}
    per_seed.update({k.removesuffix("_n"): res.extra[k] for k in extra})
    return {
        "source": name, "command": f"python tools/claims_sources.py --only {name}",
        "model": model_name, "lr_rule": rule, "config_changed": changed, "unit": m.unit,
        "batches": [int(b) for b in res.batches], "lr0s": [float(v) for v in res.lr0s],
        "seeds": int(res.prog_n.shape[-1]),
        "per_seed": {k: _round(v) for k, v in per_seed.items()},
        "per_seed_shape": "[batch][lr0][seed]; 0 = never crossed within the budget",
        "theory": theory, "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", choices=sorted(SOURCES), default=sorted(SOURCES))
    p.add_argument("--out", default=os.path.join("docs", "claim_sources"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    for name in a.only:
        out = source(name)
        text = "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}"
                                   for k, v in out.items()) + "\n}\n"  # a key a line
        atomic_write(os.path.join(a.out, f"{name}.json"), lambda f: f.write(text))
        print(f"{name}: {out['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
