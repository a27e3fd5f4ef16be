"""Pilot runs from the curves a trainer logs: read per-step logs, find both clocks, plan.

The pieces: twoclock.pilot.conditions (the flags), .reader (the file), .clocks (the crossings);
this module plans from them.

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
measured bias against the logging interval is in docs/history/plan.md). A run that never meets it is
censored at its last logged sample of that metric. Optional smoothing first: `ema:T` (trailing
exponential average with time constant T samples, irregular intervals handled exactly) or
`window:W` (centred moving mean over samples within W/2 either side) or `quad:N` (each point's
value on the least-squares quadratic through the N logged points centred on it).
"""
from dataclasses import replace
import math

import numpy as np

from twoclock.pilot import (bands, clipping, erosion, evalnoise, floorout, plan as pilot,
                            predict as pp, presets, report, runband, updates)
from twoclock.pilot.clocks import (Clock, bounded, check_reached, clocks, crossing, minority,
                                   smooth)
from twoclock.pilot.conditions import (Condition, parse_columns, parse_condition,
                                       parse_failures, parse_forms, parse_smooth)
from twoclock.pilot.plan import PilotError, PilotRuns
from twoclock.pilot.reader import REQUIRED, Logs, Run, read_logs
from twoclock.pilot.result import LogsPlan, to_json
from twoclock.pilot.rule import anchored, parse_rule


# what a plan with no --failure condition says of itself (plan.json's `progress_only`)
PROGRESS_ONLY = ("progress-only plan: no --failure condition, so no failure clock and no "
                 "margin; every batch counts as safe, and the recommendation is the batch (and "
                 "small-then-large schedule) that reaches the target in the least samples, or "
                 "seconds where step times are logged")


def _brackets(logs, prog, cond) -> np.ndarray:
    """[timed runs, 2]: the logged samples either side of each timed crossing (a first-point
    run's bound), in the order of the fits' rows."""
    out = []
    for r, c in zip(logs.runs, prog):
        if not c.timed:
            continue
        if c.bound is not None:
            out.append(c.bound)
            continue
        s = r.samples_R[np.isfinite(r.metrics[cond.metric])]
        nxt = float(s[min(int(np.searchsorted(s, c.samples, "left")), s.size - 1)])
        out.append((nxt - c.interval, nxt))
    return np.array(out, np.float64).reshape(-1, 2)


def _runs(logs, prog, fail, source, var=None, bracket=None):
    """PilotRuns for one failure condition: runs that reached the target, failure censored at
    the last logged sample of its metric; fail None (a progress-only plan): no run fails and
    none has a length that bounds a failure."""
    keep = [i for i, c in enumerate(prog) if c.timed]
    if fail is None:
        fail = [Clock(math.inf, False, None)] * len(prog)
    take = lambda f: np.array([f(i) for i in keep], np.float64)
    return PilotRuns(take(lambda i: logs.runs[i].batch), take(lambda i: logs.runs[i].lr),
                     take(lambda i: prog[i].samples),
                     take(lambda i: fail[i].samples if fail[i].crossed else math.inf),
                     take(lambda i: fail[i].samples if not fail[i].crossed else math.inf),
                     take(lambda i: logs.runs[i].seconds_per_update),
                     tuple(logs.runs[i].name for i in keep), source=source,
                     updates_R=take(lambda i: logs.runs[i].updates), crossing_var_R=var,
                     bracket_R=bracket, never_B=tuple(r.batch for r, c in zip(logs.runs, prog)
                                                      if not c.crossed))


def _inf(v):
    return math.inf if v is None else v


def _thin(s, v, n=400):
    """At most n points of a curve for the JSON (every k-th, the last kept)."""
    k = max(1, math.ceil(len(s) / n))
    idx = sorted(set(range(0, len(s), k)) | {len(s) - 1}) if len(s) else []
    return [float(s[i]) for i in idx], [float(v[i]) for i in idx]


