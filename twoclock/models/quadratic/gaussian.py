"""Small Gaussian primitives of the first-passage filters: bivariate normal probabilities, the
moments of a truncated bivariate normal, the truncated normal's fit by its first two moments,
and inverses and PSD clips of tiny batched matrices (cheaper than LAPACK calls at these sizes).
"""
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr, ndtr
from scipy.special import log_ndtr as log_ndtr_np, roots_legendre

_GL_X, _GL_W = (np.asarray(a) for a in roots_legendre(20))


def upper_upper(h, k, rho):
    """P(X > h, Y > k) for standard normals with correlation rho, to about 1e-15 absolute
    (Genz, "Numerical computation of rectangular bivariate and trivariate normal and t
    probabilities", 2004: 20-point Gauss-Legendre on each of his two integrals).

    |rho| < 0.925: Q(h) Q(k) + 1/(2 pi) int_0^asin(rho) exp(-(h^2 - 2hk sin t + k^2) /
    (2 cos^2 t)) dt, a smooth integrand. |rho| >= 0.925: with s = sign(rho), the limit at
    rho = s minus 1/(2 pi) times an integral over a = sqrt(1 - rho^2) that is done in closed
    form for a fifth-order Taylor part and by quadrature for the rest. (The older form
    through acos(rho) has a boundary layer of width |h - k| at its end: 3e-5 off at
    h = 0.61, k = 0.62, rho = 0.89.)
    """
    hk, hs = h * k, (h * h + k * k) / 2.0
    # the polar integral, with rho clipped into its own branch (the other branch is selected)
    half = jnp.arcsin(jnp.clip(rho, -0.925, 0.925)) / 2.0
    sn = jnp.sin(half[None, :] * (_GL_X[:, None] + 1.0))
    f = jnp.exp((sn * hk[None, :] - hs[None, :]) / (1.0 - sn * sn))
    polar = ndtr(-h) * ndtr(-k) + half / (2.0 * jnp.pi) * jnp.sum(_GL_W[:, None] * f, axis=0)
    # near +-1
    s = jnp.where(rho < 0.0, -1.0, 1.0)
    shk, sk = s * hk, s * k
    a2 = jnp.maximum(1.0 - rho * rho, 1e-30)  # rho = +-1 exactly: the limit alone, below
    a = jnp.sqrt(a2)
    b2 = (h - sk) ** 2
    b = jnp.sqrt(b2)
    c, d = (4.0 - shk) / 8.0, (12.0 - shk) / 80.0
    t1 = c / 3.0 * (1.0 - d * b2)
    t2 = 1.0 - b2 * t1
    closed = (a * (t2 + a2 * t1 + c * d * a2 * a2) * jnp.exp(-(b2 / a2 + shk) / 2.0)
              - jnp.sqrt(2.0 * jnp.pi) * ndtr(-b / a) * b * t2 * jnp.exp(-shk / 2.0))
    xs = (a[None, :] * (_GL_X[:, None] + 1.0) / 2.0) ** 2  # the nodes x^2 on [0, a^2]
    rs = jnp.sqrt(1.0 - xs)
    ex = -(b2[None, :] / xs + shk[None, :]) / 2.0
    g = jnp.where(ex > -100.0, jnp.exp(jnp.maximum(ex, -100.0)) * (
        1.0 + c[None, :] * xs * (1.0 + 5.0 * d[None, :] * xs)
        - jnp.exp(-shk[None, :] * xs / (2.0 * (1.0 + rs) ** 2)) / rs), 0.0)
    rest = closed - a / 2.0 * jnp.sum(_GL_W[:, None] * g, axis=0)
    at_s = jnp.where(rho > 0.0, ndtr(-jnp.maximum(h, k)), jnp.maximum(ndtr(sk) - ndtr(h), 0.0))
    taylor = jnp.where(jnp.abs(rho) < 1.0, at_s - s * rest / (2.0 * jnp.pi), at_s)
    return jnp.clip(jnp.where(jnp.abs(rho) < 0.925, polar, taylor), 0.0, 1.0)


def upper_lower(a, b, rho):
    """P(Z1 > a, Z2 <= b) = P(Z1 > a, -Z2 > -b) for standard normals with correlation rho."""
    return upper_upper(a, -b, -rho)


def inv_small(P):
    """Inverse of [..., r, r] symmetric positive P, r <= 3, by cofactors (LAPACK calls on tiny
    batched matrices cost more than the whole update)."""
    if P.shape[-1] == 1:
        return 1.0 / P
    a, b, c = P[..., 0, 0], P[..., 0, 1], P[..., 0, 2]
    d, e, f = P[..., 1, 1], P[..., 1, 2], P[..., 2, 2]
    A, B, C = d * f - e * e, c * e - b * f, b * e - c * d
    D, E, F = a * f - c * c, b * c - a * e, a * d - b * b
    det = a * A + b * B + c * C
    return jnp.stack([jnp.stack([A, B, C], -1), jnp.stack([B, D, E], -1),
                      jnp.stack([C, E, F], -1)], -2) / det[..., None, None]


