"""Numbers nobody looks at in the policy model (issue 56), each against an oracle of its own:

- the noise-scale estimate of `dynamics.noise_stats` (class 1): per-group projections d_p drawn
  from a known two-point distribution, every outcome of P draws enumerated, so E[signal] must
  be mean(d)^2 and E[noise] G Var(d) (the squared mean over P groups is biased up by Var / P);
- the null clock's shift (class 2): measured from the reference policy's own END_B log-odds,
  here a warm-up whose labels end in END_B 10% of the time (log-odds near log(1/9) = -2.2,
  far from 0), recomputed in NumPy from the teacher-forced log-probabilities;
- Adam's KL clock in `adam_noise` (class 3): KL ~ (1/2)(a n^2 + c n) solved by
  scipy.optimize.brentq, and (a, c) against the exact expected KL of Adam's steady steps,
  every sequence of groups drawn enumerated.
The module's helpers that are not under test (the objective, the statistics, the warm-up's
params) are replaced by fakes whose derivatives are known where the formula under test only
reads them."""
import functools
import importlib
import itertools
import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from scipy.optimize import brentq

from twoclock.config import OptimConfig
from twoclock.models.grpo import noise_scale, regime_of
from twoclock.models.policy import PolicyConfig, WarmupConfig, adam_noise, evaluate, task, \
    warmup
from twoclock.models.policy.surrogate import Rollout

DYN = importlib.import_module("twoclock.models.policy.dynamics")  # the package's name is a function
DIRS = DYN.NOISE_DIRS  # acc, kl, entropy, null
SCALE = np.array([1.0, -2.0, 0.5, 3.0])  # each direction's projection: d_kp = SCALE_k y_p


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(warmup.CACHE_ENV, str(tmp_path_factory.mktemp("warmup")))
        yield


# ------------------------------------------------------------------ class 1: noise_stats

def _fake_stats(p, arch, pool, logref=None):
    """The held-out statistics as the coordinates of w: their unit gradients are e_k."""
    w = p["w"]
    return {"acc": w[0], "kl": w[1], "entropy": w[2], "null": w[3], "deploy": w[0]}


def _fake_groups(p, ro, cfg, arch, group, clip):
    """Group p's surrogate y_p (w . SCALE), y_p read from its rows' advantage: its derivative
    along e_k is SCALE_k y_p."""
    return ro.adv.reshape(-1, group)[:, 0] * jnp.dot(p["w"], jnp.asarray(SCALE, p["w"].dtype))


@functools.lru_cache(maxsize=None)
def _noise_stats_fn(P, group):
    """adv [K, P G] -> noise_stats at each row (compiled once per shape, traced under the
    fakes: every call is made under them)."""
    cfg = PolicyConfig(group=group)
    s = SimpleNamespace(arch=None, test=None, logref_test=None)
    z = jnp.zeros((P * group, 1))
    ro = Rollout(z, z, z, jnp.zeros(P * group), jnp.ones(P * group), z, z)
    w = {"w": jnp.zeros(4)}
    return jax.jit(jax.vmap(lambda adv: DYN.noise_stats(w, ro._replace(adv=adv), cfg, s, cfg.clip)))


def noise_stats_of(y_KxP, group):
    """noise_stats at each row of y (the P groups' y_p), through the fakes."""
    f = _noise_stats_fn(y_KxP.shape[1], group)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DYN, "group_objectives", _fake_groups)
        mp.setattr(evaluate, "pool_stats", _fake_stats)
        out = f(jnp.asarray(np.repeat(y_KxP, group, axis=1), jnp.float32))
    return {k: np.asarray(v, np.float64) for k, v in out.items()}


