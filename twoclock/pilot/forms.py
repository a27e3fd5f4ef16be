"""Failure-clock forms chosen from the pilots, and the model-form error every band carries
(numpy only, no JAX; the method and its calibration: docs/plan.md, "Fit forms" and "Form error in the bands").

A failure clock follows one of three forms (the third, knee, is the progress form of its own):
  power:    N_fail(B) = F_ref (B / B_ref)^q, a noise-driven drift (twoclock.pilot.fit);
  coupled:  N_fail(B) = k N_prog(B), a clock of learning: the failure metric is read at a fixed
            point of the progress curve, so the ratio of a run's two clocks does not depend on B.
            log k is the mean of the runs' log(N_fail / N_prog); a censored run enters one-sidedly
            (a hinge, as in the power law). The test of the form is the slope of log(N_fail /
            N_prog) on log B, with its CI: 0 inside it means the pilots do not rule it out.

Form error. A band that carries only the sampling error of a fitted form is overconfident
whenever the form is wrong, and a wrong form errs more the farther it extrapolates. So each
form is refitted without the pilot batch at either end of the range and asked to predict it:
the error per unit of log B over those two predictions (their root mean square) is the form's
rate, and at a batch a distance d (in log B) outside the pilots the band's half-width in log N
grows to hypot(sampling half-width, z sigma), sigma the rate's error there (`sigma`, scaled by
FORM_ERROR_SCALE, its calibration on this project's models), z the normal quantile of the level.
"""
from dataclasses import dataclass, replace
import math
from statistics import NormalDist

import numpy as np

from twoclock.pilot import adam, fit as pf
from twoclock.pilot.fit import exp_or_none

FAILURE_FORMS = ("power", "coupled", "knee")
# a form whose leave-one-end-out curvature is within this of the best form's stays plausible
# (its band is pooled): below ~0.05 per log unit squared they are indistinguishable at pilot
# noise
PLAUSIBLE_RATE = (2.0, 0.05)  # (factor, additive slack)
# A clock that grows with B (its power law's exponent CI above 0: "flat" rejected) while its
# ratio to progress keeps constant (the ratio's slope CI includes 0: "coupled" not rejected) is
# read as coupled, whatever the left-out errors say: three pilot batches 2x apart rarely tell
# the two-parameter forms apart, and the one-parameter form the tests single out is the better
# bet. False: the left-out error alone chooses (docs/plan.md, "Forms of a failure clock").
COUPLED_WHEN_TIED = True
TEST_LEVEL = 0.95  # the level of both tests, whatever the bands' level
# The left-out errors include their own sampling error, so the curvature they imply is too
# large: at the full rate the 95% bands cover 0.983 of the calibration's 120 predictions. This
# scale was the smallest of 0.4-1.0 (steps of 0.1) at which they covered 0.95 with the
# two-parameter progress forms; with the knee's width fitted every model's cover at least 0.95
# from 0.6 on (docs/plan.md, "Form error in the bands").
FORM_ERROR_SCALE = 0.7


class FormNotFitted(ValueError):
    """A form given with --form that the pilots did not fit (the message says which were)."""


def z_quantile(level: float) -> float:
    return NormalDist().inv_cdf((1 + level) / 2)


def distance(B, lo: float, hi: float) -> np.ndarray:
    """How far each B lies outside [lo, hi], in log B (0 inside)."""
    lb = np.log(np.atleast_1d(np.asarray(B, np.float64)))
    return np.maximum(0.0, np.maximum(lb - math.log(hi), math.log(lo) - lb))


def _log_median(x_R):
    """(log of the median, its standard error) over runs (inf: censored, counted as later;
    the error from the finite ones, 1.2533 sd / sqrt(n) for a median); None when the median
    is censored."""
    x_R = np.asarray(x_R, np.float64)
    m = float(np.median(x_R))
    if not (math.isfinite(m) and m > 0):
        return None
    y = np.log(x_R[np.isfinite(x_R)])
    return math.log(m), (1.2533 * float(np.std(y, ddof=1)) / math.sqrt(y.size)
                         if y.size > 1 else 0.0)