def psd_small(Q):
    """Q = L D L^T with the negative pivots of D set to 0 ([..., r, r], r <= 3): Q itself
    where it is positive semidefinite."""
    if Q.shape[-1] == 1:
        return jnp.maximum(Q, 0.0)
    safe = lambda x, d: jnp.where(d > 0, x / jnp.where(d > 0, d, 1.0), 0.0)
    d1 = jnp.maximum(Q[..., 0, 0], 0.0)
    l21, l31 = safe(Q[..., 1, 0], d1), safe(Q[..., 2, 0], d1)
    d2 = jnp.maximum(Q[..., 1, 1] - l21 * l21 * d1, 0.0)
    l32 = safe(Q[..., 2, 1] - l31 * l21 * d1, d2)
    d3 = jnp.maximum(Q[..., 2, 2] - l31 * l31 * d1 - l32 * l32 * d2, 0.0)
    one, zero = jnp.ones_like(d1), jnp.zeros_like(d1)
    L = jnp.stack([jnp.stack([one, zero, zero], -1), jnp.stack([l21, one, zero], -1),
                   jnp.stack([l31, l32, one], -1)], -2)
    return (L * jnp.stack([d1, d2, d3], -1)[..., None, :]) @ jnp.swapaxes(L, -1, -2)


def tn_edge(al):
    """(lambda, 1 - Var) of a standard normal truncated to > al: lambda = E[Z | Z > al]."""
    lam = jnp.exp(-0.5 * al * al - log_ndtr(-al)) / jnp.sqrt(2.0 * jnp.pi)
    return lam, lam * lam - al * lam


def _tn_table(n: int = 4001):
    """(x0, dx, al_n): al of the standard normal truncated to > al at n equally spaced
    x = log((E - al)^2 / Var - 1) from x0 (x falls from ~5 at al = -12 to ~-3.6 at al = 8;
    an evenly spaced x makes the look-up one gather, where a search costs a loop per update)."""
    al = np.linspace(-12.0, 8.0, 200_001)
    lam = np.exp(-0.5 * al * al - log_ndtr_np(-al)) / np.sqrt(2.0 * np.pi)
    x = np.log((lam - al) ** 2 / (1.0 + al * lam - lam * lam) - 1.0)[::-1]
    grid = np.linspace(x[0], x[-1], n)
    return float(grid[0]), float(grid[1] - grid[0]), np.interp(grid, x, al[::-1])


_TN_X0, _TN_DX, _TN_AL = _tn_table()


def tn_fit(excess2_over_var):
    """al of the standard normal truncated to > al whose (E - al)^2 / Var is the given ratio
    (decreasing in al from infinity to 1), interpolated in the table above (clipped to its
    ends: no truncation felt below -12; an exponential-like edge above 8)."""
    x = jnp.log(jnp.maximum(excess2_over_var - 1.0, 1e-300))
    pos = jnp.clip((x - _TN_X0) / _TN_DX, 0.0, _TN_AL.size - 1.000001)
    i = jnp.floor(pos).astype(jnp.int32)
    table = jnp.asarray(_TN_AL)
    return table[i] + (pos - i) * (table[i + 1] - table[i])


def pair_moments(h, k, rho):
    """(L, E[X], E[Y], E[X^2], E[Y^2], E[XY]) of standard normals X, Y with correlation rho
    given X > h, Y > k (L = P(X > h, Y > k); Rosenbaum's moments of a truncated bivariate
    normal). L is good to about 1e-15 absolute, so the moments to about 1e-15 / L relative."""
    rho = jnp.clip(rho, -0.999999, 0.999999)
    s = jnp.sqrt(1.0 - rho * rho)
    ks, hs = (k - rho * h) / s, (h - rho * k) / s
    pdf = lambda x: jnp.exp(-0.5 * x * x) / jnp.sqrt(2.0 * jnp.pi)
    L = jnp.maximum(upper_upper(h, k, rho), 1e-300)
    A, B = pdf(h) * ndtr(-ks), pdf(k) * ndtr(-hs)  # phi(h) Q(k*), phi(k) Q(h*)
    edge = pdf(h) * pdf(ks)  # = phi(k) phi(h*)
    ex, ey = (A + rho * B) / L, (B + rho * A) / L
    exx = 1.0 + (h * A + rho * rho * k * B + rho * s * edge) / L
    eyy = 1.0 + (k * B + rho * rho * h * A + rho * s * edge) / L
    exy = rho + (rho * h * A + rho * k * B + s * edge) / L
    return L, ex, ey, exx, eyy, exy


__all__ = ["upper_upper", "upper_lower", "inv_small", "psd_small", "tn_edge", "tn_fit",
           "pair_moments"]
