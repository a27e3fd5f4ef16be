"""Adam's progress clock on the noisy quadratic model: mean-field Adam and the critical batch.

Mean-field Adam freezes the preconditioner at its expected value, so the (x, m) update is linear
and its means and second moments are exact given it (only v's fluctuations are dropped).
"""
import math

import numpy as np

from twoclock.config import DELTA, OptimConfig, require, require_positive
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.first_passage import PassageStream
from twoclock.models.quadratic.problem import initial_loss, noise_variances, rotation, spectrum
from twoclock.models.quadratic.scales import _eig_offset, b_noise, b_simple
from twoclock.scaling import companions


def _require_adam(opt: OptimConfig) -> None:
    require(opt.name == "adam", "optimizer", "adam (these are Adam predictions)", opt.name)



def critical_batch_curvature(cfg: QuadraticConfig, opt: OptimConfig, lr0):
    """B where lr_eff(B) h_max = 1 (the curvature mechanism), None if no B >= 1 reaches it.

    Adam (noise-dominated): lr_eff = lr(B) sqrt(B / c_1), c_1 = sigma^2 h_max^gamma, the effective
    SGD step on the stiffest coordinate; with lr(B) = lr0 (B/B0)^p this solves to
    B = (sqrt(c_1) B0^p / (lr0 h_max))^(1 / (p + 1/2)) for every rule (fixed: lr_eff ~ sqrt(B)).
    SGD: lr_eff = lr(B), momentum: lr(B) / (1 - mu); never reached under the fixed rule.
    """
    require_positive("lr0", lr0)
    h1 = spectrum(cfg)[0]
    p = opt.exponent
    if opt.name == "adam":
        c1 = noise_variances(cfg)[0]
        B = (math.sqrt(c1) * opt.b0**p / (lr0 * h1)) ** (1.0 / (p + 0.5))
    else:
        eff0 = lr0 / (1.0 - opt.momentum) if opt.name == "momentum" else lr0
        if eff0 * h1 >= 1.0:
            return 1.0
        if p == 0.0:
            return None
        B = opt.b0 * (1.0 / (eff0 * h1)) ** (1.0 / p)
    return float(max(B, 1.0))


_PLATEAU_AFTER = 10_000  # updates before mean-field Adam may stop at a plateau (> 3 / (1 - b2))


def _adam_meanfield(cfg: QuadraticConfig, opt: OptimConfig, lr: float, batch: float,
                    n_steps: int, stop_at=None, record: bool = False, sink=None):
    """Mean-field Adam on the progress block: (loss_T, mean x at the last step, steps run).

    Per eigen-coordinate, m = b1 m + (1 - b1) g and x -= P_t m / (1 - b1^t) with a deterministic
    preconditioner P_t = lr / (sqrt(v_t / (1 - b2^t)) + eps), v an EMA of E[g^2] = h^2 E[x^2] + c/B.
    With P_t fixed the update is linear in (x, m), so means and second moments are exact given
    P_t; only v's fluctuations are dropped. Stops at the first step with E[L] <= stop_at.
    record: also return the Gaussian moments of x per step (mean, variance, Cov(x_t, x_{t-1})),
    rows 0..t, for the first-passage clock. sink: instead, hand each row to sink.add(m, V, C)
    as it is made (a first_passage.PassageStream: memory bounded whatever n_steps and dim).
    """
    require(not cfg.rotate, "rotate", "False (Adam is diagonal only in the unrotated basis)",
            cfg.rotate)
    h, c = spectrum(cfg), noise_variances(cfg)
    e0 = _eig_offset(cfg, None)
    b1, b2, eps = companions(opt, batch)
    q = c / batch
    mx, mm = e0.copy(), np.zeros_like(h)
    Sxx, Sxm, Smm, v = e0 * e0, np.zeros_like(h), np.zeros_like(h), np.zeros_like(h)
    loss = np.empty(n_steps + 1)
    loss[0] = 0.5 * np.sum(h * Sxx)
    rows = [(mx, Sxx - mx * mx, np.zeros_like(h))] if record else None
    if sink is not None:
        sink.add(mx, Sxx - mx * mx, np.zeros_like(h))
    t = 0
    for t in range(1, n_steps + 1):
        v = b2 * v + (1 - b2) * (h * h * Sxx + q)
        P = lr / (np.sqrt(v / (1 - b2**t)) + eps) / (1 - b1**t)
        a11, a12, a21 = 1 - P * (1 - b1) * h, -P * b1, (1 - b1) * h
        n1, n2 = -P * (1 - b1), 1 - b1
        cross = a11 * Sxx + a12 * Sxm  # E[x_t x_{t-1}]
        mx_prev = mx
        mx, mm = a11 * mx + a12 * mm, a21 * mx + b1 * mm
        Sxx, Sxm, Smm = (a11 * a11 * Sxx + 2 * a11 * a12 * Sxm + a12 * a12 * Smm + n1 * n1 * q,
                         a11 * a21 * Sxx + (a11 * b1 + a12 * a21) * Sxm + a12 * b1 * Smm
                         + n1 * n2 * q,
                         a21 * a21 * Sxx + 2 * a21 * b1 * Sxm + b1 * b1 * Smm + n2 * n2 * q)
        loss[t] = 0.5 * np.sum(h * Sxx)
        if record:
            rows.append((mx, Sxx - mx * mx, cross - mx * mx_prev))
        if sink is not None:
            sink.add(mx, Sxx - mx * mx, cross - mx * mx_prev)
        if stop_at is not None and loss[t] <= stop_at:
            break
        if t > _PLATEAU_AFTER and t % 1000 == 0 and loss[t] > (1 - 1e-3) * loss[t - 1000]:
            break  # at its noise floor: E[L] will not reach stop_at
    if record:
        return loss[: t + 1], mx, t, [np.stack(r) for r in zip(*rows)]
    return loss[: t + 1], mx, t


