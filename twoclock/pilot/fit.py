"""Fits of the two clocks to pilot runs, with their sampling bands (numpy only, no JAX): the
floor under forms.py (a clock's form, its fit and its band, which the plan reads); nothing
here calls up.

Progress clock (samples to target) against batch B, under a learning-rate rule that keeps it
batch-invariant below a critical batch (what the sqrt rule does for noise-dominated Adam):

    N_prog(B) = N_min * (1 + c * B / B_crit)^a,    c = 1.2^(1/a) - 1,

parametrised by the critical batch itself: N_prog(B_crit) = 1.2 N_min, the project's
delta = 0.2 definition (twoclock.analysis.clocks.critical_batch). The mechanism sets a:
  saturation: Adam drifts to sign descent, slower by sqrt(1 + B/B_s) under the sqrt rule
              (twoclock/models/quadratic/adam_progress.py); under lr ~ B^p sign-descent
              updates fall as B^-p, so samples grow as B^(1-p): a = 1 - p (1/2 for sqrt,
              giving c = 1.2^2 - 1 = 0.44).
  curvature:  past lr_eff h_max = 1 a larger lr buys nothing, updates stop falling and samples
              grow as B: a = 1 (McCandlish's E = E_min (1 + B/B_noise)).
Both have two parameters, so the form with the smaller squared error in log N is chosen.
Neither holds for Adam under another rule, where N = A sqrt(m (m + B_n)) / lr grows as
B^(1/2 - p) below the knee and B^(1 - p) past it (m = B / K samples per update): adam.py
derives it and fits it through the saturation form here, each run at its own lr and K.

The knee's width. The mechanism sets the asymptote B^a, not how sharply the clock turns to it:
a clock made of parts with different critical batches (directions or data with different noise
scales) turns more gradually than one knee. So the chosen form (and each plausible one) is
refitted with a sharpness m in [1/4, 1] (SHARPNESS) where >= 3 batches have >= 2 runs each:

    N_prog(B) = N_min * (1 + c * (B / B_crit)^m)^(a/m),    c = 1.2^(m/a) - 1,

still N_prog(B_crit) = 1.2 N_min and the same asymptote; m = 1 is the form above, m < 1 a wider
knee. m takes one more degree of freedom; the mechanism is still chosen on the two-parameter
forms (with m free the two asymptotes fit the pilots about equally). On the policy model, whose
progress clock turns more gradually than either form (docs/plan.md), it brings the 4x and 8x
predictions from +7% to +17% to within 15% in every pilot design.

Failure clock: N_fail(B) = F_ref (B / B_ref)^q, fitted in log N; runs that did not fail are
censored (their N_fail is only known to exceed a level) and enter one-sidedly: they cost only
when the line predicts failure before that level (a hinge, fitted by an active set). Or tied to
progress, N_fail(B) = k N_prog(B): log k the runs' mean log(N_fail / N_prog), censored runs
again one-sided (`fit_coupled`; forms.py says when which form holds).

Bands: least squares in log N (noise multiplicative), with n - 2 degrees of freedom (n - 3 with
m fitted) and Student-t quantiles (with 4 pilots t_0.975 = 4.30, not 1.96). The progress clock
is nonlinear in B_crit, so its bands are profile-likelihood intervals: the range of the
prediction over every (N_min, B_crit), and m where fitted, with SSE <= SSE_min (1 + t^2 / dof),
found on a grid of B_crit (a
covariance band covered only ~90% of held-out values at a claimed 95%, worst when the noise
hid the knee). The failure clock is a line in log-log, where the covariance band is exact.
"""
from dataclasses import dataclass
import functools
import math

import numpy as np
from scipy import stats

from twoclock.analysis import throughput as tp
from twoclock.config import DELTA

FORMS = ("saturation", "curvature")


@functools.lru_cache(maxsize=256)
def t_quantile(q: float, dof: int) -> float:
    """Student-t quantile (scipy.stats: exact to the last digits, where the bisection over a
    Simpson integral this replaced was within 1.5e-13)."""
    return float(stats.t.ppf(q, dof))


def region_threshold(sse_min: float, dof: int, level: float, floor: float = 0.0) -> float:
    """The profile-likelihood region's bound on SSE at `level`: SSE_min (1 + t^2 / dof), or
    SSE_min + t^2 floor where a per-clock variance `floor` (an evaluation's crossing noise,
    pilot/evalnoise.py) exceeds the residuals' SSE_min / dof."""
    t = t_quantile((1 + level) / 2, dof)
    return (sse_min * (1 + t * t / dof) if floor * dof <= sse_min
            else sse_min + t * t * floor)


