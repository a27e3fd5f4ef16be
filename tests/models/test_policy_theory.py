"""adam_noise's formulas (issue 34) against hand values at points where a swapped argument or
a lost constant shows: B != b0, lr != lr0, B != G, unequal coordinates, a direction pushed the
wrong way. Each oracle is a NumPy transcription of the module doc's formula or a polynomial
root (np.roots), never the module's own helpers."""
import math

import numpy as np
import pytest

from twoclock.config import OptimConfig
from twoclock.models.policy import PolicyConfig, WarmupConfig, adam_noise, warmup
from twoclock.models.policy.dynamics import setup

# the tiny warm-up of tests/models/test_policy_oracles.py (a few seconds)
CFG = PolicyConfig(n_train=256, n_test=16, n_ood=16, d_model=8, n_layers=1, n_heads=2,
                   d_mlp=16, warmup=WarmupConfig(steps=4, eval_every=2, batch=16), group=3,
                   noise_every=24, target=0.4, null_threshold=0.25, kl_threshold=0.3,
                   entropy_threshold=0.7)

G_PxN = np.array([[1.0, 2.0, -1.0], [3.0, 2.0, 0.5], [5.0, 8.0, 0.0], [3.0, -4.0, 2.5]])


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(warmup.CACHE_ENV, str(tmp_path_factory.mktemp("warmup")))
        yield


def test_moments_normaliser_and_noise_scales_by_hand():
    """4 groups of G = 4: m the mean, mu^2 = m^2 - Var / P_total (floored at 0), sigma^2 = G Var
    (per response), D(B) = 1 / (sqrt(mu^2 + sigma^2 / B) + eps), B_i = sigma^2 / mu^2."""
    G = 4
    mom = adam_noise.moments(G_PxN, G)
    m = np.array([3.0, 2.0, 0.5])
    var = np.array([8.0 / 3, 24.0, 6.5 / 3])  # sum of squared deviations / 3
    np.testing.assert_allclose(mom.m, m)
    np.testing.assert_allclose(mom.sig2, G * var)
    np.testing.assert_allclose(mom.mu2, [9 - var[0] / 4, 0.0, 0.0])  # 4 - 6 and 0.25 - 0.54
    np.testing.assert_allclose(mom.normaliser(16, eps=0.5),
                               1 / (np.sqrt(mom.mu2 + G * var / 16) + 0.5))
    bi = mom.noise_scales()
    assert bi[0] == pytest.approx(G * var[0] / (9 - var[0] / 4)) and np.isinf(bi[1:]).all()


@pytest.mark.parametrize("batch,lr", [(8, 0.3), (48, 2.0)])
def test_adam_moves_by_hand(batch, lr):
    """drift = lr sum_i u_i m_i D_i(B); sd = lr sqrt(G Var_p(sum_i u_i g_pi D_i) / B), at B != G
    and lr != 1 (a sigma^2 / P for sigma^2 / B, or G dropped, changes them)."""
    G = 4
    u = np.array([0.6, -0.8, 0.0])
    var = G_PxN.var(0, ddof=1)
    mu2 = np.maximum(G_PxN.mean(0) ** 2 - var / 4, 0)
    D = 1 / np.sqrt(mu2 + G * var / batch)
    x = G_PxN @ (u * D)
    drift, sd = adam_noise.adam_moves(G_PxN, u, batch, lr, G)
    assert drift == pytest.approx(lr * np.sum(u * G_PxN.mean(0) * D), rel=1e-12)
    assert sd == pytest.approx(lr * math.sqrt(G * x.var(ddof=1) / batch), rel=1e-12)


def test_unit_moves_and_the_kl_quadratic_form_by_hand():
    """Per batch: each statistic's (drift, sd) at lr 1 times its gradient norm; the KL's
    (a, c) = (vF(m D), G / B mean_p vF((g_p - m) D)) with a diagonal Fisher vF(x) = sum f x^2;
    G is the config's group (3), not the 4 rows."""
    G = CFG.group
    f = np.array([1.0, 0.5, 2.0])
    quad = lambda x: np.sum(f * np.asarray(x) ** 2, axis=1)
    u = np.array([0.0, 0.6, 0.8])
    dirs = {"acc": (u, 2.5)}
    out = adam_noise.unit_moves(CFG, [8, 32], G_PxN, dirs, quad=quad, eps=0.1, n_quad=100)
    m, var = G_PxN.mean(0), G_PxN.var(0, ddof=1)
    mu2 = np.maximum(m ** 2 - var / 4, 0)
    for b in (8, 32):
        D = 1 / (np.sqrt(mu2 + G * var / b) + 0.1)
        x = G_PxN @ (u * D)
        drift, sd = out[str(b)]["acc"]
        assert drift == pytest.approx(2.5 * np.dot(u * D, m), rel=1e-12)
        assert sd == pytest.approx(2.5 * math.sqrt(G * x.var(ddof=1) / b), rel=1e-12)
        a, c = out[str(b)]["kl"]
        assert a == pytest.approx(np.sum(f * (m * D) ** 2), rel=1e-12)
        assert c == pytest.approx(G / b * np.mean(np.sum(f * ((G_PxN - m) * D) ** 2, axis=1)),
                                  rel=1e-12)


