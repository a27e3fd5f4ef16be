"""First-passage clocks of the quadratic theory against the simulator's per-seed clocks."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from jax.scipy.special import ndtr

from tests.helpers import examples
from twoclock import OptimConfig, QuadraticConfig, SweepConfig, clocks, run_sweep, theory
from twoclock.models.quadratic import MODEL, drift, first_passage
from twoclock.models.quadratic.problem import initial_loss, noise_variances, spectrum
from twoclock.stages import constant_run

SEEDS = 1024  # the float64 NumPy runs are cheap: 3 SE of the median is ~2-4% here
K_SE = 3  # standard errors of the Monte Carlo median (bootstrap) allowed besides the 5% / 3%

# the simulator in plain NumPy (tests/test_numpy_reference.py checks it against the engine)
_spec = importlib.util.spec_from_file_location(
    "numpy_reference", Path(__file__).resolve().parents[1] / "benchmarks" / "numpy_reference.py")
nr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nr)


def _median_and_se(n_S):
    """Median over seeds of first crossings (0 = never) and its bootstrap standard error."""
    x = clocks.censored(n_S)
    boot = np.median(x[clocks.bootstrap_indices(x.size)], axis=1)
    return float(np.median(x)), float(np.std(boot))


def _progress_updates(cfg, opt, batch, lr, n_steps, seeds=SEEDS):
    run = constant_run(MODEL, cfg, opt, n_steps, n_ckpt=1)
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(3), s))(jnp.arange(seeds))
    return np.asarray(jax.jit(jax.vmap(run, in_axes=(None, None, 0)))(float(batch), lr, keys)
                      .prog_t)


def _check_passage(dim, alpha, sigma, name, mu, batch, lrh, near_floor):
    # One example costs a few ms of theory (compiled once per dim) and a float64 NumPy Monte
    # Carlo of SEEDS runs (no compilation), so the properties can afford CI_EXAMPLES examples.
    opt = OptimConfig(name=name, momentum=mu, lr_rule="fixed")
    lr = lrh * (1 - mu if name == "momentum" else 1.0)
    cfg0 = QuadraticConfig(dim=dim, alpha=alpha, sigma=sigma, drift_dim=0)
    L = theory.expected_loss(cfg0, opt, batch, lr, 1000)
    cfg = QuadraticConfig(dim=dim, alpha=alpha, sigma=sigma, drift_dim=0,
                          target=float(min(L[-1] / L[0] * near_floor, 0.9)))
    pred = theory.median_steps(cfg, opt, batch, lr, 1000)
    assert pred > 0, pred
    # runs past 2 pred + 20 updates are censored: a median there is far from pred anyway
    n_S = nr.quadratic_lanes(cfg, opt, np.full(SEEDS, batch), np.full(SEEDS, lr),
                             2 * pred + 20, seed=dim, dtype=np.float64)["prog_t"]
    med, se = _median_and_se(n_S)
    assert np.isfinite(med), (med, pred)
    assert abs(pred - med) <= max(0.05 * med, K_SE * se, 1.0), (pred, med, se)


@settings(max_examples=examples(25))
@given(st.sampled_from([8, 16, 32]), st.floats(0.5, 1.5), st.floats(0.5, 3.0),
       st.sampled_from([1, 2, 4, 8, 32]), st.floats(0.125, 0.9), st.floats(0.7, 1.3))
def test_first_passage_median_matches_simulation_sgd(dim, alpha, sigma, batch, lrh, near_floor):
    # Targets within -30%..+30% of the expected loss's floor, where the first passage of the
    # noisy loss and the crossing of its mean part ways (below the floor E[L] never crosses),
    # with B = 1 and steps down to lr h = 1/8, where the slow coordinates' memory matters: the
    # multi-lag copula is needed there (docs/theory.md).
    _check_passage(dim, alpha, sigma, "sgd", 0.0, batch, lrh, near_floor)


@settings(max_examples=examples(25))
@given(st.sampled_from([8, 16, 32]), st.floats(0.5, 1.5), st.floats(0.5, 3.0), st.floats(0.5, 0.95),
       st.sampled_from([1, 2, 4, 8, 32]), st.floats(0.125, 0.9), st.floats(0.7, 1.3))
def test_first_passage_median_matches_simulation_momentum(dim, alpha, sigma, mu, batch, lrh,
                                                          near_floor):
    # The same domain for heavy-ball momentum (lr h / (1 - mu) from 1/8), whose coordinates'
    # losses oscillate with complex roots: the copula's components are 3-dimensional there.
    _check_passage(dim, alpha, sigma, "momentum", mu, batch, lrh, near_floor)


@pytest.mark.parametrize("dim, alpha, sigma, batch, lr, near_floor", [
    (8, 1.0, 1.0, 1, 0.125, 1.0),  # Markov copula 47 (-10%); without memory (F = 0) 40
    (16, 1.43, 1.88, 1, 0.101, 1.23),  # Pearson weights (tilt 0) 42 (-11%)
])
def test_first_passage_remembers_slow_coordinates(dim, alpha, sigma, batch, lr, near_floor):
    # B = 1, small steps, near the floor: much of the loss's lag-10 correlation sits in
    # coordinates that decorrelate over 30-60 updates, and the light ones decide a crossing.
    # 1024 seeds: 3 SE is ~2.5 updates here, so a 10% miss fails.
    opt = OptimConfig(name="sgd", lr_rule="fixed")
    cfg0 = QuadraticConfig(dim=dim, alpha=alpha, sigma=sigma, drift_dim=0)
    L = theory.expected_loss(cfg0, opt, batch, lr, 5000)
    cfg = QuadraticConfig(dim=dim, alpha=alpha, sigma=sigma, drift_dim=0,
                          target=float(L[-1] / L[0] * near_floor))
    pred = theory.median_steps(cfg, opt, batch, lr, 1000)
    med, se = _median_and_se(_progress_updates(cfg, opt, batch, lr, 400, seeds=1024))
    assert abs(pred - med) <= max(0.05 * med, K_SE * se), (pred, med, se)


def test_saddle_point_marginal_matches_monte_carlo():
    # P(L_t <= target) of the SGD clock's marginal against 200000 draws of the exact Gaussian
    # iterates, in the bulk and in a deep lower tail (the floor above L0, B = 1, sigma 2.47),
    # where the three-cumulant gamma says 0.0055 and the draws ~0.054.
    rng = np.random.default_rng(5)
    for dim, alpha, sigma, lr, t, frac in [(8, 1.0, 1.0, 0.125, 60, 0.0648),
                                           (8, 0.94, 2.47, 0.818, 60, 0.9)]:
        cfg = QuadraticConfig(dim=dim, alpha=alpha, sigma=sigma, drift_dim=0)
        h, c = spectrum(cfg), noise_variances(cfg)
        a = 1.0 - lr * h
        m = a**t
        V = lr**2 * c * (1.0 - a ** (2 * t)) / (1.0 - a * a)  # B = 1
        tau = frac * initial_loss(cfg)
        x = m + np.sqrt(V) * rng.standard_normal((200_000, dim))
        p_mc = np.mean(0.5 * np.sum(h * x * x, axis=1) <= tau)
        with jax.enable_x64(True):
            u = first_passage._saddle(jnp.asarray(h / 2)[None], jnp.asarray(m)[None],
                                      jnp.asarray(V)[None], tau, 0.0, jnp.zeros(1))[0]
            p = float(ndtr(u[0]))
        se = np.sqrt(p_mc * (1 - p_mc) / 200_000)
        assert abs(p - p_mc) <= 0.03 * p_mc + 4 * se, (dim, p, p_mc, se)  # 3% + 4 SE


def test_first_passage_beats_expected_loss_near_the_floor():
    # The configuration: at B = 2 the expected loss crosses at update 77, the runs at ~61.
    cfg = QuadraticConfig(dim=64, alpha=1.0, target=0.15, drift_dim=0)
    opt = OptimConfig(name="sgd", lr_rule="fixed")
    pred = theory.median_steps(cfg, opt, 2, 0.3, 2000)
    mean = theory.steps_to_target(cfg, opt, 2, 0.3, 2000)
    med, se = _median_and_se(_progress_updates(cfg, opt, 2, 0.3, 300))
    assert abs(pred - med) <= max(0.05 * med, K_SE * se), (pred, med, se)
    assert abs(mean - med) > 0.05 * med + K_SE * se  # the expected-loss crossing misses it


def test_first_passage_many_is_each_configuration_alone():
    """100 momentum configurations answered together (padded, broadcast) equal ten of them
    answered one by one; their run time is printed by benchmarks/bench_sweep.py, not tested."""
    cfg, opt = QuadraticConfig(), OptimConfig(name="momentum")
    rng = np.random.default_rng(2)
    b, lr = rng.integers(1, 256, 100), 10 ** rng.uniform(-2, -0.5, 100)
    many = theory.median_steps_many(cfg, opt, b, lr, 20_000)
    assert 0 < np.count_nonzero(many)
    for i in np.argsort(many)[::10]:
        assert many[i] == theory.median_steps(cfg, opt, int(b[i]), float(lr[i]), 20_000), i


# ---------------------------------------------------------------------------------------------
# Adam's failure clock: the exact step law and its first passage
# ---------------------------------------------------------------------------------------------

def test_adam_step_law_matches_monte_carlo():
    b1, b2, mu, s2, S = 0.9, 0.99, -0.05, 0.05, 20_000
    ts = (1, 2, 5, 50, 300)
    r, r2 = theory.adam_step_law(b1, b2, mu, s2, np.array(ts))
    g = mu + np.sqrt(s2) * np.random.default_rng(0).standard_normal((max(ts), S))
    m = v = np.zeros(S)
    for t in range(1, max(ts) + 1):
        m, v = b1 * m + (1 - b1) * g[t - 1], b2 * v + (1 - b2) * g[t - 1] ** 2
        if t in ts:
            x = (m / (1 - b1**t)) / np.sqrt(v / (1 - b2**t))
            i = ts.index(t)
            se = x.std() / np.sqrt(S)
            assert abs(x.mean() - r[i]) <= 4 * se + 1e-9, (t, x.mean(), r[i], se)  # 4 SE
            se2 = (x * x).std() / np.sqrt(S)
            assert abs((x * x).mean() - r2[i]) <= 4 * se2 + 1e-9, (t, (x * x).mean(), r2[i], se2)


def test_brownian_law_monitored_per_update():
    # A Gaussian random walk with drift 0.01 and sd 0.1 per step, looked at once per step, crosses
    # 1 later than the continuous Brownian law says (by ~ 0.58 sd / drift = 6 steps): the
    # corrected law's median matches 20000 walks to within 3 bootstrap SE or one step.
    n, mu, sd = 400, 0.01, 0.1
    x = np.cumsum(mu + sd * np.random.default_rng(1).standard_normal((20_000, n)), axis=1)
    hit = np.where((x >= 1.0).any(axis=1), np.argmax(x >= 1.0, axis=1) + 1, np.inf)
    med, se = float(np.median(hit)), float(np.std(np.median(
        hit[clocks.bootstrap_indices(hit.size)], axis=1)))
    t = np.arange(1, n + 1)
    pred = int(np.argmax(drift.crossed_per_update(mu * t, sd**2 * t, 1.0) >= 0.5)) + 1
    assert abs(pred - med) <= max(K_SE * se, 1.0), (pred, med, se)


@settings(max_examples=examples(5))
@given(st.floats(0.01, 0.2), st.floats(0.05, 4.0), st.floats(5e-3, 2e-2),
       st.sampled_from([0.99, 0.999]), st.sampled_from([8, 64]))
def test_adam_failure_clock_within_three_percent(b, cd, lr0, beta2, batch):
    # Drawn drift pulls and noise cover both regimes (c_d / b^2 from 1.25 to 4e4).
    cfg = QuadraticConfig(dim=1, drift_bias=b, drift_noise=cd)
    opt = OptimConfig(beta2=beta2)
    pred = theory.adam_failure_samples(cfg, opt, lr0, batch)["samples"]
    res = run_sweep("quadratic", cfg, opt, SweepConfig(batches=(batch,), lr0s=(lr0,),
                    seeds=SEEDS, budget=int(2 * pred), seed=1), quiet=True)
    med, se = _median_and_se(res.fail_n[0, 0])
    assert abs(pred - med) <= max(0.03 * med, K_SE * se), (pred, med, se)
