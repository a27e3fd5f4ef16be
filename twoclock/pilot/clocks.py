"""A logged run's clock for a condition: the first logged crossing, linear in samples between
the points either side (`twoclock.clock`, the crossing the engine's clocks use too), after
optional smoothing (rules: twoclock.pilot.logs)."""
from dataclasses import dataclass, replace
import math

import numpy as np

from twoclock.clock import Crossing, first_crossing
from twoclock.pilot.conditions import Condition
from twoclock.pilot.plan import PilotError
from twoclock.pilot.reader import Logs
from twoclock.pilot.rule import infer_rule


def local_quadratic(s, v, n: int) -> np.ndarray:
    """Each point's value on the least-squares quadratic in samples through the n logged points
    centred on it (n odd; Savitzky and Golay's filter, at any spacing): a quadratic curve is
    left as it is, independent noise of variance sd^2 is left with at most 17/35 of it at even
    spacing (n 5). The first and last (n - 1) / 2 points, which have no centred window, are
    kept as logged."""
    h = n // 2
    out = v.copy()
    if v.size < n:
        return out
    idx = np.arange(h, v.size - h)[:, None] + np.arange(-h, h + 1)  # windows, M x n
    x = s[idx] - s[idx[:, h]][:, None]
    x = x / np.abs(x).max(axis=1, keepdims=True)  # scaled to [-1, 1]: a well-posed solve
    X = np.stack([np.ones_like(x), x, x * x], axis=-1)  # M x n x 3
    coef = np.linalg.solve(X.transpose(0, 2, 1) @ X, (X.transpose(0, 2, 1) @ v[idx][..., None]))
    out[h:v.size - h] = coef[:, 0, 0]  # the quadratic at the window's centre (x = 0)
    return out


def smooth(s, v, how):
    """v smoothed along samples s; how = None, ('ema', T), ('window', W) or ('quad', n)."""
    s, v = np.asarray(s, np.float64), np.asarray(v, np.float64)
    if how is None or v.size == 0:
        return v
    kind, w = how
    if kind == "quad":
        return local_quadratic(s, v, int(w))
    if kind == "ema":  # y_i = y_{i-1} + (1 - exp(-(s_i - s_{i-1}) / T)) (v_i - y_{i-1})
        out = np.empty_like(v)
        out[0] = v[0]
        a = 1.0 - np.exp(-np.diff(s) / w)
        for i in range(1, v.size):
            out[i] = out[i - 1] + a[i - 1] * (v[i] - out[i - 1])
        return out
    c = np.concatenate([[0.0], np.cumsum(v)])
    lo = np.searchsorted(s, s - w / 2, side="left")
    hi = np.searchsorted(s, s + w / 2, side="right")
    return (c[hi] - c[lo]) / (hi - lo)


def crossing(s, v, cond: Condition) -> Crossing:
    """(samples, index) of the first logged crossing, linear in samples between the point
    before and the first that meets cond; (last sample, None) when no point meets it (censored);
    (s[0], 0) when the first point already does (no crossing was observed). The one crossing
    of every clock (`twoclock.clock.first_crossing`), on what cond compares (`cond.curve`:
    relative conditions count from the running extreme)."""
    return first_crossing(s, cond.curve(v), cond.clock)


@dataclass(frozen=True)
class Clock:
    """One run's reading of a condition's clock (`twoclock.clock.Clock`): samples (at a
    censored run's last logged point), and whether it was observed (else censored); `first`:
    met at the first logged point, the crossing only known to lie in (0, samples]."""
    samples: float
    crossed: bool
    line: int | None  # the row where it was first met
    interval: float | None = None  # samples between the logged points it was interpolated in
    first: bool = False
    # a first-point run's bound [lower, first point] where the fits use it (pilot.logs, too
    # few batches timed): samples is then the bound's geometric middle
    bound: tuple | None = None
    # it arrived, but at most half the runs of its batch did (`minority`): the batch's median
    # clock lies beyond the runs' lengths, and its arrivals, the lucky fast ones, are left out
    minority: bool = False

    @property
    def timed(self) -> bool:
        """Whether the fits use it: a crossing seen between two logged points, or a
        first-point run's bound given a lower end (`bound`), in a batch most of whose runs
        arrived."""
        return self.crossed and (not self.first or self.bound is not None) and \
            not self.minority


