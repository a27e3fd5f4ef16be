"""The GRPO layer both policies share (twoclock.models.grpo), against hand values and a NumPy
loop."""
import argparse
import dataclasses
from dataclasses import fields

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from twoclock.cli.flags import add_config_flags, config_from_flags
from twoclock.models.bandit import BanditConfig
from twoclock.models.grpo import (GRPOConfig, epoch_orders, inner_scan, measured_until,
                                  noise_scale, regime_of)
from twoclock.models.policy import PolicyConfig

# the GRPO fields and their defaults, as both models have always spelled them (flags, JSON keys)
SHARED = {"group": 8, "advantage": "grpo", "adv_eps": 1e-6, "minibatches": 1, "epochs": 1,
          "clip_low": 0.2, "clip_high": None, "kl_coef": 0.0, "clip_ratio_c": None,
          "kl_in": "loss", "reshuffle": False}
FLAGS = ["--group", "4", "--advantage", "grpo_bessel", "--adv-eps", "1e-5", "--minibatches", "2",
         "--epochs", "3", "--clip-low", "0.1", "--clip-high", "0.3", "--kl-coef", "0.5",
         "--clip-ratio-c", "3", "--kl-in", "reward", "--reshuffle"]
GIVEN = {"group": 4, "advantage": "grpo_bessel", "adv_eps": 1e-5, "minibatches": 2, "epochs": 3,
         "clip_low": 0.1, "clip_high": 0.3, "kl_coef": 0.5, "clip_ratio_c": 3.0,
         "kl_in": "reward", "reshuffle": True}


@pytest.mark.parametrize("cls", [GRPOConfig, BanditConfig, PolicyConfig])
def test_both_models_keep_the_shared_fields_flags_and_defaults(cls):
    names = [f.name for f in fields(cls)]
    assert names[:len(SHARED)] == list(SHARED)
    assert {k: getattr(cls(), k) for k in SHARED} == SHARED
    p = argparse.ArgumentParser()
    add_config_flags(p, cls)
    cfg = config_from_flags(p.parse_args(FLAGS), cls)
    assert {k: getattr(cfg, k) for k in SHARED} == GIVEN


@pytest.mark.parametrize("kw, name", [
    (dict(group=1), "group"), (dict(advantage="ppo"), "advantage"), (dict(adv_eps=0.0), "adv_eps"),
    (dict(minibatches=0), "minibatches"), (dict(epochs=0), "epochs"),
    (dict(clip_low=1.0), "clip_low"), (dict(clip_low=None, clip_high=0.2), "clip_high"),
    (dict(kl_coef=-1.0), "kl_coef"), (dict(clip_ratio_c=1.0), "clip_ratio_c"),
    (dict(clip_ratio_c=float("inf")), "clip_ratio_c"), (dict(reshuffle=1), "reshuffle"),
    (dict(kl_in="advantage"), "kl_in")])
@pytest.mark.parametrize("cls", [GRPOConfig, BanditConfig, PolicyConfig])
def test_the_shared_validation_names_the_field(cls, kw, name):
    with pytest.raises(ValueError, match=f"^{name} must be [^\n]*$"):
        cls(**kw)


def test_prompts_and_inner_steps_by_hand():
    c = GRPOConfig(group=4, minibatches=2, epochs=3)
    assert c.prompts(16) == 4 and c.inner_steps(16) == 6 and c.inner_steps() == 6
    with pytest.raises(ValueError, match="^batch must be a multiple of group G = 4"):
        c.prompts(18)
    with pytest.raises(ValueError, match="^minibatches must be .* P = 3 .* here M = 2"):
        c.prompts(12)
    with pytest.raises(ValueError, match="^minibatches must be"):  # P = 1 < M = 2
        c.prompts(4)
    # the policy's fixed_size convention: M = minibatches B / mb_ref, so B is needed
    p = PolicyConfig(minibatches=2, epochs=2, mb_convention="fixed_size", mb_ref=64)
    assert [p.inner_steps(b) for b in (64, 256)] == [4, 16]
    with pytest.raises(ValueError, match="^batch must be given"):
        p.inner_steps()


