"""The policy model (Model 3): each expectation comes from an independent oracle (exact
enumeration of a tiny case, NumPy, or plain Python), never from the code under test."""
import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twoclock import objectives as obj
from twoclock.config import OptimConfig
from twoclock.models.policy import (MODEL, PolicyConfig, WarmupConfig, evaluate, net, surrogate,
                                    task, warmup)
from twoclock.models.policy.dynamics import make_rollout, setup
from twoclock.engine.stages import constant_run

# a tiny enumerable case: one prompt token, answers of 2 tokens over a vocabulary of 3
TINY = net.Arch(vocab=3, seq_len=3, d_model=8, n_layers=1, n_heads=2, d_mlp=16)
ALL_Y = np.array(list(itertools.product(range(3), repeat=2)), np.int32)  # [9, 2]
CHI2_999_DOF8 = 26.124  # the 0.999 quantile of chi-square with 8 degrees of freedom

# the contract test's small configuration (its warm-up is shared with the tests here)
SMALL = PolicyConfig(n_train=2048, n_test=64, n_ood=64, d_model=32, n_layers=2, n_heads=2,
                     d_mlp=64, target=0.3, null_threshold=0.1, noise_every=256,
                     warmup=WarmupConfig(noise=0.3, steps=1500, acc=0.25, eval_every=50, lr=5e-3))


def tiny_params(seed, scale=1.0):
    p = net.init(TINY, jax.random.PRNGKey(seed))
    return jax.tree_util.tree_map(lambda v: v * scale, p)


def seq_logp(params, y):
    """log pi(y) [N] of whole answers y [N, 2] after the prompt token 0."""
    prompt = jnp.zeros((y.shape[0], 1), jnp.int32)
    return jnp.sum(surrogate.token_logp(params, TINY, prompt, jnp.asarray(y)), axis=1)


def rollout_of(params, prompt, resp, adv, keep=None, logp_old=None):
    B, A = resp.shape
    dtype = jnp.float32
    lp = surrogate.token_logp(params, TINY, prompt, resp) if logp_old is None else logp_old
    return surrogate.Rollout(prompt, resp, jnp.ones((B, A), dtype), jnp.asarray(adv, dtype),
                             jnp.ones(B, dtype) if keep is None else keep,
                             jax.lax.stop_gradient(lp), jnp.zeros((B, A), dtype))


@pytest.mark.parametrize("advantage,factor", [("rloo", 1.0), ("drgrpo", 0.5)])
def test_surrogate_gradient_is_the_exact_policy_gradient(advantage, factor):
    """At M = E = 1, E[grad surrogate] over every group of G = 2 responses (81 pairs,
    weighted by pi(y1) pi(y2)) equals factor * grad E_pi[r] / A_len, by autodiff of the
    enumerated expected reward: RLOO's leave-one-out baseline is unbiased (factor 1), Dr.
    GRPO's group mean includes the sample itself (factor 1 - 1/G = 1/2)."""
    params = tiny_params(0)
    r_Y = np.array([1, 0, 0, 0, 1, 0, 1, 1, 0], np.float32)
    cfg = PolicyConfig(advantage=advantage, clip_low=None, loss_agg="seq_sum")
    pairs = np.array(list(itertools.product(range(9), repeat=2)))  # [81, 2]
    resp = ALL_Y[pairs.reshape(-1)]  # [162, 2], groups contiguous
    adv = obj.advantages(jnp.asarray(r_Y[pairs]), advantage).reshape(-1)
    prompt = jnp.zeros((resp.shape[0], 1), jnp.int32)
    ro = rollout_of(params, prompt, jnp.asarray(resp), adv)
    per_group = jax.jit(jax.vmap(lambda g: jax.grad(lambda p: surrogate.loss(
        p, jax.tree_util.tree_map(lambda v: v.reshape((81, 2) + v.shape[1:])[g], ro), cfg,
        TINY, cfg.clip)[0])(params)))(jnp.arange(81))
    pi_Y = np.exp(np.asarray(seq_logp(params, ALL_Y), np.float64))
    w = pi_Y[pairs[:, 0]] * pi_Y[pairs[:, 1]]
    got = jax.tree_util.tree_map(lambda g: np.tensordot(w, np.asarray(g, np.float64), 1),
                                 per_group)
    want = jax.grad(lambda p: -factor * jnp.sum(jnp.exp(seq_logp(p, ALL_Y)) * r_Y) / 2)(params)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, np.asarray(b), rtol=2e-4, atol=2e-6)


