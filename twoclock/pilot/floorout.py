"""--floor-out OPTIMUM: Adam's noise floor taken out of the progress clock (pilot/adam.py,
floor_levels; docs/plan.md, "Adam's progress form").

Each run's plateau a_r is the mean of the last quarter of its logged progress metric; phi of
a = OPTIMUM + phi lr / sqrt(B / K) is fitted to them (adam.floor_scale), and each predicted
batch's plateau a* follows from its lr and K. A pilot read at a_r + (T - a*) is as far from its
own plateau as the target T is from the predicted run's; shifting each run's metric by
a* - a_r makes that the crossing of T itself, so the plan of the shifted curves, one per
predicted batch, is the floor-aware clock, with every reading of the logs (first-point
intervals, an evaluation's noise, smoothing) unchanged. Only the predictions' progress clocks
move: the failure clocks and the recommendation are the plain plan's.
"""
from dataclasses import replace
import math

import numpy as np

from twoclock.config import scaled_lr
from twoclock.pilot import adam, predict as pp
from twoclock.pilot.plan import PilotError
from twoclock.pilot.rule import infer_rule

TAIL = 0.25   # the share of a run's logged points its plateau is read from
STILL = 3.0   # a tail whose fitted drift exceeds STILL standard errors ...
CLOSE = 0.05  # ... and CLOSE of its plateau's distance from the target is not a plateau
LAW = 0.05    # the floor law's own relative error allowed each run (the hand formula drops a
              # first-order term: within 4% of mean field's plateaus up to lr0 0.03)
# where the quadratic model measured the form (docs/plan.md, "Taking Adam's noise floor out"):
# the smallest pilot's floor over the target, up to which the plain form's 8x error held the
# 15% goal (13 of 13 cells), and the range the floor-aware form was pre-registered over
PLAIN_HELD, CHECKED = 0.127, (0.152, 0.361)
# chi-square 0.999 quantiles, 1 to 10 degrees of freedom (tables); Wilson-Hilferty beyond
CHI2_999 = (10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588)


def plateau(samples, values) -> tuple:
    """(mean, drift, its standard error, the mean's standard error) of the last TAIL of a
    run's logged points: drift the least-squares line's change over the tail, the errors from
    the scatter about that line (points taken as independent). Needs >= 4 points in the tail."""
    s, v = np.asarray(samples, np.float64), np.asarray(values, np.float64)
    n = max(4, int(math.ceil(TAIL * s.size)))
    if s.size < n:
        return float(np.mean(v)), math.nan, math.nan, math.nan
    s, v = s[-n:], v[-n:]
    x = s - s.mean()
    slope = float(np.sum(x * (v - v.mean())) / np.sum(x * x))
    resid = v - v.mean() - slope * x
    sd = math.sqrt(float(np.sum(resid**2)) / (n - 2))
    span = float(s[-1] - s[0])
    return float(np.mean(v)), slope * span, sd / math.sqrt(float(np.sum(x * x))) * span, \
        sd / math.sqrt(n)


def plateaus(logs, metric: str, optimum: float, target: float) -> tuple:
    """(every run's plateau of `metric`, its standard error); PilotError, one line naming the
    run, where its tail is too short or still moving (|drift| above STILL standard errors and
    CLOSE of the plateau's distance from the target: a drift that moves the shift by less is
    kept), where it reached the target and its tail came back past it by more than STILL
    standard errors (a trough of a loss, a peak of a score, as drift makes: `turn`), or where
    the plateaus lie on both sides of the optimum."""
    out, ses = [], []
    for r in logs.runs:
        ok = np.isfinite(r.metrics[metric])
        mean, drift, se, se_mean = plateau(r.samples_R[ok], r.metrics[metric][ok])
        if not math.isfinite(drift):
            raise PilotError(f"--floor-out: run {r.name!r} logs {int(ok.sum())} points of "
                             f"{metric}; its plateau is read from its last quarter, >= 4 points")
        if abs(drift) > max(STILL * se, CLOSE * abs(target - mean)):
            t = abs(drift) / se if se > 0 else math.inf
            raise PilotError(f"--floor-out: run {r.name!r} still moves over its last quarter "
                             f"({metric} by {drift:+.3g}: {t:.1f} standard errors > {STILL:g}, "
                             f"over {CLOSE:g} of its distance from the target): log it to its "
                             "plateau")
        reached = np.any((r.metrics[metric][ok] - target) * (target - optimum) <= 0)
        if (mean - target) * (target - optimum) > 0 and reached and \
                abs(mean - target) > STILL * se_mean:
            raise PilotError(f"--floor-out: run {r.name!r} reached the target {target:g} and came"
                             f" back: its tail sits at {mean:.4g}, past the target by more than "
                             f"{STILL:g} standard errors; {turn(target, optimum)} is not Adam's "
                             "floor")
        out.append(mean)
        ses.append(se_mean)
    a = np.array(out)
    if not (np.all(a > optimum) or np.all(a < optimum)):
        seen = ", ".join(f"{x:.4g}" for x in a)
        raise PilotError(f"--floor-out: the runs' plateaus of {metric} ({seen}) lie on both "
                         f"sides of the optimum {optimum:g}")
    return a, np.array(ses)