def _earliest(outs, j: int, table: str, get) -> int:
    """Which failure condition's plan has the earliest `get` in row j of `table`."""
    return min(range(len(outs)), key=lambda k: _inf(get(getattr(outs[k], table)[j])))


def _estimates(outs) -> tuple:
    """The first plan's estimates with, at every candidate batch, the earliest failure clock
    (measured where runs are, else fitted) of all the conditions' plans; and which condition's
    it is at each."""
    est, which = [], []
    for j, e in enumerate(outs[0].estimates):
        k = _earliest(outs, j, "estimates", lambda x: x.failure)
        kf = _earliest(outs, j, "estimates", lambda x: x.failure_fit)
        est.append(replace(e, failure=outs[k].estimates[j].failure,
                           failure_fit=outs[kf].estimates[j].failure_fit))
        which.append(k)
    return est, which


def _text(f):
    """A failure condition's text; None for a progress-only plan's (no condition)."""
    return None if f is None else f.text


def _predictions(outs, fcs) -> list:
    """The first plan's predictions, each with the earliest predicted failure clock (a
    progress-only plan's: none, and no bound on a failure)."""
    out = []
    for j, p in enumerate(outs[0].predictions):
        k = _earliest(outs, j, "predictions", lambda x: x.failure_samples["median"])
        p = replace(p, failure_samples=outs[k].predictions[j].failure_samples)
        if fcs[k] is None:
            p = replace(p, no_failure_before=None)
        out.append({**p.to_json(), "failure_clock": _text(fcs[k])})
    return out


def _with_bands(predictions, pc, critical, estimates, pilot_batches) -> list:
    """Each prediction with its progress band's width factor and, where wider than x2 either
    side, why (pilot.bands); where its median lies inside its first rollout batch, that
    (`first_batch`)."""
    show = pp.shows_k(predictions)
    return [{**p, "band_width": bands.width_json(p["progress_samples"]),
             "band_why": bands.why(p["progress_samples"], p["batch"], pc.text, critical,
                                   estimates, pilot_batches,
                                   pp.label(p["batch"], p.get("updates", 1.0), show)),
             **_first_batch(p, show)} for p in predictions]


def _first_batch(p: dict, show: bool) -> dict:
    """{'first_batch': the line} where the predicted median is below one rollout batch B: the
    form puts the target within the first batch's updates, which a run only starts once it has
    generated all B; {} otherwise."""
    med, b, k = p["progress_samples"]["median"], p["batch"], p.get("updates", 1.0)
    if med is None or med >= b:
        return {}
    return {"first_batch": f"B {pp.label(b, k, show)}: the form puts the target inside the "
                           f"first rollout batch ({med:.4g} of its {b:g} samples, "
                           f"{med * k / b:.2g} of its {k:g} updates); a run generates the whole "
                           f"batch before its first update, so read it as at least {b:g}, and "
                           "the form's 1/lr and m = B / K there as unchecked: run a pilot at "
                           "this batch and K"}


def _recommendation(est, margin: float, objective: str, fcs) -> dict:
    """pilot.recommend on the earliest clocks, and on the fitted curves alone."""
    rec = pilot.recommend(est, margin, objective)
    fit_only = pilot.recommend([replace(e, progress=e.progress_fit, failure=e.failure_fit)
                                for e in est], margin, rec.objective, schedules=False)
    return {**replace(rec, fit_only_constant=fit_only.constant).to_json(),
            "failure_clocks": [f.text for f in fcs if f is not None]}


def _run_rows(rows, logs, prog, fcs, fails) -> list:
    """The plan's rows of runs (those that reached the target) named, with every failure clock
    and the earliest."""
    names = [r.name for r, c in zip(logs.runs, prog) if c.timed]
    at = {r.name: i for i, r in enumerate(logs.runs)}
    out = []
    for r, name in zip(rows, names):
        failures = {f.text: (fl[at[name]].samples if fl[at[name]].crossed else None)
                    for f, fl in zip(fcs, fails)}
        got = [v for v in failures.values() if v is not None]
        out.append({**r.to_json(), "failure_samples": min(got) if got else None, "run": name,
                    "failures": failures, "updates": logs.runs[at[name]].updates})
    return out