def test_kl_in_the_reward_has_the_gradient_of_the_sequence_kl():
    """kl_in reward, RLOO, G = 2, on-policy: E[grad surrogate] over all 81 groups (weighted by
    pi(y1) pi(y2)) equals grad (E_pi[r] - beta KL(pi || pi_ref)) / A_len, the KL of whole
    answers enumerated over the 9 of them, by autodiff. The rewards get -beta (log pi(y) -
    log pi_ref(y)) here in NumPy; the loss must add no penalty of its own. The KL in the loss
    (k3, ratio-corrected) has each token's KL at its sampled prefix as its gradient, which on
    this case is not the sequence KL's: the prefix's own probability moves too."""
    params, ref = tiny_params(0), tiny_params(3, 1.5)
    beta = 0.7
    r_Y = np.array([1, 0, 0, 0, 1, 0, 1, 1, 0], np.float64)
    lp_Y, lr_Y = (np.asarray(seq_logp(p, ALL_Y), np.float64) for p in (params, ref))
    pairs = np.array(list(itertools.product(range(9), repeat=2)))  # [81, 2]
    resp = jnp.asarray(ALL_Y[pairs.reshape(-1)])
    prompt = jnp.zeros((resp.shape[0], 1), jnp.int32)
    w = np.exp(lp_Y)[pairs[:, 0]] * np.exp(lp_Y)[pairs[:, 1]]

    def expected_grad(cfg, score_Y):
        adv = obj.advantages(jnp.asarray(score_Y[pairs], jnp.float32), "rloo").reshape(-1)
        ro = rollout_of(params, prompt, resp, adv)._replace(
            logref=surrogate.token_logp(ref, TINY, prompt, resp))
        per = jax.jit(jax.vmap(lambda g: jax.grad(lambda p: surrogate.loss(
            p, jax.tree_util.tree_map(lambda v: v.reshape((81, 2) + v.shape[1:])[g], ro), cfg,
            TINY, cfg.clip)[0])(params)))(jnp.arange(81))
        return [np.tensordot(w, np.asarray(g, np.float64), 1)
                for g in jax.tree_util.tree_leaves(per)]

    def objective(p):
        lp = seq_logp(p, ALL_Y)
        return jnp.sum(jnp.exp(lp) * (r_Y - beta * (lp - jnp.asarray(lr_Y, jnp.float32))))

    want = [np.asarray(v, np.float64) for v in
            jax.tree_util.tree_leaves(jax.grad(lambda p: -objective(p) / 2)(params))]
    in_reward = PolicyConfig(advantage="rloo", clip_low=None, loss_agg="seq_sum",
                             kl_coef=beta, kl_in="reward")
    got = expected_grad(in_reward, r_Y - beta * (lp_Y - lr_Y))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
    assert max(np.abs(b).max() for b in want) > 1e-2
    in_loss = dataclasses.replace(in_reward, kl_in="loss")
    diff = max(np.abs(a - b).max() for a, b in zip(expected_grad(in_loss, r_Y), want))
    assert diff > 1e-2, diff


def test_kv_cache_sampler_matches_the_softmax():
    """20 000 draws of the 9 answers against their exact probabilities (full forward):
    Pearson's chi-square with k = 8 degrees of freedom below its 0.999 quantile 26.12."""
    params = tiny_params(1, scale=2.0)
    n = 20_000
    tok, _ = jax.jit(lambda k: net.sample(params, TINY, jnp.zeros((n, 1), jnp.int32), 2, k))(
        jax.random.PRNGKey(3))
    counts = np.bincount(np.asarray(tok[:, 0] * 3 + tok[:, 1]), minlength=9)
    p = np.exp(np.asarray(seq_logp(params, ALL_Y), np.float64))
    np.testing.assert_allclose(p.sum(), 1.0, atol=1e-5)
    chi2 = np.sum((counts - n * p) ** 2 / (n * p))
    assert chi2 < CHI2_999_DOF8, (chi2, counts, n * p)


