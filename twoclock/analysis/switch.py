"""The switch planner: the fastest safe way to the target from two constant runs' clocks.

The planner uses the measured clocks of the two constant runs. S samples at B1 spend
S / N_fail(B1) of the failure clock (drift accumulates linearly in samples); the rest of the
run at B2 needs rest(S) samples, which spend rest(S) / N_fail(B2). rest(S) comes from the
*clock-fraction* model, (1 - S / N_prog(B1)) N_prog(B2), or, better, from the measured
progress curves (`curve_remaining`: B2 picks up at the point of its own curve where the loss
equals the B1 loss at the switch). A plan is *safe* when the failure fraction spent at the
target is <= 1 - margin. The planner returns the fastest safe plan (wall-clock: samples /
throughput at each batch) among constant B1, constant B2 and the schedules on a grid of
switch points. In the clock-fraction model time and safety are linear in S, so the chosen
switch sits on the safety boundary: when B2 is faster in wall-clock time but fails first it
is the *earliest* switch that keeps the failure clock ahead of the target (by the margin);
when B1 fails first and B2 buys time (the picture with ratio clipping) it is the *latest*
such switch. No switch is planned when B2 alone reaches the target safely and is faster, or
when B1 alone is faster.
"""
from dataclasses import asdict, dataclass
import math

import numpy as np

from twoclock.config import Schedule, require, require_positive, switch_updates


def seconds_to(samples_S, sched: Schedule, seconds_per_sample) -> np.ndarray:
    """Wall-clock seconds of per-seed sample counts under a schedule (0 stays 0 = censored).

    seconds_per_sample(B) -> seconds per sample at constant batch B (1 / throughput).
    """
    n = np.asarray(samples_S, np.float64)
    s1 = switch_updates(sched.switch, sched.batch1) * sched.batch1
    t = np.minimum(n, s1) * seconds_per_sample(sched.batch1) + \
        np.maximum(n - s1, 0) * seconds_per_sample(sched.batch2)
    return np.where(n > 0, t, 0.0)


def reached_first(prog_S, fail_S) -> np.ndarray:
    """Per seed: the target was reached and strictly before the failure clock fired."""
    p, f = np.asarray(prog_S), np.asarray(fail_S)
    return (p > 0) & ((f == 0) | (p < f))


# ---------------------------------------------------------------------------- planner

@dataclass(frozen=True)
class Clocks:
    """Measured clocks of one constant batch, in samples (math.inf = censored)."""
    batch: float
    n_prog: float
    n_fail: float

    def __post_init__(self):
        require_positive("batch", self.batch)
        for name in ("n_prog", "n_fail"):
            v = getattr(self, name)
            require(isinstance(v, (int, float)) and v > 0 and not math.isnan(v), name,
                    "> 0 samples (math.inf when censored)", v)


@dataclass(frozen=True)
class Option:
    """One way to reach the target, as predicted by the clock-fraction model."""
    kind: str              # constant_small | constant_large | schedule
    switch: float          # samples at B1 before switching (0 = B2 from the start)
    samples: float         # samples to target (inf = never)
    seconds: float         # wall-clock seconds to target (inf = never)
    failure_fraction: float  # failure clock spent when the target is reached (> 1: fails first)
    safe: bool


@dataclass(frozen=True)
class Plan:
    best: Option
    options: tuple         # constant_small, constant_large, schedule (if any)
    safe_switches: tuple   # (lo, hi): safe interval of the switch in samples, or None
    margin: float

    def to_dict(self) -> dict:
        return {"best": asdict(self.best), "options": [asdict(o) for o in self.options],
                "safe_switches": None if self.safe_switches is None else list(self.safe_switches),
                "margin": self.margin}


def _option(kind, S, rest, small: Clocks, large: Clocks, spp1, spp2, margin) -> Option:
    samples = S + rest
    if not math.isfinite(samples):
        return Option(kind, float(S), math.inf, math.inf, math.inf, False)
    g = S / small.n_fail + (0.0 if rest == 0 else rest / large.n_fail)
    seconds = S * spp1 + rest * spp2
    return Option(kind, float(S), float(samples), float(seconds), float(g),
                  g <= 1 - margin + 1e-9)


