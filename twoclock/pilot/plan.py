"""From a few pilot runs to a plan: fit the two clocks, recommend a batch.

The runs come from a runs CSV (read and refused in twoclock/pilot/runs.py, whose names this
module re-exports: PilotRuns, PilotError, read_runs) or from logs (twoclock/pilot/logs.py). The
fits are in twoclock/pilot/fit.py; the plan's records in twoclock/pilot/result.py; the method
and its measured errors in docs/plan.md.
"""
from dataclasses import replace
import itertools
import math

import numpy as np

from twoclock.config import DELTA, require
from twoclock.pilot import adam, envelope, fit as pf, forms, predict as pp
from twoclock.pilot.result import (CriticalBatch, Curves, Estimate, Exponent, FailureForm,
                                   FailureReport, Fit, Plan, Prediction, ProgressReport,
                                   Recommendation, Rule, RunRow, Throughput)
from twoclock.analysis.switch import Clocks, plan_switch
from twoclock.pilot.rule import RULE_TOL, infer_rule  # noqa: F401 (RULE_TOL: the plan's API)
from twoclock.pilot.runs import (MAX_BATCH, OPTIONAL, REQUIRED,  # noqa: F401 (the plan's API)
                                 PilotError, PilotRuns, read_runs)

PROGRESS_FORMS = ("adam",)  # chosen by the user; default: saturation or curvature (fit.py)


def check_settings(predict, margin: float, level: float) -> None:
    """The plan's settings, refused in one line: the points to predict (B or B:K, B a count
    of samples as a CSV's batch column, at most MAX_BATCH: pilot/predict.py), the failure
    margin and the bands' level, each named by its flag (as --predict's are)."""
    require(0 <= margin < 1, "--margin", "in [0, 1), the share of the failure clock left at "
            "the target", margin)
    require(0 < level < 1, "--level", "in (0, 1), the bands' confidence level", level)
    pp.parse(predict)


def _measured(x_R, mask_R, later: int = 0):
    """Median of the runs in mask and `later` runs later than any (inf counts as 'later'),
    None when no run in mask, or inf."""
    if not mask_R.any():
        return None
    m = float(np.median(np.r_[x_R[mask_R], np.full(later, math.inf)]))
    return m if math.isfinite(m) else None