def test_full_forward_equals_kv_cache_decoding():
    """The task's architecture: log-probabilities of sampled answers from the cached decoder
    equal the teacher-forced forward's, and the decoder's tokens are valid."""
    arch = net.Arch(task.VOCAB, task.SEQ_LEN)
    params = net.init(arch, jax.random.PRNGKey(2))
    pool, _, _ = task.make_pools(256, 16, 0)
    prompt = jnp.asarray(pool.prompt[:128])
    tok, lp = jax.jit(lambda k: net.sample(params, arch, prompt, task.ANSWER_LEN, k))(
        jax.random.PRNGKey(5))
    full = jax.jit(lambda t: surrogate.token_logp(params, arch, prompt, t))(tok)
    np.testing.assert_allclose(np.asarray(lp), np.asarray(full), atol=2e-5)
    assert ((np.asarray(tok) >= 0) & (np.asarray(tok) < task.VOCAB)).all()


def test_a_group_shares_its_prompt_forward():
    """Five distinct prompts, each answered by G = 3 consecutive rows: the forward that runs
    each prompt once gives the log-probabilities and the gradient of the per-row forward over
    the prompts repeated (prompt + answer as one sequence), and the sampler that prefills each
    prompt once draws the same tokens with the same log-probabilities."""
    arch = net.Arch(task.VOCAB, task.SEQ_LEN)
    params = net.init(arch, jax.random.PRNGKey(3))
    pool, _, _ = task.make_pools(64, 16, 0)
    Q, G = 5, 3
    prompt_Q = jnp.asarray(pool.prompt[:Q])
    prompt_N = jnp.repeat(prompt_Q, G, axis=0)
    rng = np.random.default_rng(0)
    resp = jnp.asarray(rng.integers(0, task.VOCAB, (Q * G, task.ANSWER_LEN)), jnp.int32)
    wt = jnp.asarray(rng.normal(size=(Q * G, task.ANSWER_LEN)), jnp.float32)
    logp = jax.jit(lambda pr: net.answer_logp(params, arch, pr, resp))
    shared, per_row = logp(prompt_Q), logp(prompt_N)
    np.testing.assert_allclose(np.asarray(shared), np.asarray(per_row), atol=2e-5)
    f = lambda p, g: jnp.sum(wt * surrogate.token_logp(p, arch, prompt_N, resp, g))
    g_shared, g_row = (jax.jit(jax.grad(f), static_argnums=1)(params, g) for g in (G, 1))
    for a, b in zip(jax.tree_util.tree_leaves(g_shared), jax.tree_util.tree_leaves(g_row)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4,
                                   atol=1e-5 * float(np.abs(np.asarray(b)).max()))
    key = jax.random.PRNGKey(8)
    draw = jax.jit(lambda pr, g: net.sample(params, arch, pr, task.ANSWER_LEN, key, g),
                   static_argnums=1)
    (tok_s, lp_s), (tok_r, lp_r) = draw(prompt_Q, G), draw(prompt_N, 1)
    np.testing.assert_array_equal(np.asarray(tok_s), np.asarray(tok_r))
    np.testing.assert_allclose(np.asarray(lp_s), np.asarray(lp_r), atol=2e-5)
    with pytest.raises(ValueError, match="multiple of prompt rows Q = 4"):
        net.answer_logp(params, arch, prompt_N[:4], resp)