def _logs_block(logs, how, pc, prog, fcs, fails) -> dict:
    """What was read: the conditions, the smoothing, each run's (thinned) curves and clocks."""
    conds = [(pc, prog)] + list(zip(fcs, fails))
    curves = []
    for i, r in enumerate(logs.runs):
        c = {"run": r.name, "batch": r.batch, "lr": r.lr, "last_samples": float(r.samples_R[-1])}
        for cond, cl in conds:
            ok = np.isfinite(r.metrics[cond.metric])
            s, v = r.samples_R[ok], smooth(r.samples_R[ok], r.metrics[cond.metric][ok], how)
            ts, tv = _thin(s, v)
            c[cond.text] = {"samples": ts, "values": tv, "clock": cl[i].samples,
                            "crossed": cl[i].crossed, "line": cl[i].line}
        curves.append(c)
    return {
        "path": logs.source, "progress": pc.text, "failures": [f.text for f in fcs],
        "smoothing": None if how is None else {
            "kind": how[0], "samples": None if how[0] == "quad" else how[1],
            "points": how[1] if how[0] == "quad" else None},
        "interpolation": "linear in samples between the logged points before and after the "
                         "first crossing; runs that never cross are censored at their last "
                         "logged sample",
        "runs": len(logs.runs),
        "progress_censored": [r.name for r, c in zip(logs.runs, prog) if not c.crossed],
        "curves": curves,
        "bracket": {cond.text: max((c.interval / c.samples for c in cl if c.timed),
                                   default=None) for cond, cl in conds},
        # runs past the target at their first logged point, only where there are any
        **({} if not any(c.first for c in prog) else {"progress_first_point": [
            {"run": r.name, "batch": r.batch, "bound": [0.0, c.samples]} if c.bound is None
            else {"run": r.name, "batch": r.batch, "bound": list(c.bound), "used": c.samples}
            for r, c in zip(logs.runs, prog) if c.first and not c.minority]})}


def plan_logs(path, progress: str, failures, *settings, **named) -> dict:
    """logs_plan as plan.json's dict (LogsPlan.to_json()): what the command writes."""
    return logs_plan(path, progress, failures, *settings, **named).to_json()