def plan(runs: PilotRuns, predict=None, margin: float = 0.1, level: float = 0.95,
         failure_form: str | None = None, progress_form: str | None = None,
         predict_rule: tuple | None = None) -> Plan:
    """Fit the clocks, predict at `predict` (batches B, or B:K: pilot/predict.py) and
    recommend (Plan.to_json() is the plan's JSON). failure_form: the failure clock's form,
    chosen by the user (else from the pilots). progress_form "adam": every run's progress at
    its own lr and K (pilot/adam.py; the failure clock on the on-rule runs, or on every run
    where those span < 3 batches), predicted under predict_rule (p, lr0, b0), by default the
    rule most runs share."""
    found = infer_rule(runs.batch_R, runs.lr_R)
    try:  # the default K and the points asked for, sorted (B, K): pilot/predict.py
        k_default, points = pp.plan_points(predict, runs.updates(), progress_form, runs.source)
    except ValueError as e:
        raise PilotError(str(e)) from None
    on = found["on_rule"]
    pilots_rule = Rule(found["p"], found["lr0"], found["b0"], int((~on).sum()))
    rule = pilots_rule if predict_rule is None else Rule(*predict_rule, pilots_rule.off_rule_runs)
    # the runs a batch's measured clock is read from: those on the rule predicted under (its
    # lr within 1%); under another rule than the pilots', the fit speaks at their batches too
    same = np.allclose(rule.lr(runs.batch_R), pilots_rule.lr(runs.batch_R), rtol=0.01)
    on_pred = on if same else np.isclose(runs.lr_R, rule.lr(runs.batch_R), rtol=0.01)
    use = (on if progress_form is None or np.unique(runs.batch_R[on]).size >= 3
           else np.ones_like(on))
    B, prog, fail = runs.batch_R[use], runs.prog_R[use], runs.fail_R[use]
    distinct = np.unique(B)
    if distinct.size < 3:
        raise PilotError(f"{runs.source}, column batch: needs >= 3 distinct batches on one "
                         f"learning-rate rule (got {distinct.size}: "
                         f"{', '.join(f'{b:g}' for b in distinct)})" +
                         ("; --progress-form adam fits runs at different lrs"
                          if np.unique(runs.batch_R).size >= 3 else ""))
    progress = (forms.progress_clock(B, prog, rule.p) if progress_form is None else
                forms.adam_clock(runs.batch_R, runs.prog_R, runs.lr_R, runs.updates(), rule))
    if runs.crossing_var_R is not None:  # an evaluation's noise, where above the residuals'
        progress = forms.floored(progress, float(np.mean(
            runs.crossing_var_R[use if progress_form is None else slice(None)])))
    try:
        failure = forms.failure_clock(B, fail, runs.censor_R()[use], prog, level, rule.p,
                                      failure_form)
    except forms.FormNotFitted as e:
        raise PilotError(f"--form: {e}") from None
    env = _envelope(progress, runs, use, progress_form, rule.p, level)
    prog_band = lambda bs, keep=False: _enveloped(progress.band(bs, level), bs, env, keep)
    fail_band = lambda bs: failure.band(prog_band(bs), bs, level)
    tmodel, spu = _step_times(runs)
    # the recommendation's candidates: the pilot batches and those asked at the default K
    cand = sorted(set(float(b) for b in distinct) | {b for b, k in points if k == k_default})
    pred = points or [(b, k_default) for b in cand]
    pred_B = [b for b, _ in pred]
    at_k = lambda k: _at_updates(progress, k)

    def band_at_k(k, bs, keep=False):  # each K's band, clipped to that K's envelope
        clock = at_k(k)
        return _enveloped(clock.band(bs, level), bs,
                          _envelope(clock, runs, use, progress_form, rule.p, level), keep)
    prog_pred = pp.per_updates(pred, band_at_k)
    bound = _no_failure_bound(B, prog, fail, runs.censor_R()[use], pp.per_updates(
        pred, lambda k, bs: at_k(k).fit.log_median(bs)))
    predictions = tuple(Prediction(b, k, rule.lr(b), pb, fb, nb, s, _hours(pb, s, b))
                        for (b, k), pb, fb, nb, s in zip(
                            pred, pp.per_updates(pred, lambda k, bs: band_at_k(k, bs, True)),
                            failure.band(prog_pred, pred_B, level), bound, map(spu, pred_B)))
    grid = np.geomspace(min(cand + [float(runs.batch_R.min())]), max(cand), 41).tolist()
    curves = Curves(grid, prog_band(grid),
                    None if failure.chosen is None else fail_band(grid))
    est = _estimates(runs, on_pred, cand, progress.median,
                     lambda b: fail_band([b])[0]["median"], spu)
    rec = recommend(est, margin, objective="seconds" if tmodel is not None else "samples")
    fit_only = recommend([replace(e, progress=e.progress_fit, failure=e.failure_fit)
                          for e in est], margin, rec.objective, schedules=False)
    ffit = failure.power
    exp = ffit.exponent(level) if ffit is not None else {"value": None, "ci": [None, None]}
    return Plan(predictions, CriticalBatch(**progress.fit.critical(level)),
                Exponent(**exp, reading=_drift_reading(exp, int(np.isfinite(fail).sum()))),
                replace(rec, fit_only_constant=fit_only.constant),
                _fit(rule, progress, failure, tmodel, level, margin,
                     None if same else pilots_rule), curves, tuple(est),
                tuple(RunRow(float(b), float(lr), float(p), None if not math.isfinite(f)
                             else float(f), bool(o), s)
                      for b, lr, p, f, o, s in zip(runs.batch_R, runs.lr_R, runs.prog_R,
                                                   runs.fail_R, on, runs.seed_R)),
                runs.source)


def _envelope(progress, runs, use, progress_form, p: float, level: float) -> tuple | None:
    """(b_top, its clock's interval, lo, hi): pilot/envelope.py's bound past the largest pilot
    b_top (Adam: the largest samples per update, at K_pred); None where envelope.ON is off."""
    if not envelope.ON:
        return None
    fit = progress.fit
    if progress_form is None:
        b_top = float(runs.batch_R[use].max())
        top = use & (runs.batch_R == b_top)
        shift = np.zeros(runs.batch_R.size)
        lo, hi = envelope.exponents("default", p, [f.a for f in progress.plausible])
    else:
        m_R = runs.batch_R / runs.updates()
        b_top = float(np.max(m_R)) * fit.k_pred
        top = m_R == m_R.max()  # each brought to the rule's lr and K_pred by the form
        shift = fit.log_median([b_top])[0] - fit.log_at(runs.batch_R, runs.lr_R, runs.updates())
        lo, hi = envelope.exponents("adam", p)
    brackets = (None if runs.bracket_R is None else
                runs.bracket_R[top] * np.exp(shift[top])[:, None])
    return b_top, envelope.anchor(progress, b_top, level, brackets), lo, hi