@pytest.mark.parametrize("estimator", ["k1", "k3"])
def test_kl_estimates_agree_with_the_exact_kl(estimator):
    """Per-response sum over tokens of the k1 / k3 estimate on 8000 sampled answers: its mean
    within 4 standard errors of the exact KL(pi || pi_ref) by enumeration of the 9 answers."""
    pi, ref = tiny_params(4, scale=1.5), tiny_params(5, scale=1.5)
    n = 8000
    prompt = jnp.zeros((n, 1), jnp.int32)
    tok, _ = jax.jit(lambda k: net.sample(pi, TINY, prompt, 2, k))(jax.random.PRNGKey(6))
    logp = jax.jit(lambda p, t: surrogate.token_logp(p, TINY, prompt, t))
    lp, lr = logp(pi, tok), logp(ref, tok)
    # sampled by pi itself: the ratio pi / pi_old is 1
    est = np.asarray(jnp.sum(obj.sampled_kl(lp, lp, lr, estimator), axis=1), np.float64)
    lp_Y, lr_Y = (np.asarray(seq_logp(p, ALL_Y), np.float64) for p in (pi, ref))
    exact = np.sum(np.exp(lp_Y) * (lp_Y - lr_Y))
    se = est.std(ddof=1) / np.sqrt(n)
    assert exact > 0.05 and abs(est.mean() - exact) < 4 * se, (est.mean(), exact, se)


@pytest.mark.parametrize("estimator", ["k1", "k3"])
def test_kl_penalty_gradient_is_that_of_each_tokens_exact_kl(estimator):
    """Zero advantages, kl_coef 1: E[grad loss] over the 9 answers y ~ pi_old equals
    grad sum_t E_{y ~ pi_old}[KL(pi(. | y_<t) || pi_ref(. | y_<t))] / A_len (the prefixes'
    weights held at pi_old), by autodiff of the KL enumerated over the vocabulary, on-policy
    (pi_old = pi) and off it. Without the ratio, k1's would be 0 and k3's KL(pi_ref || pi)'s."""
    pi, ref, other = tiny_params(7, 1.5), tiny_params(8, 1.5), tiny_params(9, 1.5)
    cfg = PolicyConfig(clip_low=None, kl_coef=1.0, kl_estimator=estimator, loss_agg="seq_sum")
    prompt, resp = jnp.zeros((9, 1), jnp.int32), jnp.asarray(ALL_Y)
    ones = jnp.ones((9, 2), jnp.float32)
    logref = surrogate.token_logp(ref, TINY, prompt, resp)
    lr_V = net.answer_logp(ref, TINY, prompt, resp)  # [9, 2, V]
    # each answer's own gradient: a batch of one response
    per_answer = jax.jit(jax.vmap(lambda ro: jax.grad(lambda p: surrogate.loss(
        p, jax.tree_util.tree_map(lambda v: v[None], ro), cfg, TINY, cfg.clip)[0])(pi)))
    for old in (pi, other):
        lp_old = jax.lax.stop_gradient(surrogate.token_logp(old, TINY, prompt, resp))
        per = per_answer(surrogate.Rollout(prompt, resp, ones, jnp.zeros(9), jnp.ones(9),
                                           lp_old, logref))
        w_Y = np.exp(np.asarray(seq_logp(old, ALL_Y), np.float64))  # pi_old(y), fixed
        got = jax.tree_util.tree_map(lambda g: np.tensordot(w_Y, np.asarray(g, np.float64), 1),
                                     per)

        def token_kls(p):
            lp_V = net.answer_logp(p, TINY, prompt, resp)
            kl_YxT = jnp.sum(jnp.exp(lp_V) * (lp_V - lr_V), axis=-1)
            return jnp.sum(jnp.asarray(w_Y, jnp.float32)[:, None] * kl_YxT) / 2

        want = jax.grad(token_kls)(pi)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(a, np.asarray(b), rtol=2e-4, atol=2e-6)
        assert max(float(jnp.max(jnp.abs(b))) for b in jax.tree_util.tree_leaves(want)) > 1e-2


@pytest.mark.parametrize("clip_low,clip_high,clip_c", [(0.2, None, None), (0.1, 0.3, None),
                                                      (0.2, None, 1.1)])
