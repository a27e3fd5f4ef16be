"""The failure clock on the drift block: Adam's exact step law, its first passage, and SGD/momentum.

Every drift coordinate sees g_t = mu + s z_t, mu = -b, s^2 = c_d / B, i.i.d. and independent of
the parameters, so Adam's step -lr m_hat_t / (sqrt(v_hat_t) + eps) has a law fixed in advance:
m_hat = sum_k w_k g_k and v_hat = sum_j u_j g_j^2 with the bias-corrected EMA weights
w_k = (1 - b1) b1^(t-k) / (1 - b1^t), u_j = (1 - b2) b2^(t-j) / (1 - b2^t). With
v^(-1/2) = pi^(-1/2) int_0^inf lam^(-1/2) e^(-lam v) dlam and Gaussian g,

    E[m_hat e^(-lam v_hat)] = prod_j E[e^(-lam u_j g^2)] * sum_k w_k mu / (1 + 2 lam u_k s^2),
    log E[e^(-a g^2)] = -1/2 log(1 + 2 a s^2) - a mu^2 / (1 + 2 a s^2),

so E[m_hat / sqrt(v_hat)] (warm-up, the noise in v and its correlation with m included) is one
quadrature per update: direct sums for t <= _T_DIRECT, their power series in lam u (closed-form
geometric sums) after. eps enters as sqrt(v) / (sqrt(v) + eps) at the typical v.
"""
import math

import numpy as np
from scipy.special import log_ndtr, ndtr, roots_legendre

from twoclock.config import OptimConfig, require, require_int, require_positive
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.moments import _require_linear
from twoclock.scaling import companions

_T_DIRECT = 256  # updates summed term by term; later ones by the series in lam u (u <= 1/256)
_N_SERIES = 10
_Y_MAX = 0.5  # series region: 2 lam s^2 u(t) <= _Y_MAX (e^(-lam v) < e^(-60) beyond it)
# ... and lam (mu^2 + s^2) <= _LAM_V: past update 256, v_hat >= 0.3 E[v_hat] but for a 5-sd
# event, so e^(-lam v) < e^(-60) beyond; with little noise this bound is the tighter one by far
_LAM_V = 200.0
_NODES, _WEIGHTS = roots_legendre(64)
_BGK_BETA = 0.5825971579390106  # -zeta(1/2) / sqrt(2 pi)



def _require_drift(cfg: QuadraticConfig) -> None:
    require(cfg.drift_dim >= 1 and cfg.drift_bias > 0, "drift_bias",
            "> 0 with drift_dim >= 1 (no drift, no failure clock)", cfg.drift_bias)


def _psi(y, r):
    """log E[e^(-a g^2)] with y = 2 a s^2, r = mu^2 / (2 s^2)."""
    return -0.5 * np.log1p(y) - r * y / (1.0 + y)


def _direct(t_T, b1, b2, mu, s2, block: int = 32):
    """(E[m_hat / sqrt(v_hat)], E[m_hat^2 / v_hat]) at updates t_T <= _T_DIRECT by direct sums,
    `block` updates at a time (each row is independent; this bounds the [T, Q, K] temporaries)."""
    parts = [_direct_block(t_T[i:i + block], b1, b2, mu, s2) for i in range(0, len(t_T), block)]
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def _direct_block(t_T, b1, b2, mu, s2):
    t = t_T.astype(np.float64)[:, None]
    k = np.arange(_T_DIRECT, dtype=np.float64)[None, :]  # age t - j; ages >= t are masked out
    live = k < t
    u = np.where(live, (1 - b2) * b2**k / (1 - b2**t), 0.0)  # [T, K]
    w = np.where(live, (1 - b1) * b1**k / (1 - b1**t), 0.0)
    # lam = kappa tan(phi)^2 maps [0, inf) to [0, pi/2): smooth even for a heavy-tailed v_hat ~ g_1^2
    phi = (_NODES + 1) * math.pi / 4
    kappa = 1.0 / (mu * mu + s2)
    lam = kappa * np.tan(phi) ** 2
    y = 2.0 * lam[None, :, None] * s2 * u[:, None, :]  # [T, Q, K]
    G = np.exp(np.sum(_psi(y, mu * mu / (2 * s2)), axis=2))
    M1 = mu * np.sum(w[:, None, :] / (1.0 + y), axis=2)  # tilted mean of m_hat
    M2 = s2 * np.sum(w[:, None, :] ** 2 / (1.0 + y), axis=2)  # tilted variance of m_hat
    dphi = _WEIGHTS * math.pi / 4 / np.cos(phi) ** 2
    r = np.sum(dphi * 2 * math.sqrt(kappa) / math.sqrt(math.pi) * G * M1, axis=1)  # x = sqrt(lam)
    r2 = np.sum(dphi * 2 * kappa * np.tan(phi) * G * (M1 * M1 + M2), axis=1)  # d lam
    return r, r2