@pytest.mark.parametrize("M, E", [(1, 1), (2, 1), (3, 2), (1, 3)])
def test_inner_scan_is_M_minibatch_steps_per_epoch_in_order(M, E):
    """SGD at lr 0.1 on least squares, per minibatch 0.5 mean((x w - y)^2), against a NumPy
    loop over E epochs of the M minibatches in order; aux records which minibatch each step
    saw."""
    rng = np.random.default_rng(M * 10 + E)
    P = 6
    x, y = rng.normal(size=(P, 3)), rng.normal(size=P)
    ro = {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32),
          "id": jnp.repeat(jnp.arange(M), P // M)}

    def grad(w, mb):
        return mb["x"].T @ (mb["x"] @ w - mb["y"]) / mb["y"].shape[0], mb["id"][0]

    tx = optax.sgd(0.1)
    w0 = jnp.zeros(3, jnp.float32)
    w, _, aux = inner_scan(tx, w0, tx.init(w0), ro, M, M * E, grad)
    want = np.zeros(3)
    for _ in range(E):
        for xm, ym in zip(np.split(x, M), np.split(y, M)):
            want = want - 0.1 * xm.T @ (xm @ want - ym) / len(ym)
    np.testing.assert_allclose(np.asarray(w), want, rtol=1e-5, atol=1e-6)
    assert np.asarray(aux).tolist() == list(range(M)) * E


def test_noise_scale_measured_until_and_regimes_by_hand():
    # mean first, then the ratio: (2 + 6) / 2 over (1 + 3) / 2 = 2, not mean(2, 2)
    assert float(noise_scale(np.array([2.0, 6.0]), np.array([1.0, 3.0]))) == 2.0
    assert float(noise_scale(np.array([2.0]), np.array([-1.0]))) == np.inf
    samples = np.array([64, 128, 192, 256])
    assert measured_until(samples, 130).tolist() == [True, True, False, False]
    assert measured_until(samples, 10).tolist() == [True, False, False, False]
    assert measured_until(samples, None).tolist() == [True] * 4
    fresh = np.array([False, True, False, True])
    assert measured_until(samples, 200, fresh).tolist() == [False, True, False, False]
    assert measured_until(samples, 10, fresh).tolist() == [False, True, False, False]
    assert regime_of(100.0, 64) == "noise" and regime_of(10.0, 64) == "signal"
    assert regime_of(np.inf, 64) == "random walk" and regime_of(np.inf, 64, walk=False) == "noise"


def _least_squares_case(P, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(P, 3)), rng.normal(size=P)
    ro = {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32),
          "row": jnp.arange(P)}

    def grad(w, mb):
        return mb["x"].T @ (mb["x"] @ w - mb["y"]) / mb["y"].shape[0], mb["row"]
    return x, y, ro, grad


def test_inner_scan_with_epoch_orders_reads_the_given_rows():
    """M = 2, E = 3 on P = 6 rows with a hand-written order per epoch: SGD against a NumPy
    loop over exactly those rows; aux records each step's rows. The identity order is the
    default split, bit for bit."""
    x, y, ro, grad = _least_squares_case(6, 0)
    order = np.array([[0, 1, 2, 3, 4, 5], [5, 0, 3, 1, 4, 2], [2, 4, 1, 0, 3, 5]])
    tx = optax.sgd(0.1)
    w0 = jnp.zeros(3, jnp.float32)
    w, _, aux = inner_scan(tx, w0, tx.init(w0), ro, 2, 6, grad, jnp.asarray(order))
    want = np.zeros(3)
    for e in range(3):
        for rows in (order[e, :3], order[e, 3:]):
            xm, ym = x[rows], y[rows]
            want = want - 0.1 * xm.T @ (xm @ want - ym) / 3
    np.testing.assert_allclose(np.asarray(w), want, rtol=1e-5, atol=1e-6)
    assert np.asarray(aux).tolist() == [list(r) for e in range(3)
                                        for r in (order[e, :3], order[e, 3:])]
    ident = jnp.asarray(np.tile(np.arange(6), (3, 1)))
    w_id = inner_scan(tx, w0, tx.init(w0), ro, 2, 6, grad, ident)[0]
    w_none = inner_scan(tx, w0, tx.init(w0), ro, 2, 6, grad)[0]
    np.testing.assert_array_equal(np.asarray(w_id), np.asarray(w_none))