def logs_plan(path, progress: str, failures, predict=None, margin: float = 0.1,
              level: float = 0.95, smoothing=None, columns=None, clip=None,
              clip_bind: float = 0.02, clip_steps: str = "fixed", forms=(),
              progress_form: str | None = None, predict_rule=None, eval_items=None,
              floor_out: float | None = None, run_scatter: float | None = None,
              **reading) -> LogsPlan:
    """Read the log (a path, or a table in memory: reader.read_logs), find the clocks, and
    plan: pilot.plan once per failure condition (each its own fit and row); the recommendation
    takes, at each batch, the earliest failure clock. clip: the logged clipped-share metric,
    whose onset (clip_bind) is predicted; forms: ['CONDITION=FORM', ...] (--form), a failure
    clock's form chosen by the user; progress_form: 'adam' (pilot.plan; the form that reads
    each run's K, so pilots with unequal K are planned); predict_rule: with it, the rule to
    predict under ('P[:LR0@B0]' or (p, lr0, b0); rule.anchored); eval_items: the items an
    evaluation of the progress metric scores (its binomial noise, pilot/evalnoise.py, the
    band's crossing noise where above the residuals'); floor_out: the progress metric's
    optimum, to take Adam's noise floor out of the progress clock (pilot/floorout.py; needs
    progress_form 'adam'); run_scatter: the SD of a run's log clock about its batch's, for
    one run's band (pilot/runband.py; default: measured where a pilot batch has two or more
    timed runs); `reading`: how to read a trainer's own files (preset, batch, lr:
    reader.read_logs). path may also be Logs already read (floorout's shifted curves)."""
    pilot.check_settings(predict, margin, level)
    run_scatter = runband.check_scatter(run_scatter)
    if not (0 < clip_bind < 1):
        raise PilotError(f"--clip-bind: must be in (0, 1), a share of tokens (got {clip_bind:g})")
    if clip_steps not in clipping.STEPS:
        raise PilotError(f"--clip-steps: {' or '.join(clipping.STEPS)} (got {clip_steps!r})")
    pc = parse_condition(progress, "--progress")
    fcs = parse_failures(failures)
    chosen = parse_forms(forms, fcs)
    how = parse_smooth(smoothing)
    logs = path if isinstance(path, Logs) else read_logs(
        path, tuple(dict.fromkeys([pc.metric] + [f.metric for f in fcs]
                                  + ([clip] if clip else []))), parse_columns(columns), **reading)
    prog, few = minority(logs, clocks(logs, pc, how, first_ok=True))
    prog = bounded(logs, prog)
    check_reached(logs, prog, pc)
    if progress_form is not None and progress_form not in LOG_FORMS:
        raise PilotError(f"--progress-form: {' or '.join(LOG_FORMS)} (got {progress_form!r})")
    ero = erosion.test(logs.runs, pc.metric, pc.op)
    asked, progress_form = progress_form, _resolved(progress_form, ero, predict_rule, floor_out)
    if predict_rule is not None and progress_form is None:
        raise PilotError(f"--predict-rule: given with --progress-form adam (got "
                         f"{predict_rule!r})")
    if isinstance(predict_rule, str):
        try:
            parse_rule(predict_rule)
        except ValueError as e:
            raise PilotError(str(e)) from None
    updates.check_mixed([r for r, c in zip(logs.runs, prog) if c.timed],
                        accounted=progress_form is not None)
    items = evalnoise.check_items(eval_items)
    var = None if items is None else evalnoise.crossing_vars(logs, prog, pc, items, how)
    fails = [clocks(logs, f, how, need_one=False) for f in fcs]
    source = f"{logs.source} (logged curves)"
    # no failure condition: one plan of the progress clock alone (PROGRESS_ONLY)
    plans = list(zip(fcs, fails)) or [(None, None)]
    timed = [r for r, c in zip(logs.runs, prog) if c.timed]
    rule = anchored(predict_rule, np.array([r.batch for r in timed], np.float64),
                    np.array([r.lr for r in timed], np.float64))
    if floor_out is not None:
        return floorout.from_logs(
            logs, pc, floor_out, predict, rule, timed, progress_form,
            lambda lg, pts, rl: logs_plan(lg, progress, failures, pts, margin, level, smoothing,
                                          columns, clip, clip_bind, clip_steps, forms,
                                          progress_form, rl, eval_items,
                                          run_scatter=run_scatter))
    brk = _brackets(logs, prog, pc)
    outs = [pilot.plan(_runs(logs, prog, fl, source, var, brk), predict, margin, level,
                       chosen.get(_text(f)), progress_form, rule) for f, fl in plans]
    first, conds = outs[0], [f for f, _ in plans]
    est, which = _estimates(outs)
    predictions = _with_bands(_predictions(outs, conds), pc, first.critical_batch.to_json(),
                              [e.to_json() for e in est],
                              {r.batch for r, c in zip(logs.runs, prog) if c.timed})
    predictions = runband.attach(predictions, [(r.batch, c.samples) for r, c in zip(
        logs.runs, prog) if c.timed and c.bound is None], run_scatter, level)
    # the plan's one failure fit: the condition that fails first at the largest batch
    last = [_text(f) for f in conds].index(predictions[-1]["failure_clock"])
    return LogsPlan(
        clip_onset=None if not clip else clipping.clip_onset(
            logs.runs, prog, clip, clip_bind,
            list(dict.fromkeys(p["batch"] for p in predictions)), first.fit.rule, clip_steps,
            level),  # the clipped share is read per batch: K is not modelled there
        predictions=tuple(predictions),
        critical_batch=first.critical_batch,  # every plan: the same progress
        failure_exponent={**outs[last].failure_exponent.to_json(), "clock": _text(conds[last]),
                          **({} if fcs else {"reading": "no failure condition given"})},
        recommendation=_recommendation(est, margin, first.recommendation.objective, fcs),
        fit=replace(first.fit, failure=outs[last].fit.failure,
                    failure_form=outs[last].fit.failure_form),
        curves=replace(first.curves, failure_samples=outs[last].curves.failure_samples),
        estimates=tuple({**e.to_json(), "failure_clock": _text(conds[k])}
                        for e, k in zip(est, which)),
        runs=tuple(_run_rows(first.runs, logs, prog, fcs, fails)),
        source=source,
        failures=tuple({
            "condition": f.text, "metric": f.metric,
            "failure_exponent": o.failure_exponent.to_json(), "fit": to_json(o.fit.failure),
            "curves": to_json(o.curves.failure_samples),
            "predictions": [{"batch": p.batch, "updates": p.updates,
                             "failure_samples": to_json(p.failure_samples)}
                            for p in o.predictions],
            "form": to_json(o.fit.failure_form),
            "no_failure_before": [{"batch": p.batch, "updates": p.updates,
                                   "samples": p.no_failure_before} for p in o.predictions],
            **_failed(logs.runs, fl)} for f, o, fl in zip(fcs, outs, fails)),
        logs={**_logs_block(logs, how, pc, prog, fcs, fails),
              **({"progress_minority": few} if few else {}), **({} if var is None else {
            "eval_noise": evalnoise.summary(var, to_json(first.fit)["progress"], items)}),
              "erosion": ero.to_json(), **({} if asked != AUTO else {"progress_form": {
                  "asked": AUTO, "chosen": progress_form or "default"}}),
              **({"updates_unknown": note} if (note := _k_unread(logs, reading)) else {})},
        progress_only=None if fcs else PROGRESS_ONLY)