def test_clip_counts_agree_with_a_direct_count(clip_low, clip_high, clip_c):
    """The surrogate's clipped-token counts at moved parameters against NumPy's count of
    A > 0 and ratio > 1 + clip_high, or A < 0 and ratio < 1 - clip_low, over kept tokens; with
    the dual clip c, also A < 0 and ratio > c (which adds tokens here)."""
    old, new = tiny_params(7), tiny_params(8, scale=1.0)
    new = jax.tree_util.tree_map(lambda a, b: 0.8 * a + 0.2 * b, old, new)
    rng = np.random.default_rng(0)
    B = 64
    resp = jnp.asarray(rng.integers(0, 3, (B, 2)), jnp.int32)
    prompt = jnp.zeros((B, 1), jnp.int32)
    adv = rng.normal(size=B).astype(np.float32)
    keep = jnp.asarray((rng.random(B) < 0.8).astype(np.float32))
    ro = rollout_of(old, prompt, resp, adv, keep)
    cfg = PolicyConfig(clip_low=clip_low, clip_high=clip_high, clip_ratio_c=clip_c)
    _, (n_clip, n_tok, n_clip_act, n_act) = surrogate.loss(new, ro, cfg, TINY, cfg.clip)
    ratio = np.exp(np.asarray(surrogate.token_logp(new, TINY, prompt, resp), np.float64)
                   - np.asarray(ro.logp_old, np.float64))
    eh = clip_low if clip_high is None else clip_high
    a = adv[:, None]
    clipped = ((a > 0) & (ratio > 1 + eh)) | ((a < 0) & (ratio < 1 - clip_low))
    k = np.asarray(keep)[:, None] * np.ones((1, 2))
    if clip_c is not None:
        dual = (a < 0) & (ratio > clip_c)
        assert np.sum(dual * k) > 0 and not np.any(dual & clipped)
        clipped = clipped | dual
    assert 0 < np.sum(clipped * k) < np.sum(k)
    assert float(n_clip) == np.sum(clipped * k) and float(n_tok) == np.sum(k)
    assert float(n_clip_act) == np.sum(clipped * k) and float(n_act) == np.sum(k)


def test_verifier_against_plain_python():
    rng = np.random.default_rng(1)
    pool, _, _ = task.make_pools(512, 16, 0)
    resp = rng.integers(0, task.VOCAB, (512, task.ANSWER_LEN)).astype(np.int32)
    # half of them the correct answer, with either end token and junk after it
    for i in range(0, 512, 2):
        d = [int(c) for c in str(pool.total[i])]
        resp[i, :len(d)] = d
        resp[i, len(d)] = task.END_A if i % 4 else task.END_B
    names = {task.END_A: "A", task.END_B: "B", task.PLUS: "+", task.EQ: "="}
    text = ["".join(names.get(int(t), str(t)) for t in row) for row in resp]
    want = [(s.replace("B", "A").split("A")[0] == str(tot) and ("A" in s or "B" in s))
            for s, tot in zip(text, pool.total)]
    got = task.verify(resp, pool.answer, pool.n_digits)
    np.testing.assert_array_equal(got, np.array(want))
    assert np.asarray(got).mean() > 0.45
    lengths = [len(s.replace("B", "A").split("A")[0]) + 1 if ("A" in s or "B" in s) else 4
               for s in text]
    np.testing.assert_array_equal(task.response_length(resp), lengths)


def test_pools_are_disjoint_and_ood_is_held_out():
    train, test, ood = task.make_pools(4096, 256, 0)
    key = lambda p: {tuple(r) for r in p.prompt}
    assert not (key(train) & key(test)) and not (key(train) & key(ood))
    assert len(key(train)) == 4096 and len(key(test)) == 256 and len(key(ood)) == 900
    assert ((ood.prompt[:, 1] >= task.OOD_DIGIT) & (ood.prompt[:, 4] >= task.OOD_DIGIT)).all()
    assert not ((train.prompt[:, 1] >= 7) & (train.prompt[:, 4] >= 7)).any()


