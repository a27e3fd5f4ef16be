"""Still open from issue 34's list: the quadratic's rotated noise covariance and its drift
statistics (an exact NumPy transcription of one update from the simulator's own normals), the
bandit's drift statistics by hand, and the SGD / momentum theory column under the sqrt and
linear rules (the failure clock by hand, the progress clock at the batch's lr, not lr0)."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twoclock.config import OptimConfig, SweepConfig
from twoclock.models.bandit.dynamics import drift_statistic
from twoclock.models.quadratic import QuadraticConfig, theory
from twoclock.models.quadratic.dynamics import dynamics
from twoclock.models.quadratic.predict import predict


def _haar(dim, seed):
    """Q of a Haar-random orthogonal matrix, as the problem documents it: QR of a standard
    normal matrix (init_seed), columns signed by R's diagonal."""
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


@pytest.mark.parametrize("stat", ["mean", "norm"])
@pytest.mark.parametrize("rotate", [False, True])
def test_one_sgd_update_against_numpy(rotate, stat):
    """theta_1 = theta_0 - lr g with g_x = Q diag(h) Q^T x0 + Q diag(sqrt(c / B)) z_x (the noise
    rotated with the curvature: covariance Q diag(c / B) Q^T) and g_d = -b + sqrt(c_d / B) z_d,
    z the update's normals; the loss fraction and the drift statistic (mean or norm) of
    theta_1 in NumPy. dim 6 with random start, so the rotation is visible."""
    cfg = QuadraticConfig(dim=6, alpha=0.7, h_max=2.0, sigma=1.5, gamma=0.5, drift_dim=3,
                          drift_bias=0.3, drift_noise=2.0, drift_stat=stat, rotate=rotate,
                          random_start=True, init_seed=4)
    B, lr = 8.0, 0.05
    d = dynamics(cfg, OptimConfig(name="sgd", lr_rule="fixed"))(B, jax.random.PRNGKey(3))
    tx = d.optimizer(lr)
    st0 = d.init(tx)
    ts = jnp.array([1])
    z = np.asarray(d.draw(ts), np.float64)[0]
    st1, _, m = d.advance(tx, st0, ts, d.draw(ts))
    h = 2.0 * np.arange(1, 7) ** -0.7
    c = 1.5 ** 2 * h ** 0.5
    Q = _haar(6, 4) if rotate else np.eye(6)
    x0 = np.random.default_rng(5).standard_normal(6)  # init_seed + 1
    np.testing.assert_allclose(np.asarray(st0.params[:6], np.float64), x0, rtol=1e-6)
    g_x = Q @ (h * (Q.T @ x0)) + Q @ (np.sqrt(c / B) * z[:6])
    g_d = -0.3 + np.sqrt(2.0 / B) * z[6:]
    x1, d1 = x0 - lr * g_x, -lr * g_d
    np.testing.assert_allclose(np.asarray(st1.params, np.float64), np.concatenate([x1, d1]),
                               rtol=1e-5, atol=1e-6)
    loss = lambda x: 0.5 * np.sum(h * (Q.T @ x) ** 2)
    assert float(m["progress_frac"]) == pytest.approx(loss(x1) / loss(x0), rel=1e-5)
    want = d1.mean() if stat == "mean" else np.linalg.norm(d1)
    assert float(m["drift"]) == pytest.approx(want, rel=1e-5)


