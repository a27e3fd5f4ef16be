"""The two clocks: per-seed first crossings, censored medians, bootstrap CIs, critical batch.

A first crossing is stored as the samples (or updates) consumed when it happened, with 0
for a run that never crossed within its budget. Such a run is *censored*: it enters every
statistic as +inf (it would have crossed later, if ever), is never dropped, and turns a
median or a CI bound into None ("> budget") when it decides it.
"""
import math

import numpy as np

from twoclock.clock import reached
from twoclock.config import DELTA

N_BOOT = 2000


def censored(n_S) -> np.ndarray:
    """float64 copy with never-crossed runs (NEVER, 0: `twoclock.clock`) as +inf."""
    x = np.asarray(n_S, dtype=np.float64)
    return np.where(reached(x), x, np.inf)


def _median_S(x_RxS: np.ndarray) -> np.ndarray:
    # np.median averages the two middle values; an inf among them gives inf, as it should.
    with np.errstate(invalid="ignore"):
        return np.median(x_RxS, axis=-1)


def _none_if_inf(v: float):
    return None if not math.isfinite(v) else float(v)


def bootstrap_indices(n_seeds: int, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """[n_boot, n_seeds] seed resamples; shared across batches so comparisons stay paired."""
    return np.random.default_rng(seed).integers(0, n_seeds, size=(n_boot, n_seeds))


def median_ci(x_S, level: float = 0.95, idx=None) -> dict:
    """{median, ci: [lo, hi]} over seeds with a bootstrap CI; an inf decides None ("> budget")."""
    x = np.asarray(x_S, dtype=np.float64)
    idx = bootstrap_indices(x.size) if idx is None else idx
    lo, hi = np.quantile(_median_S(x[idx]), [(1 - level) / 2, (1 + level) / 2], method="lower")
    return {"median": _none_if_inf(_median_S(x)), "ci": [_none_if_inf(lo), _none_if_inf(hi)]}


def summarize(n_S, level: float = 0.95, idx=None) -> dict:
    """{median, ci: [lo, hi], reached, seeds} of per-seed crossings (0 = never)."""
    x = censored(n_S)
    return {**median_ci(x, level, idx), "reached": int(np.sum(np.isfinite(x))),
            "seeds": int(x.size)}


def _critical_from_medians(batches, med_B: np.ndarray, delta: float):
    """Smallest B with med(B)/med(B_min) >= 1 + delta, interpolated on log B; None if none."""
    if not math.isfinite(med_B[0]):
        return None
    r_B = med_B / med_B[0]
    for j in range(1, len(batches)):
        if r_B[j] >= 1 + delta:
            if not math.isfinite(r_B[j]):
                return float(batches[j])
            lb0, lb1 = math.log(batches[j - 1]), math.log(batches[j])
            frac = (1 + delta - r_B[j - 1]) / (r_B[j] - r_B[j - 1])
            return float(math.exp(lb0 + frac * (lb1 - lb0)))
    return None


def critical_batch(batches, prog_BxS, delta: float = DELTA, level: float = 0.95,
                   idx=None) -> dict:
    """Critical batch of one lr0 with a paired-bootstrap CI.

    Returns {batch, ci: [lo, hi], found}: batch None when no B in range slows progress
    by 1 + delta; `found` is the fraction of bootstrap resamples that found one.
    """
    order = np.argsort(batches)
    batches = [batches[i] for i in order]
    x_BxS = censored(np.asarray(prog_BxS)[order])
    idx = bootstrap_indices(x_BxS.shape[1]) if idx is None else idx
    point = _critical_from_medians(batches, _median_S(x_BxS), delta)
    med_RxB = _median_S(x_BxS[:, idx]).T
    boot = [_critical_from_medians(batches, m, delta) for m in med_RxB]
    got = np.array([b for b in boot if b is not None])
    ci = [None, None]
    if got.size and point is not None:
        ci = [float(v) for v in np.quantile(got, [(1 - level) / 2, (1 + level) / 2])]
    return {"batch": point, "ci": ci, "found": float(got.size / len(boot))}