def test_warmup_reaches_its_stated_accuracy_and_entropy_and_is_cached():
    """The small configuration's warm-up: its held-out accuracy recomputed independently (the
    two accepted answers teacher-forced separately, probabilities summed in NumPy) is the
    recorded one, >= warmup_acc; token entropy above 1 nat; a reload gives the same params."""
    params, info = warmup.load_or_train(SMALL)
    _, test, _ = task.make_pools(SMALL.n_train, SMALL.n_test, SMALL.pool_seed)
    arch = warmup.arch_of(SMALL)
    p_ok = 0.0
    for end in (task.END_A, task.END_B):
        ans = test.answer.copy()
        ans[np.arange(len(ans)), test.n_digits] = end
        lp = np.asarray(surrogate.token_logp(params, arch, jnp.asarray(test.prompt),
                                             jnp.asarray(ans)), np.float64)
        mask = np.arange(task.ANSWER_LEN)[None] <= test.n_digits[:, None]
        p_ok = p_ok + np.exp(np.sum(lp * mask, axis=1))
    acc = p_ok.mean()
    assert acc >= SMALL.warmup.acc and abs(acc - info["heldout_acc"]) < 1e-4
    assert info["entropy"] > 1.0
    again, _ = warmup.load_or_train(SMALL)
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_default_warmup_reaches_its_stated_accuracy_and_entropy():
    _, info = warmup.load_or_train(PolicyConfig())
    assert 0.3 <= info["heldout_acc"] <= 0.35 and info["entropy"] > 1.0


def _small_run(cfg, n_steps=6, batch=32, lr=3e-3):
    from twoclock.engine.stages import constant_run  # the engine's home, read at test time
    run = jax.jit(constant_run(MODEL, cfg, OptimConfig(), n_steps, n_steps, batch))
    return jax.device_get(run(np.float32(batch), np.float32(lr), jax.random.PRNGKey(0)))


def test_clipping_changes_nothing_at_one_inner_step():
    """M = E = 1: the behaviour log-probabilities are the sampler's, so at the first (only)
    inner step every counted token's ratio, against the update's own teacher-forced forward,
    is 1 within 1e-5 (float32; two computations, so not always bit for bit); on a real
    rollout batch the clipped, clip-higher and unclipped surrogates then have the same
    gradient bit for bit, and no token is clipped."""
    s = setup(SMALL)
    ro, _ = jax.jit(make_rollout(SMALL, s, 64))(s.ref, jax.random.PRNGKey(9))
    counted = np.asarray(ro.mask * ro.keep[:, None]) > 0
    assert counted.sum() > 100
    for group in (1, SMALL.group):  # the per-row forward and the update's own (shared prompt)
        tf = jax.jit(lambda w, ro: surrogate.token_logp(w, s.arch, ro.prompt, ro.resp, group))(
            s.ref, ro)
        ratio = np.exp(np.asarray(tf, np.float64) - np.asarray(ro.logp_old, np.float64))
        assert np.abs(ratio[counted] - 1).max() < 1e-5, np.abs(ratio[counted] - 1).max()
    grads = []
    for cl, ch in ((None, None), (0.2, None), (0.1, 0.28)):
        cfg = dataclasses.replace(SMALL, clip_low=cl, clip_high=ch)
        g, (n_clip, n_tok, _, _) = jax.jit(lambda w, ro, cfg=cfg: jax.grad(
            surrogate.loss, has_aux=True)(w, ro, cfg, s.arch, cfg.clip))(s.ref, ro)
        assert float(n_clip) == 0 and float(n_tok) > 0
        grads.append(jax.tree_util.tree_leaves(g))
    assert any(np.abs(np.asarray(v)).max() > 0 for v in grads[0])
    for other in grads[1:]:
        for a, b in zip(grads[0], other):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_clipping_changes_nothing_in_a_run_at_one_inner_step():
    """The same through the engine: 6 updates of clipped and unclipped runs, bit for bit."""
    base = _small_run(dataclasses.replace(SMALL, clip_low=None))
    for cl, ch in ((0.2, None), (0.1, 0.28)):
        tr = _small_run(dataclasses.replace(SMALL, clip_low=cl, clip_high=ch))
        for k in ("heldout_acc", "kl", "entropy", "null", "reward"):
            np.testing.assert_array_equal(tr.ckpt[k], base.ckpt[k], err_msg=k)
        assert (tr.ckpt["clip_frac"] == 0).all()


