"""First-passage clocks of the quadratic theory against the simulator's per-seed clocks."""

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings, strategies as st
from jax.scipy.special import ndtr
from scipy.integrate import quad

from tests.helpers import examples
from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep, theory
from twoclock.analysis import clocks
from twoclock.models.quadratic import MODEL, drift, first_passage
from twoclock.models.quadratic.problem import initial_loss, noise_variances, spectrum
from twoclock.engine.stages import constant_run
from twoclock.models import MODELS

SEEDS = 1024  # the float64 NumPy runs are cheap: 3 SE of the median is ~2-4% here
K_SE = 3  # standard errors of the Monte Carlo median (bootstrap) allowed besides the 5% / 3%

# the simulator in plain NumPy (tests/engine/test_numpy_reference.py checks it against the engine)
_spec = importlib.util.spec_from_file_location(
    "numpy_reference", Path(__file__).resolve().parents[2] / "benchmarks" / "numpy_reference.py")
nr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nr)


def _median_and_se(n_S):
    """Median over seeds of the first update at or under the target and its bootstrap standard
    error, from interpolated crossings in updates (0 = never). The theory predicts that update:
    it is k exactly when the crossing lies in (k - 1, k], i.e. ceil(crossing)."""
    x = np.ceil(clocks.censored(n_S))
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
    # The documented late pocket is left out: its known misses are pinned below as strict
    # expected failures (docs/theory.md, "Where it misses").
    assume(not _in_late_pocket(mu, batch, lrh, near_floor))
    _check_passage(dim, alpha, sigma, "momentum", mu, batch, lrh, near_floor)


def _in_late_pocket(mu, batch, lrh, near_floor) -> bool:
    """The momentum theory's known late pocket: B 1, momentum >= 0.75, moderate steps (lr h /
    (1 - mu) in [0.45, 0.85]) and a target 0.7-0.8 x the floor, where it runs 8-11% late. The
    derandomized examples depend on the package's numeric literals (tests/conftest.py), so a new
    module can move them into it: they did, onto the second pinned case below."""
    return batch == 1 and mu >= 0.75 and 0.45 <= lrh <= 0.85 and 0.7 <= near_floor <= 0.8


def test_the_late_pocket_holds_both_pinned_cases():
    assert _in_late_pocket(0.75, 1, 0.69921875, 0.703125)
    assert _in_late_pocket(0.875, 1, 0.5, 0.75)
    assert not _in_late_pocket(0.875, 2, 0.5, 0.75) and not _in_late_pocket(0.5, 1, 0.5, 0.75)


@pytest.mark.xfail(strict=True, reason="the truncated family's late pocket (docs/theory.md): "
                   "+10.5%, outside 5% and 3 SE")
def test_first_passage_late_pocket_found_by_the_thorough_profile():
    """Moderate steps, momentum 0.75, B 1, 0.70 x the floor: the prediction is 21 updates, the
    1024-seed median 19.0 (SE 0.50). Strict: a theory that fixes it fails here, and the docs'
    accuracy statement is then to be updated."""
    _check_passage(16, 1.0, 0.71875, "momentum", 0.75, 1, 0.69921875, 0.703125)


@pytest.mark.xfail(strict=True, reason="the late pocket (docs/theory.md): 26 against 24.0 (SE "
                   "0.57), +8.3%, outside 5% and 3 SE")
def test_first_passage_late_pocket_found_by_the_ci_profile():
    """Momentum 0.875, B 1, lr h / (1 - mu) 1/2, 0.75 x the floor: the CI profile's examples
    landed here once new modules changed the literals hypothesis draws from. Strict, as above."""
    _check_passage(16, 1.0, 1.0, "momentum", 0.875, 1, 0.5, 0.75)


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


# each range's absolute error: a tail range whose integral is ~1e-20 cannot be had to a relative
# 1e-11 (quad's roundoff warning, the thorough profile at log_ratio 1, beta2 0.999, t 348),
# and 1e-15 of the whole is what the 1e-9 comparison needs (|mu| = 0.1: the answers are >= 1e-3)
EPS_ABS = 1e-15


