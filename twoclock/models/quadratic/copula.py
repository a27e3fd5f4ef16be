"""The crossing copula of the first-passage filters (twoclock.models.quadratic.first_passage):
Z_t, a sum of Gaussian vector AR(1) components, filtered given no crossing so far by
assumed-density filtering in the family of Gaussians truncated to Z_t > u_t."""
import jax.numpy as jnp
from jax.scipy.special import ndtr

from twoclock.models.quadratic.gaussian import inv_small, pair_moments, psd_small, tn_edge, tn_fit


def adf_start(W: int, K: int, r: int) -> tuple:
    """The copula's state before the first update: zero mean and covariance, and a previous
    boundary u = -40, below any u the saddle point of first_passage returns (clipped at -37),
    so nothing is truncated."""
    return jnp.zeros((W, K, r)), jnp.zeros((W, K, r, K, r)), jnp.full(W, -40.0)


def adf_log_stay(Pb, Cb, Pb_prev, u, state):
    """One update of the multi-lag copula: (log(1 - hazard_t), new state).

    Z_t = sum_k y_k[0] with y_k Gaussian vector AR(1) components (bins of coordinates, r
    dimensions each) of covariance Pb [N, K, r, r] and lag-one regression
    F = Cb Pb_prev^-1 (Cb = Cov(y_t, y_{t-1})). The law of y_{t-1} given no crossing so far
    is kept as a Gaussian truncated to Z_{t-1} > u_{t-1}: state = (its mean [N, K, r],
    covariance [N, K, r, K, r], u_{t-1} [N]), so no mass sits beyond the boundary. The
    hazard P(Z_t <= u_t | no crossing) is then exact (a bivariate normal), and the law of y_t
    given Z_{t-1} > u_{t-1}, Z_t > u_t is projected back onto a Gaussian truncated to
    Z_t > u_t with the same mean and covariance (assumed-density filtering in the truncated
    family)."""
    mu, S, u_prev = state
    r = Pb.shape[-1]
    eps = 1e-12 * jnp.trace(Pb_prev, axis1=-2, axis2=-1)[..., None, None] + 1e-90  # det > 0
    F = Cb @ inv_small(Pb_prev + eps * jnp.eye(r)[None, None])
    # the innovation's covariance, clipped to >= 0 (the tilted shares may shrink faster than
    # the lag-one regression allows)
    Q = psd_small(Pb - F @ Pb_prev @ jnp.swapaxes(F, -1, -2))
    g1 = jnp.einsum("nkia,nka->nki", F, jnp.sum(S[..., 0], axis=3))  # Cov(y_t, Z_{t-1})
    v1 = jnp.maximum(jnp.sum(S[..., 0, :, 0], axis=(1, 2)), 1e-300)
    m1 = jnp.sum(mu[..., 0], axis=1)
    mu = jnp.einsum("nkia,nka->nki", F, mu)
    S = jnp.einsum("nkia,nkalb->nkilb", F, S)  # two contractions: XLA makes one slow
    S = jnp.einsum("nkilb,nljb->nkilj", S, F)
    S = S + jnp.einsum("nkij,kl->nkilj", Q, jnp.eye(Pb.shape[1]))
    g2 = jnp.sum(S[..., 0], axis=3)  # Cov(y_t, Z_t)
    v2 = jnp.maximum(jnp.sum(g2[..., 0], axis=1), 1e-300)
    m2 = jnp.sum(mu[..., 0], axis=1)
    sd1, sd2 = jnp.sqrt(v1), jnp.sqrt(v2)
    rho = jnp.clip(jnp.sum(g1[..., 0], axis=1) / (sd1 * sd2), -1.0, 1.0)
    h = jnp.clip((u_prev - m1) / sd1, -40.0, 40.0)
    k = jnp.clip((u - m2) / sd2, -40.0, 40.0)
    L, ex, ey, exx, eyy, exy = pair_moments(h, k, rho)
    log_stay = jnp.log(jnp.clip(L / jnp.maximum(ndtr(-h), 1e-300), 1e-300, 1.0))
    # y_t = mu + B (X, Y) + independent Gaussian, (X, Y) the standardised (Z_{t-1}, Z_t)
    # (B = [g1 / sd1, g2 / sd2] Corr^-1); truncating (X, Y) moves mean and covariance by B
    col = lambda x: x[:, None, None]
    det = col(jnp.maximum(1.0 - rho * rho, 1e-12))
    bx = (g1 / col(sd1) - col(rho) * g2 / col(sd2)) / det
    by = (g2 / col(sd2) - col(rho) * g1 / col(sd1)) / det
    cxx, cyy, cxy = exx - ex * ex - 1.0, eyy - ey * ey - 1.0, exy - ex * ey - rho
    mu = mu + bx * col(ex) + by * col(ey)
    # the truncated family: Z_t ~ N(m', s'^2) truncated to > u_t with Z_t's mean and variance
    # given both survivals (Z_t = m2 + sd2 Y, so Cov(y_t, Z_t) moves by sd2 B C e_Y)
    mz, vz = m2 + sd2 * ey, jnp.maximum(v2 * (eyy - ey * ey), 1e-300)
    beta = (g2 + col(sd2) * (bx * col(cxy) + by * col(cyy))) / col(vz)
    al = tn_fit(jnp.maximum(mz - u, 0.0) ** 2 / vz)
    lam, shrink = tn_edge(al)
    s2 = vz / jnp.maximum(1.0 - shrink, 1e-300)
    mu = mu - beta * col(jnp.sqrt(s2) * lam)  # m' = E - s' lambda
    # S + B C B^T + beta beta^T (s'^2 - Var(Z_t)) as one contraction, B = [bx, by]
    basis = jnp.stack([bx, by, beta], -1)  # [N, K, r, 3]
    z = jnp.zeros_like(cxx)
    coef = jnp.stack([jnp.stack([cxx, cxy, z], -1), jnp.stack([cxy, cyy, z], -1),
                      jnp.stack([z, z, s2 - vz], -1)], -2)  # [N, 3, 3]
    S = S + jnp.einsum("nkia,nab,nljb->nkilj", basis, coef, basis)
    return log_stay, (mu, S, u)


__all__ = ["adf_start", "adf_log_stay"]
