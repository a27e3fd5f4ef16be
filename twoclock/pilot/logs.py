"""Pilot runs from the curves a trainer logs: read per-step logs, find both clocks, plan.

A log has one row per logged step of a pilot run: columns `run`, `batch` (responses per rollout
batch), `lr`, `samples` (responses consumed so far) and any metric columns; CSV (a UTF-8 BOM is
fine) or JSON Lines, one object per line. `--col NAME=COLUMN` maps other column names (a W&B
export's `train/num_samples`) onto these. Numpy and the standard library only (no JAX).

Rows and cells (docs/plan.md, "Plan from logged curves"):
- rows may come in any order (exports interleave runs and shuffle steps); each run's rows are
  sorted by samples. Two rows of one run at the same samples are merged when every metric they
  both log agrees (an export that puts evaluation and training on separate rows), and refused
  otherwise: samples must increase within a run (a restarted run logs its steps twice).
- an empty cell (JSON: a missing key or null) means the metric was not logged at that step;
  any other cell of a metric a condition reads must be a finite number.
- batch and lr must be the same on every row of a run: schedules are not pilots.

Clocks: a run's clock is its first logged crossing of the condition, interpolated linearly in
samples between the last logged point that does not meet it and the first that does (the
measured bias against the logging interval is in docs/plan.md). A run that never meets it is
censored at its last logged sample of that metric. Optional smoothing first: `ema:T` (trailing
exponential average with time constant T samples, irregular intervals handled exactly) or
`window:W` (centred moving mean over samples within W/2 either side).
"""
import copy
import csv
from dataclasses import dataclass
import io
import json
import math
import os
import re

import numpy as np

from twoclock.config import require
from twoclock.pilot import plan as pilot, report
from twoclock.pilot.plan import PilotError, PilotRuns

REQUIRED = ("run", "batch", "lr", "samples")
OPTIONAL = ("seconds_per_update",)  # median per run, the step time the plan's throughput uses
_OPS = {">=": np.greater_equal, "<=": np.less_equal, ">": np.greater, "<": np.less}
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COND = re.compile(rf"^\s*([^<>=!\s](?:[^<>=!]*[^<>=!\s])?)\s*(>=|<=|>|<)\s*({_NUM})\s*$")


@dataclass(frozen=True)
class Condition:
    """metric op threshold, e.g. heldout_acc >= 0.7; `flag` is where it came from."""
    metric: str
    op: str
    threshold: float
    flag: str

    @property
    def text(self) -> str:
        return f"{self.metric}{self.op}{self.threshold:g}"

    def met(self, v):
        return _OPS[self.op](v, self.threshold)


def parse_condition(text: str, flag: str) -> Condition:
    """'kl>=0.5' -> Condition; PilotError (one line) for anything else ('kl>>0.5', 'kl=0.5')."""
    m = _COND.match(text)
    if m is None:
        raise PilotError(f"{flag} {text!r}: not a condition; expected METRIC>=X, METRIC<=X, "
                         "METRIC>X or METRIC<X (e.g. 'kl>=0.5')")
    return Condition(m.group(1), m.group(2), float(m.group(3)), flag)


def parse_columns(items) -> dict:
    """['samples=train/num_samples', ...] -> {file column: name}; PilotError when malformed."""
    out = {}
    for item in items or ():
        name, sep, col = item.partition("=")
        name, col = name.strip(), col.strip()
        if not sep or not name or not col:
            raise PilotError(f"--col {item!r}: expected NAME=COLUMN "
                             "(e.g. samples=train/num_samples)")
        if col in out:
            raise PilotError(f"--col {item!r}: column {col!r} is already mapped to {out[col]!r}")
        out[col] = name
    return out


def parse_smooth(text):
    """'ema:2000' / 'window:4000' -> (kind, samples); None for None."""
    if text is None:
        return None
    kind, _, w = text.partition(":")
    try:
        width = float(w)
    except ValueError:
        width = math.nan
    if kind not in ("ema", "window") or not (math.isfinite(width) and width > 0):
        raise PilotError(f"--smooth {text!r}: expected ema:T or window:W with T, W > 0 in samples")
    return kind, width


@dataclass(frozen=True)
class Run:
    """One pilot run's logged rows, sorted by samples; metrics[name]: values (nan: not logged)."""
    name: str
    batch: float
    lr: float
    line_R: np.ndarray     # the file's line number of each row (after merging: the first)
    samples_R: np.ndarray
    metrics: dict
    seconds_per_update: float = math.nan