def _fit_sd(fit, b: float) -> float | None:
    """The standard error of a fit's log prediction at b: the covariance's for the power law,
    the one-sigma profile interval's half-width over its t quantile for the progress form."""
    if fit.dof < 1:  # as many runs as parameters: no sampling error to speak of
        return None
    if isinstance(fit, pf.FailureFit):
        x = math.log(b / fit.b_ref)
        J = np.array([1.0, x])
        return float(math.sqrt(J @ fit.cov @ J))
    lo, hi = fit.log_interval([b], 0.6827)
    return float((hi[0] - lo[0]) / 2 / pf.t_quantile(0.84135, fit.dof))


def loo_rate(B_R, predict, measure) -> dict:
    """{rate, errors}: refit without each end batch and predict it (predict(mask, b) -> (log N,
    standard error) or None), against measure(b) ((log N, standard error) or None). rate: the
    curvature of log N in log B the errors imply, RMS over both ends (`sigma`); each error's
    `noise` is the sampling error it could be (reported, not subtracted)."""
    u = np.unique(B_R)
    errs, every = [], []
    for b in u[1:-1] if u.size >= 3 else ():  # interior batches: for choosing a form only
        p, m = predict(B_R != b, float(b)), measure(float(b))
        if p is not None and m is not None:
            every.append({"batch": float(b), "error": p[0] - m[0]})
    for b, near, far in ((u[0], u[1], u[-1]), (u[-1], u[-2], u[0])) if u.size >= 3 else ():
        p, m = predict(B_R != b, float(b)), measure(float(b))
        if p is None or m is None:
            continue
        d, r = abs(math.log(b / near)), abs(math.log(far / near))
        errs.append({"batch": float(b), "error": p[0] - m[0],
                     "noise": None if p[1] is None else math.hypot(p[1], m[1]),
                     "distance": d, "range": r})
        every.append({"batch": float(b), "error": p[0] - m[0]})
    # the whole error, not the part sampling leaves unexplained: subtracting the noise made
    # the bands cover 64% at 95% on the bandit's KL, whose bend lies beyond the pilots
    rate = (math.sqrt(np.mean([(2 * e["error"] / (e["distance"] * (e["distance"] + e["range"])))
                               ** 2 for e in errs])) if errs else None)
    return {"rate": rate, "errors": errs, "all": every}


def sigma(loo: dict, B, lo: float, hi: float) -> np.ndarray:
    """The form error in log N at each B: a form that misses a curvature k of log N in log B,
    fitted over a range r and extrapolated a distance d beyond it, errs by about
    k d (d + r) / 2, which is how a left-out end batch (distance d_j, range r_j) measured k;
    times FORM_ERROR_SCALE, its calibration."""
    d = distance(B, lo, hi)
    return FORM_ERROR_SCALE * 0.5 * (loo["rate"] or 0.0) * d * (d + math.log(hi / lo))


def widen(band: list, sigma_B, level: float) -> list:
    """[{median, ci}] with each half-width in log N grown to hypot(half-width, z sigma)."""
    z = z_quantile(level)
    out = []
    for b, s in zip(band, np.atleast_1d(sigma_B)):
        m, (lo, hi) = b["median"], b["ci"]
        if m is None:
            out.append(b)
            continue
        lm, extra = math.log(m), z * float(s)
        lo2 = None if lo is None else exp_or_none(lm - math.hypot(lm - math.log(lo), extra))
        hi2 = None if hi is None else exp_or_none(lm + math.hypot(math.log(hi) - lm, extra))
        out.append({"median": m, "ci": [lo2, hi2]})
    return out


def union(bands: list) -> list:
    """The first band's medians with the union of all the bands' intervals."""
    out = [{"median": b["median"], "ci": list(b["ci"])} for b in bands[0]]
    for other in bands[1:]:
        for o, x in zip(out, other):
            lo, hi = o["ci"]
            o["ci"] = [None if None in (lo, x["ci"][0]) else min(lo, x["ci"][0]),
                       None if None in (hi, x["ci"][1]) else max(hi, x["ci"][1])]
    return out


def progress_rate(B, prog, p: float) -> dict:
    """The progress procedure's own leave-one-end-out rate (the form chosen anew each time)."""
    return loo_rate(B, lambda k, b: _predict(pf.choose_progress(B[k], prog[k], p)[0], b),
                    lambda b: _log_median(prog[B == b]))