def form_exponent(form: str, p: float) -> float:
    """a: the asymptotic growth of samples with B past the critical batch."""
    return 1.0 - p if form == "saturation" else 1.0


def _log_shape(B, log_bc, a, m=1.0):
    """a/m log(1 + c (B / B_crit)^m), c = 1.2^(m/a) - 1: N(B_crit) = 1.2 N_min for every
    sharpness m (m = 1 the forms above; smaller m a wider knee, the same asymptote B^a)."""
    c = 1.2 ** (m / a) - 1.0
    if m == 1.0:
        return a * np.log1p(c * B / np.exp(log_bc))
    return a / m * np.log1p(c * np.exp(m * (np.log(B) - log_bc)))


@dataclass(frozen=True)
class ProgressFit:
    """log N_prog = log_n_min + log shape(B; B_crit), least squares over the runs (B_R, y_R)."""
    form: str
    a: float
    log_n_min: float
    log_b_crit: float | None   # None: flat over the pilots (no critical batch within reach)
    dof: int
    sse: float
    B_R: tuple
    y_R: tuple
    m: float = 1.0             # the knee's sharpness (fitted with >= SHARPNESS_FROM batches)
    # with m fitted: the fits at the other m of SHARPNESS, each with this fit's sse and dof, so
    # that the band is the profile region over (B_crit, m), not over B_crit at the fitted m
    slices: tuple = ()
    # a per-run variance in log N the band takes at least (an evaluation's crossing noise,
    # pilot/evalnoise.py); 0: the residuals' alone
    floor: float = 0.0

    def _grid(self):
        """log B_crit grid (edges: B_min e^-4, B_max e^8) with the profiled intercept a(c)
        and SSE(c); SSE(a, c) = SSE(c) + n (a - a(c))^2 since a is a mean. Computed once per
        fit; beyond GROUP_ABOVE runs, over the distinct batches (each run's residual is its
        batch mean's plus its deviation from it), so 100k runs cost what a few batches do."""
        cached = self.__dict__.get("_grid_cache")
        if cached is not None:
            return cached
        B, y = np.array(self.B_R), np.array(self.y_R)
        c = np.linspace(math.log(B.min()) + _LO, math.log(B.max()) + _HI, _N_GRID)
        if B.size <= GROUP_ABOVE:
            s = _log_shape(B[None, :], c[:, None], self.a, self.m)
            icpt = np.mean(y[None, :] - s, axis=1)
            sse = np.sum((y[None, :] - s - icpt[:, None]) ** 2, axis=1)
        else:
            u, inv, n_u = np.unique(B, return_inverse=True, return_counts=True)
            ybar = np.bincount(inv, weights=y) / n_u
            within = float(np.sum((y - ybar[inv]) ** 2))
            s = _log_shape(u[None, :], c[:, None], self.a, self.m)
            icpt = (ybar[None, :] - s) @ n_u / B.size
            sse = (n_u * (ybar[None, :] - s - icpt[:, None]) ** 2).sum(axis=1) + within
        out = (c, icpt, sse, B.size)
        object.__setattr__(self, "_grid_cache", out)  # frozen: a cache, not a field
        return out

    def _region(self, level):
        """Grid points inside the profile-likelihood region SSE <= SSE_min (1 + t^2 / dof)
        and the half-width in the intercept each allows."""
        c, icpt, sse, n = self._grid()
        thr = region_threshold(self.sse, self.dof, level, self.floor)
        ok = sse <= thr
        return c[ok], icpt[ok], np.sqrt(np.maximum(thr - sse[ok], 0.0) / n), ok

    def log_median(self, B):
        B = np.asarray(B, np.float64)
        lbc = math.log(np.max(self.B_R)) + _HI if self.log_b_crit is None else self.log_b_crit
        return self.log_n_min + _log_shape(B, lbc, self.a, self.m)

    def log_interval(self, B, level: float):
        """Profile-likelihood interval of log N_prog(B): the range of the prediction over
        every (N_min, B_crit), and m where it was fitted, the data do not reject (F test with 1
        and dof degrees)."""
        B = np.atleast_1d(np.asarray(B, np.float64))
        m = self.log_median(B)
        lo, hi = m, m  # where the grid misses the optimum's neighbourhood: the point itself
        for f in (self, *self.slices):  # every m the data do not reject (with m fitted)
            c, icpt, w, _ = f._region(level)
            if c.size:
                pred = icpt[:, None] + _log_shape(B[None, :], c[:, None], f.a, f.m)
                lo = np.minimum(np.min(pred - w[:, None], axis=0), lo)
                hi = np.maximum(np.max(pred + w[:, None], axis=0), hi)
        return lo, hi

    def critical(self, level: float) -> dict:
        """{batch, ci}: B_crit and its profile interval; an end at the grid's edge is None
        (unbounded: the data do not rule out a critical batch that far out)."""
        c, _, _, ok = self._region(level)
        lo = None if ok[0] or c.size == 0 else math.exp(c.min())
        hi = None if ok[-1] or c.size == 0 else math.exp(c.max())
        if self.log_b_crit is None:
            return {"batch": None, "ci": [lo, None]}
        return {"batch": math.exp(self.log_b_crit), "ci": [lo, hi]}