@dataclass(frozen=True)
class Logs:
    source: str
    header: tuple  # column names after --col mapping
    runs: tuple


def _rows(path: str):
    """(format, header, [(line, {column: raw})]) from a CSV or JSON Lines file."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except OSError as e:
        raise PilotError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise PilotError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    ext = os.path.splitext(path)[1].lower()
    jsonl = ext in (".jsonl", ".ndjson") or (ext != ".csv" and text.lstrip().startswith("{"))
    if jsonl:
        rows, header = [], {}
        for ln, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise PilotError(f"{path} line {ln}: not JSON ({e.msg}, column {e.colno})") \
                    from None
            if not isinstance(obj, dict):
                raise PilotError(f"{path} line {ln}: expected one JSON object per line")
            header.update(dict.fromkeys(obj))
            rows.append((ln, obj))
        return "jsonl", tuple(header), rows
    try:
        table = list(csv.reader(io.StringIO(text)))
    except csv.Error as e:
        raise PilotError(f"{path}: not a readable CSV ({e})") from None
    if not table:
        raise PilotError(f"{path}: empty file (expected a header with {', '.join(REQUIRED)})")
    head = tuple(h.strip() for h in table[0])
    rows = []
    for ln, row in enumerate(table[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(head):
            raise PilotError(f"{path} line {ln}: {len(row)} fields, the header has {len(head)}")
        rows.append((ln, dict(zip(head, row))))
    return "csv", head, rows


def _value(raw, where: str, positive: bool = False, zero_ok: bool = False):
    """A cell as a float; None when empty (not logged); PilotError naming `where` otherwise."""
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    if isinstance(raw, bool):
        v = math.nan
    elif isinstance(raw, (int, float)):
        v = float(raw)
    else:
        try:
            v = float(str(raw).strip())
        except ValueError:
            v = math.nan
    if not math.isfinite(v) or (positive and not (v > 0 or (zero_ok and v == 0))):
        need = ("a finite number >= 0" if zero_ok else "a finite number > 0") if positive \
            else "a finite number (or empty: not logged)"
        raise PilotError(f"{where}: must be {need} (got {raw!r})")
    return v


def read_logs(path: str, metrics=(), columns=None) -> Logs:
    """Read a log file; `metrics` are the columns the conditions read (parsed and checked).

    PilotError, one line naming the line and column, for: a missing run/batch/lr/samples column
    or a missing metric column; an empty or malformed cell; a run whose batch or lr changes; a
    run that logs one sample count twice with different values; a run that never logs a metric.
    """
    fmt, head, rows = _rows(path)
    rename = columns or {}
    for col, name in rename.items():
        if col not in head:
            raise PilotError(f"{path} line 1: --col {name}={col}: no column {col!r} "
                             f"(columns: {', '.join(head)})")
    named = tuple(rename.get(h, h) for h in head)
    for col in REQUIRED:
        if col not in named:
            raise PilotError(f"{path} line 1: missing column {col!r} (columns: "
                             f"{', '.join(named)}); map another with --col {col}=COLUMN")
    for m in metrics:
        if m not in named:
            raise PilotError(f"{path} line 1: no column {m!r} for the condition on it (columns: "
                             f"{', '.join(named)})")
    back = {rename.get(h, h): h for h in head}
    need = tuple(dict.fromkeys(tuple(metrics) + tuple(c for c in OPTIONAL if c in named)))
    if not rows:
        raise PilotError(f"{path}: no rows below the header")
    by_run: dict = {}
    for ln, row in rows:
        where = lambda c: f"{path} line {ln}, column {back[c]}"
        get = lambda c: row.get(back[c])
        raw_run = get("run")
        run = "" if raw_run is None else str(raw_run).strip()
        if run == "":
            raise PilotError(f"{where('run')}: empty run name")
        rec = {"line": ln, "batch": _value(get("batch"), where("batch"), positive=True),
               "lr": _value(get("lr"), where("lr"), positive=True),
               "samples": _value(get("samples"), where("samples"), positive=True, zero_ok=True)}
        for c in ("batch", "lr", "samples"):
            if rec[c] is None:
                raise PilotError(f"{where(c)}: empty (every row needs run, batch, lr, samples)")
        for c in need:
            rec[c] = _value(get(c), where(c))
        first = by_run.setdefault(run, [])
        for c in ("batch", "lr"):
            if first and not math.isclose(rec[c], first[0][c], rel_tol=1e-9):
                raise PilotError(f"{where(c)}: run {run!r} has {c} {rec[c]:g} here and "
                                 f"{first[0][c]:g} at line {first[0]['line']}: schedules are "
                                 "not pilots (one batch and lr per run)")
        first.append(rec)
    runs = []
    for name, recs in by_run.items():
        recs = sorted(recs, key=lambda r: r["samples"])  # stable: ties keep file order
        merged = [dict(recs[0])]
        for r in recs[1:]:
            last = merged[-1]
            if r["samples"] != last["samples"]:
                merged.append(dict(r))
                continue
            for c in need:
                if r[c] is not None and last[c] is not None and r[c] != last[c]:
                    raise PilotError(
                        f"{path} line {r['line']}, column {back['samples']}: samples not "
                        f"increasing within run {name!r}: {r['samples']:g} also at line "
                        f"{last['line']}, with {back[c]} {r[c]:g} there vs {last[c]:g} (a "
                        "restarted run? keep one copy of its steps)")
                if last[c] is None:
                    last[c] = r[c]
        for c in metrics:
            if all(r[c] is None for r in merged):
                raise PilotError(f"{path} line {recs[0]['line']}, column {back[c]}: run "
                                 f"{name!r} never logs {c!r} (every cell of it is empty)")
        spu = [r["seconds_per_update"] for r in merged
               if r.get("seconds_per_update") is not None]
        runs.append(Run(name, recs[0]["batch"], recs[0]["lr"],
                        np.array([r["line"] for r in merged]),
                        np.array([r["samples"] for r in merged], np.float64),
                        {c: np.array([math.nan if r[c] is None else r[c] for r in merged],
                                     np.float64) for c in metrics},
                        float(np.median(spu)) if spu else math.nan))
    return Logs(path, named, tuple(runs))


# ---------------------------------------------------------------------------- clocks

def smooth(s, v, how):
    """v smoothed along samples s; how = None, ('ema', T) or ('window', W)."""
    s, v = np.asarray(s, np.float64), np.asarray(v, np.float64)
    if how is None or v.size == 0:
        return v
    kind, w = how
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


def crossing(s, v, cond: Condition):
    """(samples, index) of the first logged crossing, linear in samples between the point
    before and the first that meets cond; (last sample, None) when no point meets it (censored);
    (s[0], 0) when the first point already does (no crossing was observed)."""
    s, v = np.asarray(s, np.float64), np.asarray(v, np.float64)
    hit = np.flatnonzero(cond.met(v))
    if hit.size == 0:
        return float(s[-1]), None
    i = int(hit[0])
    if i == 0:
        return float(s[0]), 0
    s0, s1, v0, v1 = s[i - 1], s[i], v[i - 1], v[i]
    frac = 1.0 if v1 == v0 else min(max((cond.threshold - v0) / (v1 - v0), 0.0), 1.0)
    return float(s0 + frac * (s1 - s0)), i


@dataclass(frozen=True)
class Clock:
    """One run's clock for one condition: samples, and whether it was observed (else censored)."""
    samples: float
    crossed: bool
    line: int | None  # the row where it was first met
    interval: float | None = None  # samples between the logged points it was interpolated in