def fraction_remaining(small: Clocks, large: Clocks):
    """Clock-fraction model: samples still needed at B2 after S samples at B1."""
    def rest(S):
        if math.isinf(small.n_prog):
            return large.n_prog
        f = min(S / small.n_prog, 1.0)
        return 0.0 if f >= 1 else (1 - f) * large.n_prog
    return rest


def curve_remaining(small: Clocks, large: Clocks, curve_small, curve_large, start: float = 1.0):
    """Equal-progress model from measured curves (samples_C, metric_C; metric falls to the
    target): after S samples at B1 the metric is m1(S); B2 needs N_prog(B2) - S2 more, where
    S2 is the first sample at which B2's curve is at or below m1(S). `start`: the metric
    at 0 samples (1.0 for loss / initial loss)."""
    n1, m1 = (np.asarray(v, np.float64) for v in curve_small)
    n2, m2 = (np.asarray(v, np.float64) for v in curve_large)
    run_min2 = np.minimum.accumulate(m2)

    def rest(S):
        if S >= small.n_prog:
            return 0.0
        level = np.interp(S, np.concatenate([[0.0], n1]), np.concatenate([[start], m1]))
        hit = np.nonzero(run_min2 <= level)[0]
        if hit.size == 0:
            return large.n_prog
        j = hit[0]
        # interpolate the crossing between checkpoints j-1 and j (start at 0 samples)
        n_prev, m_prev = (n2[j - 1], run_min2[j - 1]) if j > 0 else (0.0, max(start, level))
        frac = 0.0 if m_prev == run_min2[j] else (m_prev - level) / (m_prev - run_min2[j])
        s2 = n_prev + min(max(frac, 0.0), 1.0) * (n2[j] - n_prev)
        return max(large.n_prog - s2, 0.0)
    return rest


def plan_switch(small: Clocks, large: Clocks, seconds_per_sample, margin: float = 0.1,
                objective: str = "seconds", remaining=None, n_grid: int = 401,
                min_switch: float = 0.0) -> Plan:
    """The fastest safe way to the target: constant B1, constant B2, or B1 -> B2 at a switch.

    seconds_per_sample(B) -> seconds per sample at batch B. margin: the failure clock must
    have at least this fraction left when the target is reached. objective: "seconds"
    (wall-clock) or "samples". remaining(S) -> samples needed at B2 after S samples at B1
    (default: the clock-fraction model; `curve_remaining` uses measured progress curves).
    Switches are searched on a grid of n_grid points in (0, N_prog(B1)), or from min_switch
    on where it is given (a planner's switch after at least one rollout batch of B1).
    """
    require(0 <= margin < 1, "margin", "in [0, 1)", margin)
    require(objective in ("seconds", "samples"), "objective", "seconds or samples", objective)
    require(small.batch < large.batch, "batches", "B1 < B2", (small.batch, large.batch))
    require(isinstance(n_grid, int) and n_grid >= 3, "n_grid", "an integer >= 3", n_grid)
    spp1, spp2 = float(seconds_per_sample(small.batch)), float(seconds_per_sample(large.batch))
    rest = remaining or fraction_remaining(small, large)
    opt_small = _option("constant_small", small.n_prog, 0.0, small, large, spp1, spp2, margin)
    opt_large = _option("constant_large", 0.0, large.n_prog, small, large, spp1, spp2, margin)
    key = (lambda o: o.seconds) if objective == "seconds" else (lambda o: o.samples)
    options = [opt_small, opt_large]
    safe = None
    require(min_switch >= 0, "min_switch", ">= 0", min_switch)
    if math.isfinite(small.n_prog) and min_switch < small.n_prog:
        grid = np.linspace(min_switch, small.n_prog, n_grid)[(1 if min_switch == 0 else 0):-1]
        cand = [_option("schedule", float(S), rest(float(S)), small, large, spp1, spp2, margin)
                for S in grid]
        ok = [o for o in cand if o.safe]
        if ok:
            safe = (min(o.switch for o in ok), max(o.switch for o in ok))
            options.append(min(ok, key=key))
    safe_opts = [o for o in options if o.safe]
    # a schedule must beat both constant runs; with no safe option report the least risky
    best = min(safe_opts, key=key) if safe_opts else min(options, key=lambda o: o.failure_fraction)
    return Plan(best, tuple(options), safe, margin)


__all__ = ["seconds_to", "reached_first", "Clocks", "Option", "Plan", "plan_switch",
           "fraction_remaining", "curve_remaining"]
