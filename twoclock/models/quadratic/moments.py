"""Exact moments of SGD and heavy-ball momentum on the noisy quadratic model.

Per eigen-coordinate with curvature h, per-sample noise variance c and batch B:

    x_{t+1} = (1 + mu - lr h) x_t - mu x_{t-1} - lr xi_t,   xi_t ~ N(0, c / B),   x_{-1} = x_0,

so x_1 = (1 - lr h) x_0 as optax's heavy ball (v = g + mu v, theta -= lr v) from zero momentum;
mu = 0 is SGD. Every x_t is Gaussian; E[L_t] = 1/2 sum_i h_i (m_{i,t}^2 + Var x_{i,t}).
Everything here is float64.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

from twoclock.config import OptimConfig, require, require_int, require_positive
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.problem import initial_offset, noise_variances, rotation, spectrum

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