def _enveloped(bands: list, B, env, keep: bool) -> list:
    """The progress bands clipped to the envelope env (`_envelope`); keep: each band with
    its `envelope` record (None where not applied), as a prediction carries it."""
    B = list(np.atleast_1d(np.asarray(B, np.float64)))
    out, infos = (bands, [None] * len(bands)) if env is None else envelope.apply(bands, B, *env)
    return [{**b, "envelope": i} for b, i in zip(out, infos)] if keep else out


BANDS = ("Student-t sampling error (progress: profile likelihood over the plausible forms; "
         "failure: covariance of the log-log line, or of the mean log ratio to progress), each "
         "widened by its form's leave-one-end-out error growing with the distance in log B")


def _fit(rule: Rule, progress, failure, tmodel, level: float, margin: float,
         pilots_rule: Rule | None = None) -> Fit:
    """What the plan says it fitted: the rule, both clocks' forms and fits, the throughput;
    pilots_rule: the pilots' own, where the predictions are under another."""
    pfit, ffit = progress.fit, failure.power
    return Fit(
        rule, ProgressReport(pfit.form, pfit.a, pfit.m, progress.why, progress.sse,
                             [f.form for f in progress.plausible], math.exp(pfit.log_n_min),
                             pfit.dof, DELTA),
        _form_error(progress.rate),
        None if ffit is None else FailureReport(math.exp(ffit.log_f_ref), ffit.b_ref, ffit.q,
                                                ffit.dof, ffit.censored_active),
        _failure_form(failure.forms),
        None if tmodel is None else Throughput(tmodel.gen_latency, tmodel.critical_gen_batch,
                                               tmodel.knee),
        level, margin, BANDS, pilots_rule)


def _step_times(runs: PilotRuns) -> tuple:
    """(the roofline fitted to the runs' step times or None, spu(b): the measured step time
    where runs measured one at b, else the roofline's, None without either)."""
    has_t = np.isfinite(runs.spu_R)
    if has_t.any() and np.unique(runs.batch_R[has_t]).size < 2:
        raise PilotError(f"{runs.source}, column seconds_per_update: needs step times at >= 2 "
                         "distinct batches to fit the throughput (or none at all)")
    tmodel = pf.fit_step_times(runs.batch_R[has_t], runs.spu_R[has_t]) if has_t.any() else None

    def spu(b):
        m = _measured(runs.spu_R, has_t & (runs.batch_R == b))
        return m if m is not None else (None if tmodel is None else float(tmodel.step_seconds(b)))
    return tmodel, spu


def _hours(band: dict, spu, b: float) -> dict | None:
    """Hours to target from samples to target: samples x step seconds / batch."""
    return None if spu is None else {
        "median": band["median"] * spu / b / 3600,
        "ci": [None if v is None else v * spu / b / 3600 for v in band["ci"]]}


def _drift_reading(exp: dict, n_failed: int) -> str:
    lo, hi = exp["ci"]
    if n_failed == 0:
        return ("no pilot run failed: the failure clock is only known to exceed each run's "
                "length, so the plan cannot rule out a collapse beyond it")
    if exp["value"] is None:
        return "no power law fitted (failures at fewer than two batches)"
    if lo <= 0 <= hi and hi - lo > 1.0:  # cannot tell 0 (Adam, sqrt) from 1/2 (SGD, sqrt)
        return "exponent not pinned down by these runs (CI wider than 1): more failed runs needed"
    if lo <= 0 <= hi:
        return "exponent ~ 0: the rule holds drift per sample still"
    if lo > 0:
        return "exponent > 0: larger batches drift less per sample (fail later)"
    return "exponent < 0: larger batches drift more per sample (fail sooner)"


def _form_error(loo: dict) -> dict:
    return {"curvature": loo["rate"], "left_out": loo["errors"]}


def _failure_form(info: dict) -> FailureForm | None:
    """What the plan says of the failure clock's form: chosen, plausible, why, each form's
    parameters and leave-one-end-out error."""
    if info["chosen"] is None:
        return None
    par = {}
    for name, f in info["forms"].items():
        fit = f["fit"]
        par[name] = {**({"exponent": fit.q} if name == "power" else
                        {"ratio_to_progress": math.exp(fit.log_k), "ratio_slope": fit.slope}
                        if name == "coupled" else
                        {"form": fit.form, "critical_batch": fit.critical(0.95)["batch"]}),
                     "form_error": _form_error(f["loo"])}
    return FailureForm(info["chosen"], info["plausible"], info["chosen_by"], info["why"], par)