def _step_law_by_quad(t, b1, b2, mu, s2):
    """E[m_hat / sqrt(v_hat)] and E[m_hat^2 / v_hat] at update t from the direct sums over all t
    ages, integrated over lam by adaptive quadrature on ranges scaled to E[g^2]."""
    k = np.arange(t, dtype=np.float64)
    u, w = (1 - b2) * b2**k / (1 - b2**t), (1 - b1) * b1**k / (1 - b1**t)

    def tilted(lam):  # E[e^(-lam v)], E[m e^(-lam v)], E[m^2 e^(-lam v)]
        y = 2 * lam * s2 * u
        G = np.exp(np.sum(-0.5 * np.log1p(y) - mu * mu / (2 * s2) * y / (1 + y)))
        M1 = mu * np.sum(w / (1 + y))
        return G, G * M1, G * (M1 * M1 + s2 * np.sum(w * w / (1 + y)))

    sc = 1.0 / (mu * mu + s2)
    cuts = (0.0, 1.0, 3.0, 10.0, 100.0, 1e4, np.inf)
    r = sum(quad(lambda x: 2 / np.sqrt(np.pi) * tilted(x * x)[1], a * np.sqrt(sc), c * np.sqrt(sc),
                 limit=200, epsabs=EPS_ABS, epsrel=1e-11)[0] for a, c in zip(cuts[:-1], cuts[1:]))
    r2 = sum(quad(lambda lam: tilted(lam)[2], a * sc, c * sc, limit=200, epsabs=EPS_ABS,
                  epsrel=1e-11)[0] for a, c in zip(cuts[:-1], cuts[1:]))
    return r, r2


@example(1.0, 0.999, 348)  # the oracle's tail range where quad gave up a relative 1e-11
@given(st.floats(-6.0, 2.0), st.sampled_from([0.99, 0.999]), st.integers(257, 5000))
def test_adam_step_law_series_matches_direct_sums(log_ratio, beta2, t):
    # Past update 256 the step law is a series; it must hold from pure noise down to the
    # sign-descent limit s^2 / b^2 = 1e-6 (where a quadrature range set by the noise alone
    # gave a mean step near 0 instead of -1).
    mu = -0.1
    s2 = 10.0**log_ratio * mu * mu
    r, r2 = theory.adam_step_law(0.9, beta2, mu, s2, np.array([t]))
    want, want2 = _step_law_by_quad(t, 0.9, beta2, mu, s2)
    assert abs(r[0] - want) <= 1e-9 * abs(want), (r[0], want)
    assert abs(r2[0] - want2) <= 1e-9 * abs(want2), (r2[0], want2)


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


REF_SEEDS = 1024  # seeds of the float64 reference (4x the engine's SEEDS: half the SE)


def _adam_drift_crossings(cfg, opt, lr0, batch, seeds, n_max, seed=0, chunk=64):
    """Update at which the drift block's mean first reaches the threshold, per seed (0 = not
    within n_max): Adam on g = -b + s z alone, in float64 NumPy. The drift block never sees the
    progress block, so this is the engine's failure clock; it stops once 3/4 of the seeds have
    crossed (the median and its bootstrap SE only need the earliest half)."""
    rng = np.random.default_rng(seed)
    lr, s = opt.lr(lr0, batch), np.sqrt(cfg.drift_noise / batch)
    b1, b2, eps = opt.beta1, opt.beta2, opt.eps
    shape = (seeds, cfg.drift_dim)
    m, v, step = np.zeros(shape), np.zeros(shape), np.empty(shape)
    mean_D = np.full(cfg.drift_dim, 1.0 / cfg.drift_dim)
    x, hit = np.zeros(seeds), np.zeros(seeds, np.int64)  # x: the block's mean
    t = 0
    while t < n_max and np.count_nonzero(hit) < 0.75 * seeds:
        for g in rng.standard_normal((chunk,) + shape):  # in place: this loop is the test's cost
            t += 1
            g *= s
            g -= cfg.drift_bias
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            np.sqrt(v / (1 - b2**t), out=step)
            step += eps
            np.divide(m, step, out=step)
            x -= lr / (1 - b1**t) * (step @ mean_D)
            hit[(hit == 0) & (x >= cfg.drift_threshold)] = t
    return hit


def test_adam_drift_reference_matches_engine():
    # The float64 reference against the engine on a noise-dominated cell inside beta2 = 0.999's
    # warm-up (about 440 updates): medians within K_SE combined bootstrap SE.
    cfg, opt, lr0, batch = QuadraticConfig(dim=1, drift_bias=0.02, drift_noise=1.0), \
        OptimConfig(), 4e-2, 8
    res = run_sweep(MODELS["quadratic"], cfg, opt, SweepConfig(batches=(batch,), lr0s=(lr0,),
                    seeds=2 * SEEDS, budget=batch * 1000, seed=3), quiet=True)
    med_e, se_e = _median_and_se(res.fail_n[0, 0] / batch)
    med_r, se_r = _median_and_se(_adam_drift_crossings(cfg, opt, lr0, batch, 2 * REF_SEEDS, 1000))
    assert abs(med_e - med_r) <= K_SE * np.hypot(se_e, se_r), (med_e, se_e, med_r, se_r)