def clocks(logs: Logs, cond: Condition, how=None, need_one: bool = True,
           first_ok: bool = False) -> list:
    """The condition's clock in every run; PilotError when a run meets it at its first logged
    point (no crossing seen: the threshold is too easy, or the logging starts too late) unless
    first_ok (then its clock is interval-censored in (0, first logged sample]: `Clock.first`),
    and with need_one when no run meets it at all (a target never reached; a failure no pilot
    shows is censored in every run instead, and the plan bounds it)."""
    out = []
    for r in logs.runs:
        ok = np.isfinite(r.metrics[cond.metric])
        s, v = r.samples_R[ok], smooth(r.samples_R[ok], r.metrics[cond.metric][ok], how)
        at, i = crossing(s, v, cond)
        if i == 0 and first_ok:
            out.append(Clock(float(s[0]), True, int(r.line_R[ok][0]), float(s[0]), first=True))
            continue
        if i == 0:
            raise PilotError(f"{logs.where(r.line_R[ok][0])}, column {cond.metric}: run "
                             f"{r.name!r} already meets {cond.flag} {cond.text!r} at its first "
                             f"logged point ({v[0]:g} at samples {s[0]:g}): no crossing to time")
        out.append(Clock(at, i is not None, None if i is None else int(r.line_R[ok][i]),
                         None if i is None else float(s[i] - s[i - 1])))
    if need_one and not any(c.crossed for c in out):
        up = cond.op in (">=", ">")
        reach, line = max((((v if up else -v), int(ln)) for r in logs.runs
                           for v, ln in zip(r.metrics[cond.metric], r.line_R) if np.isfinite(v)))
        raise PilotError(f"{logs.where(line)}, column {cond.metric}: no run ever meets "
                         f"{cond.flag} {cond.text!r} (the {'highest' if up else 'lowest'} "
                         f"logged value, {reach if up else -reach:g}, is on this line)")
    return out


def bounded(logs, prog) -> list:
    """The progress clocks with, where fewer than three pilot batches crossed the target
    between logged points, each first-point run (crossing in (0, s1]) at a larger batch than
    some timed run given the bound [L, s1], L the latest timed clock at a smaller batch, and
    used at its geometric middle sqrt(L s1). Samples to a target do not fall with the batch
    under a rule lr ~ B^p with p <= 1/2 (every form: B^(1/2 - p) and steeper), so L is a lower
    end; under a steeper rule, or with enough batches timed, the runs stay left out."""
    timed = {r.batch for r, c in zip(logs.runs, prog) if c.timed}
    if len(timed) >= 3 or not any(c.first for c in prog):
        return prog
    if infer_rule(np.array([r.batch for r in logs.runs], np.float64),
                  np.array([r.lr for r in logs.runs], np.float64))["p"] > 0.5:
        return prog
    out = list(prog)
    for i, (r, c) in enumerate(zip(logs.runs, prog)):
        lower = [d.samples for q, d in zip(logs.runs, prog) if d.timed and q.batch < r.batch]
        if c.first and r.batch not in timed and lower:
            lo = min(max(lower), c.samples)
            out[i] = replace(c, samples=math.sqrt(lo * c.samples), interval=c.samples - lo,
                             bound=(lo, c.samples))
    return out


def minority(logs, prog) -> tuple:
    """(the progress clocks with the arrivals of every batch where at most half the runs
    arrived marked `minority`, one row per such batch: batch, runs, arrived, and the shortest
    never-arrived run's length). The median over a batch's runs, where at most half arrived,
    lies beyond the never-arrived runs' lengths (a run that never arrived within its length L
    takes more than L): the arrivals are the fast tail of the batch's clocks, and fitted or
    recommended as its median they would put the batch early."""
    by = {}
    for r, c in zip(logs.runs, prog):
        by.setdefault(r.batch, []).append(c)
    arrived = {b: sum(c.crossed for c in cs) for b, cs in by.items()}
    rows = [{"batch": b, "runs": len(cs), "arrived": arrived[b],
             "beyond": min(c.samples for c in cs if not c.crossed)}
            for b, cs in sorted(by.items()) if 0 < arrived[b] <= len(cs) / 2]
    few = {row["batch"] for row in rows}
    return [replace(c, minority=True) if c.crossed and r.batch in few else c
            for r, c in zip(logs.runs, prog)], rows


def check_reached(logs, prog, pc) -> None:
    """PilotError (one line) where the target's crossing is seen at fewer than three distinct
    batches (the progress fit's least), naming the batches it was seen at, those past it at
    their first logged point and those that never reached it."""
    at = lambda ok: sorted({r.batch for r, c in zip(logs.runs, prog) if ok(c)})
    timed = at(lambda c: c.timed)
    if len(timed) >= 3:
        return
    first = [b for b in at(lambda c: c.first and not c.minority) if b not in timed]
    never = [b for b in at(lambda c: not c.crossed or c.minority) if b not in timed + first]
    bs = lambda x: "B " + ", ".join(f"{b:g}" for b in x) if x else "none"
    seen = (f"at {len(timed)} pilot batch{'es' * (len(timed) != 1)} ({bs(timed)})"
            if timed else "at no pilot batch")
    raise PilotError(f"--progress {pc.text!r}: crossed between logged points {seen}, the "
                     f"progress fit needs 3; past it at the first logged point: {bs(first)}; "
                     f"never reached: {bs(never)}")


__all__ = ["local_quadratic", "smooth", "crossing", "Clock", "clocks", "bounded", "minority",
           "check_reached"]
