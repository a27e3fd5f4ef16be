"""Does the pilots' progress metric turn back? (numpy only; docs/plan.md, "A metric that turns
back").

Adam's progress form bounds how fast the optimizer's progress clock grows with the batch, as
B^(1 - p) at most under lr ~ B^p (pilot/envelope.py). A held-out metric that drift wears down
is not that clock: where drift per sample does not fall with B as fast as progress does, the
metric reaches a target later and later, and its clock outgrows the bound (the bandit model
under the sqrt rule: docs/plan.md). Such a metric shows it in the pilots' own curves: after its
best, it worsens.

The test. For each run, the least-squares slope of its metric over the last SHARE of its logged
points, as a t statistic (the scatter about the line; points taken as independent), signed so
that a positive t moves away from the target's side (up for `<=`, down for `>=`). Drift wears
down every pilot, so the runs are pooled (Stouffer: z = sum t / sqrt(runs)); the metric turns
back where z > Z. A run still improving, or flat at a plateau, gives z <= 0 or noise about 0.

`--progress-form auto` plans with Adam's form where the metric does not turn back and with the
default forms (no Adam ceiling) where it does."""
import math
from dataclasses import dataclass

import numpy as np

SHARE = 0.5  # the share of a run's logged points its trend is read from (at least MIN_POINTS)
MIN_POINTS = 4
Z = 3.0      # the pooled z above which the metric turns back


def trend_t(samples, values) -> float:
    """The t statistic of the least-squares slope of `values` on `samples` over the last SHARE
    of the points (at least MIN_POINTS); nan where there are fewer, or no scatter to scale by
    (+-inf where the points lie exactly on a sloped line)."""
    s, v = np.asarray(samples, np.float64), np.asarray(values, np.float64)
    ok = np.isfinite(s) & np.isfinite(v)
    s, v = s[ok], v[ok]
    n = max(MIN_POINTS, int(math.ceil(SHARE * s.size)))
    if s.size < n:
        return math.nan
    s, v = s[-n:], v[-n:]
    x = s - s.mean()
    sxx = float(np.sum(x * x))
    if sxx == 0:
        return math.nan
    slope = float(np.sum(x * (v - v.mean()))) / sxx
    sd = math.sqrt(float(np.sum((v - v.mean() - slope * x) ** 2)) / (n - 2))
    if sd == 0:
        return math.nan if slope == 0 else math.copysign(math.inf, slope)
    return slope / (sd / math.sqrt(sxx))


@dataclass(frozen=True)
class Erosion:
    """The pooled test: z, and each run's t (positive: away from the target's side)."""
    z: float
    runs: tuple  # ((run name, t), ...), the runs with a trend

    @property
    def turns_back(self) -> bool:
        return math.isfinite(self.z) and self.z > Z or self.z == math.inf

    def to_json(self) -> dict:
        f = lambda x: x if math.isfinite(x) else None
        return {"z": f(self.z), "threshold": Z, "share": SHARE, "turns_back": self.turns_back,
                "runs": [{"run": r, "t": f(t)} for r, t in self.runs]}


def test(runs, metric: str, op: str) -> Erosion:
    """The pooled trend test over `runs` (each with samples_R, metrics[metric] and name) for a
    progress condition with operator `op` (`<=`/`<`: the metric falls to its target)."""
    away = 1.0 if op in ("<=", "<") else -1.0
    ts = [(r.name, away * trend_t(r.samples_R, r.metrics[metric])) for r in runs]
    ts = [(n, t) for n, t in ts if not math.isnan(t)]
    if not ts:
        return Erosion(math.nan, ())
    z = sum(t for _, t in ts) / math.sqrt(len(ts))
    return Erosion(float(z), tuple(ts))


def line(e: dict, metric: str) -> str:
    """What the printout says of a metric that turns back (`Erosion.to_json`)."""
    worst = sorted(e["runs"], key=lambda r: -(r["t"] if r["t"] is not None else math.inf))
    return (f"{metric} turns back: over the last {e['share']:.0%} of their points the pilots "
            f"move away from the target (pooled z {_num(e['z'])} > {e['threshold']:g}; "
            + ", ".join(f"{r['run']} t {_num(r['t'])}" for r in worst[:3])
            + "): drift wears it down, and its clock can outgrow Adam's bound B^(1 - p); "
            "--progress-form auto plans it with the default forms")


def _num(x) -> str:
    return "inf" if x is None else f"{x:.1f}"


__all__ = ["SHARE", "MIN_POINTS", "Z", "trend_t", "Erosion", "test", "line"]
