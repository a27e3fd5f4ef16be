"""Theory for the noisy quadratic model (Model 1): exact SGD/momentum moments, McCandlish noise
scales, and the noise-dominated Adam predictions of DESIGN.md (items 1-4).

Exact moments work in the eigenbasis (SGD and heavy-ball momentum are rotation-equivariant).
Per coordinate with curvature h, per-sample noise variance c and batch B:

    x_{t+1} = (1 + mu - lr h) x_t - mu x_{t-1} - lr xi_t,   xi_t ~ N(0, c / B),   x_{-1} = x_0,

so x_1 = (1 - lr h) x_0 as optax's heavy ball (v = g + mu v, theta -= lr v) from zero momentum;
mu = 0 is SGD. E[L_t] = 1/2 sum_i h_i (m_{i,t}^2 + Var x_{i,t}). Everything here is float64.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

from twoclock.config import OptimConfig, require, require_int, require_positive
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.problem import initial_loss, initial_offset, noise_variances, rotation, spectrum
from twoclock.scaling import RULE_EXPONENT, companions, lr_for_batch

# r1 ~ r2 (double root of z^2 - a z + mu): below this |r1 - r2| / (1 - sqrt(mu)) the closed form
# switches to the double-root limit. Both branches then err by ~1e-8 relative (the general
# formula loses eps / gap^2 to cancellation, the limit misses O(gap^2) terms).
_DOUBLE_ROOT_GAP = 1e-4


def _require_linear(opt: OptimConfig) -> float:
    """Heavy-ball coefficient mu (0 for SGD); ValueError naming 'optimizer' for Adam."""
    require(opt.name in ("sgd", "momentum"), "optimizer",
            "sgd or momentum (exact NQM moments exist only for linear optimizers)", opt.name)
    return opt.momentum if opt.name == "momentum" else 0.0


def _eig_start(cfg: QuadraticConfig) -> np.ndarray:
    """(Q^T x0)^2: squared initial offsets in the eigenbasis, [D]."""
    x0 = initial_offset(cfg)
    q = rotation(cfg)
    e0 = x0 if q is None else q.T @ x0
    return e0**2


def _check_step(batch, lr) -> None:
    require_positive("lr", float(lr))
    require(float(batch) >= 1, "batch", "a number >= 1", batch)


# ---------------------------------------------------------------------------------------------
# 1. Exact moments: reference recursion and closed form
# ---------------------------------------------------------------------------------------------

def expected_loss(cfg: QuadraticConfig, opt: OptimConfig, batch, lr, n_steps: int) -> np.ndarray:
    """E[L_t] for t = 0..n_steps by the plain second-moment recursion (the reference), [n_steps+1].

    State per coordinate: S_t = E[x_t^2], S_{t-1}, P_t = E[x_t x_{t-1}], and the mean.
    """
    mu = _require_linear(opt)
    _check_step(batch, lr)
    require_int("n_steps", n_steps, lo=0)
    h, c, s0 = spectrum(cfg), noise_variances(cfg), _eig_start(cfg)
    a = 1.0 + mu - lr * h
    q = lr**2 * c / batch
    S, S_prev, P = s0.copy(), s0.copy(), s0.copy()
    out = np.empty(n_steps + 1)
    out[0] = 0.5 * np.sum(h * S)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, n_steps + 1):
            S_next = a * a * S + mu * mu * S_prev - 2.0 * a * mu * P + q
            P = a * S - mu * P
            S_prev, S = S, S_next
            out[t] = 0.5 * np.sum(h * S)
    return out


def _geom(q, qt, t):
    """sum_{j=1}^t q^j given qt = q^t (t where q ~ 1); complex or real."""
    near = jnp.abs(1.0 - q) < 1e-12
    return jnp.where(near, t, q * (1.0 - qt) / jnp.where(near, 0.5, 1.0 - q))


def _sq_sum_double(x, xt, t):
    """sum_{k=1}^t k^2 x^(k-1) given xt = x^t: the double-root limit of sum_j p_j^2 (x = r^2)."""
    num = 1 + x - (t + 1) ** 2 * xt + (2 * t * t + 2 * t - 1) * xt * x - t * t * xt * x * x
    near = jnp.abs(1.0 - x) < 1e-6
    den = jnp.where(near, 1.0, (1.0 - x) ** 3)
    return jnp.where(near, t * (t + 1) * (2 * t + 1) / 6.0, num / den)


def _coord_moments(h, c, s0, lr, batch, t, mu: float):
    """(mean^2, variance) of every coordinate at step t; all args broadcast, float64."""
    q = lr * lr * c / batch
    if mu == 0.0:  # SGD: geometric in (1 - lr h)^2
        r2 = (1.0 - lr * h) ** 2
        r2t = r2**t
        near = jnp.abs(1.0 - r2) < 1e-12
        var_sum = jnp.where(near, t, (1.0 - r2t) / jnp.where(near, 0.5, 1.0 - r2))
        return s0 * r2t, q * var_sum
    a = 1.0 + mu - lr * h
    disc = jnp.sqrt(a * a / 4.0 - mu + 0.0j)
    r1, r2 = a / 2.0 + disc, a / 2.0 - disc  # r1 r2 = mu > 0: neither root is 0
    double = jnp.abs(r1 - r2) < _DOUBLE_ROOT_GAP * (1.0 - math.sqrt(mu))
    d = jnp.where(double, 1.0, r1 - r2)
    E1, E2 = jnp.exp(t * jnp.log(r1)), jnp.exp(t * jnp.log(r2))  # r1^t, r2^t
    # general roots: p_j = (r1^{j+1} - r2^{j+1}) / (r1 - r2); m_t / m_0 = (1 - lr h) p_{t-1} - mu p_{t-2}
    f_gen = ((1.0 - lr * h) * (E1 - E2) - mu * (E1 / r1 - E2 / r2)) / d
    v_gen = (_geom(r1 * r1, E1 * E1, t) - 2.0 * _geom(mu, mu**t, t)
             + _geom(r2 * r2, E2 * E2, t)) / (d * d)
    # double root r = a / 2: p_j = (j + 1) r^j
    r = jnp.where(double, a / 2.0, 1.0)
    R = r**t
    f_dbl = (1.0 - lr * h) * t * R / r - mu * (t - 1) * R / (r * r)
    v_dbl = _sq_sum_double(r * r, R * R, t)
    f = jnp.where(double, f_dbl, jnp.real(f_gen))
    var_sum = jnp.where(double, v_dbl, jnp.real(v_gen))
    return s0 * f**2, q * var_sum


def _closed_loss(h, c, s0, lr, batch, t, mu: float):
    """E[L_t]: lr, batch, t broadcast to [N]; h, c, s0 are [D]; returns [N]."""
    m2, var = _coord_moments(h[None, :], c[None, :], s0[None, :], lr[:, None], batch[:, None],
                             t[:, None], mu)
    return 0.5 * jnp.sum(h[None, :] * (m2 + var), axis=1)


def _arrays(cfg: QuadraticConfig):
    return (jnp.asarray(spectrum(cfg)), jnp.asarray(noise_variances(cfg)),
            jnp.asarray(_eig_start(cfg)))


def _flat(*xs):
    """Broadcast to a common shape and flatten to float64 [N]; returns (arrays, shape)."""
    arrs = np.broadcast_arrays(*[np.asarray(x, np.float64) for x in xs])
    return [jnp.asarray(a.reshape(-1)) for a in arrs], arrs[0].shape


def expected_loss_at(cfg: QuadraticConfig, opt: OptimConfig, batch, lr, t):
    """E[L_t] in closed form; batch, lr and t broadcast against each other (any shapes).

    SGD: m_t^2 = m_0^2 (1 - lr h)^{2t}, Var = lr^2 c/B (1 - (1 - lr h)^{2t}) / (1 - (1 - lr h)^2).
    Momentum: roots r1, r2 of z^2 - a z + mu, a = 1 + mu - lr h; m_t = m_1 p_{t-1} - mu m_0 p_{t-2}
    and Var = lr^2 c/B sum_{j<t} p_j^2 with p_j = (r1^{j+1} - r2^{j+1}) / (r1 - r2), the sum as
    three complex geometric series; near r1 = r2 the double-root limit p_j = (j + 1) r^j.
    Returns a float64 array of the broadcast shape (a float for scalar inputs).
    """
    mu = _require_linear(opt)
    require(np.all(np.asarray(lr) > 0), "lr", "> 0", lr)
    require(np.all(np.asarray(batch) >= 1), "batch", ">= 1", batch)
    require(np.all(np.asarray(t) >= 0), "t", ">= 0", t)
    with jax.enable_x64(True):
        (b, l, tt), shape = _flat(batch, lr, t)
        h, c, s0 = _arrays(cfg)
        out = np.asarray(_closed_jit(h, c, s0, l, b, tt, mu)).reshape(shape)
    return float(out) if out.ndim == 0 else out


_closed_jit = jax.jit(_closed_loss, static_argnums=6)


def _search(h, c, s0, lr, batch, target, mu: float, max_steps: int):
    """First t in [1, max_steps] with E[L_t] <= target per lane (0 if none), [N] int64.

    Doubling over t = 1, 2, 4, ... (and max_steps), then bisection inside the bracket
    (t/2, t]. Exact when E[L_t] is monotone until it first crosses the target; otherwise
    it returns *a* downward crossing, which may not be the first one.
    """
    K = max(1, math.ceil(math.log2(max_steps)))
    grid = jnp.minimum(2.0 ** jnp.arange(K + 1), float(max_steps))  # [K+1]
    N = lr.shape[0]
    n_g = grid.shape[0]
    L_NxK = _closed_loss(h, c, s0, jnp.repeat(lr, n_g), jnp.repeat(batch, n_g),
                         jnp.tile(grid, N), mu).reshape(N, n_g)
    hit_NxK = L_NxK <= target
    found = jnp.any(hit_NxK, axis=1)
    k = jnp.argmax(hit_NxK, axis=1)
    hi = grid[k]
    lo = jnp.where(k == 0, 0.0, grid[jnp.maximum(k - 1, 0)])  # E[L_lo] > target (or lo = 0)

    def body(_, lohi):
        lo, hi = lohi
        mid = jnp.floor((lo + hi) / 2.0)
        ok = _closed_loss(h, c, s0, lr, batch, mid, mu) <= target
        active = hi - lo > 1
        return (jnp.where(active & ~ok, mid, lo), jnp.where(active & ok, mid, hi))

    lo, hi = jax.lax.fori_loop(0, K + 1, body, (lo, hi))
    return jnp.where(found, hi, 0.0).astype(jnp.int64)


_search_jit = jax.jit(_search, static_argnums=(6, 7))


def steps_to_target_many(cfg: QuadraticConfig, opt: OptimConfig, batches, lrs,
                         max_steps: int) -> np.ndarray:
    """steps_to_target for arrays of batches and lrs (broadcast); int64 of the broadcast shape.

    One jit-compiled doubling-then-bisection search on the closed form over all configurations.
    """
    mu = _require_linear(opt)
    require_int("max_steps", max_steps)
    require(np.all(np.asarray(lrs) > 0), "lr", "> 0", lrs)
    require(np.all(np.asarray(batches) >= 1), "batch", ">= 1", batches)
    target = cfg.target * initial_loss(cfg)
    with jax.enable_x64(True):
        (b, l), shape = _flat(batches, lrs)
        h, c, s0 = _arrays(cfg)
        out = _search_jit(h, c, s0, l, b, target, mu, int(max_steps))
        return np.asarray(out).reshape(shape)


def steps_to_target(cfg: QuadraticConfig, opt: OptimConfig, batch, lr, max_steps: int) -> int:
    """First update t >= 1 with E[L_t] <= target * L0, 0 if none by max_steps.

    Searches the closed form (doubling, then bisection); assumes E[L_t] is monotone inside the
    bracket, which holds for SGD with lr h_max <= 1 but can fail for oscillating momentum.
    """
    _check_step(batch, lr)
    return int(steps_to_target_many(cfg, opt, batch, lr, max_steps))


# ---------------------------------------------------------------------------------------------
# 2. McCandlish et al. 2018: gradient noise scales and the S-E Pareto front
# ---------------------------------------------------------------------------------------------

def _eig_offset(cfg: QuadraticConfig, x) -> np.ndarray:
    """Offset from the optimum in the eigenbasis; x in the parameter basis (default: x0)."""
    x = initial_offset(cfg) if x is None else np.asarray(x, np.float64)
    require(x.shape == (cfg.dim,), "x", f"an array of shape ({cfg.dim},)", x.shape)
    q = rotation(cfg)
    return x if q is None else q.T @ x


def b_noise(cfg: QuadraticConfig, x=None) -> float:
    """B_noise = tr(H Sigma) / (G^T H G), G = H x, Sigma the per-sample noise covariance."""
    h, c, e = spectrum(cfg), noise_variances(cfg), _eig_offset(cfg, x)
    return float(np.sum(h * c) / np.sum(h**3 * e * e))


def b_simple(cfg: QuadraticConfig, x=None) -> float:
    """B_simple = tr(Sigma) / |G|^2, G = H x."""
    h, c, e = spectrum(cfg), noise_variances(cfg), _eig_offset(cfg, x)
    return float(np.sum(c) / np.sum(h * h * e * e))


def pareto_fit(S, E) -> dict:
    """Fit (S/S_min - 1)(E/E_min - 1) = 1 to (steps, examples) pairs; B_crit = E_min / S_min.

    The relation is equivalent to S_min / S + E_min / E = 1, linear in (S_min, E_min): solved
    by least squares.
    """
    S, E = np.asarray(S, np.float64), np.asarray(E, np.float64)
    require(S.shape == E.shape and S.size >= 2, "S, E", "arrays of equal length >= 2", S.shape)
    require(bool(np.all(S > 0) and np.all(E > 0)), "S, E", "positive", (S, E))
    A = np.stack([1.0 / S, 1.0 / E], axis=1)
    (s_min, e_min), *_ = np.linalg.lstsq(A, np.ones_like(S), rcond=None)
    return {"s_min": float(s_min), "e_min": float(e_min), "b_crit": float(e_min / s_min)}


# ---------------------------------------------------------------------------------------------
# 3-4. Noise-dominated Adam
# ---------------------------------------------------------------------------------------------

def _require_adam(opt: OptimConfig) -> None:
    require(opt.name == "adam", "optimizer", "adam (these are Adam predictions)", opt.name)


def _lr(opt: OptimConfig, lr0, batch) -> float:
    return float(lr_for_batch(lr0, batch, opt.b0, opt.lr_rule))


def adam_failure_samples(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch) -> dict:
    """Predicted failure clock N_fail (samples) of Adam on the drift block.

    Every drift coordinate sees g = -b + N(0, c_d / B), so Adam's second moment tracks
    E[g^2] = b^2 + c_d / B and its mean step is lr b / (sqrt(c_d / B + b^2) + eps) (bias-correction
    transients and the noise in m and v ignored). `samples` = B D* / step is this smooth form;
    `leading` is its noise-dominated limit D* sqrt(c_d B0) / (lr0 b) (B / B0)^(1/2 - p): flat in B
    for the sqrt rule (p = 1/2), ~ sqrt(B) fixed, ~ 1/sqrt(B) linear. regime = "noise" if
    B < c_d / b^2 else "signal" (sign descent: step ~ lr, N_fail ~ B / lr).

    drift_stat "mean": D* = threshold (the block moves together). drift_stat "norm": the block's
    norm also grows from the random walk of each coordinate, E|d|^2 ~ Dd (n^2 s^2 + n s_n^2) after
    n updates with mean step s and per-update noise step s_n = lr sqrt(c_d/B) / sqrt(v); we solve
    that for n, so N_fail is shorter than threshold / (sqrt(Dd) s) by the random-walk part.
    """
    _require_adam(opt)
    require_positive("lr0", lr0)
    require(float(batch) >= 1, "batch", "a number >= 1", batch)
    require(cfg.drift_dim >= 1 and cfg.drift_bias > 0, "drift_bias",
            "> 0 with drift_dim >= 1 (no drift, no failure clock)", cfg.drift_bias)
    B, b, cd, thr = float(batch), cfg.drift_bias, cfg.drift_noise, cfg.drift_threshold
    lr, p = _lr(opt, lr0, B), RULE_EXPONENT[opt.lr_rule]
    eps = companions(opt, B)[2]
    root_v = math.sqrt(cd / B + b * b)
    step = lr * b / (root_v + eps)
    leading_n = thr * math.sqrt(cd * opt.b0) / (lr0 * b) * (B / opt.b0) ** (0.5 - p)
    if cfg.drift_stat == "mean":
        n_upd = thr / step
    else:
        Dd = cfg.drift_dim
        noise_step2 = (lr * math.sqrt(cd / B) / (root_v + eps)) ** 2
        # Dd (s^2 n^2 + s_n^2 n) = thr^2
        a_, b_, c_ = Dd * step * step, Dd * noise_step2, -thr * thr
        n_upd = (-b_ + math.sqrt(b_ * b_ - 4 * a_ * c_)) / (2 * a_)
        leading_n = leading_n / math.sqrt(Dd)  # drift-only part of the norm
    return {"samples": B * n_upd, "updates": n_upd, "leading": leading_n,
            "regime": "noise" if B < cd / (b * b) else "signal"}


def linear_failure_samples(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch) -> float:
    """Predicted failure clock of SGD / heavy-ball momentum on the drift block (drift_stat "mean").

    The drift gradient -b + noise moves the block's mean by lr b / (1 - mu) per update once the
    momentum has built up (the first ~1/(1-mu) updates move less; ignored), so
    N_fail = B * threshold (1 - mu) / (lr b): ~ B^(1-p) under lr = lr0 (B/B0)^p.
    """
    mu = _require_linear(opt)
    require_positive("lr0", lr0)
    require(cfg.drift_dim >= 1 and cfg.drift_bias > 0, "drift_bias",
            "> 0 with drift_dim >= 1 (no drift, no failure clock)", cfg.drift_bias)
    require(cfg.drift_stat == "mean", "drift_stat", "mean for this prediction", cfg.drift_stat)
    B = float(batch)
    return B * cfg.drift_threshold * (1.0 - mu) / (_lr(opt, lr0, B) * cfg.drift_bias)


def critical_batch_curvature(cfg: QuadraticConfig, opt: OptimConfig, lr0):
    """B where lr_eff(B) h_max = 1 (the curvature mechanism), None if no B >= 1 reaches it.

    Adam (noise-dominated): lr_eff = lr(B) sqrt(B / c_1), c_1 = sigma^2 h_max^gamma, the effective
    SGD step on the stiffest coordinate; with lr(B) = lr0 (B/B0)^p this solves to
    B = (sqrt(c_1) B0^p / (lr0 h_max))^(1 / (p + 1/2)) for every rule (fixed: lr_eff ~ sqrt(B)).
    SGD: lr_eff = lr(B), momentum: lr(B) / (1 - mu); never reached under the fixed rule.
    """
    require_positive("lr0", lr0)
    h1 = spectrum(cfg)[0]
    p = RULE_EXPONENT[opt.lr_rule]
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
                    n_steps: int, stop_at=None):
    """Mean-field Adam on the progress block: (loss_T, mean x at the last step, steps run).

    Per eigen-coordinate, m = b1 m + (1 - b1) g and x -= P_t m / (1 - b1^t) with a deterministic
    preconditioner P_t = lr / (sqrt(v_t / (1 - b2^t)) + eps), v an EMA of E[g^2] = h^2 E[x^2] + c/B.
    With P_t fixed the update is linear in (x, m), so means and second moments are exact given
    P_t; only v's fluctuations are dropped. Stops at the first step with E[L] <= stop_at.
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
    t = 0
    for t in range(1, n_steps + 1):
        v = b2 * v + (1 - b2) * (h * h * Sxx + q)
        P = lr / (np.sqrt(v / (1 - b2**t)) + eps) / (1 - b1**t)
        a11, a12, a21 = 1 - P * (1 - b1) * h, -P * b1, (1 - b1) * h
        n1, n2 = -P * (1 - b1), 1 - b1
        mx, mm = a11 * mx + a12 * mm, a21 * mx + b1 * mm
        Sxx, Sxm, Smm = (a11 * a11 * Sxx + 2 * a11 * a12 * Sxm + a12 * a12 * Smm + n1 * n1 * q,
                         a11 * a21 * Sxx + (a11 * b1 + a12 * a21) * Sxm + a12 * b1 * Smm
                         + n1 * n2 * q,
                         a21 * a21 * Sxx + 2 * a21 * b1 * Sxm + b1 * b1 * Smm + n2 * n2 * q)
        loss[t] = 0.5 * np.sum(h * Sxx)
        if stop_at is not None and loss[t] <= stop_at:
            break
        if t > _PLATEAU_AFTER and t % 1000 == 0 and loss[t] > (1 - 1e-3) * loss[t - 1000]:
            break  # at its noise floor: E[L] will not reach stop_at
    return loss[: t + 1], mx, t


