"""Model 1 conventions: spectrum, start, initial loss, first crossings, divergence."""
import jax
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.helpers import assert_close, first_crossing
from twoclock import OptimConfig, QuadraticConfig
from twoclock.models.quadratic import (MODEL, initial_loss, initial_offset, noise_variances,
                                       rotation, spectrum)
from twoclock.engine.stages import constant_run


@given(st.integers(1, 64), st.floats(0.0, 2.0), st.floats(0.1, 10.0))
def test_spectrum_and_initial_loss(dim, alpha, h_max):
    cfg = QuadraticConfig(dim=dim, alpha=alpha, h_max=h_max)
    h = spectrum(cfg)
    assert_close(h, h_max * np.arange(1, dim + 1) ** -alpha, rtol=1e-12, atol=0, what="h")
    assert_close(initial_loss(cfg), 0.5 * h.sum(), rtol=1e-12, atol=0, what="L0")
    assert_close(noise_variances(cfg), h, rtol=1e-12, atol=0, what="C = sigma^2 H")


@given(st.integers(2, 16), st.integers(0, 100))
def test_rotation_is_orthogonal_and_changes_initial_loss_consistently(dim, seed):
    cfg = QuadraticConfig(dim=dim, rotate=True, init_seed=seed)
    q = rotation(cfg)
    assert_close(q @ q.T, np.eye(dim), rtol=0, atol=1e-10, what="Q Q^T")
    e0 = q.T @ np.ones(dim)
    assert_close(initial_loss(cfg), 0.5 * np.sum(spectrum(cfg) * e0**2), rtol=1e-12, atol=0)


def _run(cfg, opt, batch, lr, n_steps, seed=0):
    run = jax.jit(constant_run(MODEL, cfg, opt, n_steps, n_ckpt=n_steps))
    return jax.device_get(run(np.float32(batch), np.float32(lr), jax.random.PRNGKey(seed)))


def test_first_crossings_match_the_checkpointed_trajectory():
    cfg = QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.5, target=0.3, drift_threshold=0.5)
    tr = _run(cfg, OptimConfig(), 16, 0.02, 400)
    loss, drift = tr.ckpt["progress_frac"], tr.ckpt["drift"]   # one checkpoint per update here
    # the margins' zeros (loss / L0 against the target: the loss's, scaled), from L0 and drift 0
    want_prog = first_crossing(cfg.target - loss, cfg.target - 1.0)
    want_fail = first_crossing(drift - cfg.drift_threshold, -cfg.drift_threshold)
    assert want_prog % 1 and want_fail % 1
    np.testing.assert_allclose([tr.prog_t, tr.fail_t], [want_prog, want_fail], rtol=1e-5)
    np.testing.assert_allclose(tr.prog_n, 16 * want_prog, rtol=1e-5)
    assert tr.div_t == 0


def test_never_crossing_is_zero_not_nan():
    cfg = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.0, target=0.01, drift_threshold=100.0)
    tr = _run(cfg, OptimConfig(), 8, 1e-4, 50)
    assert tr.prog_n == 0 and tr.fail_n == 0 and tr.div_n == 0


def test_divergence_is_reported_with_its_sample_count():
    cfg = QuadraticConfig(dim=4, drift_dim=2)
    tr = _run(cfg, OptimConfig(name="sgd"), 8, 5.0, 200)   # lr * h_max = 5 > 2: unstable
    assert tr.div_t > 0 and tr.div_n == 8 * tr.div_t
    assert tr.prog_n == 0   # a NaN loss never counts as reaching the target


