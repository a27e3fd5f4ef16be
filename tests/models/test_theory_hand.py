"""Each failure prediction of the quadratic model on its own: a hand-computed value, and a
short simulation in the regime where the prediction is exact.

The simulations switch the drift noise (almost) off, so the first crossing is deterministic
and the prediction must hold to within the few warm-up updates it says it ignores; no Monte
Carlo tolerance is involved. A missing factor ((1 - mu), Adam's b^2) is off by 10x or more.
"""
import math

import jax
import numpy as np
import pytest

from tests.helpers import assert_close
from twoclock import OptimConfig, QuadraticConfig
from twoclock.models.quadratic import MODEL
from twoclock.models.quadratic.theory import adam_failure_samples, linear_failure_samples
from twoclock.engine.stages import constant_run

TIGHT = dict(rtol=1e-12, atol=0)


def test_linear_failure_by_hand():
    cfg = QuadraticConfig(drift_bias=0.02, drift_threshold=1.0)
    # sqrt rule, b0 = 8: lr(32) = 0.01 * 2 = 0.02; N = B thr (1 - mu) / (lr b)
    sgd = OptimConfig(name="sgd", lr_rule="sqrt")
    mom = OptimConfig(name="momentum", lr_rule="sqrt", momentum=0.9)
    assert_close(linear_failure_samples(cfg, sgd, 0.01, 32), 32 * 1.0 / (0.02 * 0.02), **TIGHT,
                 what="SGD N_fail")
    assert_close(linear_failure_samples(cfg, mom, 0.01, 32), 32 * 0.1 / (0.02 * 0.02), **TIGHT,
                 what="momentum N_fail")
    # linear rule: lr(64) = 0.01 * 8 = 0.08, N = 64 * 2 * 0.5 / (0.08 * 0.05) = 16000
    lin = OptimConfig(name="momentum", lr_rule="linear", momentum=0.5)
    assert_close(linear_failure_samples(QuadraticConfig(drift_bias=0.05, drift_threshold=2.0),
                                        lin, 0.01, 64), 16000.0, **TIGHT, what="linear rule")


def test_adam_failure_by_hand():
    """Low drift noise (c_d / B << b^2): Adam's bias-corrected step is lr b / (sqrt(c_d / B +
    b^2) + eps) from the first update on, so the crossing is within one update of
    thr / step whether the prediction is the smooth form or an exact first crossing."""
    cfg = QuadraticConfig(drift_bias=0.5, drift_noise=0.01, drift_threshold=1.0)
    opt = OptimConfig(name="adam", lr_rule="fixed", eps=0.0)
    got = adam_failure_samples(cfg, opt, 0.01, 64)
    hand = math.sqrt(0.01 / 64 + 0.25) / (0.01 * 0.5)   # thr / step, updates
    assert abs(got["updates"] - hand) <= 1, (got, hand)
    assert abs(got["samples"] - 64 * hand) <= 64, (got, hand)
    assert got["regime"] == "signal"   # B = 64 > c_d / b^2 = 0.04
    # eps enters next to sqrt(E[g^2])
    got = adam_failure_samples(cfg, OptimConfig(name="adam", lr_rule="fixed", eps=0.1), 0.01, 64)
    hand = (math.sqrt(0.01 / 64 + 0.25) + 0.1) / (0.01 * 0.5)
    assert abs(got["updates"] - hand) <= 1, (got, hand)
    # noise-dominated (B = 2 < c_d / b^2 = 4): the leading form thr sqrt(c_d b0) / (lr0 b)
    # (B / b0)^(1/2 - p), p = 0
    cfg = QuadraticConfig(drift_bias=0.5, drift_noise=1.0, drift_threshold=1.0)
    got = adam_failure_samples(cfg, opt, 0.01, 2)
    assert_close(got["leading"], math.sqrt(8) / (0.01 * 0.5) * (2 / 8) ** 0.5, **TIGHT,
                 what="leading")
    assert got["regime"] == "noise"


def _fail_t(cfg, opt, lr, batch, n_steps):
    run = jax.jit(constant_run(MODEL, cfg, opt, n_steps, n_ckpt=1))
    return float(jax.device_get(run(np.float32(batch), np.float32(lr),
                                    jax.random.PRNGKey(0))).fail_t)


@pytest.mark.parametrize("name, mu", [("sgd", 0.0), ("momentum", 0.5), ("momentum", 0.9)])
def test_linear_failure_matches_a_noiseless_run(name, mu):
    """Drift noise ~0: the mean moves lr b sum_k (1 - mu^k) / (1 - mu) after n updates, so the
    crossing n solves n - lag (1 - mu^n) = the prediction, lag = mu / (1 - mu): the prediction
    plus the momentum lag once mu^n is small, within one update of it at mu <= 0.5. (The
    clock interpolates between updates, where the closed form is nearly linear.)"""
    cfg = QuadraticConfig(dim=2, drift_dim=3, drift_bias=0.5, drift_noise=1e-12,
                          drift_threshold=1.0)
    opt = OptimConfig(name=name, momentum=0.9 if name == "sgd" else mu, lr_rule="fixed")
    lr, B = 0.02, 16
    pred = linear_failure_samples(cfg, opt, lr, B) / B     # updates
    t = _fail_t(cfg, opt, lr, B, 400)
    lag = mu / (1 - mu)
    assert abs(t - lag * (1 - mu ** t) - pred) <= 0.05, (t, pred, lag)
    if mu <= 0.5:
        assert pred + lag - 1 <= t <= pred + lag + 1, (t, pred, lag)


@pytest.mark.parametrize("B", [4, 64])
def test_adam_failure_matches_a_noiseless_run(B):
    """Drift noise ~0 (signal-dominated at every B): bias-corrected Adam steps lr exactly, so
    the crossing is thr / lr updates, as predicted with the b^2 term (without it, ~0)."""
    cfg = QuadraticConfig(dim=2, drift_dim=3, drift_bias=0.5, drift_noise=1e-10,
                          drift_threshold=1.0)
    opt = OptimConfig(name="adam", lr_rule="sqrt")
    lr0 = 0.02
    pred = adam_failure_samples(cfg, opt, lr0, B)
    lr = lr0 * (B / opt.b0) ** 0.5
    assert pred["regime"] == "signal"
    assert abs(pred["updates"] - 1.0 / lr) <= 1, pred   # thr / lr, to the update
    t = _fail_t(cfg, opt, lr, B, 200)
    assert abs(t - pred["updates"]) <= 1, (t, pred)


def test_adam_failure_search_stops_at_max_updates():
    """The search window never passes max_updates and always ends: a crossing at update n is
    found with max_updates = n, reported as None with n - 1 (both used to go wrong: a first
    window past 2 max_updates returned None, and a crossing past max_updates looped forever)."""
    cfg, opt = QuadraticConfig(), OptimConfig(lr_rule="sqrt")
    n = adam_failure_samples(cfg, opt, 2e-2, 256)["updates"]
    assert n is not None and n < 64  # shorter than the search's first window
    assert adam_failure_samples(cfg, opt, 2e-2, 256, max_updates=n)["updates"] == n
    assert adam_failure_samples(cfg, opt, 2e-2, 256, max_updates=n - 1)["updates"] is None
    slow, opt_eps = QuadraticConfig(drift_noise=0.5), OptimConfig(eps=1.0)
    n = adam_failure_samples(slow, opt_eps, 0.01, 8)["updates"]
    assert n > 250
    assert adam_failure_samples(slow, opt_eps, 0.01, 8, max_updates=250)["updates"] is None