def _k_unread(logs: Logs, reading: dict) -> str | None:
    """The preset's note (presets.K_UNREAD) where its trainer writes no K and nothing gave the
    runs' K: no --updates, no K column; else None."""
    note = presets.K_UNREAD.get(reading.get("preset"))
    return None if note is None or reading.get("updates") or any(
        c in logs.header for c in updates.COLUMNS) else note


AUTO = "auto"  # --progress-form auto: Adam's form, or the default forms where the metric
# turns back (pilot/erosion.py)
LOG_FORMS = pilot.PROGRESS_FORMS + (AUTO,)  # what --progress-form takes with --logs


def _resolved(form, ero, predict_rule, floor_out):
    """The progress form --progress-form `form` plans with: auto -> 'adam', or None (the
    default forms) where the pilots' metric turns back (`ero`), whose clock can outgrow Adam's
    bound; the flags that need Adam's form are refused then, in one line."""
    if form != AUTO:
        return form
    if not ero.turns_back:
        return "adam"
    for flag, v in (("--predict-rule", predict_rule), ("--floor-out", floor_out)):
        if v is not None:
            raise PilotError(f"{flag}: needs Adam's form, and --progress-form auto chose the "
                             f"default forms: the pilots' metric turns back (pooled z "
                             f"{ero.z:.1f} > {erosion.Z:g}; pilot/erosion.py)")
    return None


def _failed(runs, crossings) -> dict:
    """{failed_runs, failed}: how many runs met a failure condition, and the run itself where
    only one did (too few for a form: the printout names it)."""
    failed = [{"run": r.name, "batch": r.batch, "samples": c.samples}
              for r, c in zip(runs, crossings) if c.crossed]
    return {"failed_runs": len(failed), "failed": failed if len(failed) == 1 else []}


