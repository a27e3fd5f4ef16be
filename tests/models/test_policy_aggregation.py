"""The policy surrogate's token aggregations and dynamic sampling (issue 53), against hand
values: responses of unequal lengths (where seq_mean and token_mean differ; at equal lengths
a wrong weighting would pass), values beyond each response's end that must not count, a
group dynamic sampling drops whose KL penalty is large, and DAPO's filter (the dropped
samples removed from the batch before the loss, as verl's DAPO recipe does) as the oracle
of what a dropped group contributes: nothing, its KL penalty included."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twoclock.models.policy import PolicyConfig, surrogate
from tests.models.test_policy_oracles import TOY, toy_logp, toy_params, toy_rollout

# 2 groups x 2 responses of 1, 3 (group 0) and 2, 4 (group 1) tokens, A = 4 positions
MASK = np.array([[1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], float)
PAD = 100.0  # every value past a response's end: counted anywhere, it moves the mean
# hand-picked per-token objectives: token sums 4, 6 | 4, 12, token means 4, 2 | 2, 3
J = np.where(MASK > 0, [[4, 0, 0, 0], [1, 2, 3, 0], [-1, 5, 0, 0], [2, 2, 2, 6]], PAD)
# by hand: token_mean = sum of the kept tokens / their count; seq_mean = mean over the kept
# responses of each one's token mean; seq_sum = sum of the kept tokens / (A x kept responses)
HAND = {
    (1, 1): {"token_mean": 26 / 10,            # (4 + 6 + 4 + 12) / (1 + 3 + 2 + 4)
             "seq_mean": 11 / 4,               # (4 + 2 + 2 + 3) / 4
             "seq_sum": 26 / 16},              # 26 / (4 x 4)
    (1, 0): {"token_mean": 10 / 4,             # group 1 dropped: (4 + 6) / (1 + 3)
             "seq_mean": 6 / 2,                # (4 + 2) / 2
             "seq_sum": 10 / 8},               # 10 / (4 x 2)
}


def _rollout(mask, adv, keep_P, logp_old, logref, G=2):
    keep = np.repeat(np.asarray(keep_P, float), G)
    return toy_rollout(np.zeros(mask.shape, int), mask, adv, keep, logp_old, logref)


@pytest.mark.parametrize("keep_P", [(1, 1), (1, 0)])
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean", "seq_sum"])
def test_aggregations_against_hand_values(agg, keep_P):
    """token_mean weights every kept token alike (DAPO; verl's loss_agg_mode token-mean, TRL's
    bnpo / dapo), seq_mean every kept response alike (GRPO; verl's seq-mean-token-mean, TRL's
    grpo), seq_sum divides by the length bound (Dr. GRPO; TRL's dr_grpo). The wrong
    weightings give other numbers here: token_mean over the responses 6.5, seq_mean over the
    length bound 1.625, every token or response counted with group 1 dropped 1.0 and 1.5."""
    z = np.zeros(MASK.shape)
    ro = _rollout(MASK, np.zeros(4), keep_P, z, z)
    got = float(surrogate.aggregate(jnp.asarray(J, jnp.float32), ro, agg))
    assert got == pytest.approx(HAND[keep_P][agg], rel=1e-6)


# ---------------------------------------------------------------------------- dynamic sampling

C = 0.5  # kl_coef
ADV = np.array([1.0, -1.0, 0.0, 0.0])  # group 0's rewards mixed; group 1's all equal
# log pi - log pi_ref per token: group 1's is large, so that its KL penalty would show
DELTA = np.where(MASK > 0, [[0.5, 0, 0, 0], [0.25, -0.5, 1.0, 0], [2.0, 1.0, 0, 0],
                            [1.0, 1.0, 1.0, 1.0]], 3.0)
LOGP = -np.linspace(0.2, 2.0, 16).reshape(4, 4)  # on policy: pi_old = pi, every ratio 1
# k1 (ratio times log pi - log pi_ref, at ratio 1 its value delta) by hand, group 1 dropped:
# j = A - C delta: 0.75 | -1.125, -0.75, -1.5 (kept tokens 4, sum -2.625, response means
# 0.75, -1.125); dropped group's KL kept, token_mean would be (-2.625 - 3.5) / 10
HAND_K1 = {"token_mean": 2.625 / 4, "seq_mean": 0.375 / 2, "seq_sum": 2.625 / 8}


def _weights(agg, keep_P):
    """d aggregate / d j_it by hand: 0 for dropped groups and past a response's end."""
    keep = np.repeat(np.asarray(keep_P, float), 2)[:, None] * MASK
    if agg == "token_mean":
        return keep / keep.sum()
    n_kept = keep.max(axis=1).sum()
    if agg == "seq_mean":
        return keep / MASK.sum(axis=1, keepdims=True) / n_kept
    return keep / MASK.shape[1] / n_kept


@pytest.mark.parametrize("est", ["k1", "k3"])
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean", "seq_sum"])
def test_dynamic_sampling_drops_the_groups_kl_penalty_too(monkeypatch, agg, est):
    """KL penalty in the loss, group 1 dropped: its tokens add nothing to the loss or to its
    gradient, the penalty included. By hand at ratio 1, per token j = A - C k with
    k = delta (k1) or e^-delta + delta - 1 (k3), and d j / d log pi = A - C (delta + 1) (k1:
    rho k1's derivative rho k1 + rho) or A - C delta (k3: rho (k3 + 1 - r) with
    r = e^-delta); the loss is -sum w j and its gradient -w dj, w the aggregation's weights
    with 0 on group 1. The log-probabilities are the loss's parameters here (token_logp
    replaced by the identity)."""
    monkeypatch.setattr(surrogate, "token_logp", lambda params, *args: params)
    cfg = PolicyConfig(loss_agg=agg, kl_coef=C, kl_in="loss", kl_estimator=est,
                       dynamic_sampling=True, group=2)
    ro = _rollout(MASK, ADV, (1, 0), LOGP, LOGP - DELTA)
    (val, (_, n_tok, _, _)), g = jax.value_and_grad(surrogate.loss, has_aux=True)(
        jnp.asarray(LOGP, jnp.float32), ro, cfg, None, cfg.clip)
    k = DELTA if est == "k1" else np.exp(-DELTA) + DELTA - 1
    dj = ADV[:, None] - C * (DELTA + 1 if est == "k1" else DELTA)
    w = _weights(agg, (1, 0))
    assert float(val) == pytest.approx(-np.sum(w * (ADV[:, None] - C * k)), rel=1e-6)
    np.testing.assert_allclose(np.asarray(g, np.float64), -w * dj, rtol=1e-6, atol=1e-7)
    assert np.all(np.asarray(g)[2:] == 0.0)  # the dropped group: no pull towards pi_ref
    assert float(n_tok) == 4.0
    if est == "k1":
        assert float(val) == pytest.approx(HAND_K1[agg], rel=1e-6)


@pytest.mark.parametrize("agg", ["token_mean", "seq_mean", "seq_sum"])
def test_a_dropped_group_is_the_group_removed_from_the_batch(agg):
    """DAPO's filter (verl's DAPO recipe) removes the dropped groups' samples before the
    loss; here they stay with weight 0. On the toy net, off policy (the clip binding), KL
    penalty in the loss and far from the reference: the loss and its gradient over the
    parameters with group 1 of 3 dropped equal those of the batch without group 1, rows
    and all. Group 1's KL penalty, kept, would move both."""
    P, G = 3, 2
    rng = np.random.default_rng(4)
    resp = rng.integers(0, 3, (P * G, 2))
    mask = np.ones((P * G, 2))
    mask[[0, 3, 5], 1] = 0.0
    adv = np.array([1.0, -1.0, 0.0, 0.0, -0.5, 0.5])  # group 1: all-equal rewards
    old, ref = toy_params(1), toy_params(2, scale=2.0)
    new = jax.tree_util.tree_map(lambda a, b: 0.7 * a + 0.3 * b, old, toy_params(3))
    lp_old, lp_ref = toy_logp(old, resp), toy_logp(ref, resp)
    cfg = PolicyConfig(loss_agg=agg, kl_coef=0.5, kl_in="loss", dynamic_sampling=True,
                       clip_low=0.1, group=G)
    # jitted: eager, its hundreds of primitives compiled one by one took 27 s on 2 cores
    f = jax.jit(jax.value_and_grad(surrogate.loss, has_aux=True), static_argnums=(2, 3))
    rows = np.array([0, 1, 4, 5])
    ro = toy_rollout(resp, mask, adv, np.repeat([1.0, 0.0, 1.0], G), lp_old, lp_ref)
    ro_f = toy_rollout(resp[rows], mask[rows], adv[rows], np.ones(4), lp_old[rows],
                       lp_ref[rows])
    (val, aux), g = f(new, ro, cfg, TOY, cfg.clip)
    (val_f, aux_f), g_f = f(new, ro_f, cfg, TOY, cfg.clip)
    assert float(aux[0]) > 0  # some kept token is clipped
    assert float(val) == pytest.approx(float(val_f), rel=1e-5)
    assert [float(a) for a in aux] == [float(a) for a in aux_f]
    for a, b in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(g_f)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
    # the oracle tells the two apart: group 1 kept (its advantage 0, so only its KL penalty)
    ro_k = ro._replace(keep=jnp.ones(P * G, jnp.float32))
    (val_k, _), _ = f(new, ro_k, cfg, TOY, cfg.clip)
    assert abs(float(val_k) - float(val_f)) > 1e-3