def _series(t_T, b1, b2, mu, s2, block: int = 512):
    """The same for an array of updates t > _T_DIRECT, by the power series in 2 lam s^2 u,
    `block` updates at a time (bounds the [T, Q, n] temporaries)."""
    parts = [_series_block(t_T[i:i + block], b1, b2, mu, s2) for i in range(0, len(t_T), block)]
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def _series_block(t_T, b1, b2, mu, s2):
    t = t_T.astype(np.float64)[:, None]
    u1 = (1 - b2) / (1 - b2**t)  # largest v weight
    w1 = (1 - b1) / (1 - b1**t)
    n = np.arange(1, _N_SERIES + 1, dtype=np.float64)[None, :]
    geo = lambda r: (1 - r**t) / (1 - r)  # sum_{i<t} r^i
    S_n = u1**n * geo(b2**n)  # sum_j u_j^n, [T, n]
    W_n = w1 * u1**n * geo(b1 * b2**n)  # sum_k w_k u_k^n
    W2_n = w1 * w1 * u1**n * geo(b1 * b1 * b2**n)  # sum_k w_k^2 u_k^n
    W2_0 = w1 * w1 * geo(b1 * b1)  # [T, 1]
    s_max = np.sqrt(np.minimum(_Y_MAX / (2 * s2 * u1), _LAM_V / (mu * mu + s2)))  # lam = x^2
    x = (_NODES[None, :] + 1) / 2 * s_max  # [T, Q]
    dx = _WEIGHTS[None, :] * s_max / 2
    powers = np.cumprod(np.repeat((2 * s2 * x * x)[:, :, None], _N_SERIES, axis=2), axis=2)
    # (2 lam s^2)^n, [T, Q, n]
    sign = (-1.0) ** n
    G = np.exp(np.sum(powers * (sign * (1 / (2 * n) + mu * mu / (2 * s2)) * S_n)[:, None, :],
                      axis=2))
    M1 = mu * (1.0 + np.sum(powers * (sign * W_n)[:, None, :], axis=2))
    M2 = s2 * (W2_0 + np.sum(powers * (sign * W2_n)[:, None, :], axis=2))
    r = np.sum(dx * 2 / math.sqrt(math.pi) * G * M1, axis=1)
    r2 = np.sum(dx * 2 * x * G * (M1 * M1 + M2), axis=1)
    return r, r2


def _ar1(x, b: float, block: int = 256):
    """y_k = x_k + b y_{k-1} (y_{-1} = 0) in float64: within blocks by a product with the
    powers of b, across blocks by carrying the last value (no scipy.signal import, whose
    memory alone would take the headline over its budget)."""
    n = len(x)
    X = np.concatenate([np.asarray(x, np.float64), np.zeros((-n) % block)]).reshape(-1, block)
    i = np.arange(block)
    P = np.tril(float(b) ** np.clip(i[:, None] - i[None, :], 0, None))  # b^(i-j), j <= i
    Y = X @ P.T
    decay, carry = float(b) ** (i + 1), 0.0
    for k in range(Y.shape[0]):
        Y[k] += carry * decay
        carry = Y[k, -1]
    return Y.ravel()[:n]


def adam_step_law(b1, b2, mu, s2, t_T):
    """(E[m_hat_t / sqrt(v_hat_t)], E[m_hat_t^2 / v_hat_t]) for updates t_T >= 1, float64 [T]."""
    t_T = np.asarray(t_T, np.int64)
    r_T, r2_T = np.empty(t_T.shape), np.empty(t_T.shape)
    small = t_T <= _T_DIRECT
    if np.any(small):
        r_T[small], r2_T[small] = _direct(t_T[small], b1, b2, mu, s2)
    if np.any(~small):
        r_T[~small], r2_T[~small] = _series(t_T[~small], b1, b2, mu, s2)
    return r_T, r2_T