def adam_progress_samples(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch,
                          budget: int = 10**6):
    """Mean-field prediction of Adam's progress clock N_prog = B x first t with E[L_t] <= target.

    None if the expected loss stays above the target within budget samples (its noise floor
    sits above the target: the simulation then crosses only through fluctuations).
    """
    _require_adam(opt)
    require_positive("lr0", lr0)
    B = float(batch)
    target = cfg.target * initial_loss(cfg)
    loss, _, t = _adam_meanfield(cfg, opt, _lr(opt, lr0, B), B, int(budget // B), target)
    return float(B * t) if loss[-1] <= target else None


# 20% slower than noise-dominated Adam: sqrt(1 + B / B_s) = 1.2 at B = 0.44 B_s.
SATURATION_FACTOR = 1.2**2 - 1.0


def critical_batch_saturation(cfg: QuadraticConfig, opt: OptimConfig, lr0,
                              method: str = "meanfield", b_ref=None, delta: float = 0.2,
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
    loss, mx, _ = _adam_meanfield(cfg, opt, _lr(opt, lr0, B), B, int(budget // B), target)
    if loss[-1] > target:
        return None
    if method != "meanfield":
        q = rotation(cfg)
        x = mx if q is None else q @ mx
        bs = b_noise(cfg, x) if method == "noise" else b_simple(cfg, x)
        return float(((1 + delta) ** 2 - 1) * bs)
    n_ref = adam_progress_samples(cfg, opt, lr0, B, budget)
    prev_b, prev_r = B, 1.0
    for k in range(1, 13):
        b = B * 2.0**k
        n = adam_progress_samples(cfg, opt, lr0, b, max(budget, int(4 * b * n_ref / B)))
        r = math.inf if n is None else n / n_ref
        if r >= 1 + delta:
            if not math.isfinite(r):
                return b
            frac = (1 + delta - prev_r) / (r - prev_r)
            return float(prev_b * (b / prev_b) ** frac)
        prev_b, prev_r = b, r
    return None


def critical_batch_mechanism(cfg: QuadraticConfig, opt: OptimConfig, lr0) -> dict:
    """Which mechanism sets Adam's critical batch: the one predicting the smaller batch.

    Returns {mechanism: "curvature" | "saturation" | None, batch, curvature, saturation}
    (a None estimate means that mechanism never bites).
    """
    cur = critical_batch_curvature(cfg, opt, lr0)
    sat = critical_batch_saturation(cfg, opt, lr0)
    key = lambda v: math.inf if v is None else v
    if cur is None and sat is None:
        mech, batch = None, None
    elif key(sat) <= key(cur):
        mech, batch = "saturation", sat
    else:
        mech, batch = "curvature", cur
    return {"mechanism": mech, "batch": batch, "curvature": cur, "saturation": sat}
