"""Model 1 conventions: spectrum, start, initial loss, first crossings, divergence."""
import jax
import numpy as np
from hypothesis import given, strategies as st

from tests.helpers import assert_close
from twoclock import OptimConfig, QuadraticConfig
from twoclock.models.quadratic import MODEL, initial_loss, noise_variances, rotation, spectrum
from twoclock.stages import constant_run


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
    assert tr.prog_t == 1 + np.argmax(loss <= cfg.target)
    assert tr.fail_t == 1 + np.argmax(drift >= cfg.drift_threshold)
    assert tr.prog_n == 16 * tr.prog_t and tr.div_t == 0


def test_never_crossing_is_zero_not_nan():
    cfg = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.0, target=0.01, drift_threshold=100.0)
    tr = _run(cfg, OptimConfig(), 8, 1e-4, 50)
    assert tr.prog_n == 0 and tr.fail_n == 0 and tr.div_n == 0


def test_divergence_is_reported_with_its_sample_count():
    cfg = QuadraticConfig(dim=4, drift_dim=2)
    tr = _run(cfg, OptimConfig(name="sgd"), 8, 5.0, 200)   # lr * h_max = 5 > 2: unstable
    assert tr.div_t > 0 and tr.div_n == 8 * tr.div_t
    assert tr.prog_n == 0   # a NaN loss never counts as reaching the target