@pytest.mark.parametrize("P,G", [(2, 3), (4, 2)])
@given(u=st.floats(-3, 3), v=st.floats(-3, 3), q=st.floats(0.05, 0.95))
@example(u=1.0, v=-1.0, q=0.5)   # mean 0: no signal at all, only the bias would show one
@example(u=2.0, v=2.0, q=0.3)    # no variance: both estimators agree (the oracle still holds)
@example(u=0.5, v=-3.0, q=0.05)  # the ends of the ranges
def test_signal_and_noise_are_unbiased_by_exact_enumeration(P, G, u, v, q):
    """d_p = SCALE_k y_p with y_p iid u (probability q) or v: over all 2^P outcomes, weighted by
    their probabilities, E[signal_k] = SCALE_k^2 mu^2 and E[noise_k] = G SCALE_k^2 sigma^2,
    mu = q u + (1 - q) v, sigma^2 = q (1 - q) (u - v)^2 (a signal without its - Var / P is
    SCALE_k^2 sigma^2 / P too high); drive_k = SCALE_k mean(y) in every outcome."""
    outs = np.array(list(itertools.product((1, 0), repeat=P)))  # [2^P, P]
    y = np.where(outs == 1, u, v)
    wts = np.prod(np.where(outs == 1, q, 1 - q), axis=1)
    mu, s2 = q * u + (1 - q) * v, q * (1 - q) * (u - v) ** 2
    got = noise_stats_of(y, G)
    tol = 2e-6 * (mu ** 2 + s2 + 1e-3)  # float32 over at most 16 outcomes
    for i, k in enumerate(DIRS):
        c2 = SCALE[i] ** 2
        assert abs(wts @ got[f"signal_{k}"] - c2 * mu ** 2) <= c2 * tol, k
        assert abs(wts @ got[f"noise_{k}"] - G * c2 * s2) <= G * c2 * tol, k
        np.testing.assert_allclose(got[f"drive_{k}"], SCALE[i] * y.mean(1), rtol=1e-6,
                                   atol=1e-6)


def test_noise_stats_by_hand_and_the_regime_it_decides():
    """y = (0.5, -1, 2, -1), G = 3: mean 1/8, Var (ddof 1) 33/16, so per direction noise
    3 x 33/16 SCALE^2 and signal (1/64 - 33/64) SCALE^2 = -SCALE^2 / 2 < 0: no detectable
    mean drive, a random walk at any batch; without the bias term the signal would be
    SCALE^2 / 64 and the noise scale 396, a 'noise' direction at B 12."""
    got = noise_stats_of(np.array([[0.5, -1.0, 2.0, -1.0]]), 3)
    for i, k in enumerate(DIRS):
        c2 = SCALE[i] ** 2
        assert got[f"noise_{k}"][0] == pytest.approx(3 * 33 / 16 * c2, rel=1e-6)
        assert got[f"signal_{k}"][0] == pytest.approx(-0.5 * c2, rel=1e-6)
        b = float(noise_scale(got[f"noise_{k}"], got[f"signal_{k}"]))
        assert regime_of(b, 12) == "random walk", k


# ------------------------------------------------------------------ class 3: Adam's KL clock

def _predict(a, c, theta, lr0, batches, monkeypatch):
    """predict_clocks' KL parts at (a, c) per batch (lr = lr0 sqrt(B / 2)), its setup faked
    (the KL clock reads only its threshold)."""
    monkeypatch.setattr(adam_noise, "setup", lambda cfg: SimpleNamespace(
        start={"acc": 0.1, "entropy": 2.0}))
    cfg = PolicyConfig(kl_threshold=theta)
    moves = {str(b): {"acc": (0.5, 1.0), "entropy": (-0.5, 1.0), "null": (0.5, 1.0),
                      "kl": (a, c)} for b in batches}
    return adam_noise.predict_clocks(cfg, OptimConfig(lr_rule="sqrt", b0=2.0), lr0, moves)["kl"]


def _solve(a2, a1, theta):
    """The n > 0 with (1/2)(a2 n^2 + a1 n) = theta, by brentq: it lies below each part's own
    crossing, 2 theta / a1 and sqrt(2 theta / a2)."""
    f = lambda n: 0.5 * (a2 * n * n + a1 * n) - theta
    hi = min(2 * theta / a1 if a1 > 0 else math.inf, math.sqrt(2 * theta / a2) if a2 > 0
             else math.inf)
    return brentq(f, 0.0, hi * (1 + 1e-12), xtol=1e-300, rtol=4 * np.finfo(float).eps,
                  maxiter=500)