_LO, _HI, _N_GRID = -4.0, 8.0, 1201  # B_crit search range around the pilots (log units)
GROUP_ABOVE = 1024  # runs beyond which a fit's grid works over the distinct batches


def exp_or_none(x):
    """exp, None when it overflows (an unbounded CI end)."""
    return math.exp(x) if x < 700 else None


SHARPNESS = tuple(np.round(np.geomspace(0.25, 1.0, 13), 6))  # m's grid (m = 1 included)
# m is fitted from the batch medians' departure from the m = 1 form, which only repeated runs
# tell from noise: it needs this many distinct batches with at least 2 runs each (else m = 1;
# one run per batch, as in the published table, keeps the two-parameter form and its dof)
SHARPNESS_FROM = 3
FIT_SHARPNESS = True  # False: m = 1 everywhere (the ablation in docs/plan.md; tested)


def fit_progress(B, N, form: str, p: float, sharp: bool = False) -> ProgressFit:
    """The form's least squares fit (m = 1); with sharp, its knee's sharpness m fitted too
    (the smallest squared error over SHARPNESS) where SHARPNESS_FROM batches have repeats."""
    _, runs_per_batch = np.unique(np.asarray(B), return_counts=True)
    if not (sharp and FIT_SHARPNESS) or (runs_per_batch >= 2).sum() < SHARPNESS_FROM:
        return _fit_progress(B, N, form, p, 1.0)
    fits = [_fit_progress(B, N, form, p, m) for m in SHARPNESS]
    best = min(fits, key=lambda f: f.sse)
    if best.dof <= 1:
        return best
    dof = best.dof - 1
    slices = tuple(ProgressFit(f.form, f.a, f.log_n_min, f.log_b_crit, dof, best.sse, f.B_R,
                               f.y_R, f.m) for f in fits if f is not best)
    return ProgressFit(best.form, best.a, best.log_n_min, best.log_b_crit, dof, best.sse,
                       best.B_R, best.y_R, best.m, slices)


def _fit_progress(B, N, form: str, p: float, m: float) -> ProgressFit:
    """Least squares in log N: a zooming grid on log B_crit, the intercept in closed form."""
    B, y = np.asarray(B, np.float64), np.log(np.asarray(N, np.float64))
    a = form_exponent(form, p)
    lo, hi = math.log(B.min()) + _LO, math.log(B.max()) + _HI
    top = hi
    best = None
    for _ in range(8):
        g = np.linspace(lo, hi, 81)
        s = _log_shape(B[None, :], g[:, None], a, m)
        icpt = np.mean(y[None, :] - s, axis=1)
        sse = np.sum((y[None, :] - s - icpt[:, None]) ** 2, axis=1)
        i = int(np.argmin(sse))
        if best is None or sse[i] <= best[0]:
            best = (float(sse[i]), float(icpt[i]), float(g[i]))
        step = (hi - lo) / 80
        lo, hi = g[i] - 2 * step, min(g[i] + 2 * step, top)
    sse, icpt, lbc = best
    flat = lbc >= top - 1e-6  # no curvature in the data: the clock is flat over the pilots
    return ProgressFit(form, a, icpt, None if flat else lbc, B.size - 2, sse,
                       tuple(B.tolist()), tuple(y.tolist()), m)