def turn(target: float, optimum: float) -> str:
    """What a run that reached the target and came back made of its curve: a peak where the
    metric rises to its optimum (a score: the optimum above the target), else a trough (a
    loss)."""
    return "a peak" if optimum > target else "a trough"


def law(a_R, B_R, lr_R, K_R, optimum: float) -> float:
    """The least-squares slope of log(|a_r - optimum| / lr_r) on log(B_r / K_r): -1/2 where the
    plateaus are Adam's noise floor, nan where all runs share one B / K."""
    x = np.log(adam.per_update(B_R, K_R))
    y = np.log(np.abs(np.asarray(a_R, np.float64) - optimum) / np.asarray(lr_R, np.float64))
    if np.ptp(x) == 0:
        return math.nan
    x = x - x.mean()
    return float(np.sum(x * (y - y.mean())) / np.sum(x * x))


def chi2_999(dof: int) -> float:
    """The chi-square distribution's 0.999 quantile (CHI2_999; Wilson-Hilferty past 10)."""
    if dof <= len(CHI2_999):
        return CHI2_999[dof - 1]
    c = 2.0 / (9.0 * dof)
    return dof * (1.0 - c + 3.090232 * math.sqrt(c)) ** 3


def agree(a_R, se_R, B_R, lr_R, K_R, optimum: float) -> tuple:
    """(chi-square, degrees of freedom) of the runs' phi_r = |a_r - optimum| sqrt(m_r) / lr_r
    about their weighted mean in log, each with variance (se_r / |a_r - optimum|)^2 + LAW^2:
    under Adam's floor law one phi, up to the plateaus' noise and the law's own error."""
    d = np.abs(np.asarray(a_R, np.float64) - optimum)
    y = adam.log_phi(a_R, B_R, lr_R, K_R, optimum)
    w = 1.0 / ((np.asarray(se_R, np.float64) / d) ** 2 + LAW**2)
    mean = float(np.sum(w * y) / np.sum(w))
    return float(np.sum(w * (y - mean) ** 2)), int(y.size - 1)


def over_target(a_R, target: float, optimum: float) -> np.ndarray:
    """Each run's floor over the target: |a_r - optimum| / |target - optimum|, its plateau's
    distance from the optimum over the target's (the knob of docs/plan.md's regime map)."""
    return np.abs(np.asarray(a_R, np.float64) - optimum) / abs(target - optimum)


def regime(ratio: float, run: str) -> str:
    """One line: the largest floor over the target among the runs, placed on the quadratic
    model's measured map (PLAIN_HELD, CHECKED)."""
    lo, hi = CHECKED
    if ratio <= PLAIN_HELD:
        where = (f"at most {PLAIN_HELD:g}, where the plain form's 8x error held 15% on the "
                 "quadratic model")
    elif ratio <= hi:
        where = (f"above {PLAIN_HELD:g} and at most {hi:g}; on the quadratic model the "
                 f"floor-aware form was checked at {lo:g} to {hi:g} (its 8x errors -3.0% to "
                 "-14.2%, the plain form's -3.1% to -32.5%)")
    else:
        where = (f"beyond the floors checked on the quadratic model (up to {hi:g}): the "
                 "floor-aware form's error here is not measured")
    return (f"floor over the target: {ratio:.3g} at {run} (|plateau - optimum| / |target - "
            f"optimum|, the largest of the runs): {where} (docs/plan.md)")


def shifted(logs, metric: str, by_R):
    """The logs with run r's `metric` moved by by_R[r]."""
    runs = tuple(replace(r, metrics={**r.metrics, metric: r.metrics[metric] + d})
                 for r, d in zip(logs.runs, by_R))
    return replace(logs, runs=runs)