def test_rotated_noise_covariance_over_many_draws():
    """The gradient noise of the rotated problem at x = theta*: its sample covariance over 4000
    updates is Q diag(c / B) Q^T (within 6 standard errors per entry), not diag(c / B)."""
    cfg = QuadraticConfig(dim=3, alpha=2.0, sigma=1.0, gamma=1.0, drift_dim=0, drift_bias=0.0,
                          rotate=True, init_seed=2)
    B, n = 4.0, 4000
    d = dynamics(cfg, OptimConfig(name="sgd", lr_rule="fixed"))(B, jax.random.PRNGKey(0))
    tx = d.optimizer(1.0)
    st = d.init(tx)
    st = st._replace(params=jnp.zeros_like(st.params))  # at the minimum: g is the noise
    ts = jnp.arange(1, n + 1)
    step = jax.jit(jax.vmap(lambda t, z: d.advance(tx, st, t[None], z[None])[0].params))
    g = -np.asarray(step(ts, d.draw(ts)), np.float64)  # theta_1 = -lr g, lr = 1
    h = 1.0 / np.arange(1, 4) ** 2
    Q = _haar(3, 2)
    want = Q @ np.diag(h / B) @ Q.T
    got = np.cov(g.T)
    se = np.sqrt((np.outer(np.diag(want), np.diag(want)) + want ** 2) / n)
    assert np.all(np.abs(got - want) < 6 * se), (got, want)
    assert np.any(np.abs(got - np.diag(h / B)) > 6 * se)  # unrotated noise would fail


def test_bandit_drift_statistics_by_hand():
    w = jnp.array([[0.5, -1.5, 2.0, 1.0], [3.0, 0.0, 0.0, -3.0]])
    np.testing.assert_allclose(drift_statistic(w, "mean"), [0.5, 0.0])
    np.testing.assert_allclose(drift_statistic(w, "rms"), [math.sqrt(7.5 / 4), math.sqrt(4.5)],
                               rtol=1e-6)


def _linear_runs(name, rule, p, budget):
    cfg = QuadraticConfig(dim=8, drift_dim=2, drift_bias=0.05, drift_threshold=0.4)
    opt = OptimConfig(name=name, lr_rule=rule, b0=4.0, momentum=0.9)
    sweep = SweepConfig(batches=(4, 16), lr0s=(0.02,), seeds=2, budget=budget)
    runs = [{"batch": b, "lr0": 0.02, "lr": 0.02 * (b / 4.0) ** p} for b in (4, 16)]
    predict(cfg, opt, sweep, None, runs, [])
    return cfg, opt, runs


@pytest.mark.parametrize("name,mu", [("sgd", 0.0), ("momentum", 0.9)])
@pytest.mark.parametrize("rule,p", [("sqrt", 0.5), ("linear", 1.0)])
def test_linear_failure_column_under_each_rule(name, mu, rule, p):
    """SGD / heavy ball: N_fail = B thr (1 - mu) / (lr(B) b) with lr(B) = lr0 (B / b0)^p, by hand
    at B != b0 (a budget too large for the progress theory, which is skipped: fast)."""
    _, _, runs = _linear_runs(name, rule, p, 2 ** 30)
    for r in runs:
        lr = 0.02 * (r["batch"] / 4.0) ** p
        assert r["theory"]["failure_samples"] == pytest.approx(
            r["batch"] * 0.4 * (1 - mu) / (lr * 0.05), rel=1e-12)
        assert r["theory"]["method"]["progress_samples"] == "skipped"
    f4, f16 = (r["theory"]["failure_samples"] for r in runs)
    assert f16 / f4 == pytest.approx(4 ** (1 - p), rel=1e-12)  # the rule shows


@pytest.mark.slow  # the first-passage median compiles per optimizer: ~30-60 s on 2 cores
@pytest.mark.parametrize("name", ["sgd", "momentum"])
@pytest.mark.parametrize("rule,p", [("sqrt", 0.5), ("linear", 1.0)])
def test_linear_progress_column_at_the_batchs_lr(name, rule, p):
    """The progress column is B times the first-passage median at lr(B) (not lr0), its mean
    column B times the expected-loss crossing at lr(B)."""
    cfg, opt, runs = _linear_runs(name, rule, p, 8000)
    for r in runs:
        B, lr, th = r["batch"], 0.02 * (r["batch"] / 4.0) ** p, r["theory"]
        t = theory.median_steps(cfg, opt, B, lr, 8000 // B)
        assert th["progress_samples"] == (None if t is None else pytest.approx(t * B))
        t_mean = theory.steps_to_target(cfg, opt, B, lr, 8000 // B)
        assert th["progress_samples_mean"] == (None if t_mean is None
                                               else pytest.approx(t_mean * B))
    assert runs[1]["theory"]["progress_samples"] is not None