PLAUSIBLE = 1.5  # a form whose squared error is within this factor of the best stays plausible


def choose_progress(B, N, p: float) -> tuple:
    """(chosen ProgressFit, plausible fits, {form: sse}, why): the form with the smaller
    log-space error, and every form within PLAUSIBLE of it (their bands are pooled)."""
    forms = [f for f in FORMS if form_exponent(f, p) > 0.05]  # p ~ 1: no saturation slowdown
    fits = {f: fit_progress(B, N, f, p) for f in forms}
    best = min(fits.values(), key=lambda f: f.sse)
    sse = {f: fits[f].sse for f in forms}
    plausible = [f for f in fits.values() if f.sse <= PLAUSIBLE * best.sse]
    # the mechanism is chosen on the two-parameter forms; the knee's width is then fitted
    sharp = {f.form: fit_progress(B, N, f.form, p, sharp=True) for f in plausible}
    best, plausible = sharp[best.form], list(sharp.values())
    if len(fits) == 1:
        why = f"only {best.form} applies under lr ~ B^{p:g} (saturation needs p < 0.95)"
    else:
        other = [f for f in forms if f != best.form][0]
        a, b = sse[best.form], sse[other]
        digits = next((d for d in range(4, 10) if f"{a:.{d}g}" != f"{b:.{d}g}"), 9)
        why = (f"{best.form} fits better: squared log error {a:.{digits}g} vs "
               f"{b:.{digits}g} for {other} (both 2 parameters)" if b > a * (1 + 1e-3) else
               f"{best.form} and {other} fit alike (squared log error {a:.{digits}g} vs "
               f"{b:.{digits}g}, within 0.1%); {best.form} taken (both 2 parameters)")
        if sse[other] <= PLAUSIBLE * sse[best.form]:
            why += f"; within {PLAUSIBLE:g}x, so the bands span both forms"
    if best.m != 1.0:
        why += f"; the knee's sharpness fitted: m = {best.m:.3g}"
    return best, plausible, sse, why


@dataclass(frozen=True)
class FailureFit:
    """log N_fail = log_f_ref + q log(B / b_ref); cov over (log_f_ref, q)."""
    log_f_ref: float
    q: float
    b_ref: float
    cov: np.ndarray
    dof: int
    censored_active: int  # censored runs pushing on the line

    def log_median(self, B):
        return self.log_f_ref + self.q * np.log(np.asarray(B, np.float64) / self.b_ref)

    def log_interval(self, B, level: float):
        """m -+ t sd with sd^2 = J cov J^T (exact for a line with Gaussian log noise)."""
        x = np.log(np.atleast_1d(np.asarray(B, np.float64)) / self.b_ref)
        J = np.stack([np.ones_like(x), x], axis=-1)
        sd = np.sqrt(np.einsum("...i,ij,...j->...", J, self.cov, J))
        t = t_quantile((1 + level) / 2, self.dof)
        m = self.log_f_ref + self.q * x
        return m - t * sd, m + t * sd

    def exponent(self, level: float) -> dict:
        t = t_quantile((1 + level) / 2, self.dof)
        sd = math.sqrt(self.cov[1, 1])
        return {"value": self.q, "ci": [self.q - t * sd, self.q + t * sd]}


def fit_failure(B, fail, censor_at) -> FailureFit | None:
    """Power law through the failed runs; censored runs (fail inf) bound it from below at
    censor_at. None when fewer than two distinct batches constrain the line."""
    B = np.asarray(B, np.float64)
    fail, lvl = np.asarray(fail, np.float64), np.asarray(censor_at, np.float64)
    obs = np.isfinite(fail)
    if len(np.unique(B[obs])) < 2:
        return None
    b_ref = float(np.exp(np.mean(np.log(B[obs]))))
    x = np.log(B / b_ref)
    y = np.where(obs, np.log(np.where(obs, fail, 1.0)), np.log(lvl))
    active = np.zeros_like(obs)
    for _ in range(50):  # active set: censored runs the line places before their level
        use = obs | active
        A = np.stack([np.ones(use.sum()), x[use]], axis=1)
        coef = np.linalg.lstsq(A, y[use], rcond=None)[0]
        new = ~obs & (coef[0] + coef[1] * x < y)
        if np.array_equal(new, active):
            break
        active = new
    use = obs | active
    n = int(use.sum())
    A = np.stack([np.ones(n), x[use]], axis=1)
    sse = float(np.sum((y[use] - A @ coef) ** 2))
    dof = max(n - 2, 1)
    cov = sse / dof * np.linalg.pinv(A.T @ A)
    return FailureFit(float(coef[0]), float(coef[1]), b_ref, cov, dof, int(active.sum()))