def _predict(fit, b: float):
    """(log prediction, its standard error) of a fit at b; None for no fit."""
    return None if fit is None else (float(fit.log_median([b])[0]), _fit_sd(fit, b))


def _coupled_band(cf, prog_band, level):
    """k N_prog's band: the progress band (its form error included) shifted by log k, widened
    by the sampling error of log k."""
    k, hw = math.exp(cf.log_k), cf.log_interval_k(level)
    out = []
    for b in prog_band:
        m, (lo, hi) = b["median"], b["ci"]
        lm = math.log(m)
        out.append({"median": k * m, "ci": [
            None if lo is None else exp_or_none(cf.log_k + lm - math.hypot(lm - math.log(lo),
                                                                           hw)),
            None if hi is None else exp_or_none(cf.log_k + lm + math.hypot(math.log(hi) - lm,
                                                                           hw))]})
    return out


def failure_forms(B, fail, censor, prog, level: float = 0.95, p_rule: float = 0.5,
                  force: str | None = None) -> dict:
    """Both forms of a failure clock on the on-rule runs, each with its leave-one-end-out rate;
    the chosen form (the smaller rate), the plausible ones, and why. No forms where too few
    runs failed. force: the form the user chose (`--form`), alone in the band; FormNotFitted
    where it was not fitted."""
    B, fail = np.asarray(B, np.float64), np.asarray(fail, np.float64)
    censor, prog = np.asarray(censor, np.float64), np.asarray(prog, np.float64)
    measure = lambda b: _log_median(fail[B == b])
    forms = {}
    ff = pf.fit_failure(B, fail, censor)
    if ff is not None:
        def pred_power(k, b):
            return _predict(pf.fit_failure(B[k], fail[k], censor[k]), b)
        forms["power"] = {"fit": ff, "loo": loo_rate(B, pred_power, measure)}
    cf = pf.fit_coupled(B, fail, censor, prog, level)
    if cf is not None:
        def pred_coupled(k, b):  # the ratio's own error: times the measured progress at b
            c, pm = pf.fit_coupled(B[k], fail[k], censor[k], prog[k]), _log_median(prog[B == b])
            return None if c is None or pm is None else (c.log_k + pm[0], math.hypot(c.se, pm[1]))
        forms["coupled"] = {"fit": cf, "loo": loo_rate(B, pred_coupled, measure)}
    if np.isfinite(fail).all():  # a knee of its own (the progress form): no run censored
        pk = p_rule
        forms["knee"] = {"fit": pf.choose_progress(B, fail, pk)[0],
                         "loo": loo_rate(B, lambda k, b: _predict(pf.choose_progress(
                             B[k], fail[k], pk)[0], b), measure)}
    out = {"forms": forms, "range": (float(B.min()), float(B.max())), "chosen": None,
           "plausible": [], "why": "fewer than two failed runs: no form fitted"}
    if not forms:
        return out
    if force is not None:
        if force not in forms:
            raise FormNotFitted(f"form {force!r} was not fitted to this clock (fitted: "
                             f"{', '.join(forms)}; knee only where every pilot failed)")
        return {**out, "chosen": force, "plausible": [force], "chosen_by": "--form",
                "why": _why(forms, force, [force], cf, reason="chosen with --form")}
    rate = {f: v["loo"]["rate"] for f, v in forms.items()}
    known = {f: r for f, r in rate.items() if r is not None}
    # the tests at a fixed level: the form (and the median) must not depend on the band's level
    tied = COUPLED_WHEN_TIED and "coupled" in known and _tied_to_progress(
        forms, cf if level == TEST_LEVEL else pf.fit_coupled(B, fail, censor, prog, TEST_LEVEL))
    if known:
        chosen = ("coupled" if tied else
                  min(known, key=lambda f: (_score(forms[f]), known[f])))
        fac, add = PLAUSIBLE_RATE
        plausible = [f for f in forms if rate[f] is None or rate[f] <= fac * known[chosen] + add]
    else:  # no end batch could be predicted: keep both, prefer the power law
        chosen = "power" if "power" in forms else "coupled"
        plausible = list(forms)
    plausible = [chosen] + [f for f in plausible if f != chosen]
    return {**out, "chosen": chosen, "plausible": plausible,
            "chosen_by": "tests" if tied else "left-out error" if known else "default",
            "why": _why(forms, chosen, plausible, cf, tied)}