COARSE = 0.2  # a crossing interpolated over more than this fraction of its clock is flagged


# what the printout says where every pilot batch has one run (docs/real_runs.md measured it)
ONE_RUN = ("one run a batch: each band is for the median clock over seeds at its batch; a single "
           "run of your own scatters about that median by a seed's noise, which one run a batch "
           "does not measure: --run-scatter S (the SD of a run's log clock, from seeds you ran) "
           "gives one run's band (docs/plan.md, \"One run's band\")")


def one_run_a_batch(runs) -> bool:
    """Whether every batch among the plan's runs has exactly one run."""
    bs = [r["batch"] for r in runs]
    return bool(bs) and len(set(bs)) == len(bs)


def _smoothing_text(sm) -> str:
    """The printout's words for the smoothing (empty: none)."""
    if sm is None:
        return ""
    if sm["kind"] == "quad":
        return f", after a local quadratic through {sm['points']} logged points"
    return f", after {sm['kind']} smoothing over {sm['samples']:g} samples"


def table(out: dict) -> str:
    """The plan's text (report.table) after a block on the logs and one row per failure clock."""
    lvl = round(100 * out["fit"]["level"])
    lines = notes(out)
    rb = [p for p in out["predictions"] if p.get("run_band")]
    lines.append(report.table(out))
    lines += ["  " + p[k] for p in out["predictions"] for k in ("band_why", "first_batch")
              if p.get(k)]
    if rb:
        lines.append("  " + runband.line(rb, lvl))
    return "\n".join(lines + _failure_lines(out, lvl))


def notes(out: dict) -> list:
    """The block on the logs above a plan's table: what was read, the runs left out and why,
    and the notes that qualify every band (progress only, one run a batch, a metric that turns
    back, --floor-out's plateaus)."""
    lg = out["logs"]
    lines = [f"logs: {lg['path']}: {lg['runs']} runs; progress {lg['progress']}, failure "
             + (", ".join(lg["failures"]) or "none") + "; first logged crossing, linear in samples"
             + _smoothing_text(lg["smoothing"])]
    k = updates.summary(out["runs"])
    if k:
        lines.append("  " + k)
    if lg["progress_censored"]:
        n = len(lg["progress_censored"])
        lines.append(f"  {n} run{'s' * (n != 1)} never reached {lg['progress']} "
                     "(left out of the fits): " + ", ".join(lg["progress_censored"]))
    for m in lg.get("progress_minority", []):
        lines.append(f"  B {m['batch']:g}: {m['arrived']} of {m['runs']} runs reached "
                     f"{lg['progress']}, so the batch's median clock lies beyond "
                     f"{m['beyond']:g} samples (the shortest that never did): its arrivals "
                     "are left out of the fits and the recommendation")
    first = [f for f in lg.get("progress_first_point", []) if "used" not in f]
    if first:
        lines.append(f"  {len(first)} runs already met {lg['progress']} at their first logged "
                     "point: the crossing lies in (0, first point], left out of the fits, kept "
                     "as that bound: " + ", ".join(f"{f['run']} (B {f['batch']:g}) in (0, "
                                                   f"{f['bound'][1]:g}]" for f in first))
    used = [f for f in lg.get("progress_first_point", []) if "used" in f]
    if used:
        lines.append(f"  {len(used)} runs already met {lg['progress']} at their first logged "
                     "point, with fewer than 3 batches timed: each crossing bounded below by "
                     "the latest clock at a smaller batch and fitted at the bound's geometric "
                     "middle: " + ", ".join(f"{f['run']} (B {f['batch']:g}) in [{f['bound'][0]:g}"
                                            f", {f['bound'][1]:g}] at {f['used']:.4g}"
                                            for f in used))
    coarse = {c: f for c, f in lg["bracket"].items() if f is not None and f > COARSE}
    if coarse:
        lines.append("  coarse logging: crossings interpolated over up to " + ", ".join(
            f"{100 * f:.0f}% of the clock ({c})" for c, f in coarse.items()) + "; on a loss "
            "falling 20x to its target linear interpolation is ~1% late at 20% and ~6% at 50% "
            "(docs/plan.md): log more often")
    if out.get("progress_only"):
        lines.append("  " + out["progress_only"])
    if lg.get("updates_unknown"):
        lines.append("  " + lg["updates_unknown"])
    if lg.get("erosion", {}).get("turns_back"):
        metric = parse_condition(lg["progress"], "--progress").metric
        lines.append("  " + erosion.line(lg["erosion"], metric)
                     + (" (chosen here)" if "progress_form" in lg else ""))
    rb = [p for p in out["predictions"] if p.get("run_band")]
    if one_run_a_batch(out["runs"]) and not rb:
        lines.append("  " + ONE_RUN)
    fo = out.get("floor_out")
    if fo:
        lines.append(f"  --floor-out {fo['optimum']:g}: plateaus read (last quarter) "
                     + ", ".join(f"{r['run']} {r['plateau']:.4g}" for r in fo["runs"])
                     + "; predicted " + ", ".join(f"B {p['batch']:g} {p['plateau']:.4g}"
                                                  for p in fo["predictions"])
                     + "; " + fo["reading"])
        lines.append("  " + fo["floor_over_target"]["line"])
    return lines


