"""An evaluation's binomial noise as the progress clock's crossing noise (`--eval-items N`).

A metric in [0, 1] evaluated on N items (an accuracy) has sd sqrt(p (1 - p) / N) at value p.
At a run's crossing, where the logged curve rises (or falls) at dv/ds per sample, that noise
moves the crossing by sd / |dv/ds| samples, so its clock s carries a variance in log samples of

    var_i = (sqrt(p (1 - p) / N) / (|dv/ds| s))^2,

p the metric interpolated at the crossing and dv/ds the slope between the two logged points
around it (the same points the clock is interpolated between). The plan's progress band takes
the mean of var_i over the fitted runs as a per-run variance it uses where it is larger than
the residuals' (fit.ProgressFit.floor: SSE_min + t^2 max(SSE_min / dof, var) bounds the
profile region). Numpy only.
"""
import math

import numpy as np

from twoclock.pilot.clocks import crossing, smooth
from twoclock.pilot.plan import PilotError

FLAG = "--eval-items"


def check_items(items) -> int | None:
    """N as a whole number >= 1, or None; PilotError naming the flag otherwise."""
    if items is None:
        return None
    ok = isinstance(items, (int, np.integer)) and not isinstance(items, bool) and items >= 1
    if not ok and isinstance(items, float) and items.is_integer() and items >= 1:
        return int(items)
    if not ok:
        raise PilotError(f"{FLAG}: a whole number of evaluation items >= 1 (got {items!r})")
    return int(items)


def crossing_sd(s_prev, v_prev, s_next, v_next, at, items: int) -> float:
    """The sd in log samples of a crossing at `at`, interpolated between (s_prev, v_prev) and
    (s_next, v_next), of a metric evaluated on `items` items (inf on a flat segment)."""
    slope = (v_next - v_prev) / (s_next - s_prev)
    if slope == 0:
        return math.inf
    p = v_prev + slope * (at - s_prev)
    return math.sqrt(max(p * (1.0 - p), 0.0) / items) / (abs(slope) * at)


def crossing_vars(logs, prog, cond, items: int, how=None) -> np.ndarray:
    """Each run's crossing variance in log samples (`crossing_sd` squared) for the runs whose
    progress clock the fits use (Clock.timed), in the order of the fits' rows; a first-point
    run used with its bound (clocks.bounded) carries the bound's own spread instead,
    (log(s1 / L) / 2)^2. PilotError where the metric leaves [0, 1]."""
    out = []
    for r, c in zip(logs.runs, prog):
        if not c.timed:
            continue
        ok = np.isfinite(r.metrics[cond.metric])
        raw = r.metrics[cond.metric][ok]
        if raw.size and (raw.min() < 0 or raw.max() > 1):
            bad = raw[(raw < 0) | (raw > 1)][0]
            raise PilotError(f"{FLAG}: {cond.metric} must lie in [0, 1], an evaluation's share "
                             f"of items (run {r.name!r} logs {bad:g})")
        if c.bound is not None:
            out.append((0.5 * math.log(c.bound[1] / c.bound[0])) ** 2)
            continue
        s, v = r.samples_R[ok], smooth(r.samples_R[ok], raw, how)
        at, i = crossing(s, v, cond)
        out.append(crossing_sd(s[i - 1], v[i - 1], s[i], v[i], at, items) ** 2)
    return np.array(out, np.float64)


def summary(var_R, progress: dict, items: int) -> dict:
    """plan.json's logs.eval_noise: the items, the crossing sd (root mean variance), the
    residuals' sd (root of the chosen form's SSE / dof; plan.json's fit.progress) and which
    the band used."""
    crossing_ = math.sqrt(float(np.mean(var_R)))
    sse, dof = progress["sse_log"][progress["form"]], progress["dof"]
    resid = math.sqrt(sse / dof) if dof else None
    return {"items": items, "crossing_sd": crossing_, "residual_sd": resid,
            "used": "crossing" if resid is None or crossing_ > resid else "residual"}


__all__ = ["FLAG", "check_items", "crossing_sd", "crossing_vars", "summary"]
