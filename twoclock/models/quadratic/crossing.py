"""The exact first crossing of the expected loss: first t >= 1 with E[L_t] <= target.

E[L_t] need not be monotone (heavy-ball momentum oscillates across the target; SGD can dip below
its floor and rise again), so a doubling-and-bisection search can return a later crossing. This
is a branch-and-bound scan on the closed form: per configuration, a block [t0, t1] is skipped
when a lower bound of E[L_t] over the block exceeds the target, the block doubles after a skip
and halves otherwise, and blocks of _K_EXACT steps are evaluated step by step. The bound, per
coordinate, is Var x_{t0} (the variance only grows) plus a lower bound of the squared mean:

- SGD and real positive roots (incl. the double root): m_t^2 is monotone, so min at an end;
- complex roots r1, r2 = conj(r1), |r1|^2 = mu: m_t / m_0 = 2|A| mu^(t/2) cos(theta t + phi),
  A = r1 (1 - r2) / (r1 - r2), theta = arg r1; bounded by 4|A|^2 mu^t1 min cos^2 over the phases;
- real negative roots (lr h > 1 + mu): 0.

A block whose bound is not finite (overflow: a diverging run) is skipped, as its loss is huge.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

from twoclock.config import OptimConfig, require, require_int
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.moments import (_DOUBLE_ROOT_GAP, _arrays, _check_step, _flat,
                                               _require_linear)
from twoclock.models.quadratic.problem import initial_loss

_K_EXACT = 16  # steps evaluated one by one once the bound no longer separates
_K_MAX = 2**20


def _modes(h, c, s0, lr, batch, mu, sgd: bool):
    """Per-coordinate modes of E[x_t^2]: (mean part, variance part) coefficients and rates.

    Both parts have the form alpha + e^{l1 t} (u1 cos(w t) + w1 sin(w t) + p1 t + p2 t^2)
    + u2 e^{l2 t} + u3 mu^t (the closed form of moments._coord_moments, expanded once so
    that stepping t costs no transcendental). Arrays broadcast to [N, D].
    """
    q = lr * lr * c / batch
    z = jnp.zeros(jnp.broadcast_shapes(h.shape, lr.shape))
    if sgd:
        lam = (1.0 - lr * h) ** 2
        near = jnp.abs(1.0 - lam) < 1e-12
        den = jnp.where(near, 1.0, 1.0 - lam)
        mean = dict(u1=s0 + z)
        var = dict(al=jnp.where(near, 0.0, q / den), u1=jnp.where(near, 0.0, -q / den),
                   p1=jnp.where(near, q, 0.0))
        rates = dict(l1=jnp.where(near, 0.0, jnp.log(lam)), w=z, l2=z, l3=z)
        return mean, var, rates
    a = 1.0 + mu - lr * h
    disc = jnp.sqrt(a * a / 4.0 - mu + 0.0j)
    r1, r2 = a / 2.0 + disc, a / 2.0 - disc
    double = jnp.abs(r1 - r2) < _DOUBLE_ROOT_GAP * (1.0 - jnp.sqrt(mu))
    cplx = (jnp.abs(jnp.imag(r1)) > 0) & ~double
    d2 = jnp.where(double, 1.0, r1 - r2) ** 2
    A, B = r1 * (1.0 - r2) / jnp.sqrt(d2), -r2 * (1.0 - r1) / jnp.sqrt(d2)
    g1, g2 = -q * r1 * r1 / (d2 * (1.0 - r1 * r1)), -q * r2 * r2 / (d2 * (1.0 - r2 * r2))
    al = -(g1 + g2) - 2.0 * q * mu / (d2 * (1.0 - mu))
    dv, dm = 2.0 * q * mu / (d2 * (1.0 - mu)), 2.0 * s0 * A * B
    m1, m2 = s0 * A * A, s0 * B * B
    # double root r = a / 2: m_t / m_0 = r^t (k1 t + k0), Var = q sum_{j<t} (j+1)^2 r^{2j}
    r = jnp.where(double, a / 2.0, 0.5)
    x = r * r
    k1, k0 = (1.0 - lr * h) / r - mu / (r * r), mu / (r * r)
    pick = lambda dbl, cx, re: jnp.where(double, dbl, jnp.where(cplx, cx, re))
    mean = dict(u1=pick(s0 * k0 * k0, 2 * jnp.real(m1), jnp.real(m1)),
                w1=pick(0.0, -2 * jnp.imag(m1), 0.0),
                p1=pick(2 * s0 * k0 * k1, 0.0, 0.0), p2=pick(s0 * k1 * k1, 0.0, 0.0),
                u2=pick(0.0, 0.0, jnp.real(m2)), u3=pick(0.0, jnp.real(dm), jnp.real(dm)))
    var = dict(al=pick(q * (1 + x) / (1 - x) ** 3, jnp.real(al), jnp.real(al)),
               u1=pick(-q * (1 + x) / (1 - x) ** 3, 2 * jnp.real(g1), jnp.real(g1)),
               w1=pick(0.0, -2 * jnp.imag(g1), 0.0),
               p1=pick(-2 * q / (1 - x) ** 2, 0.0, 0.0), p2=pick(-q / (1 - x), 0.0, 0.0),
               u2=pick(0.0, 0.0, jnp.real(g2)), u3=pick(0.0, jnp.real(dv), jnp.real(dv)))
    lmu = jnp.log(mu)
    rates = dict(l1=pick(jnp.log(x), lmu, jnp.log(jnp.abs(r1) ** 2)),
                 w=pick(0.0, 2.0 * jnp.angle(r1), 0.0),
                 l2=pick(0.0, 0.0, jnp.log(jnp.abs(r2) ** 2)), l3=lmu + z)
    return mean, var, rates


def _basis(rates, t):
    """(e1, cos, sin, e2, e3) at t (broadcast against the rates)."""
    w = rates["w"] * t
    return (jnp.exp(rates["l1"] * t), jnp.cos(w), jnp.sin(w), jnp.exp(rates["l2"] * t),
            jnp.exp(rates["l3"] * t))


def _combine(k, t, e1, cs, sn, e2, e3):
    g = lambda n: k.get(n, 0.0)
    return (g("al") + e1 * (g("u1") * cs + g("w1") * sn + g("p1") * t + g("p2") * t * t)
            + g("u2") * e2 + g("u3") * e3)


def _min_cos2(lo, hi):
    """min of cos^2 over the phase interval [lo, hi] (hi >= lo)."""
    k = jnp.ceil((lo - math.pi / 2) / math.pi)  # first zero of cos at or after lo
    has_zero = (math.pi / 2 + k * math.pi <= hi) | (hi - lo >= math.pi)
    return jnp.where(has_zero, 0.0, jnp.minimum(jnp.cos(lo) ** 2, jnp.cos(hi) ** 2))


def _first_crossing(h, c, s0, w, lr, batch, target, mu, T, sgd: bool):
    """First t in [1, T] with E[L_t] <= target per lane (0 if none), [N] int64.

    h, c, s0 are [D] (padded), w [D] is 1 on real coordinates and 0 on padding; mu is 0 if sgd.
    """
    N = lr.shape[0]
    h_D, c_D, s0_D, real_D = h[None, :], c[None, :], s0[None, :], w[None, :] > 0
    lr_N1, b_N1 = lr[:, None], batch[:, None]
    mean, var, rates = _modes(h_D, c_D, s0_D, lr_N1, b_N1, mu, sgd)

    def loss(x_ND):  # 1/2 sum_i h_i x_i over the real coordinates, [N]
        return 0.5 * jnp.sum(jnp.where(real_D, h_D * x_ND, 0.0), axis=1)

    if sgd:
        kind_ND = jnp.zeros((N, h.shape[0]), jnp.int32)  # 0: monotone mean
        amp2_ND = phi_ND = theta_ND = jnp.zeros((N, h.shape[0]))
    else:
        a = 1.0 + mu - lr_N1 * h_D
        disc = jnp.sqrt(a * a / 4.0 - mu + 0.0j)
        r1, r2 = a / 2.0 + disc, a / 2.0 - disc
        double = jnp.abs(r1 - r2) < _DOUBLE_ROOT_GAP * (1.0 - jnp.sqrt(mu))
        cplx = (jnp.abs(jnp.imag(r1)) > 0) & ~double
        kind_ND = jnp.where(cplx, 2, jnp.where(a > 0, 0, 1)).astype(jnp.int32)
        A = r1 * (1.0 - r2) / jnp.where(cplx, r1 - r2, 1.0)
        amp2_ND, phi_ND, theta_ND = 4.0 * jnp.abs(A) ** 2 * s0_D, jnp.angle(A), jnp.angle(r1)

    def moments(t_N):
        t = t_N[:, None]
        bs = _basis(rates, t)
        return _combine(mean, t, *bs), _combine(var, t, *bs)

    def lower_bound(t0, t1):
        m2a, va = moments(t0)
        m2b, _ = moments(t1)
        mono = jnp.minimum(m2a, m2b)
        lo, hi = theta_ND * t0[:, None] + phi_ND, theta_ND * t1[:, None] + phi_ND
        osc = amp2_ND * mu ** t1[:, None] * _min_cos2(lo, hi)
        m_low = jnp.where(kind_ND == 0, mono, jnp.where(kind_ND == 2, osc, 0.0))
        lb, floor = loss(va + m_low), loss(va)  # E[L_t] >= this for every t >= t0
        return jnp.where(jnp.isfinite(lb), lb, jnp.inf), jnp.where(jnp.isnan(floor), jnp.inf, floor)

    steps = _basis(rates, 1.0)  # one-step factors: e1, e2, e3 multiply, (cos, sin) rotate

    def exact(t0):
        t = t0[:, None]
        e1, cs, sn, e2, e3 = _basis(rates, t)

        def step(_, s):  # one step without a transcendental
            hit, first, t, e1, cs, sn, e2, e3 = s
            L = loss(_combine(mean, t, e1, cs, sn, e2, e3) + _combine(var, t, e1, cs, sn, e2, e3))
            now = (L <= target) & (t[:, 0] <= T) & ~hit
            first = jnp.where(now, t[:, 0], first)
            e1, e2, e3 = e1 * steps[0], e2 * steps[3], e3 * steps[4]
            cs, sn = cs * steps[1] - sn * steps[2], sn * steps[1] + cs * steps[2]
            return hit | now, first, t + 1.0, e1, cs, sn, e2, e3

        s = jax.lax.fori_loop(0, _K_EXACT, step, (jnp.zeros(N, bool), t0, t, e1, cs, sn, e2, e3))
        return s[0], s[1]

    def cond(s):
        return ~jnp.all(s[3])

    def body(s):
        t0, K, hit, done = s
        t1 = jnp.minimum(t0 + K - 1.0, T)
        lb, floor = lower_bound(t0, t1)
        skip = lb > target
        scan = ~skip & (K <= _K_EXACT) & ~done
        found, t_hit = jax.lax.cond(jnp.any(scan), exact, lambda t: (jnp.zeros(N, bool), t), t0)
        found = found & scan
        hit = jnp.where(found, t_hit, hit)
        t0n = jnp.where(skip, t1 + 1.0, jnp.where(scan, t0 + _K_EXACT, t0))
        Kn = jnp.where(skip, jnp.minimum(2.0 * K, _K_MAX),
                       jnp.where(scan, 2.0 * _K_EXACT, jnp.maximum(K / 2.0, _K_EXACT)))
        done = done | found | (t0n > T) | (floor > target)
        return (jnp.where(done, t0, t0n), jnp.where(done, K, Kn), hit, done)

    init = (jnp.ones(N, lr.dtype), jnp.full(N, float(_K_EXACT), lr.dtype), jnp.zeros(N, lr.dtype),
            jnp.zeros(N, bool))
    _, _, hit, _ = jax.lax.while_loop(cond, body, init)
    return hit.astype(jnp.int64)


_first_crossing_jit = jax.jit(_first_crossing, static_argnums=9)


def _padded(cfg: QuadraticConfig):
    """(h, c, s0, w): the eigen-arrays padded to a power of two >= 8 by repeating coordinate 0
    with weight w = 0, so that dims share compilations."""
    h, c, s0 = (np.asarray(a) for a in _arrays(cfg))
    n = max(8, 1 << (cfg.dim - 1).bit_length())
    pad = lambda a: np.concatenate([a, np.full(n - a.size, a[0])])
    return (jnp.asarray(pad(h)), jnp.asarray(pad(c)), jnp.asarray(pad(s0)),
            jnp.asarray(np.arange(n) < cfg.dim, np.float64))


def steps_to_target_many(cfg: QuadraticConfig, opt: OptimConfig, batches, lrs,
                         max_steps: int) -> np.ndarray:
    """steps_to_target for arrays of batches and lrs (broadcast); int64 of the broadcast shape."""
    mu = _require_linear(opt)
    require_int("max_steps", max_steps)
    require(np.all(np.asarray(lrs) > 0), "lr", "> 0", lrs)
    require(np.all(np.asarray(batches) >= 1), "batch", ">= 1", batches)
    target = cfg.target * initial_loss(cfg)
    with jax.enable_x64(True):
        (b, l), shape = _flat(batches, lrs)
        out = _first_crossing_jit(*_padded(cfg), l, b, target, mu, float(max_steps),
                                  opt.name == "sgd")
        return np.asarray(out).reshape(shape)


def steps_to_target(cfg: QuadraticConfig, opt: OptimConfig, batch, lr, max_steps: int) -> int:
    """First update t >= 1 with E[L_t] <= target * L0 (exactly, on the closed form), 0 if none
    by max_steps."""
    _check_step(batch, lr)
    return int(steps_to_target_many(cfg, opt, batch, lr, max_steps))