@given(a=st.floats(1e-4, 1e4), log_r=st.floats(-6, 6), theta=st.floats(1e-3, 10.0),
       lr0=st.floats(1e-4, 1.0))
@example(a=1.0, log_r=-6.0, theta=0.5, lr0=0.01)  # walk-dominated: near 2 theta / c
@example(a=1.0, log_r=6.0, theta=0.5, lr0=0.01)   # drift-dominated: near sqrt(2 theta / a)
@example(a=1.0, log_r=0.0, theta=0.5, lr0=0.01)   # 8 a theta = c^2: both matter
def test_kl_clock_is_the_root_of_its_half_quadratic(a, log_r, theta, lr0):
    """At each batch, with a', c' = lr^2 (a, c): drift alone N = B n with (1/2) a' n^2 = theta,
    walk alone (1/2) c' n = theta, both (1/2)(a' n^2 + c' n) = theta, each n by brentq.
    r = 8 a' theta / c'^2 spans 1e-6..1e6 (below 1e-6 the closed form's -c + sqrt(c^2 + ...)
    cancels more digits than the 1e-8 compared here)."""
    batches = (8, 32)
    with pytest.MonkeyPatch.context() as mp:
        for b in batches:
            lr2 = lr0 ** 2 * b / 2.0
            # c from r at this batch's lr: r is the same at both (c^2 / a scales as lr^2)
            c = math.sqrt(8 * a * theta / (10 ** log_r * lr2))
            got = _predict(a, c, theta, lr0, (b,), mp)
            A, C = lr2 * a, lr2 * c
            for part, (a2, a1) in (("drift", (A, 0.0)), ("walk", (0.0, C)), ("both", (A, C))):
                want = b * _solve(a2, a1, theta)
                assert got[part][str(b)] == pytest.approx(want, rel=1e-8), (part, b)


def test_kl_moves_are_the_exact_expected_kl_of_adams_steady_steps():
    """KL ~ (1/2)(a n^2 + c n) (lr 1): Adam's steady step along the mean of P = B / G groups
    drawn uniformly with replacement from the K measured ones, D (g_bar) with D = 1 / (sqrt(mu^2
    + sigma^2 / B) + eps); after n steps KL = (1/2) x^T F x of their sum x. Its exact
    expectation over all K^(n P) draws, at n = 1, 2, 3, against unit_moves' (a, c) with a
    non-diagonal F; then predict_clocks' combined KL clock is where the enumerated
    expectation, a quadratic in n, reaches the threshold (brentq)."""
    g = np.array([[1.0, 2.0], [3.0, -1.0], [-0.5, 4.0]])  # K = 3 groups, 2 coordinates
    F = np.array([[2.0, 0.6], [0.6, 1.0]])
    quad = lambda x: np.einsum("kn,nm,km->k", np.asarray(x), F, np.asarray(x))
    G, P, eps = 2, 2, 0.1
    B = G * P
    cfg = PolicyConfig(group=G)
    m, var = g.mean(0), g.var(0, ddof=1)
    D = 1 / (np.sqrt(np.maximum(m ** 2 - var / len(g), 0) + G * var / B) + eps)
    a, c = adam_noise.unit_moves(cfg, [B], g, {}, quad=quad, eps=eps)[str(B)]["kl"]
    expected = {}
    for n in (1, 2, 3):
        draws = np.array(list(itertools.product(range(len(g)), repeat=n * P)))  # [K^nP, nP]
        x = (g[draws].reshape(len(draws), n, P, 2).mean(2) * D).sum(1)  # sum of n steps
        expected[n] = float(np.mean(0.5 * quad(x)))
        assert 0.5 * (a * n * n + c * n) == pytest.approx(expected[n], rel=1e-12), n
    # the quadratic through the enumerated expectations, and the clock where it reaches theta
    a_e = expected[2] - 2 * expected[1]  # E1 = (a + c) / 2, E2 = 2 a + c
    c_e = 2 * expected[1] - a_e
    with pytest.MonkeyPatch.context() as mp:
        for lr0, theta in ((0.3, 0.5), (0.02, 0.05)):
            lr2 = lr0 ** 2 * B / 2.0
            n = _solve(lr2 * a_e, lr2 * c_e, theta)
            mp.setattr(adam_noise, "setup", lambda cfg: SimpleNamespace(
                start={"acc": 0.1, "entropy": 2.0}))
            got = adam_noise.predict_clocks(
                PolicyConfig(group=G, kl_threshold=theta), OptimConfig(lr_rule="sqrt", b0=2.0),
                lr0, {str(B): {"acc": (1.0, 1.0), "entropy": (-1.0, 1.0), "null": (1.0, 1.0),
                               "kl": (a, c)}})
            assert got["kl"]["both"][str(B)] == pytest.approx(B * n, rel=1e-9)


