"""Adam's per-coordinate moves (twoclock.models.policy.adam_noise) against a Monte Carlo run of
optax's Adam on Gaussian gradients, the first-passage root by hand, and the KL's quadratic form
against a finite difference."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from twoclock.models.policy import adam_noise, evaluate
from twoclock.models.policy.dynamics import setup

from tests.models.test_policy import SMALL

K = 4  # tolerances are K Monte Carlo standard errors


def _gaussian(n_coord=3, group=4, seed=0):
    """Mean mu and a rotated per-response covariance (off-diagonal terms: the walk along u
    depends on the correlations, not only on the variances)."""
    rng = np.random.default_rng(seed)
    mu = np.array([0.5, 0.05, 0.0])[:n_coord]
    R, _ = np.linalg.qr(rng.normal(size=(n_coord, n_coord)))
    cov = R @ np.diag([1.0, 0.3, 2.0][:n_coord]) @ R.T  # per response
    return mu, cov, group


@pytest.mark.parametrize("batch", [8, 64])
def test_adam_moves_match_optax_adam_on_gaussian_gradients(batch):
    mu, cov, G = _gaussian()
    u = np.array([1.0, 2.0, -1.0]) / np.sqrt(6.0)
    rng = np.random.default_rng(1)
    g_PxN = rng.multivariate_normal(mu, cov / G, size=40_000)  # per-group gradients
    drift, sd = adam_noise.adam_moves(g_PxN, u, batch, lr=1.0, group=G)

    # the oracle: optax's Adam, minimising -<g, w>, batches of P = batch / G groups drawn fresh
    P, T, T0, chains, lr = batch // G, 6000, 2000, 256, 1e-3
    L = np.linalg.cholesky(cov / G)
    tx = optax.adam(lr)

    def chain(key):
        w = jnp.zeros(3)

        def step(c, k):
            w, s = c
            z = jax.random.normal(k, (P, 3)) @ L.T + mu[None]
            upd, s = tx.update(-z.mean(0), s, w)
            w = optax.apply_updates(w, upd)
            return (w, s), jnp.dot(u, w)

        _, proj_T = jax.lax.scan(step, (w, tx.init(w)), jax.random.split(key, T))
        return proj_T

    proj_CxT = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.PRNGKey(2),
                                                                     chains)), np.float64)
    move_C = (proj_CxT[:, -1] - proj_CxT[:, T0]) / (T - 1 - T0)  # per update, after burn-in
    # the steady normaliser leaves out v's own fluctuation (its ~1 / (1 - beta2) memory): on
    # these gradients that costs 1.0% at B 8 (measured); MODEL_ERR states it, and the wrong
    # normalisers (one shared by all coordinates, or sigma^2 / P for sigma^2 / B) are 9-47% off
    MODEL_ERR = 0.02
    assert abs(move_C.mean() - lr * drift) < (K * move_C.std(ddof=1) / np.sqrt(chains)
                                              + MODEL_ERR * lr * abs(drift))
    # the walk: the spread of the displacement over the chains, per update
    spread = np.var((proj_CxT[:, -1] - proj_CxT[:, T0]), ddof=1) / (T - 1 - T0)
    se = spread * np.sqrt(2.0 / (chains - 1))  # of a sample variance of Gaussians
    assert abs(spread - (lr * sd) ** 2) < K * se
    # a normaliser shared by every coordinate (SGD's view, sign descent) would be wrong here
    assert abs(drift - float(u @ mu) / np.sqrt(float(u @ (mu ** 2 + np.diag(cov) / batch)))) \
        > 4 * MODEL_ERR * abs(drift)


def test_first_passage_by_hand():
    # drift alone: theta / d; walk alone: theta^2 / s^2; both: the root of n^2 + n = 4
    assert adam_noise.first_passage(np.float64(0.5), np.float64(0.0), 2.0) == pytest.approx(4.0)
    assert adam_noise.first_passage(np.float64(0.0), np.float64(0.5), 2.0) == pytest.approx(16.0)
    assert adam_noise.first_passage(np.float64(1.0), np.float64(1.0), 2.0) == pytest.approx(
        (-1 + np.sqrt(17)) / 2)


def test_kl_quadratic_form_is_the_second_derivative_of_the_kl():
    s = setup(SMALL)
    flat0, unravel = ravel_pytree(s.ref)
    quad = adam_noise.fisher_quad(SMALL, unravel)
    x = np.random.default_rng(3).normal(size=(2, flat0.size)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    kl = jax.jit(lambda f: evaluate.pool_stats(unravel(f), s.arch, s.test, s.logref_test)["kl"])
    h = 0.05
    fd = [2 * (float(kl(flat0 + h * xi)) + float(kl(flat0 - h * xi))) / (2 * h ** 2) for xi in x]
    np.testing.assert_allclose(quad(x), fd, rtol=0.03)
    assert min(fd) > 0  # the KL grows both ways from the reference