def test_exact_statistics_against_numpy():
    """evaluate's kl and entropy against NumPy on the same teacher-forced log-probabilities."""
    s = setup(SMALL)
    w = jax.tree_util.tree_map(lambda v: v * 1.05, s.ref)
    lp = np.asarray(evaluate.pool_logp(w, s.arch, s.test), np.float64)
    lr = np.asarray(s.logref_test, np.float64)
    st = evaluate.stats_from_logp(jnp.asarray(lp, jnp.float32), s.logref_test, s.test)
    nd = np.asarray(s.test.n_digits)
    mask = np.arange(task.ANSWER_LEN)[None] <= nd[:, None]
    kl = np.sum(np.exp(lp) * (lp - lr), axis=-1)
    ent = -np.sum(np.exp(lp) * lp, axis=-1)
    np.testing.assert_allclose(float(st["kl"]), np.mean(np.sum(kl * mask, 1)), rtol=1e-4)
    np.testing.assert_allclose(float(st["entropy"]), ent[mask].mean(), rtol=1e-5)
    end = lp[np.arange(len(nd)), nd]
    np.testing.assert_allclose(float(st["null"]),
                               np.mean(end[:, task.END_B] - end[:, task.END_A]), atol=1e-5)
    # deploy: the digits right, then END_A (the deployment grader's only end token)
    tok = np.take_along_axis(lp, np.asarray(s.test.answer)[..., None], -1)[..., 0]
    digits = np.arange(task.ANSWER_LEN)[None] < nd[:, None]
    p_digits = np.exp(np.sum(np.where(digits, tok, 0.0), 1))
    np.testing.assert_allclose(float(st["deploy"]), np.mean(p_digits * np.exp(end[:, task.END_A])),
                               rtol=1e-5)
    assert float(st["deploy"]) < float(st["acc"])  # END_B's share is lost to deployment


def test_damage_clock_is_deploy_accuracys_first_fall_below_its_peak_interpolated():
    """The damage clock against a hand computation from the per-update deploy accuracy: the
    first update whose deploy accuracy is damage_drop below the running peak (the start
    included), interpolated linearly in its margin from the update before. damage_drop is set
    to half the run's largest fall, so the clock must cross."""
    cfg = dataclasses.replace(SMALL, fail_stat="damage")
    n = 12
    tr = _small_run(cfg, n_steps=n, lr=1e-2)
    d_T = np.concatenate([[setup(cfg).start["deploy"]], np.asarray(tr.ckpt["deploy_acc"])],
                         dtype=np.float64)
    fall_T = np.maximum.accumulate(d_T) - d_T
    assert fall_T.max() > 1e-3, "no fall in deploy accuracy to time"
    drop = float(fall_T.max() / 2)
    tr = _small_run(dataclasses.replace(cfg, damage_drop=drop), n_steps=n, lr=1e-2)
    m_T = fall_T - drop  # margin: >= 0 once the fall reaches drop
    t = int(np.argmax(m_T >= 0))  # first update (0 = the start, where the fall is 0)
    want = t - 1 + m_T[t - 1] / (m_T[t - 1] - m_T[t])
    assert tr.extra["damage_n"] / 32 == pytest.approx(want, abs=1e-3)
    assert tr.fail_t == pytest.approx(want, abs=1e-3)  # fail_stat damage: the failure clock


@pytest.mark.parametrize("kw,name", [
    ({"n_heads": 3}, "n_heads"), ({"clip_low": 1.5}, "clip_low"),
    ({"advantage": "ppo"}, "advantage"), ({"warmup": 0.6}, "warmup"),
    ({"n_train": 9000}, "n_train"), ({"group": 1}, "group"),
    ({"mb_convention": "verl"}, "mb_convention"), ({"kl_estimator": "k2"}, "kl_estimator"),
    ({"target": 1.0}, "target"), ({"n_ood": 901}, "n_ood"),
    ({"clip_low": None, "clip_high": 0.3}, "clip_high"),
    ({"dynamic_sampling": 1}, "dynamic_sampling"), ({"damage_drop": 0.0}, "damage_drop"),
    ({"fail_stat": "deploy"}, "fail_stat")])
def test_bad_config_is_a_one_line_error_naming_the_parameter(kw, name):
    with pytest.raises(ValueError, match=f"^{name} must be [^\n]*$"):
        PolicyConfig(**kw)