def clocks(logs: Logs, cond: Condition, how=None) -> list:
    """The condition's clock in every run; PilotError when a run meets it at its first logged
    point (no crossing seen: the threshold is too easy, or the logging starts too late)."""
    out = []
    for r in logs.runs:
        ok = np.isfinite(r.metrics[cond.metric])
        s, v = r.samples_R[ok], smooth(r.samples_R[ok], r.metrics[cond.metric][ok], how)
        at, i = crossing(s, v, cond)
        if i == 0:
            raise PilotError(f"{logs.source} line {r.line_R[ok][0]}, column {cond.metric}: run "
                             f"{r.name!r} already meets {cond.flag} {cond.text!r} at its first "
                             f"logged point ({v[0]:g} at samples {s[0]:g}): no crossing to time")
        out.append(Clock(at, i is not None, None if i is None else int(r.line_R[ok][i]),
                         None if i is None else float(s[i] - s[i - 1])))
    if not any(c.crossed for c in out):
        up = cond.op in (">=", ">")
        reach, line = max((((v if up else -v), int(ln)) for r in logs.runs
                           for v, ln in zip(r.metrics[cond.metric], r.line_R) if np.isfinite(v)))
        raise PilotError(f"{logs.source} line {line}, column {cond.metric}: no run ever meets "
                         f"{cond.flag} {cond.text!r} (the {'highest' if up else 'lowest'} "
                         f"logged value, {reach if up else -reach:g}, is on this line)")
    return out