def test_gradient_noise_variance_is_c_over_b():
    """One SGD step from x0 over many keys: E[L_1] and Var(drift_1) against their exact values.

    x_1 = (1 - lr h) x0 - lr sqrt(c / B) z and d_1 = lr b + lr sqrt(c_d / B) mean(z_d), so
    E[L_1] = 1/2 sum h ((1 - lr h)^2 x0^2 + lr^2 c / B) and Var(d_1) = lr^2 c_d / (B Dd).
    Means within K_SE = 5 Monte Carlo standard errors; c / (2B) is 43 SE off at B = 4.
    """
    K_SE, S = 5.0, 4096
    cfg = QuadraticConfig(dim=3, alpha=1.0, h_max=2.0, sigma=1.5, gamma=0.5, drift_dim=4,
                          drift_bias=0.3, drift_noise=2.0)
    lr = 0.5   # 1 - lr h_max = 0: the stiffest coordinate is pure noise after one step
    run = jax.jit(jax.vmap(constant_run(MODEL, cfg, OptimConfig(name="sgd"), 1, n_ckpt=1),
                           in_axes=(None, None, 0)))
    keys = jax.random.split(jax.random.PRNGKey(7), S)
    h, c = spectrum(cfg), noise_variances(cfg)
    assert_close(c, 1.5**2 * h**0.5, rtol=1e-12, atol=0, what="c = sigma^2 h^gamma")
    for B in (4.0, 32.0):
        tr = jax.device_get(run(np.float32(B), np.float32(lr), keys))
        L1 = np.asarray(tr.ckpt["progress_frac"][:, 0], np.float64) * initial_loss(cfg)
        d1 = np.asarray(tr.ckpt["drift"][:, 0], np.float64)
        EL1 = 0.5 * np.sum(h * ((1 - lr * h) ** 2 + lr**2 * c / B))
        assert_close(L1.mean(), EL1, rtol=0, atol=K_SE * L1.std() / np.sqrt(S),
                     what=f"E[L_1] at B={B}")
        assert_close(d1.mean(), lr * cfg.drift_bias, rtol=0, atol=K_SE * d1.std() / np.sqrt(S),
                     what=f"E[drift_1] at B={B}")
        var = lr**2 * cfg.drift_noise / (B * cfg.drift_dim)
        # Var of a sample variance of normals: 2 var^2 / (S - 1)
        assert_close(d1.var(ddof=1), var, rtol=0, atol=K_SE * var * np.sqrt(2 / (S - 1)),
                     what=f"Var(drift_1) at B={B}")


# noise variances of 1e-50 round to 0 in float32: these runs are the noiseless recursion
NOISELESS = dict(sigma=1e-25, drift_noise=1e-50)


def _numpy_sgd(cfg, lr, n_steps):
    """float64 noiseless SGD: x <- x - lr H x with H = Q diag(h) Q^T, d <- d + lr b.

    Returns (L_t / L0, drift statistic) for t = 1..n_steps."""
    q = rotation(cfg)
    q = np.eye(cfg.dim) if q is None else q
    H = q @ np.diag(spectrum(cfg)) @ q.T
    x, d = initial_offset(cfg).astype(np.float64), np.zeros(cfg.drift_dim)
    frac, drift = [], []
    for _ in range(n_steps):
        x, d = x - lr * H @ x, d + lr * cfg.drift_bias
        frac.append(0.5 * x @ H @ x / initial_loss(cfg))
        drift.append(0.0 if cfg.drift_dim == 0 else
                     d.mean() if cfg.drift_stat == "mean" else np.linalg.norm(d))
    return np.array(frac), np.array(drift)


@pytest.mark.parametrize("rotate, stat, drift_dim", [(True, "mean", 3), (False, "norm", 1),
                                                     (True, "norm", 0)])