def _failure_lines(out: dict, lvl: int) -> list:
    """The lines below a plan's table: one per failure clock, and the clipping onset."""
    lines = []
    if out["failures"]:
        lines += ["", f"failure clocks, one fit each (samples, {lvl}% CI); the recommendation "
                  "uses the earliest at each batch:"]
    show = pp.shows_k(out["predictions"] + list(out["runs"]))
    at = lambda p: "B " + pp.label(p["batch"], p.get("updates", 1.0), show)
    for f in out["failures"]:
        q = report.failure_words(f["failure_exponent"], report.chosen_form(f.get("form")))
        n = f["failed_runs"]
        lines.append(f"  {f['condition']}: {n} run{'s' * (n != 1)} crossed; {q}; "
                     + "; ".join(f"{at(p)}: " + report.ci(p["failure_samples"], "{:.0f}")
                                 if p["failure_samples"]["median"] is not None else
                                 f"{at(p)}: -" for p in f["predictions"]))
        form = f.get("form")
        if form is not None:
            lines.append(f"    form: {form['why']}")
            lines += report.disagreement_lines(form, f["predictions"])
        elif f["failed_runs"] < 2 and f["no_failure_before"][0]["samples"] is not None:
            head = ("no pilot failed: no failure expected" if not f["failed"] else
                    "one pilot failed ({}, B {:g}, at {:.0f} samples), too few for a form; a run "
                    "like the others is not expected to fail".format(
                        f["failed"][0]["run"], f["failed"][0]["batch"], f["failed"][0]["samples"]))
            lines.append(f"    {head} before " + "; ".join(
                f"{at(b)}: {b['samples']:.0f}" for b in f["no_failure_before"])
                + " samples (the shortest run, or its length / progress clock times the "
                "progress clock, whichever is less, over the runs that did not fail; assumes "
                "drift per sample does not grow with B)")
    co = out.get("clip_onset")
    if co is not None:
        lines += ["", "clipping: " + co["reading"]]
        if co["predictions"]:
            lines.append("  predicted " + co["metric"] + ": " + "; ".join(
                f"B {p['batch']:g}: " + ("-" if p["share"] is None else f"{p['share']:.3g}")
                for p in co["predictions"]) + clipping.reach_note(co))
    return lines


__all__ = ["REQUIRED", "Condition", "parse_condition", "parse_columns", "parse_smooth", "Run",
           "Logs", "read_logs", "smooth", "crossing", "Clock", "clocks", "bounded",
           "minority", "check_reached", "plan_logs", "logs_plan", "notes", "table", "AUTO",
           "LOG_FORMS"]