def _root(a2, a1, a0):
    """The positive root of a2 n^2 + a1 n + a0 = 0 (a0 < 0)."""
    r = np.roots([a2, a1, a0]).real
    return float(r[r > 0][0]) if a2 else -a0 / a1


def test_predicted_clocks_by_hand_under_the_sqrt_rule():
    """predict_clocks at B 8 and 32 with b0 = 2 (lr = lr0 sqrt(B / 2): B != b0, lr != lr0):
    drift alone N = B theta / |lr d|, walk alone N = B theta^2 / (lr s)^2, both B times the root
    of (lr d n)^2 + (lr s)^2 n = theta^2; the KL's B sqrt(2 theta / a'), B 2 theta / c' and
    the root of (a' n^2 + c' n) / 2 = theta with a', c' = lr^2 (a, c). acc pushed down and
    entropy pushed up cross by the walk alone; null crosses either way. theta: target - start
    acc, start entropy - threshold, the null and kl thresholds."""
    s = setup(CFG)
    th = {"acc": CFG.target - s.start["acc"], "entropy": s.start["entropy"] -
          CFG.entropy_threshold, "null": CFG.null_threshold, "kl": CFG.kl_threshold}
    assert min(th.values()) > 0
    moves = {"8": {"acc": (0.5, 2.0), "entropy": (-0.3, 1.0), "null": (-0.2, 0.7),
                   "kl": (0.4, 3.0)},
             "32": {"acc": (-0.5, 1.5), "entropy": (0.3, 0.8), "null": (0.1, 0.2),
                    "kl": (0.2, 1.0)}}
    opt, lr0 = OptimConfig(lr_rule="sqrt", b0=2.0), 0.05
    pred = adam_noise.predict_clocks(CFG, opt, lr0, moves)
    for b in (8, 32):
        lr = lr0 * math.sqrt(b / 2.0)
        for k in ("acc", "entropy", "null"):
            d, sd = moves[str(b)][k]
            d, sd = lr * d, lr * sd
            if (k == "acc" and d < 0) or (k == "entropy" and d > 0):
                d = 0.0
            t = th[k]
            want_drift = b * t / abs(d) if d else math.inf
            assert pred[k]["drift"][str(b)] == pytest.approx(want_drift, rel=1e-9), (k, b)
            assert pred[k]["walk"][str(b)] == pytest.approx(b * t ** 2 / sd ** 2, rel=1e-9)
            assert pred[k]["both"][str(b)] == pytest.approx(
                b * _root(d ** 2, sd ** 2, -t ** 2), rel=1e-9), (k, b)
        a, c = (lr ** 2 * v for v in moves[str(b)]["kl"])
        t = th["kl"]
        assert pred["kl"]["drift"][str(b)] == pytest.approx(b * math.sqrt(2 * t / a), rel=1e-9)
        assert pred["kl"]["walk"][str(b)] == pytest.approx(b * 2 * t / c, rel=1e-9)
        assert pred["kl"]["both"][str(b)] == pytest.approx(b * _root(a / 2, c / 2, -t),
                                                           rel=1e-9)
    # the exponents: d log N / d log B between 8 and 32, by hand
    exp = adam_noise.exponents(pred["null"])
    for part in ("drift", "walk", "both"):
        want = math.log(pred["null"][part]["32"] / pred["null"][part]["8"]) / math.log(4)
        assert exp[part] == pytest.approx(want, rel=1e-12)
    assert adam_noise.exponents(pred["acc"])["drift"] is None  # inf at 32: no exponent


def test_first_passage_is_the_positive_root():
    for d, sd, t in ((0.3, 0.7, 1.5), (2.0, 0.1, 0.4), (0.05, 1.3, 2.0)):
        assert adam_noise.first_passage(np.float64(d), np.float64(sd), t) == pytest.approx(
            _root(d ** 2, sd ** 2, -t ** 2), rel=1e-9)


def test_signal_share_by_hand():
    """The share of u's weight u_i^2 on coordinates with B_i < B (strictly)."""
    u = np.array([0.6, 0.0, 0.8])
    b_i = np.array([4.0, 1.0, 64.0])
    out = adam_noise.signal_share(b_i, {"null": (u, 1.0)}, [4, 8, 128])
    assert out["4"]["null"] == pytest.approx(0.0)
    assert out["8"]["null"] == pytest.approx(0.36)
    assert out["128"]["null"] == pytest.approx(1.0)