def _tied_to_progress(forms: dict, cf: pf.CoupledFit) -> bool:
    """Both one-parameter readings of a failure clock tested on the pilots at TEST_LEVEL:
    "flat" (the power law's exponent 0) and "coupled" (the slope of log(N_fail / N_prog) on
    log B 0, cf.slope at TEST_LEVEL). True when the pilots reject flat (the exponent's CI lies
    above 0: the clock grows with B) and do not reject coupled."""
    if "power" not in forms or cf is None or cf.slope is None:
        return False
    lo, hi = cf.slope["ci"]
    return lo <= 0 <= hi and forms["power"]["fit"].exponent(TEST_LEVEL)["ci"][0] > 0


def _score(form: dict) -> float:
    """The form's choice: the RMS log error of predicting every pilot batch left out, the
    interior ones too (a form that bends wrongly between the pilots misses the middle)."""
    e = [x["error"] for x in form["loo"].get("all", ())]
    return math.sqrt(np.mean(np.square(e))) if e else math.inf


def form_band(info: dict, form: str, prog_band: list, B, level: float) -> list:
    """One form's band at B (prog_band: the progress band there), its form error included."""
    f = info["forms"][form]
    base = (_coupled_band(f["fit"], prog_band, level) if form == "coupled"
            else pf.band(f["fit"], B, level))
    return widen(base, sigma(f["loo"], B, *info["range"]), level)


def failure_band(info: dict, prog_band: list, B, level: float) -> list:
    """The chosen form's medians with the union of the plausible forms' bands, and each
    plausible form's own median (by_form); None medians where no form was fitted."""
    if info["chosen"] is None:
        return [{"median": None, "ci": [None, None]} for _ in np.atleast_1d(B)]
    bands = [form_band(info, f, prog_band, B, level) for f in info["plausible"]]
    return [{**u, "by_form": {f: b[i]["median"] for f, b in zip(info["plausible"], bands)}}
            for i, u in enumerate(union(bands))]


def disagreement(band: dict) -> float | None:
    """max / min of the plausible forms' medians at one batch, less 1 (None for one form)."""
    m = [v for v in band.get("by_form", {}).values() if v is not None]
    return max(m) / min(m) - 1 if len(m) > 1 else None


def _why(forms, chosen, plausible, cf, tied=False, reason=None) -> str:
    rates = ", ".join(f"{f} {'-' if v['loo']['rate'] is None else format(v['loo']['rate'], '.3g')}"
                      for f, v in forms.items())
    reason = reason or ("the clock grows with B and keeps its ratio to progress" if tied
                        else "the smallest error predicting each pilot batch left out")
    s = (f"{chosen}: {reason} (the bend each form misses with an end batch left out, per "
         f"(log B)^2: {rates})")
    if cf is not None and cf.slope is not None:
        lo, hi = cf.slope["ci"]
        s += (f"; log(N_fail/N_prog) vs log B slope {cf.slope['value']:.3g} [{lo:.3g}, {hi:.3g}]"
              + (" includes 0: tied to progress is not ruled out" if lo <= 0 <= hi else
                 " excludes 0: not a fixed multiple of progress"))
    if len(plausible) > 1:
        s += "; the band spans " + " and ".join(plausible)
    return s


@dataclass(frozen=True)
class ProgressClock:
    """The progress clock: its chosen form's fit, the plausible forms (their bands pooled),
    each form's squared log error and why, and the procedure's leave-one-end-out error
    (`rate`) over the pilot batches' range."""
    fit: pf.ProgressFit
    plausible: list
    sse: dict
    why: str
    rate: dict
    range: tuple

    def band(self, B, level: float) -> list:
        """The plausible forms' envelope at B, widened by the procedure's form error."""
        return widen(pf.envelope(self.fit, self.plausible, B, level),
                     sigma(self.rate, B, *self.range), level)

    def median(self, b: float) -> float:
        """The chosen fit's median at b (no form error: it widens the band, not the median)."""
        return pf.band(self.fit, [b], 0.5)[0]["median"]