@dataclass(frozen=True)
class CoupledFit:
    """log N_fail(B) = log_k + log N_prog(B): log_k the (censoring-aware) mean log ratio."""
    log_k: float
    se: float  # standard error of log_k
    dof: int
    censored_active: int
    slope: dict  # {"value", "ci"}: log(N_fail / N_prog) against log B; None where < 2 batches

    def log_interval_k(self, level: float) -> float:
        """The half-width of log k at `level` (Student-t)."""
        return t_quantile((1 + level) / 2, self.dof) * self.se


def fit_coupled(B, fail, censor_at, prog, level: float = 0.95) -> CoupledFit | None:
    """The ratio form from each run's own two clocks; None when fewer than two runs failed."""
    B, fail = np.asarray(B, np.float64), np.asarray(fail, np.float64)
    lvl, prog = np.asarray(censor_at, np.float64), np.asarray(prog, np.float64)
    obs = np.isfinite(fail)
    if obs.sum() < 2:
        return None
    y = np.log(np.where(obs, fail, lvl) / prog)
    active = np.zeros_like(obs)
    for _ in range(50):  # censored runs whose level lies above the fitted ratio push it up
        m = float(np.mean(y[obs | active]))
        new = ~obs & (m < y)
        if np.array_equal(new, active):
            break
        active = new
    use = obs | active
    n = int(use.sum())
    sd = float(np.std(y[use], ddof=1)) if n > 1 else 0.0
    slope = None
    x = np.log(B[use])
    if np.unique(x).size >= 2 and n >= 3:
        A = np.stack([np.ones(n), x], axis=1)
        coef, *_ = np.linalg.lstsq(A, y[use], rcond=None)
        dof = n - 2
        s2 = float(np.sum((y[use] - A @ coef) ** 2)) / max(dof, 1)
        se = math.sqrt(s2 * np.linalg.pinv(A.T @ A)[1, 1])
        t = t_quantile((1 + level) / 2, max(dof, 1))
        slope = {"value": float(coef[1]), "ci": [float(coef[1] - t * se),
                                                  float(coef[1] + t * se)]}
    return CoupledFit(m, sd / math.sqrt(n), max(n - 1, 1), int(active.sum()), slope)


def band(fit, B, level: float) -> list:
    """[{median, ci}] of exp(fitted log clock) at each B."""
    m = np.atleast_1d(fit.log_median(B))
    lo, hi = fit.log_interval(B, level)
    return [{"median": float(math.exp(mi)), "ci": [exp_or_none(l), exp_or_none(h)]}
            for mi, l, h in zip(m, lo, hi)]


def envelope(best, plausible, B, level: float) -> list:
    """The best form's median with the union of the plausible forms' bands: the form is
    itself uncertain and each form's band alone ignores that."""
    out = band(best, B, level)
    for f in plausible:
        for o, x in zip(out, band(f, B, level)):
            lo, hi = o["ci"]
            o["ci"] = [min(lo, x["ci"][0]) if None not in (lo, x["ci"][0]) else None,
                       None if None in (hi, x["ci"][1]) else max(hi, x["ci"][1])]
    return out


def fit_step_times(B, seconds) -> tp.ThroughputModel:
    """The roofline of throughput.py fitted to whole-step times (training folded into
    generation: only the total was measured); the knee is fixed at the default with < 3
    distinct batches."""
    knee = None if len(np.unique(B)) >= 3 else tp.ThroughputModel().knee
    t_lat, b_gen, k = tp.fit_generation(B, seconds, knee=knee)
    return tp.ThroughputModel(gen_latency=t_lat, critical_gen_batch=b_gen, knee=k,
                              train_per_sample=0.0)


__all__ = ["DELTA", "FORMS", "t_quantile", "region_threshold", "ProgressFit", "FailureFit",
           "CoupledFit", "fit_progress", "choose_progress", "fit_failure", "fit_coupled", "band",
           "envelope", "fit_step_times", "form_exponent", "exp_or_none"]