def drift_path(b1, b2, mu, s2, lr, n):
    """(D_n, V_n): mean and variance of one drift coordinate after 1..n updates, [n] each.

    D is exact. V: the noise z_k of update k moves the coordinate by s z_k lr sum_{t>=k} w_{t,k}
    a_t, linear in z with the gain a_t = sd(step_t) / sd(m_hat_t) (1 / sqrt(v) once v has
    settled; the self-normalised sign-like steps of the warm-up otherwise).
    """
    t = np.arange(1, n + 1)
    r, r2 = adam_step_law(b1, b2, mu, s2, t)
    var_m = s2 * ((1 - b1) / (1 - b1**t)) ** 2 * (1 - b1 ** (2 * t)) / (1 - b1 * b1)
    a = np.sqrt(np.maximum(r2 - r * r, 0.0) / var_m)
    e = lr * a * (1 - b1) / (1 - b1**t)
    c = _ar1(e[::-1], b1)[::-1]  # c_k = sum_{t>=k} b1^(t-k) e_t (to the end)
    # truncated at n: c_k(n) = c_k - b1^(n+1-k) c_{n+1}; sum_k c_k(n)^2 in closed form
    c_next = np.append(c[1:], 0.0)
    A = b1 * _ar1(c, b1)  # A_n = sum_{k<=n} b1^(n+1-k) c_k
    Bs = b1 * b1 * (1 - b1 ** (2 * t)) / (1 - b1 * b1)
    # a sum of squares: clipped at 0 where it cancels to rounding (noise near 0)
    V = s2 * np.maximum(np.cumsum(c * c) - 2 * c_next * A + c_next**2 * Bs, 0.0)
    return -lr * np.cumsum(r), V


def _crossed(D, V, thr):
    """P(a Brownian motion with mean path D and variance V has reached thr): the first-passage
    law of a constant drift, evaluated on the accumulated mean and variance."""
    with np.errstate(divide="ignore", invalid="ignore"):  # V = 0 is handled below
        sd = np.sqrt(V)
        refl = np.exp(np.minimum(2 * thr * D / V + log_ndtr(-(D + thr) / sd), 0.0))
        p = ndtr((D - thr) / sd) + refl
    return np.where(V > 0, p, np.asarray(D >= thr, float))  # no noise: the path itself


def _rice_excess(mu, v):
    """E[u] - mu for u at an upcrossing (Rice: density u N(u; mu, v^2) on u > 0), u's law
    N(mu, v^2): how far the velocity at a crossing exceeds its mean."""
    with np.errstate(divide="ignore", invalid="ignore"):  # v = 0: no noise, no excess
        a = mu / v
        P, phi = ndtr(a), np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
        ex = v * ((a * a + 1) * P + a * phi) / (a * P + phi) - mu
    return np.where(v > 0, ex, 0.0)


def crossed_per_update(D_N, V_N, thr, b1: float = 0.0):
    """P(the walk has reached thr by update n), n = 1..N, for a walk with mean D_N and variance
    V_N looked at once per update, its steps an EMA (weight b1) of white noise: the Brownian law
    with the barrier moved out by (Wald's identity) the mean overshoot plus the displacement the
    EMA still owes at the crossing, b1 / (1 - b1) times the step's excess over its mean. The
    overshoot is beta sd_1, sd_1 the walk's sd over one update (the continuity correction of
    Broadie, Glasserman and Kou, beta = -zeta(1/2) / sqrt(2 pi)); the step's excess is that of
    an upcrossing (Rice) with the step's law N(dD, sd_1^2 (1 - b1) / (1 + b1))."""
    step_sd = np.sqrt(np.maximum(np.diff(V_N, prepend=0.0), 0.0))
    owed = 0.0
    if b1 > 0:
        v = step_sd * math.sqrt((1 - b1) / (1 + b1))
        owed = b1 / (1 - b1) * _rice_excess(np.diff(D_N, prepend=0.0), v)
    return _crossed(D_N, V_N, thr + _BGK_BETA * step_sd + owed)