def adam_progress_passage(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch,
                          budget: int = 10**6):
    """Median first-passage progress clock (samples) of mean-field Adam; None beyond budget.

    x_t is Gaussian given mean-field Adam's deterministic preconditioner, with the moments the
    recursion tracks, so the loss's first passage follows as for SGD (first_passage). The
    recursion stops where E[L] first meets the target (the median passage comes no later, up to
    the Markov approximation) or at its noise floor, after which the hazard is taken as
    stationary and the survival extrapolated.
    """
    _require_adam(opt)
    require_positive("lr0", lr0)
    B = float(batch)
    target = cfg.target * initial_loss(cfg)
    n_max = int(budget // B)
    stream = PassageStream(spectrum(cfg), target)  # bounded memory: rows are not kept
    _, _, t = _adam_meanfield(cfg, opt, float(opt.lr(lr0, B)), B, n_max, target, sink=stream)
    n = stream.median(extrapolate=t < n_max)
    return float(B * n) if 0 < n <= n_max else None


def adam_progress_samples(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch,
                          budget: int = 10**6, above_floor: bool = False):
    """Mean-field prediction of Adam's progress clock: B x the first crossing of E[L_t] down to
    the target, interpolated linearly between the updates around it (as the engine places the
    simulated clock), so it is not on the update grid either.

    None if the expected loss stays above the target within budget samples (its noise floor
    sits above the target: the simulation then crosses only through fluctuations).
    above_floor: the crossing of E[L_t] - F down to the target instead, F the run's own noise
    floor (E[L] where the recursion plateaus, or at the budget if it does not): the clock with
    the floor's slowing taken out (docs/plan.md, "Adam's progress form").
    """
    _require_adam(opt)
    require_positive("lr0", lr0)
    B = float(batch)
    target = cfg.target * initial_loss(cfg)
    loss, _, t = _adam_meanfield(cfg, opt, float(opt.lr(lr0, B)), B, int(budget // B),
                                 None if above_floor else target)
    if above_floor:
        loss = loss - loss[t]
        crossed = np.flatnonzero(loss <= target)
        t = int(crossed[0]) if crossed.size else t
    if loss[t] > target:
        return None
    if t == 0:
        return 0.0
    before, after = loss[t - 1] - target, loss[t] - target  # before > 0 >= after
    return float(B * (t - 1 + before / (before - after)))



def critical_batch_saturation(cfg: QuadraticConfig, opt: OptimConfig, lr0,
                              method: str = "meanfield", b_ref=None, delta: float = DELTA,
                              budget: int = 10**6):
    """Batch above which Adam's progress clock slows by 1 + delta as it saturates to sign descent.

    Adam's per-coordinate step is lr g / sqrt(g^2 + c/B): relative to the noise-dominated step
    it is slowed by sqrt(1 + B / B_s), B_s = c / g^2 (the gradient noise scale).
    method "meanfield" (default): the smallest B >= b_ref (default B0) at which the mean-field
    progress clock (adam_progress_samples) is 1 + delta times its value at b_ref, interpolated
    on log B over a doubling grid up to 2^12 b_ref; None if none.
    method "noise" / "simple": ((1 + delta)^2 - 1) x B_noise / B_simple evaluated at the *mean*
    offset of mean-field Adam (at b_ref) when its expected loss first reaches the target, the
    last and slowest stretch of progress (docs/theory.md: these overestimate the measured
    critical batch several-fold, as the slowdown accrues over the whole path).
    Every method returns None when the expected loss never reaches the target at b_ref (the
    noise floor sits above the target: the gradient signal never beats the noise there).
    """
    _require_adam(opt)
    require_positive("lr0", lr0)
    require(method in ("meanfield", "noise", "simple"), "method", "meanfield, noise or simple",
            method)
    B = float(opt.b0 if b_ref is None else b_ref)
    target = cfg.target * initial_loss(cfg)
    loss, mx, _ = _adam_meanfield(cfg, opt, float(opt.lr(lr0, B)), B, int(budget // B), target)
    if loss[-1] > target:
        return None
    if method != "meanfield":
        q = rotation(cfg)
        x = mx if q is None else q @ mx
        bs = b_noise(cfg, x) if method == "noise" else b_simple(cfg, x)
        return float(((1 + delta) ** 2 - 1) * bs)
    clock = lambda b, budget_b: adam_progress_samples(cfg, opt, lr0, b, budget_b)
    return _first_slowdown(clock, B, clock(B, budget), delta, budget)


def _first_slowdown(clock, B: float, n_ref, delta: float, budget: int):
    """The smallest batch on the doubling grid B 2^k (k <= 12) with clock(b) / n_ref >= 1 + delta,
    interpolated on log B between grid points; None if none. clock(b, budget) -> samples or None
    (never within the budget, which grows with b so that a slower clock stays measurable)."""
    prev_b, prev_r = B, 1.0
    for k in range(1, 13):
        b = B * 2.0**k
        n = clock(b, max(budget, int(4 * b * n_ref / B)))
        r = math.inf if n is None else n / n_ref
        if r >= 1 + delta:
            if not math.isfinite(r):
                return b
            return float(prev_b * (b / prev_b) ** ((1 + delta - prev_r) / (r - prev_r)))
        prev_b, prev_r = b, r
    return None


def critical_batch_passage(cfg: QuadraticConfig, opt: OptimConfig, lr0, b_ref=None,
                           delta: float = DELTA, budget: int = 10**6):
    """The measurement's rule on mean-field Adam's first-passage progress clock: the smallest
    B >= b_ref (default B0) with N(B) / N(b_ref) >= 1 + delta, interpolated on log B over a
    doubling grid up to 2^12 b_ref; None if none (or if N(b_ref) lies beyond the budget)."""
    _require_adam(opt)
    B = float(opt.b0 if b_ref is None else b_ref)
    clock = lambda b, budget_b: adam_progress_passage(cfg, opt, lr0, b, budget_b)
    n_ref = clock(B, budget)
    return None if n_ref is None else _first_slowdown(clock, B, n_ref, delta, budget)


def critical_batch_mechanism(cfg: QuadraticConfig, opt: OptimConfig, lr0,
                             budget: int = 10**6) -> dict:
    """Which mechanism sets Adam's critical batch, and its predicted value.

    Returns {mechanism: "curvature" | "saturation" | None, batch, method, curvature,
    saturation}. saturation: the mean-field estimate (critical_batch_saturation), None when the
    expected loss never meets the target; curvature: the simple lr_eff h_max = 1 estimate. The
    mechanism is the one with the smaller estimate (saturation when it exists and binds first).
    batch: the saturation estimate (method "mean-field") when it binds; otherwise, where the
    runs reach the target only through fluctuations, the first-passage estimate of mean-field
    Adam (critical_batch_passage, method "mean-field first-passage"). budget: samples at B0
    that bound both searches (the sweep's, from the headline).
    """
    cur = critical_batch_curvature(cfg, opt, lr0)
    sat = critical_batch_saturation(cfg, opt, lr0, budget=budget)
    key = lambda v: math.inf if v is None else v
    method = "mean-field"
    if sat is not None and key(sat) <= key(cur):
        mech, batch = "saturation", sat
    else:
        mech, batch = "curvature", critical_batch_passage(cfg, opt, lr0, budget=budget)
        method = "mean-field first-passage"
        if cur is None and batch is None:
            mech = None
    return {"mechanism": mech, "batch": batch, "method": method, "curvature": cur,
            "saturation": sat}