def _check_orders(order, P, G, M):
    """Each epoch: a permutation of the P G rows made of whole groups (each group's G rows
    contiguous and in order), so its M minibatches partition the batch; epoch 0 is the
    rollout's order; every later epoch's partition differs from every earlier one."""
    order = np.asarray(order)
    E = order.shape[0]
    assert order.shape == (E, P * G) and order.dtype == np.int32
    assert order[0].tolist() == list(range(P * G))
    parts = []
    for e in range(E):
        assert sorted(order[e].tolist()) == list(range(P * G))
        groups = order[e].reshape(P, G)
        assert (groups == groups[:, :1] + np.arange(G)).all() and (groups[:, 0] % G == 0).all()
        parts.append({frozenset(mb.tolist()) for mb in np.split(order[e], M)})
    assert all(parts[a] != parts[b] for a in range(E) for b in range(a))


def test_epoch_orders_are_partitions_of_whole_groups_that_differ_between_epochs():
    # by hand: bits (30, 10, 20) sort to prompts (1, 2, 0), each prompt's 2 rows together
    o = epoch_orders(jnp.asarray([[30, 10, 20]], jnp.uint32), 2)
    assert np.asarray(o).tolist() == [[0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 0, 1]]
    bits = jax.random.bits(jax.random.PRNGKey(0), (3, 16))
    _check_orders(epoch_orders(bits, 3), 16, 3, 4)


def test_both_models_draw_their_orders_from_the_update_alone():
    """The bandit (from its update's raw bits) and the policy (from its update's key): each
    epoch a partition into whole groups, different between epochs, the same for the same
    update, a different one for another update; none where the config does not reshuffle
    (off, M = 1 or E = 1)."""
    from twoclock.models.bandit.dynamics import pools
    from twoclock.models.bandit.rollout import epoch_order as bandit_order, make_rollout
    from twoclock.models.policy.dynamics import epoch_order as policy_order
    bc = BanditConfig(n_train=16, n_test=16, drift_dim=3, group=2, minibatches=4, epochs=3,
                      reshuffle=True)
    train = pools(bc)[0]
    _, bits_of = make_rollout(bc, 32, train)
    b1, b2 = (bits_of(jax.random.PRNGKey(k)) for k in (1, 2))
    o1 = bandit_order(bc, 32, b1)
    _check_orders(o1, 16, 1, 4)  # the bandit's rows are prompts
    assert np.array_equal(np.asarray(o1), np.asarray(bandit_order(bc, 32, b1)))
    assert not np.array_equal(np.asarray(o1), np.asarray(bandit_order(bc, 32, b2)))
    pc = PolicyConfig(group=4, minibatches=2, epochs=4, reshuffle=True)
    k1, k2 = jax.random.PRNGKey(1), jax.random.PRNGKey(2)
    p1 = policy_order(pc, 64, k1)
    _check_orders(p1, 16, 4, 2)
    assert np.array_equal(np.asarray(p1), np.asarray(policy_order(pc, 64, k1)))
    assert not np.array_equal(np.asarray(p1), np.asarray(policy_order(pc, 64, k2)))
    for kw in (dict(reshuffle=False), dict(minibatches=1), dict(epochs=1)):
        assert bandit_order(dataclasses.replace(bc, **kw), 32, b1) is None
        assert policy_order(dataclasses.replace(pc, **kw), 64, k1) is None