# ---------------------------------------------------------------------------- the plan

def _runs(logs, prog, fail, source):
    """PilotRuns for one failure condition: runs that reached the target, failure censored at
    the last logged sample of its metric."""
    keep = [i for i, c in enumerate(prog) if c.crossed]
    take = lambda f: np.array([f(i) for i in keep], np.float64)
    return PilotRuns(take(lambda i: logs.runs[i].batch), take(lambda i: logs.runs[i].lr),
                     take(lambda i: prog[i].samples),
                     take(lambda i: fail[i].samples if fail[i].crossed else math.inf),
                     take(lambda i: fail[i].samples if not fail[i].crossed else math.inf),
                     take(lambda i: logs.runs[i].seconds_per_update),
                     tuple(logs.runs[i].name for i in keep), source=source)


def _inf(v):
    return math.inf if v is None else v


def _thin(s, v, n=400):
    """At most n points of a curve for the JSON (every k-th, the last kept)."""
    k = max(1, math.ceil(len(s) / n))
    idx = sorted(set(range(0, len(s), k)) | {len(s) - 1}) if len(s) else []
    return [float(s[i]) for i in idx], [float(v[i]) for i in idx]


def plan_logs(path: str, progress: str, failures, predict=None, margin: float = 0.1,
              level: float = 0.95, smoothing=None, columns=None) -> dict:
    """Read the log, find the clocks, and plan: pilot.plan once per failure condition (each its
    own fit and row); the recommendation takes, at each batch, the earliest failure clock."""
    require(0 <= margin < 1, "margin", "in [0, 1)", margin)
    require(0 < level < 1, "level", "in (0, 1)", level)
    for b in predict or ():
        require(math.isfinite(b) and b > 0, "--predict", "batches > 0", b)
    if not failures:
        raise PilotError("--failure: give at least one failure condition (e.g. 'kl>=0.5')")
    pc = parse_condition(progress, "--progress")
    fcs = [parse_condition(f, "--failure") for f in failures]
    how = parse_smooth(smoothing)
    logs = read_logs(path, tuple(dict.fromkeys([pc.metric] + [f.metric for f in fcs])),
                     parse_columns(columns))
    prog = clocks(logs, pc, how)
    fails = [clocks(logs, f, how) for f in fcs]
    source = f"{path} (logged curves)"
    outs = [pilot.plan(_runs(logs, prog, fl, source), predict, margin, level) for fl in fails]
    out = copy.deepcopy(outs[0])
    # at every candidate batch the earliest failure clock (measured where runs are, else fitted)
    est = []
    for j, e in enumerate(out["estimates"]):
        k = min(range(len(outs)), key=lambda k: _inf(outs[k]["estimates"][j]["failure"]))
        kf = min(range(len(outs)), key=lambda k: _inf(outs[k]["estimates"][j]["failure_fit"]))
        est.append({**e, "failure": _inf(outs[k]["estimates"][j]["failure"]),
                    "failure_fit": _inf(outs[kf]["estimates"][j]["failure_fit"]),
                    "failure_clock": fcs[k].text})
    rec = pilot.recommend(est, margin, out["recommendation"]["objective"])
    fit_only = pilot.recommend([{**e, "progress": e["progress_fit"], "failure": e["failure_fit"]}
                                for e in est], margin, rec["objective"], schedules=False)
    rec["fit_only_constant"] = fit_only["constant"]
    rec["failure_clocks"] = [f.text for f in fcs]
    out["recommendation"] = rec
    out["estimates"] = [{k: (None if isinstance(v, float) and math.isinf(v) else v)
                         for k, v in e.items()} for e in est]
    for j, p in enumerate(out["predictions"]):
        k = min(range(len(outs)), key=lambda k: _inf(outs[k]["predictions"][j]
                                                     ["failure_samples"]["median"]))
        p["failure_samples"] = outs[k]["predictions"][j]["failure_samples"]
        p["failure_clock"] = fcs[k].text
    last = out["predictions"][-1]["failure_clock"]
    kl = [f.text for f in fcs].index(last)
    out["failure_exponent"] = {**outs[kl]["failure_exponent"], "clock": last}
    out["fit"]["failure"] = outs[kl]["fit"]["failure"]
    out["curves"]["failure_samples"] = outs[kl]["curves"]["failure_samples"]
    out["failures"] = [{
        "condition": f.text, "metric": f.metric, "failure_exponent": o["failure_exponent"],
        "fit": o["fit"]["failure"], "curves": o["curves"]["failure_samples"],
        "predictions": [{"batch": p["batch"], "failure_samples": p["failure_samples"]}
                        for p in o["predictions"]],
        "failed_runs": int(sum(c.crossed for c in fl))} for f, o, fl in zip(fcs, outs, fails)]
    names = [r.name for r, c in zip(logs.runs, prog) if c.crossed]
    for r, name in zip(out["runs"], names):
        i = [x.name for x in logs.runs].index(name)
        r["run"] = name
        r["failures"] = {f.text: (fl[i].samples if fl[i].crossed else None)
                         for f, fl in zip(fcs, fails)}
        got = [v for v in r["failures"].values() if v is not None]
        r["failure_samples"] = min(got) if got else None
    curves = []
    for i, r in enumerate(logs.runs):
        c = {"run": r.name, "batch": r.batch, "lr": r.lr, "last_samples": float(r.samples_R[-1])}
        for cond, cl in [(pc, prog)] + list(zip(fcs, fails)):
            ok = np.isfinite(r.metrics[cond.metric])
            s, v = r.samples_R[ok], smooth(r.samples_R[ok], r.metrics[cond.metric][ok], how)
            ts, tv = _thin(s, v)
            c[cond.text] = {"samples": ts, "values": tv, "clock": cl[i].samples,
                            "crossed": cl[i].crossed, "line": cl[i].line}
        curves.append(c)
    out["logs"] = {
        "path": path, "progress": pc.text, "failures": [f.text for f in fcs],
        "smoothing": None if how is None else {"kind": how[0], "samples": how[1]},
        "interpolation": "linear in samples between the logged points before and after the "
                         "first crossing; runs that never cross are censored at their last "
                         "logged sample",
        "runs": len(logs.runs),
        "progress_censored": [r.name for r, c in zip(logs.runs, prog) if not c.crossed],
        "curves": curves}
    out["logs"]["bracket"] = {
        cond.text: max((c.interval / c.samples for c in cl if c.crossed), default=None)
        for cond, cl in [(pc, prog)] + list(zip(fcs, fails))}
    out["source"] = source
    return out