# ------------------------------------------------------------------ class 2: the null clock

# the tiny net of test_policy_oracles, warmed up on labels that end in END_B 10% of the time
NULL_CFG = PolicyConfig(n_train=256, n_test=16, n_ood=16, d_model=8, n_layers=1, n_heads=2,
                        d_mlp=16, group=3, noise_every=24, fail_stat="null",
                        null_threshold=0.05,
                        warmup=WarmupConfig(steps=150, eval_every=150, batch=64, lr=1e-2,
                                            end_b=0.1, acc=0.99))


def _log_odds(params, s):
    """Mean over the held-out pool of log p(END_B) - log p(END_A) at the end position (NumPy on
    the teacher-forced log-probabilities)."""
    lp = np.asarray(evaluate.pool_logp(params, s.arch, s.test), np.float64)
    nd = np.asarray(s.test.n_digits)
    end = lp[np.arange(len(nd)), nd]
    return float(np.mean(end[:, task.END_B] - end[:, task.END_A]))


@pytest.mark.slow  # a warm-up of 150 steps and one update's compile: ~50 s on 2 cores
def test_null_clock_shift_is_measured_from_the_reference_log_odds():
    """Updates 1..6 at B 12, one per chunk: the null metric is the held-out log-odds minus the
    reference's, the null hit (the failure clock here) |that shift| - null_threshold, the
    drift metric |shift|, and the start margin -null_threshold; the reference's log-odds,
    from the warm-up's 10% END_B labels, is near log(1/9), so a shift measured from 0 would
    cross at the first update. The noise measurement is stubbed (not under test here)."""
    s = DYN.setup(NULL_CFG)
    ref = _log_odds(s.ref, s)
    assert abs(ref - math.log(1 / 9)) < 0.5, ref
    stub = lambda w, ro, cfg, s, clip: {f"{q}_{k}": jnp.zeros(()) for k in DIRS
                                             for q in ("noise", "signal", "drive")}
    thr = NULL_CFG.null_threshold
    shifts = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DYN, "noise_stats", stub)
        d = DYN.dynamics(NULL_CFG, OptimConfig(lr_rule="fixed"), 12)(12, jax.random.PRNGKey(0))
        tx = d.optimizer(3e-2)
        adv = jax.jit(lambda state, ts, ks: d.advance(tx, state, ts, ks))
        state = d.init(tx)
        assert float(state.margins["null"]) == pytest.approx(-thr)
        assert float(state.margins["fail"]) == pytest.approx(-thr)
        for t in range(1, 7):
            ts = jnp.array([t])
            state, hits, m = adv(state, ts, d.draw(ts))
            shift = _log_odds(state.params, s) - ref
            shifts.append(shift)
            assert float(m["null"]) == pytest.approx(shift, abs=2e-5), t
            assert float(hits["null"][0]) == pytest.approx(abs(shift) - thr, abs=2e-5), t
            assert float(hits["fail"][0]) == pytest.approx(abs(shift) - thr, abs=2e-5), t
            assert float(m["drift"]) == pytest.approx(abs(shift), abs=2e-5), t
    assert max(map(abs, shifts)) > 10 * 2e-5  # the policy moved: a shift to compare