def test_noiseless_sgd_is_the_numpy_recursion(rotate, stat, drift_dim):
    """Checkpoints every 3rd update (each chunk's last metrics) and both clocks against a
    float64 NumPy recursion; rtol 1e-5 is float32 rounding over 12 updates."""
    cfg = QuadraticConfig(dim=5, h_max=1.5, rotate=rotate, init_seed=3, drift_dim=drift_dim,
                          drift_bias=0.1, drift_stat=stat, target=0.3, drift_threshold=0.35,
                          **NOISELESS)
    lr, n = 0.4, 12
    frac, drift = _numpy_sgd(cfg, lr, n)
    with jax.enable_x64(False):
        run = jax.jit(constant_run(MODEL, cfg, OptimConfig(name="sgd"), n, n_ckpt=4))
        tr = jax.device_get(run(np.float32(1), np.float32(lr), jax.random.PRNGKey(0)))
    t = np.asarray(tr.ckpt["samples"], int)   # batch 1: samples = updates
    np.testing.assert_array_equal(t, [3, 6, 9, 12])
    assert_close(tr.ckpt["progress_frac"], frac[t - 1], rtol=1e-5, atol=0, what="L_t / L0")
    assert_close(tr.ckpt["drift"], drift[t - 1], rtol=1e-5, atol=1e-7, what="drift_t")
    # no near tie at either target: float32 rounding cannot move a crossing
    assert np.min(np.abs(frac / cfg.target - 1)) > 1e-3
    assert np.min(np.abs(drift / cfg.drift_threshold - 1)) > 1e-3
    # the crossings interpolated on the float64 recursion, from L_0 / L0 = 1 and drift 0
    want_prog = first_crossing(cfg.target - frac, cfg.target - 1.0)
    want_fail = first_crossing(drift - cfg.drift_threshold, -cfg.drift_threshold)
    assert want_prog > 0 and (want_fail > 0) == (drift_dim > 0)
    assert_close([tr.prog_t, tr.fail_t], [want_prog, want_fail], rtol=1e-5, atol=0,
                 what="clocks")
    assert tr.div_t == 0


def test_reaching_a_target_exactly_counts_as_crossing_it():
    """Noiseless SGD at lr = 1/2 on h = 1 from x0 = 1: L_t / L0 = 4^-t and drift = t b / 2,
    both exact in binary, so L_2 / L0 = 1/16 = target and drift_4 = 1 = threshold."""
    cfg = QuadraticConfig(dim=1, h_max=1.0, drift_dim=2, drift_bias=0.5, target=1 / 16,
                          drift_threshold=1.0, **NOISELESS)
    with jax.enable_x64(False):
        tr = _run(cfg, OptimConfig(name="sgd"), 4, 0.5, 6)
    np.testing.assert_array_equal(tr.ckpt["progress_frac"], 4.0 ** -np.arange(1, 7))
    np.testing.assert_array_equal(tr.ckpt["drift"], 0.25 * np.arange(1, 7))
    # the margins are 0 there, so the interpolation puts each clock on the update itself
    assert (tr.prog_t, tr.fail_t, tr.prog_n, tr.fail_n) == (2, 4, 8, 16)


def test_seeds_at_a_large_batch_cross_at_distinct_fractional_clocks():
    """At a batch where every seed reaches the target in the same update, the interpolated
    clocks still tell the seeds apart, each inside that update (the loss between its
    checkpoints either side, per seed, in NumPy)."""
    cfg = QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.5, target=0.3, drift_threshold=0.5)
    batch, n, seeds = 2 ** 16, 200, 8
    run = jax.jit(jax.vmap(constant_run(MODEL, cfg, OptimConfig(), n, n_ckpt=n),
                           in_axes=(None, None, 0)))
    tr = jax.device_get(run(np.float32(batch), np.float32(0.02),
                            jax.random.split(jax.random.PRNGKey(0), seeds)))
    t_S = np.ceil(tr.prog_t)
    assert (tr.prog_t > 0).all() and len(set(t_S.tolist())) == 1  # one update for all seeds
    assert len(set(tr.prog_t.tolist())) == seeds and (tr.prog_t % 1 > 0).all()
    for s in range(seeds):
        want = first_crossing(cfg.target - tr.ckpt["progress_frac"][s], cfg.target - 1.0)
        np.testing.assert_allclose(tr.prog_t[s], want, rtol=1e-5)
        np.testing.assert_allclose(tr.prog_n[s], batch * want, rtol=1e-5)