COARSE = 0.2  # a crossing interpolated over more than this fraction of its clock is flagged


def table(out: dict) -> str:
    """The plan's text (report.table) after a block on the logs and one row per failure clock."""
    lg = out["logs"]
    lvl = round(100 * out["fit"]["level"])
    lines = [f"logs: {lg['path']}: {lg['runs']} runs; progress {lg['progress']}, failure "
             + ", ".join(lg["failures"]) + "; first logged crossing, linear in samples"
             + ("" if lg["smoothing"] is None else
                f", after {lg['smoothing']['kind']} smoothing over {lg['smoothing']['samples']:g}"
                " samples")]
    if lg["progress_censored"]:
        lines.append(f"  {len(lg['progress_censored'])} runs never reached {lg['progress']} "
                     "(left out of the fits): " + ", ".join(lg["progress_censored"]))
    coarse = {c: f for c, f in lg["bracket"].items() if f is not None and f > COARSE}
    if coarse:
        lines.append("  coarse logging: crossings interpolated over up to " + ", ".join(
            f"{100 * f:.0f}% of the clock ({c})" for c, f in coarse.items()) + "; on a loss "
            "falling 20x to its target linear interpolation is ~1% late at 20% and ~6% at 50% "
            "(docs/plan.md): log more often")
    lines.append(report.table(out))
    lines += ["", f"failure clocks, one fit each (samples, {lvl}% CI); the recommendation uses "
              "the earliest at each batch:"]
    for f in out["failures"]:
        fe = f["failure_exponent"]
        q = "no fit" if fe["value"] is None else \
            f"q = {fe['value']:.3g} [{fe['ci'][0]:.3g}, {fe['ci'][1]:.3g}]"
        lines.append(f"  {f['condition']}: {f['failed_runs']} runs crossed; {q}; "
                     + "; ".join(f"B {p['batch']:g}: " + report._ci(p["failure_samples"], "{:.0f}")
                                 if p["failure_samples"]["median"] is not None else
                                 f"B {p['batch']:g}: -" for p in f["predictions"]))
    return "\n".join(lines)


__all__ = ["REQUIRED", "Condition", "parse_condition", "parse_columns", "parse_smooth", "Run",
           "Logs", "read_logs", "smooth", "crossing", "Clock", "clocks", "plan_logs", "table"]
