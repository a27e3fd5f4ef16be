"""One run's band (docs/plan.md, "One run's band"): the progress band is for the median clock
over seeds at a batch; a single run lands about that median with a seed's scatter. Where the
scatter is known, each prediction also carries the band for one run,

    [m exp(-sqrt(a^2 + (q s)^2)), m exp(sqrt(b^2 + (q s)^2))],

a and b the median band's log half-widths below and above its median m, s the SD of a run's
log clock about its batch's (pooled over the pilot batches that hold two or more timed runs,
or --run-scatter), q the band level's two-sided quantile: Student's t at the pooled dof where
s was measured, the normal's where it was given."""
import math

import numpy as np
from scipy import stats

from twoclock.pilot import fit as pf
from twoclock.pilot.plan import PilotError

MAX_SCATTER = 3.0  # a run's log clock, SD: e^3 = x20 either side


def check_scatter(s) -> float | None:
    """--run-scatter: None, or a float in (0, MAX_SCATTER]; PilotError (one line) else."""
    if s is None:
        return None
    s = float(s)
    if not (0 < s <= MAX_SCATTER):
        raise PilotError(f"--run-scatter: the SD of a run's log clock about its batch's, in "
                         f"(0, {MAX_SCATTER:g}] (got {s:g})")
    return s


def pooled_sd(groups) -> tuple:
    """(the pooled SD about each group's mean, its dof: the values less one a group) of groups
    of log clocks; (None, 0) where no group holds two."""
    ss, dof = 0.0, 0
    for x in groups:
        x = np.asarray(x, np.float64)
        if x.size >= 2:
            ss, dof = ss + float(((x - x.mean()) ** 2).sum()), dof + x.size - 1
    return (math.sqrt(ss / dof) if dof else None), dof


def measured(batches, samples) -> dict | None:
    """{scatter, dof, source} from the timed runs' clocks: the pooled SD of log clocks about
    each batch's mean over the batches with two or more runs; None where no batch has two."""
    B, logN = np.asarray(batches, np.float64), np.log(np.asarray(samples, np.float64))
    sd, dof = pooled_sd(logN[B == b] for b in np.unique(B))
    if not dof:
        return None
    return {"scatter": sd, "dof": dof, "source": f"the pilots' seeds ({dof} degrees of freedom)"}


def quantile(level: float, dof: int | None) -> float:
    """The two-sided `level` quantile of Student's t with dof degrees of freedom (None: the
    normal's)."""
    p = 0.5 + level / 2
    return float(stats.norm.ppf(p)) if dof is None else pf.t_quantile(p, dof)


def band(progress: dict, info: dict | None, level: float) -> dict | None:
    """{ci, scatter, dof, source} of one run's band about a {median, ci} progress band; None
    where no scatter is known or the band has no median. An open end stays open."""
    m, (lo, hi) = progress["median"], progress["ci"]
    if info is None or m is None:
        return None
    qs = quantile(level, info["dof"]) * info["scatter"]
    widen = lambda h: math.sqrt(h * h + qs * qs)
    return {"ci": [None if lo is None or not lo > 0 else m * math.exp(-widen(math.log(m / lo))),
                   None if hi is None else m * math.exp(widen(math.log(hi / m)))],
            "scatter": info["scatter"], "dof": info["dof"], "source": info["source"]}


def given(s: float) -> dict:
    """The info of a scatter the user gave (--run-scatter): the normal's quantile."""
    return {"scatter": s, "dof": None, "source": "--run-scatter"}


def attach(predictions, timed, run_scatter, level: float) -> list:
    """Each prediction with its `run_band`: the scatter given (--run-scatter), else measured
    from the timed runs' (batch, clock) pairs (runs used at a first-point bound left out)."""
    info = given(run_scatter) if run_scatter is not None else (
        measured(*zip(*timed)) if timed else None)
    return [{**p, "run_band": band(p["progress_samples"], info, level)} for p in predictions]


def line(predictions, lvl: int) -> str:
    """The printout's line of one run's bands (predictions that carry one)."""
    end = lambda v: "open" if v is None else f"{v:.4g}"
    rb = predictions[0]["run_band"]
    return (f"one run's {lvl}% band (a run's log clock scatters by {rb['scatter']:.3g} about "
            f"its batch's, from {rb['source']}): " + ", ".join(
                f"B {p['batch']:g} [{end(p['run_band']['ci'][0])}, "
                f"{end(p['run_band']['ci'][1])}]" for p in predictions))


__all__ = ["check_scatter", "pooled_sd", "measured", "quantile", "band", "given", "attach", "line"]