def _at_updates(progress, k: float):
    """The progress clock for runs that take k updates per rollout batch: the Adam form's
    prediction at m = B / k (adam.AdamFit.k_pred); the default forms' clock as it is (it plans
    the pilots' K, the only k it is asked at: predict.plan_points)."""
    if not isinstance(progress.fit, adam.AdamFit):
        return progress
    return replace(progress, fit=replace(progress.fit, k_pred=k),
                   plausible=[replace(f, k_pred=k) for f in progress.plausible])


def _no_failure_bound(B, prog, fail, censor, log_n_prog) -> list:
    """Where fewer than two on-rule runs failed (too few for any form): per predicted batch,
    the samples before which a run like those that did not fail is not expected to fail,
    min(shortest such run, rho N_prog(B)), rho the smallest such run's length / progress
    clock: the first holds if drift per sample does not grow with B (exponent >= 0), the
    second if the failure is tied to progress (log_n_prog: its log median at each predicted
    point). None where two or more runs failed, or all."""
    ok = ~np.isfinite(fail)
    if (~ok).sum() >= 2 or not ok.any():
        return [None] * len(log_n_prog)
    rho = float(np.min(censor[ok] / prog[ok]))
    n_prog = np.exp(np.asarray(log_n_prog, np.float64))
    return [float(min(np.min(censor[ok]), rho * n)) for n in n_prog]


def _estimates(runs, on, cand, prog_median, fail_median, spu) -> list[Estimate]:
    """Per candidate batch: the clocks the plan uses. Where on-rule runs exist at a batch their
    median is the estimate (fewest assumptions; the smooth forms miss a sharp knee); the fits
    fill the batches without runs. Both are kept."""
    out = []
    for b in cand:
        at = on & (runs.batch_R == b)
        pf_med = prog_median(b)
        ff_med = fail_median(b)
        ff_med = math.inf if ff_med is None else ff_med
        p_meas = _measured(runs.prog_R, at, runs.never_B.count(b))
        f_meas = _measured(runs.fail_R, at)
        s = spu(b)
        out.append(Estimate(b, p_meas if p_meas is not None else pf_med,
                            f_meas if f_meas is not None else ff_med, pf_med, ff_med,
                            "runs" if p_meas is not None else "fit",
                            None if s is None else s / b))
    return out


def _cost(e: Estimate, objective):
    return e.progress * (e.seconds_per_sample if objective == "seconds" else 1.0)


def recommend(est: list, margin: float, objective: str,
              schedules: bool = True) -> Recommendation:
    """The fastest constant batch that reaches the target with at least `margin` of its
    failure clock left, and the fastest small-then-large schedule (analysis.switch's
    plan_switch), over the estimates `est` (Estimate records)."""
    safe = [e for e in est if e.progress <= (1 - margin) * e.failure]
    const = None
    if safe:
        e = min(safe, key=lambda e: _cost(e, objective))
        const = {"batch": e.batch, "progress_samples": e.progress,
                 "failure_samples": None if math.isinf(e.failure) else e.failure,
                 "cost": _cost(e, objective), "source": e.source}
    unsafe = tuple(e.batch for e in est if e not in safe)
    if not schedules:
        return Recommendation(objective, margin, const, None, unsafe)
    sps = {e.batch: (e.seconds_per_sample if objective == "seconds" else 1.0) for e in est}
    best = None
    for s, l in itertools.combinations(est, 2):
        cl = [Clocks(e.batch, e.progress, e.failure) for e in (s, l)]
        # a switch comes after at least one rollout batch of the smaller batch
        pl = plan_switch(cl[0], cl[1], sps.__getitem__, margin=margin, objective=objective,
                         min_switch=s.batch)
        for o in pl.options:
            cost = o.seconds if objective == "seconds" else o.samples
            if o.kind == "schedule" and o.safe and (best is None or cost < best["cost"]):
                best = {"b1": s.batch, "b2": l.batch, "switch_samples": o.switch,
                        "samples": o.samples, "cost": cost,
                        "failure_fraction": o.failure_fraction}
    if best is not None:
        best["beats_constant"] = const is None or best["cost"] < const["cost"]
    return Recommendation(objective, margin, const, best, unsafe)


__all__ = ["PilotRuns", "PilotError", "read_runs", "infer_rule", "plan", "recommend", "Plan",
           "REQUIRED", "OPTIONAL"]