@pytest.mark.parametrize("b1", [0.9, 0.97])
def test_crossing_of_an_ema_smoothed_walk(b1):
    # Steps that are an EMA (weight b1) of white noise, as Adam's momentum makes them, in the
    # regime of a noise-dominated drift block (threshold 70 long-run sd per step, drift 0.04 sd
    # per step): the walk crosses later than an unsmoothed one with the same mean and variance
    # (BGK alone: -3.4% at b1 0.9, -6.2% at 0.97); the law with the momentum's owed displacement
    # matches 10000 walks to within 3 bootstrap SE or 1%.
    sd, S = 1 / 70, 10_000
    mu, n = 0.04 * sd, 4400
    rng = np.random.default_rng(2)
    u = mu + sd * np.sqrt((1 - b1) / (1 + b1)) * rng.standard_normal(S)  # stationary start
    x, hit = np.zeros(S), np.full(S, np.inf)
    for t in range(1, n + 1):
        x += u
        hit[np.isinf(hit) & (x >= 1.0)] = t
        u = b1 * u + (1 - b1) * (mu + sd * rng.standard_normal(S))
    med, se = _median_and_se(np.where(np.isinf(hit), 0, hit))
    t = np.arange(1, n + 1)
    # Var(x_n): the start's velocity, then noise k's gain 1 - b1^(n-k)
    gain2 = np.concatenate([[0.0], np.cumsum((1 - b1 ** np.arange(1, n)) ** 2)])
    V = sd**2 * ((1 - b1) / (1 + b1) * ((1 - b1**t) / (1 - b1)) ** 2 + gain2)
    pred = int(np.argmax(drift.crossed_per_update(mu * t, V, 1.0, b1) >= 0.5)) + 1
    assert abs(pred - med) <= max(K_SE * se, 0.01 * med), (pred, med, se)


@pytest.mark.parametrize("b, cd, beta2, batch", [(0.01, 4.0, 0.999, 8), (0.01, 4.0, 0.999, 64),
                                                  (0.02, 1.0, 0.999, 8)])
def test_adam_failure_clock_inside_the_warm_up(b, cd, beta2, batch):
    # lr0 4e-2, noise-dominated: the whole passage falls inside beta2 = 0.999's warm-up and the
    # momentum-smoothed walk crosses 3-9% later than a Brownian motion with its mean and
    # variance. 4096 seeds (an SE of 0.4-1.1%), so that 3% is (nearly) the binding tolerance.
    cfg = QuadraticConfig(dim=1, drift_bias=b, drift_noise=cd)
    opt = OptimConfig(beta2=beta2)
    pred = theory.adam_failure_samples(cfg, opt, 4e-2, batch)["updates"]
    med, se = _median_and_se(_adam_drift_crossings(cfg, opt, 4e-2, batch, 4 * REF_SEEDS, 2 * pred))
    assert abs(pred - med) <= max(0.03 * med, K_SE * se, 1.0), (pred, med, se)


@settings(max_examples=examples(25))
@given(st.floats(0.01, 0.2), st.floats(0.05, 4.0), st.floats(5e-3, 4e-2),
       st.sampled_from([0.99, 0.999]), st.sampled_from([8, 64]))
def test_adam_failure_clock_within_three_percent(b, cd, lr0, beta2, batch):
    # Drawn drift pulls and noise cover both regimes (c_d / b^2 from 1.25 to 4e4); at lr0 4e-2
    # the whole passage can fall inside beta2 = 0.999's warm-up.
    cfg = QuadraticConfig(dim=1, drift_bias=b, drift_noise=cd)
    opt = OptimConfig(beta2=beta2)
    pred = theory.adam_failure_samples(cfg, opt, lr0, batch)["updates"]
    med, se = _median_and_se(_adam_drift_crossings(cfg, opt, lr0, batch, REF_SEEDS, 2 * pred))
    # one update besides: a clock of 16 updates cannot be told apart at 3%
    assert abs(pred - med) <= max(0.03 * med, K_SE * se, 1.0), (pred, med, se)