def adam_failure_samples(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch,
                         max_updates: int = 10**7) -> dict:
    """Predicted failure clock N_fail (samples) of Adam on the drift block.

    The mean drift after n updates is D(n) = lr sum_{t<=n} E[-m_hat_t / sqrt(v_hat_t)] (the exact
    step law above, warm-up and the noise in v included) and its variance per coordinate
    V(n) = sum_t (lr s E[v_hat_t^(-1/2)])^2 (the random walk of the noise, m's EMA weights
    summing to 1). drift_stat "mean": the block's mean (variance V / Dd) first reaches the
    threshold; its median is where the Brownian first-passage law with this mean and variance
    reaches 1/2, the barrier moved out by the overshoot of a walk looked at once per update and
    the displacement beta1's momentum still owes at the crossing (method "first-passage").
    drift_stat "norm": first n with Dd (D^2 + V) >= threshold^2 (method "mean-field").
    `leading` is the noise-dominated limit D* sqrt(c_d B0) / (lr0 b) (B / B0)^(1/2 - p): flat
    under the sqrt rule (p = 1/2), ~ sqrt(B) fixed, ~ 1/sqrt(B) linear. regime "noise" if
    B < c_d / b^2 else "signal" (sign descent).
    """
    require(opt.name == "adam", "optimizer", "adam (these are Adam predictions)", opt.name)
    require_positive("lr0", lr0)
    require(float(batch) >= 1, "batch", "a number >= 1", batch)
    require_int("max_updates", max_updates)
    _require_drift(cfg)
    B, b, cd = float(batch), cfg.drift_bias, cfg.drift_noise
    thr, Dd = cfg.drift_threshold, cfg.drift_dim
    lr, p = float(opt.lr(lr0, B)), opt.exponent
    b1, b2, eps = companions(opt, B)
    mu, s2 = -b, cd / B
    shrink = 1.0 / (1.0 + eps / math.sqrt(b * b + s2))
    leading_n = thr * math.sqrt(cd * opt.b0) / (lr0 * b) * (B / opt.b0) ** (0.5 - p)
    # a first window twice the noiseless crossing, doubled until it holds one, up to max_updates
    n = min(int(2 * thr / (lr * b / math.sqrt(b * b + s2))) + 64, max_updates)
    n_upd = None
    while True:
        D, V = drift_path(b1, b2, mu, s2, lr * shrink, n)
        # the engine looks at the drift once per update, the Brownian law continuously
        ok = (crossed_per_update(D, V / Dd, thr, b1) >= 0.5 if cfg.drift_stat == "mean"
              else Dd * (D**2 + V) >= thr * thr)
        if np.any(ok):
            n_upd = int(np.argmax(ok)) + 1
            break
        if n >= max_updates:
            break
        n = min(2 * n, max_updates)
    samples = None if n_upd is None else B * n_upd
    method = "first-passage" if cfg.drift_stat == "mean" else "mean-field"
    if cfg.drift_stat == "norm":
        leading_n = leading_n / math.sqrt(Dd)  # drift-only part of the norm
    return {"samples": samples, "updates": n_upd, "leading": leading_n, "method": method,
            "regime": "noise" if B < cd / (b * b) else "signal"}


def linear_failure_samples(cfg: QuadraticConfig, opt: OptimConfig, lr0, batch) -> float:
    """Predicted failure clock of SGD / heavy-ball momentum on the drift block (drift_stat "mean").

    The drift gradient -b + noise moves the block's mean by lr b / (1 - mu) per update once the
    momentum has built up (the first ~1/(1-mu) updates move less; ignored), so
    N_fail = B * threshold (1 - mu) / (lr b): ~ B^(1-p) under lr = lr0 (B/B0)^p.
    """
    mu = _require_linear(opt)
    require_positive("lr0", lr0)
    _require_drift(cfg)
    require(cfg.drift_stat == "mean", "drift_stat", "mean for this prediction", cfg.drift_stat)
    B = float(batch)
    return B * cfg.drift_threshold * (1.0 - mu) / (float(opt.lr(lr0, B)) * cfg.drift_bias)
