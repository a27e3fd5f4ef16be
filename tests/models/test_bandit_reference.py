"""The bandit's clocks against their definitions, recomputed from the weights after every
update with an independent NumPy evaluation, and its failure prediction by hand.

Held-out accuracy is mean_x sum_a softmax(z0 + phi w)_a r(x, a) over the *held-out* pool;
progress is its first crossing of the target, failure the first mean(w_drift) >= threshold,
emergent collapse the first update with accuracy <= (running peak, the start included) -
collapse_drop.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.helpers import assert_close, first_crossing
from twoclock import OptimConfig
from twoclock.models.bandit import MODEL, BanditConfig, problem, theory
from twoclock.engine.stages import constant_run

# Adam at lr 0.1: progress at ~6 updates, failure at ~11, collapse at ~35 (all before N)
CFG = BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_bias=1.0, drift_noise=1.0,
                   drift_scale=1.0, target=0.51, drift_threshold=1.0)
OPT = OptimConfig(name="adam", lr_rule="fixed")
B, LR, N = 64, 0.1, 48


def _acc(w_TxD, pool):
    """Exact accuracy of each w over a pool, float64 NumPy."""
    z = pool.z0[None] + np.einsum("nkd,td->tnk", pool.phi, w_TxD)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.mean(np.sum(p * pool.R[None], axis=-1), axis=-1)




@pytest.fixture(scope="module")
def runs():
    """The engine's trace, and the weights after every update from the same noise stream."""
    key = jax.random.PRNGKey(0)
    tr = jax.device_get(jax.jit(constant_run(MODEL, CFG, OPT, N, n_ckpt=N, batch=B))(
        B, np.float32(LR), key))
    d = MODEL.dynamics(CFG, OPT, B)(B, key)
    tx = d.optimizer(jnp.float32(LR))
    step = jax.jit(lambda s, ts: d.advance(tx, s, ts, d.draw(ts))[0])
    state, w = d.init(tx), []
    for t in range(1, N + 1):
        state = step(state, jnp.array([t], jnp.int32))
        w.append(np.asarray(state.params, np.float64))
    return tr, np.stack(w)


def test_heldout_accuracy_is_a_direct_evaluation_on_the_heldout_pool(runs):
    tr, w = runs
    train, test = problem.make_problem(CFG)
    acc = _acc(w, test)
    # the same trajectory (mean drift weight), and the held-out accuracy of each update's w
    assert_close(tr.ckpt["drift"], w[:, CFG.skill_dim:].mean(axis=1), rtol=1e-5, atol=1e-6,
                 what="mean drift weight")
    assert_close(tr.ckpt["heldout_acc"], acc, rtol=1e-5, atol=1e-6, what="held-out accuracy")
    assert_close(tr.ckpt["train_acc"][-1], _acc(w[-1:], train)[0], rtol=1e-5, atol=1e-6,
                 what="train accuracy")
    # the pools disagree by far more than the tolerance, so a swapped pool fails above
    assert np.max(np.abs(_acc(w, train) - acc)) > 0.05


def test_clocks_are_their_definitions(runs):
    tr, w = runs
    _, test = problem.make_problem(CFG)
    acc = _acc(w, test)
    acc0 = _acc(np.zeros((1, w.shape[1])), test)[0]
    drift = w[:, CFG.skill_dim:].mean(axis=1)
    peak = np.maximum.accumulate(np.concatenate([[acc0], acc]))[1:]
    # each margin's zero, interpolated between the updates either side of its first
    # crossing, from the start: acc0 (the peak) and drift 0
    margin = {"prog": (acc - CFG.target, acc0 - CFG.target),
              "fail": (drift - CFG.drift_threshold, -CFG.drift_threshold),
              "collapse": (peak - CFG.collapse_drop - acc, -CFG.collapse_drop)}
    want = {k: first_crossing(*m) for k, m in margin.items()}
    assert all(0 < t < N and t % 1 for t in want.values()), want  # every clock crosses here
    got = {"prog": tr.prog_t, "fail": tr.fail_t, "collapse": tr.extra["collapse_n"] / B}
    for k in want:
        assert_close(got[k], want[k], rtol=1e-4, atol=0, what=k)
    assert_close([tr.prog_n, tr.fail_n], [B * tr.prog_t, B * tr.fail_t], rtol=1e-6, atol=0,
                 what="samples")
    # no reference value at or just before a crossing sits on its threshold (float32 rounding
    # cannot move a crossing to another update)
    for name, v, thr in (("prog", acc, CFG.target), ("fail", drift, CFG.drift_threshold),
                         ("collapse", acc - peak, -CFG.collapse_drop)):
        t = math.ceil(want[name])
        assert np.min(np.abs(v[t - 2:t] - thr)) > 1e-4, name


@pytest.mark.parametrize("name", ["sgd", "momentum", "adam"])
def test_predicted_failure_by_hand(name):
    opt = OptimConfig(name=name, lr_rule="sqrt", momentum=0.8, eps=0.0)
    B_, lr0, b, cd, thr = 128, 0.01, 0.05, 25.0, 2.0
    lr = lr0 * math.sqrt(B_ / 8)
    for M, E in ((1, 1), (2, 1), (1, 3), (4, 2)):
        cfg = BanditConfig(minibatches=M, epochs=E, drift_bias=b, drift_noise=cd,
                           drift_threshold=thr)
        step = {"sgd": lr * b, "momentum": lr * b / (1 - 0.8),
                "adam": lr * b / math.sqrt(cd * M / B_ + b * b)}[name]
        assert_close(theory.predicted_failure_samples(cfg, opt, lr0, B_),
                     B_ * thr / (M * E * step), rtol=1e-12, atol=0, what=f"{name} M={M} E={E}")


@pytest.mark.parametrize("epochs", [1, 2])
def test_predicted_failure_matches_a_noiseless_sgd_run(epochs):
    """Drift signal without noise, unclipped: SGD moves mean(w_d) by ~lr b per inner step (the
    importance weight of later epochs is ~1), E steps per update: the crossing is the
    prediction within one update, E = 1 and E = 2 alike."""
    cfg = BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_bias=1.0, drift_noise=0.0,
                       clip_low=None, epochs=epochs, drift_threshold=1.0)
    opt = OptimConfig(name="sgd", lr_rule="fixed")
    lr = 0.05
    pred = theory.predicted_failure_samples(cfg, opt, lr, B) / B
    tr = jax.device_get(jax.jit(constant_run(MODEL, cfg, opt, 40, n_ckpt=1, batch=B))(
        B, np.float32(lr), jax.random.PRNGKey(0)))
    assert abs(float(tr.fail_t) - pred) <= 1, (float(tr.fail_t), pred)