def plan(logs, metric: str, target: float, optimum: float, points, lr, run_plan):
    """(the plain plan with each prediction's progress clock floor-aware, the floor_out block).
    points: the predictions' (B, K); lr(B): the predicted rule's lr; run_plan(logs, predict)
    -> LogsPlan (logs.logs_plan with the command's settings)."""
    a_R, se_R = plateaus(logs, metric, optimum, target)
    B_R = np.array([r.batch for r in logs.runs], np.float64)
    lr_R, K_R = [r.lr for r in logs.runs], [r.updates for r in logs.runs]
    slope = law(a_R, B_R, lr_R, K_R, optimum)
    if not slope < 0:
        raise PilotError(f"--floor-out: the runs' plateaus of {metric} do not close on the "
                         f"optimum {optimum:g} as the batch grows (log distance / lr against "
                         f"log(B / K): slope {slope:+.2f}; Adam's noise floor: -0.5); this "
                         "plateau is not the floor --floor-out takes out")
    chi2, dof = agree(a_R, se_R, B_R, lr_R, K_R, optimum)
    if dof >= 1 and chi2 > chi2_999(dof):
        raise PilotError(f"--floor-out: the runs' plateaus of {metric} disagree with Adam's "
                         f"floor law a = {optimum:g} + phi lr / sqrt(B / K) beyond their noise "
                         f"(chi-square {chi2:.1f} on {dof} degrees of freedom > {chi2_999(dof):.1f}"
                         f"); this plateau is not the floor --floor-out takes out")
    phi = adam.floor_scale(a_R, B_R, lr_R, K_R, optimum)
    at = [(b, k, float(adam.floor_at(phi, b, float(lr(b)), k, optimum))) for b, k in points]
    levels = [adam.floor_levels(target, a_R, a, optimum) for _, _, a in at]
    reach = [(b, k) for (b, k, _), lv in zip(at, levels) if lv is not None]
    if not reach:
        raise PilotError(f"--floor-out: every batch asked for has its predicted plateau of "
                         f"{metric} at or past the target {target:g} ("
                         + ", ".join(f"B {b:g}: {a:.4g}" for b, _, a in at) + ")")
    # the plain plan over the batches expected to reach the target (its recommendation's too)
    base = run_plan(logs, [f"{b:g}:{k:g}" for b, k in reach])
    got = {(p["batch"], p["updates"]): p for p in base.predictions}
    rows, block = [], []
    for (b, k, a_pred), lv in zip(at, levels):
        block.append({"batch": b, "updates": k, "plateau": a_pred})
        if lv is None:  # the predicted run's plateau is at or past the target
            p = next(iter(got.values()))
            rows.append({**{f: None for f in p}, "batch": b, "updates": k, "lr": float(lr(b)),
                         **{f: {"median": None, "ci": [None, None]} for f in
                            ("progress_samples", "failure_samples")},
                         "band_why": f"B {b:g}: its predicted plateau, {a_pred:.4g}, is at or "
                                     f"past the target {target:g}: not expected to reach it"})
            continue
        q = run_plan(shifted(logs, metric, a_pred - a_R), [f"{b:g}:{k:g}"]).predictions[0]
        rows.append({**got[(b, k)], **{f: q[f] for f in ("progress_samples", "band_width",
                                                           "band_why", "run_band")}})
    ratio_R = over_target(a_R, target, optimum)
    top = int(np.argmax(ratio_R))
    out = {"optimum": optimum, "phi": phi, "tail": TAIL,
           "runs": [{"run": r.name, "batch": r.batch, "plateau": a, "floor_over_target": f}
                    for r, a, f in zip(logs.runs, a_R.tolist(), ratio_R.tolist())],
           "floor_over_target": {"run": logs.runs[top].name, "value": float(ratio_R[top]),
                                 "plain_held_to": PLAIN_HELD, "checked": list(CHECKED),
                                 "line": regime(float(ratio_R[top]), logs.runs[top].name)},
           "predictions": block,
           "reading": "progress clocks with Adam's noise floor taken out: each run's metric "
                      "moved by the predicted batch's plateau minus its own; the failure "
                      "clocks and the recommendation are the plain plan's, over the batches "
                      "expected to reach the target"}
    return replace(base, predictions=tuple(rows), floor_out=out)


def from_logs(logs, pc, optimum, predict, rule, timed, progress_form, again):
    """logs.logs_plan's plan with Adam's noise floor taken out of its progress clocks: under
    the predicted rule (p, lr0, b0) given, or else the one the plain reading's timed runs share,
    pinned for every shifted plan; again(logs, predict, rule) -> LogsPlan."""
    if progress_form is None:
        raise PilotError(f"--floor-out: given with --progress-form adam (got optimum "
                         f"{optimum:g})")
    if pc.ref is not None or not math.isfinite(optimum):
        raise PilotError(f"--floor-out: a finite optimum and a progress target at a fixed "
                         f"level (got {optimum:g} and {pc.text!r})")
    b_R = np.array([r.batch for r in timed], np.float64)
    found = infer_rule(b_R, np.array([r.lr for r in timed], np.float64))
    p, lr0, b0 = rule or (found["p"], found["lr0"], found["b0"])
    try:
        k_default, points = pp.plan_points(predict, [r.updates for r in timed], progress_form,
                                           logs.source)
    except ValueError as e:
        raise PilotError(str(e)) from None
    points = points or [(float(b), k_default) for b in np.unique(b_R)]
    return plan(logs, pc.metric, pc.threshold, optimum, points,
                lambda b: scaled_lr(lr0, b, b0, p), lambda lg, pts: again(lg, pts, (p, lr0, b0)))


__all__ = ["TAIL", "STILL", "CLOSE", "LAW", "PLAIN_HELD", "CHECKED", "CHI2_999", "plateau",
           "plateaus", "turn", "law", "chi2_999", "agree", "over_target", "regime", "shifted",
           "plan", "from_logs"]