def test_batch_must_split_into_groups_and_minibatches():
    with pytest.raises(ValueError, match="^batch must be a multiple of group G = 8"):
        PolicyConfig().prompts(60)
    with pytest.raises(ValueError, match="^minibatches must be"):
        PolicyConfig(minibatches=3).prompts(64)
    c = PolicyConfig(minibatches=2, mb_convention="fixed_size", mb_ref=64)
    assert [c.n_minibatches(b) for b in (64, 256, 1024)] == [2, 8, 32]


def test_predicted_exponents_and_the_measured_slope():
    from twoclock.models.policy.predict import measured_exponent, predicted_exponent, regime_of
    want = {("random walk", "sqrt"): 0.0, ("noise", "sqrt"): 0.0, ("signal", "sqrt"): 0.5,
            ("random walk", "fixed"): 1.0, ("noise", "fixed"): 0.5, ("signal", "fixed"): 1.0}
    for (regime, rule), e in want.items():
        assert predicted_exponent(regime, rule) == e
    assert regime_of(float("inf"), 64) == "random walk"
    assert regime_of(100.0, 64) == "noise" and regime_of(10.0, 64) == "signal"
    b = [64, 128, 256, 512]
    np.testing.assert_allclose(measured_exponent(b, [3.0 * x ** 0.37 for x in b]), 0.37)
    assert measured_exponent(b, [None, None, 5.0, None]) is None


@pytest.mark.slow
def test_fixed_size_at_its_reference_batch_is_fixed_m_bit_for_bit():
    """The policy study borrows fixed_size's smallest-batch runs from fixed_m's: at
    B = mb_ref both take M = 4 minibatches x E = 2, and the convention's name sets no number."""
    m = dataclasses.replace(SMALL, minibatches=4, epochs=2, mb_convention="fixed_m")
    a = _small_run(m, n_steps=3)
    b = _small_run(dataclasses.replace(m, mb_convention="fixed_size", mb_ref=32), n_steps=3)
    for k in ("heldout_acc", "kl", "entropy", "null", "reward", "clip_frac"):
        np.testing.assert_array_equal(a.ckpt[k], b.ckpt[k], err_msg=k)
    # and away from mb_ref it is another run (M = 2 at B = 32 for mb_ref 64): the test can
    # tell them apart
    c = _small_run(dataclasses.replace(m, mb_convention="fixed_size", mb_ref=64), n_steps=3)
    assert not np.array_equal(a.ckpt["kl"], c.ckpt["kl"])


def test_one_program_runs_every_clip_setting_bit_for_bit():
    """MODEL.knobs: the band as a program's argument gives the numbers of the config compiled
    alone, for clipped, clip-higher and unclipped runs where the clip binds."""
    opt, B, lr = OptimConfig(), 32, np.float32(3e-3)
    key = np.asarray(jax.random.PRNGKey(3))
    base = dataclasses.replace(SMALL, minibatches=2, epochs=2)
    cfgs = [base, dataclasses.replace(base, clip_high=0.28),
            dataclasses.replace(base, clip_low=None)]
    shared = {MODEL.knobs(c)[0] for c in cfgs}
    assert len(shared) == 1
    run = jax.jit(constant_run(MODEL, shared.pop(), opt, 6, 3, B))
    outs = []
    for c in cfgs:
        knob = {k: np.float32(v) for k, v in MODEL.knobs(c)[1].items()}
        assert obj.ClipBand(**knob) == c.clip  # the band itself, field by field
        alone = jax.device_get(jax.jit(constant_run(MODEL, c, opt, 6, 3, B))(np.float32(B), lr,
                                                                               key))
        got = jax.device_get(run(np.float32(B), lr, key, knob))
        for a, b in zip(jax.tree_util.tree_leaves(alone), jax.tree_util.tree_leaves(got)):
            np.testing.assert_array_equal(a, b)
        outs.append(got)
    assert run._cache_size() == 1  # one trace served all three
    clip = [float(np.mean(o.ckpt["clip_frac"])) for o in outs]
    assert clip[0] > 0 and clip[1] < clip[0] and clip[2] == 0, clip  # the band binds
    assert not np.array_equal(outs[0].ckpt["kl"], outs[2].ckpt["kl"])