def floored(clock: ProgressClock, var: float) -> ProgressClock:
    """The clock with every fit's band taking a per-run variance in log N of at least var
    (fit.ProgressFit.floor: an evaluation's crossing noise, pilot/evalnoise.py)."""
    def fl(f):
        if isinstance(f, adam.AdamFit):
            return replace(f, base=fl(f.base))
        return replace(f, floor=var, slices=tuple(replace(x, floor=var) for x in f.slices))
    return replace(clock, fit=fl(clock.fit), plausible=[fl(f) for f in clock.plausible])


def progress_clock(B, prog, p: float) -> ProgressClock:
    """The progress clock of the on-rule runs under lr ~ B^p: its form chosen and fitted on
    the runs as given, its form error on the runs sorted (independent of the rows' order to
    the last bit: the errors are small differences of fits)."""
    fit, plausible, sse, why = pf.choose_progress(B, prog, p)
    o = np.lexsort((prog, B))
    return ProgressClock(fit, plausible, sse, why, progress_rate(B[o], prog[o], p),
                         (float(B.min()), float(B.max())))


def adam_clock(B, prog, lr, K, rule) -> ProgressClock:
    """The progress clock in Adam's form (pilot/adam.py): every run at its own lr and K updates
    per batch, predictions under `rule` (p, lr0, b0; one update per batch, another K through
    adam.AdamFit.k_pred: plan._at_updates). Its form error:
    each end batch left out and predicted at its runs' own lr and K."""
    B, prog, lr, K = (np.asarray(x, np.float64) for x in (B, prog, lr, K))
    o = np.lexsort((prog, K, lr, B))
    B, prog, lr, K = B[o], prog[o], lr[o], K[o]
    fit_ = lambda k, sharp: adam.fit_adam(B[k], prog[k], lr[k], K[k], rule.p, rule.lr0,
                                          rule.b0, sharp=sharp)
    fit = fit_(np.ones(B.size, bool), True)

    def predict(k, b):  # the left-out runs' median, each at its own lr and K
        f = fit_(k, True)
        at = B == b
        return float(np.median(f.log_at(B[at], lr[at], K[at]))), _fit_sd(f, b)
    rate = loo_rate(B, predict, lambda b: _log_median(prog[B == b]))
    bn = fit.noise_scale
    why = (f"chosen with --progress-form: N = A sqrt(m (m + B_n)) / lr, m = B / K, "
           f"fitted to {B.size} runs at their own lr; "
           + ("B_n above the pilots' batches (no knee within them); " if bn is None else
              f"B_n = {bn:.4g} samples per update; ")
           + f"under lr ~ B^{rule.p:g} N grows as B^{0.5 - rule.p:g} below the knee, "
           f"B^{1 - rule.p:g} past it")
    return ProgressClock(fit, [fit], {adam.FORM: fit.sse}, why, rate,
                         (float(B.min()), float(B.max())))


@dataclass(frozen=True)
class FailureClock:
    """A failure clock: its power law fitted on the runs as given (the exponent the plan
    reports; None where failures are at fewer than two batches) and its forms on the runs
    sorted (`failure_forms`: each form's fit and left-out error, the chosen and the plausible
    ones; chosen None where too few runs failed)."""
    power: pf.FailureFit | None
    forms: dict

    @property
    def chosen(self) -> str | None:
        return self.forms["chosen"]

    def band(self, prog_band: list, B, level: float) -> list:
        """The chosen form's medians with the plausible forms' union at B (prog_band: the
        progress band there)."""
        return failure_band(self.forms, prog_band, B, level)


def failure_clock(B, fail, censor, prog, level: float = 0.95, p_rule: float = 0.5,
                  force: str | None = None) -> FailureClock:
    """The failure clock of the on-rule runs (fail inf where a run did not fail, censored at
    `censor`); force: the form the user chose (FormNotFitted where it was not fitted)."""
    o = np.lexsort((fail, prog, B))
    return FailureClock(pf.fit_failure(B, fail, censor),
                        failure_forms(B[o], fail[o], censor[o], prog[o], level, p_rule, force))


__all__ = ["FAILURE_FORMS", "FORM_ERROR_SCALE", "FormNotFitted", "ProgressClock",
           "progress_clock", "adam_clock", "floored", "FailureClock", "failure_clock", "loo_rate",
           "widen", "union",
           "distance", "sigma", "progress_rate", "failure_forms", "form_band", "failure_band",
           "disagreement", "z_quantile"]
