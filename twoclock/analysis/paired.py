"""Paired bootstrap statistics of per-seed clocks: a function of several seed arrays (two
cells of one study, say), each resampled by the same rows of the bootstrap indices, with its
95% CI. NumPy only; the studies' claims (clipping, the policy study) are built from these."""
import warnings

import numpy as np

from twoclock.analysis.clocks import censored


def finite_or_none(v):
    """A finite number as a float; inf or nan (no detectable signal) as None."""
    return float(v) if np.isfinite(v) else None


def med(x):
    """The median over seeds (the last axis)."""
    return np.median(x, axis=-1)


def log_slope(logb, y):
    """Least-squares slope of y[..., k] on logb[k] (every leading index its own fit)."""
    logb = np.asarray(logb, np.float64)
    yc = y - y.mean(-1, keepdims=True)
    xc = logb - logb.mean()
    return (yc * xc).sum(-1) / (xc ** 2).sum()


def paired_ci(fn, *x_S, idx, undefined=np.inf) -> dict:
    """fn of the seed arrays and its bootstrap 95% CI, every array resampled by the same rows
    of idx (paired). A resample where fn is undefined (nan: inf / inf) counts as `undefined`:
    inf (beyond every bound) or nan (then a bound it reaches is undefined). inf and nan are
    reported as None."""
    xs = [np.asarray(x, np.float64) for x in x_S]
    with np.errstate(invalid="ignore", divide="ignore"):
        point = fn(*xs)
        boot = fn(*(x[idx] for x in xs))
    if not np.isnan(undefined):
        boot = np.where(np.isnan(boot), undefined, boot)
    lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
    return {"median": finite_or_none(point), "ci": [finite_or_none(lo), finite_or_none(hi)]}


def exponent_ci(per_batch: dict, clock: str, idx) -> dict:
    """Least-squares slope of log median N against log B over the batches whose median was
    reached, with a paired bootstrap CI over seeds ({median: None} if fewer than two)."""
    bs = sorted(per_batch, key=int)
    x = {b: censored(per_batch[b][clock]) for b in bs}
    use = [b for b in bs if np.isfinite(np.median(x[b]))]
    if len(use) < 2:
        return {"median": None, "ci": [None, None], "batches": [int(b) for b in use]}
    logb = np.log([int(b) for b in use])

    def slope(*xs):
        return log_slope(logb, np.log(np.stack([med(v) for v in xs], axis=-1)))
    return {**paired_ci(slope, *(x[b] for b in use), idx=idx), "batches": [int(b) for b in use]}


def ratio_ci(x_S, y_S, idx, undefined=np.inf) -> dict:
    """med(x) / med(y) of two clocks (runs that never crossed as inf), paired."""
    return paired_ci(lambda a, b: med(a) / med(b), censored(x_S), censored(y_S), idx=idx,
                     undefined=undefined)


def ratio_of_ratios_ci(x1, y1, x0, y0, idx, undefined=np.inf) -> dict:
    """[med(x1) / med(y1)] / [med(x0) / med(y0)] of four clocks, paired: is the ratio (a
    delay, say) larger at one batch than at another?"""
    return paired_ci(lambda a, b, c, d: (med(a) / med(b)) / (med(c) / med(d)),
                     *map(censored, (x1, y1, x0, y0)), idx=idx, undefined=undefined)


def diff_ci(x_S, y_S, idx) -> dict:
    """med(x) - med(y) of two metrics, paired."""
    return paired_ci(lambda a, b: med(a) - med(b), x_S, y_S, idx=idx)


def at_samples(ck: dict, name: str, n: int, j: int = 0) -> np.ndarray:
    """[S] checkpointed metric `name` at the first checkpoint with samples >= n (lr0 index
    j of a cell's checkpoints {name: [L, S, C]})."""
    s, v = np.asarray(ck["samples"][j]), np.asarray(ck[name][j])
    i = np.argmax(s >= n, axis=-1)
    return v[np.arange(v.shape[0]), i]


def nanmed(x) -> np.ndarray:
    """The median over seeds (last axis) of the finite entries; nan where there are none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan resample: nan, as meant
        return np.nanmedian(x, axis=-1)


def rms_slope_ci(per: dict, key: str, idx) -> dict:
    """Slope of log RMS over seeds of per[b][key] on log B, paired bootstrap CI."""
    bs = sorted(per, key=int)
    logb = np.log([int(b) for b in bs])

    def slope(*xs):
        rms = np.stack([np.sqrt(np.mean(np.square(x), axis=-1)) for x in xs], axis=-1)
        return log_slope(logb, np.log(rms))
    return paired_ci(slope, *(per[b][key] for b in bs), idx=idx, undefined=np.nan)
