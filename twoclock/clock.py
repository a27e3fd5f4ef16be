"""A clock: a condition on a statistic, its first crossing interpolated between the samples
either side of it, and what a clock that never crossed is.

The engine's traces (margins of a simulated run, traced JAX arrays), the planner's logs
(a trainer's logged curves, NumPy) and the damage study's post-run deficit clock (checkpoints,
NumPy) all time a clock with the one `Clock.fraction`: the condition misses at the point before
(value v0) and meets at the next (v1), and the crossing is where the line through them reaches
the level, f = (level - v0) / (v1 - v0) of the way from one to the other (`between`). The
arithmetic is the same for any array type; the caller hands in its `where` (NumPy's by default,
`jnp.where` in a compiled run).

Censoring: a stored clock (a trace's, a study's per-seed clock) is the samples (or updates)
consumed at its crossing, and `NEVER` (0) for a run that did not cross within its budget
(`twoclock.analysis.clocks.censored` reads it as +inf). A crossing read off a sampled curve
(`first_crossing`) keeps the censoring time instead: the last sample, index None.

This module is core (it imports neither JAX nor any other layer), so the engine, the pilot
planner, the studies and the analysis all use it.
"""
from dataclasses import dataclass
import operator
from typing import NamedTuple

import numpy as np

NEVER = 0.0  # a stored clock that never crossed within its budget
OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


@dataclass(frozen=True)
class Clock:
    """stat op level: the clock of a run is the first time its statistic meets the condition
    (the engine's margins: 'margin >= 0'; a log's 'kl >= 0.5')."""
    stat: str
    op: str = ">="
    level: float = 0.0

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}, got {self.op!r}")

    def holds(self, v):
        """Where the condition holds (for NumPy or JAX arrays and Python numbers alike)."""
        return OPS[self.op](v, self.level)

    def fraction(self, v0, v1, where=np.where):
        """How far from the point before (value v0) to the next (v1, which meets the condition)
        the line through them reaches the level: f = (level - v0) / (v1 - v0), elementwise.

        f = 1 (the crossing is the next point itself) where v0 already meets the condition or is
        unknown (NaN), or the line gives no number (an infinite v0); f is clipped to
        [tiny, 1], tiny the smallest normal number of f's float type: the point before missed
        the condition, so the crossing lies after it (f = 0 would read as the point before,
        which at the start of a run is NEVER)."""
        with np.errstate(divide="ignore", invalid="ignore"):  # an infinite v0 or v1
            f = (self.level - v0) / (v1 - v0)
        f = where(self.holds(v0) | (f != f), 1.0, f)
        tiny = np.finfo(getattr(f, "dtype", np.float64)).tiny
        return where(f < tiny, tiny, where(f > 1.0, 1.0, f))


def between(x0, x1, f):
    """x0 + f (x1 - x0): the crossing in samples (or updates) from the fraction f of the step
    from x0 to x1 (`Clock.fraction`)."""
    return x0 + f * (x1 - x0)


class Crossing(NamedTuple):
    """The first crossing of a clock on a sampled curve: samples, and the index of the first
    point that meets the condition. index None: censored (it never crossed), samples is then
    the last sample; index 0: the first point already meets it (no crossing seen), samples
    is the first sample."""
    samples: float
    index: int | None

    @property
    def seen(self) -> bool:
        """A crossing between two samples was seen (not censored, not met at the start)."""
        return self.index is not None and self.index > 0


def first_crossing(s, v, clock: Clock) -> Crossing:
    """The clock's first crossing on the curve v at samples s (NumPy), interpolated linearly
    in samples between the point before and the first that meets the condition."""
    s, v = np.asarray(s, np.float64), np.asarray(v, np.float64)
    hit = np.flatnonzero(clock.holds(v))
    if hit.size == 0:
        return Crossing(float(s[-1]), None)
    i = int(hit[0])
    if i == 0:
        return Crossing(float(s[0]), 0)
    return Crossing(float(between(s[i - 1], s[i], clock.fraction(v[i - 1], v[i]))), i)


def seed_crossings(samples_SxC, x_SxC, clock: Clock, x0: float) -> np.ndarray:
    """[S] stored first crossings (`stored`: NEVER where none within the run) of each seed's
    checkpointed metric x, the curve starting from x0 at 0 samples (every run's start; a
    condition x0 already meets crosses at 0 samples, which is stored as NEVER)."""
    s, x = np.asarray(samples_SxC, np.float64), np.asarray(x_SxC, np.float64)
    return np.array([stored(first_crossing(np.r_[0.0, s[i]], np.r_[x0, x[i]], clock))
                     for i in range(s.shape[0])], np.float64)


def stored(c: Crossing) -> float:
    """A crossing as a stored clock: its samples where one was seen, else NEVER."""
    return c.samples if c.seen else NEVER


def reached(n):
    """Where a stored clock (a number or an array of them) crossed."""
    return np.asarray(n) > NEVER


__all__ = ["NEVER", "OPS", "Clock", "between", "Crossing", "first_crossing", "seed_crossings",
           "stored", "reached"]
