"""The policy update's layout and reference glue, and its "every k" boundaries (issue 34), each
against an independent oracle at a setting where the plausible wrong choice shows: unequal
prompts and group size (P != G), a KL penalty with the policy far from the reference, B above
a convention's reference batch, warm-up step counts that are and are not multiples of the
evaluation interval, chunks that start exactly on a multiple of noise_every."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twoclock.config import OptimConfig
from twoclock.models.policy import PolicyConfig, WarmupConfig, net, surrogate, task, warmup
from twoclock.models.policy.dynamics import dynamics, make_rollout, noise_stats, setup

# a tiny net on the real task: its warm-up takes seconds; P != G at every batch used here
CFG = PolicyConfig(n_train=256, n_test=16, n_ood=16, d_model=8, n_layers=1, n_heads=2,
                   d_mlp=16, warmup=WarmupConfig(steps=4, eval_every=2, batch=16), group=3,
                   noise_every=24)
# an enumerable toy net: one prompt token, answers of 2 tokens over a vocabulary of 3
TOY = net.Arch(vocab=3, seq_len=3, d_model=8, n_layers=1, n_heads=2, d_mlp=16)


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    """The tiny warm-ups are cached in a directory of this module's own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(warmup.CACHE_ENV, str(tmp_path_factory.mktemp("warmup")))
        yield


def toy_params(seed, scale=1.0):
    return jax.tree_util.tree_map(lambda v: v * scale, net.init(TOY, jax.random.PRNGKey(seed)))


def toy_logp(params, resp):
    prompt = jnp.zeros((resp.shape[0], 1), jnp.int32)
    return np.asarray(surrogate.token_logp(params, TOY, prompt, jnp.asarray(resp)), np.float64)


def toy_rollout(resp, mask, adv, keep, logp_old, logref):
    f = lambda v: jnp.asarray(v, jnp.float32)
    B = resp.shape[0]
    return surrogate.Rollout(jnp.zeros((B, 1), jnp.int32), jnp.asarray(resp, jnp.int32),
                             f(mask), f(adv), f(keep), f(logp_old), f(logref))


# ---------------------------------------------------------------------------- the verifier

def _tokens(text):
    """'12A' -> tokens: digits, A = END_A, B = END_B, + = PLUS, = = EQ."""
    m = {"A": task.END_A, "B": task.END_B, "+": task.PLUS, "=": task.EQ}
    return [m[c] if c in m else int(c) for c in text]


@pytest.mark.parametrize("resp,ok", [
    ("57AA", True), ("57B+", True), ("57A5", True),   # what follows the first end token: ignored
    ("57BA", True), ("575A", False),                  # an extra digit before the end
    ("57+A", False), ("57=A", False),                 # a non-end token where the end belongs
    ("057A", False), ("5AAA", False), ("7AAA", False),  # a leading zero, a prefix, a suffix
    ("5757", False), ("A57A", False)])                # no end token at all, an end first
def test_verifier_on_hand_cases(resp, ok):
    """What the verifier accepts after the digits of 57 (= 23 + 34): exactly one end token
    (either) at the position after the last digit, anything after it."""
    pool = task.encode([23], [34])
    got = task.verify(np.array([_tokens(resp)], np.int32), pool.answer, pool.n_digits)
    assert bool(got[0]) is ok
    got_j = task.verify(jnp.array([_tokens(resp)], jnp.int32), jnp.asarray(pool.answer),
                        jnp.asarray(pool.n_digits), xp=jnp)
    assert bool(got_j[0]) is ok


def test_verifier_three_and_one_digit_sums():
    pool = task.encode([99, 0], [99, 3])  # 198 and 3
    resp = np.array([_tokens("198B"), _tokens("3A19")], np.int32)
    assert task.verify(resp, pool.answer, pool.n_digits).tolist() == [True, True]
    resp = np.array([_tokens("1980"), _tokens("03AA")], np.int32)
    assert task.verify(resp, pool.answer, pool.n_digits).tolist() == [False, False]


# ---------------------------------------------------------------------------- minibatch counts

@pytest.mark.parametrize("conv,m,ref,batch,want", [
    ("fixed_m", 4, 64, 512, 4), ("fixed_m", 2, 64, 16, 2),
    ("fixed_size", 4, 64, 64, 4), ("fixed_size", 4, 64, 512, 32),   # B 8 x mb_ref: 8 x M
    ("fixed_size", 2, 32, 256, 16), ("fixed_size", 4, 64, 32, 2),   # below mb_ref: fewer
    ("fixed_size", 2, 64, 16, 1)])                                  # never below one
def test_minibatch_count_by_hand(conv, m, ref, batch, want):
    """fixed_m keeps M; fixed_size keeps the minibatch mb_ref / M responses, so
    M(B) = M B / mb_ref (at least 1); inner steps are M E."""
    cfg = PolicyConfig(minibatches=m, mb_ref=ref, mb_convention=conv, epochs=3, group=2)
    assert cfg.n_minibatches(batch) == want
    assert cfg.inner_steps(batch) == 3 * want


# ---------------------------------------------------------------------------- the surrogate

def _toy_batch(P=3, G=4, seed=0):
    """A hand-made batch of P groups of G responses on the toy net: unequal masks and a
    dropped group."""
    rng = np.random.default_rng(seed)
    B = P * G
    resp = rng.integers(0, 3, (B, 2))
    mask = np.ones((B, 2))
    mask[rng.random(B) < 0.4, 1] = 0.0  # responses of one token
    adv = rng.normal(size=B)
    keep = np.repeat((np.arange(P) != 1).astype(float), G)  # group 1 dropped
    return resp, mask, adv, keep


def _np_objective(lp, lp_old, lp_ref, adv, eps_low, eps_high, kl_coef, est):
    ratio = np.exp(lp - lp_old)
    a = adv[:, None]
    j = np.minimum(ratio * a, np.clip(ratio, 1 - eps_low, 1 + eps_high) * a)
    d = lp_ref - lp
    k = (lp - lp_ref) if est == "k1" else np.exp(d) - d - 1
    return j - kl_coef * ratio * k  # ratio-corrected: E_old[rho k] = KL(pi || pi_ref)


def _np_aggregate(j, mask, keep, agg):
    w = mask * keep[:, None]
    if agg == "seq_sum":
        return np.sum(w * j) / (j.shape[1] * max(keep.sum(), 1.0))
    if agg == "seq_mean":
        per = np.sum(mask * j, axis=1) / np.maximum(mask.sum(1), 1.0)
        return np.sum(keep * per) / max(keep.sum(), 1.0)
    return np.sum(w * j) / max(w.sum(), 1.0)


@pytest.mark.parametrize("est", ["k1", "k3"])
def test_kl_penalty_is_measured_against_the_reference_policy(est):
    """KL penalty on, the current policy moved from the behaviour policy, and both far from the
    reference: the per-token objective against a NumPy transcription of
    min(rho A, clip(rho) A) - c rho k(log pi, log pi_ref); measured against the behaviour policy
    or zero, or with the estimator's arguments swapped, it differs."""
    resp, mask, adv, keep = _toy_batch()
    old, ref = toy_params(1), toy_params(2, scale=2.0)
    new = jax.tree_util.tree_map(lambda a, b: 0.7 * a + 0.3 * b, old, toy_params(3))
    lp, lp_old, lp_ref = toy_logp(new, resp), toy_logp(old, resp), toy_logp(ref, resp)
    assert np.abs(lp_ref - lp_old).max() > 0.5 and np.abs(lp - lp_old).max() > 0.05
    cfg = PolicyConfig(kl_coef=0.7, kl_estimator=est, clip_low=0.1, clip_high=0.3)
    ro = toy_rollout(resp, mask, adv, keep, lp_old, lp_ref)
    j, _ = surrogate.token_objective(jnp.asarray(lp, jnp.float32), ro, cfg, cfg.clip)
    want = _np_objective(lp, lp_old, lp_ref, adv, 0.1, 0.3, 0.7, est)
    np.testing.assert_allclose(np.asarray(j, np.float64), want, rtol=1e-4, atol=1e-5)
    # the oracle itself tells the wrong references apart on this batch
    for wrong in (lp_old, np.zeros_like(lp_ref)):
        assert np.abs(_np_objective(lp, lp_old, wrong, adv, 0.1, 0.3, 0.7, est) - want).max() > 0.05


@pytest.mark.parametrize("agg", ["seq_sum", "seq_mean", "token_mean"])
def test_loss_and_group_objectives_against_numpy(agg):
    """P = 3 groups of G = 4 (P != G), unequal response lengths and a dropped group: the loss
    is minus the NumPy aggregate of the NumPy per-token objective, and each group's objective
    is the aggregate over that group's own contiguous rows."""
    P, G = 3, 4
    resp, mask, adv, keep = _toy_batch(P, G)
    old, ref = toy_params(1), toy_params(2, scale=2.0)
    new = jax.tree_util.tree_map(lambda a, b: 0.7 * a + 0.3 * b, old, toy_params(3))
    lp, lp_old, lp_ref = toy_logp(new, resp), toy_logp(old, resp), toy_logp(ref, resp)
    cfg = PolicyConfig(loss_agg=agg, kl_coef=0.2, clip_low=0.2, group=G)
    ro = toy_rollout(resp, mask, adv, keep, lp_old, lp_ref)
    j = _np_objective(lp, lp_old, lp_ref, adv, 0.2, 0.2, 0.2, "k3")
    val, (n_clip, n_tok, _, _) = surrogate.loss(new, ro, cfg, TOY, cfg.clip)
    np.testing.assert_allclose(-float(val), _np_aggregate(j, mask, keep, agg), rtol=1e-4,
                               atol=1e-6)
    assert float(n_tok) == np.sum(mask * keep[:, None])
    got = np.asarray(surrogate.group_objectives(new, ro, cfg, TOY, G, cfg.clip), np.float64)
    rows = lambda p: slice(p * G, (p + 1) * G)
    want = [_np_aggregate(j[rows(p)], mask[rows(p)], keep[rows(p)], agg) for p in range(P)]
    assert got.shape == (P,)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert want[1] == 0.0 and abs(want[0] - want[2]) > 1e-3


# ---------------------------------------------------------------------------- the rollout

# rows that the fake sampler answers correctly: B = 12 = P 4 x G 3, groups of unequal means
RIGHT = np.array([1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1], bool)


def _fake_sample(right):
    """A sampler that answers row i correctly iff right[i] (END_B on odd rows, junk after the
    end), else the sum with its last digit changed: the rewards are known by construction."""
    def sample(params, arch, prompt_Q, n_new, key, per_prompt=1):
        prompt = jnp.repeat(prompt_Q, per_prompt, axis=0)  # the sampler's contract: N = Q G
        s = (prompt[:, 0] * 10 + prompt[:, 1]) + (prompt[:, 3] * 10 + prompt[:, 4])
        n = 1 + (s >= 10).astype(jnp.int32) + (s >= 100).astype(jnp.int32)
        i = jnp.arange(prompt.shape[0])
        s = jnp.where(jnp.asarray(right)[: prompt.shape[0]], s, s - s % 10 + (s + 1) % 10)
        end = jnp.where(i % 2 == 1, task.END_B, task.END_A)
        cols = []
        for j in range(n_new):
            p = jnp.maximum(n - 1 - j, 0)
            dig = (s // (10 ** p)) % 10
            cols.append(jnp.where(j < n, dig, jnp.where(j == n, end, task.PLUS)))
        resp = jnp.stack(cols, axis=1).astype(jnp.int32)
        # a sampler's contract: its tokens' log-probabilities under params (the rollout's
        # behaviour log-probabilities), here teacher-forced
        return resp, surrogate.token_logp(params, arch, prompt, resp)
    return sample


def _np_grpo(r_PxG, eps):
    c = r_PxG - r_PxG.mean(1, keepdims=True)
    return c / (r_PxG.std(1, keepdims=True) + eps)


@pytest.mark.parametrize("dynamic", [False, True])
def test_rollout_groups_are_contiguous_rows_of_one_prompt(monkeypatch, dynamic):
    """B = 12 responses in P = 4 groups of G = 3 with known rewards: each group's rows share
    one prompt, the advantages are NumPy's GRPO advantages of the rows grouped contiguously
    (P x G, not G x P), and dynamic sampling drops exactly the groups of equal rewards."""
    cfg = dataclasses.replace(CFG, dynamic_sampling=dynamic)
    s = setup(cfg)
    monkeypatch.setattr(net, "sample", _fake_sample(RIGHT))
    ro, st = jax.jit(make_rollout(cfg, s, 12))(s.ref, jax.random.PRNGKey(0))
    P, G = 4, 3
    prompt = np.asarray(ro.prompt).reshape(P, G, -1)
    assert (prompt == prompt[:, :1]).all()
    assert len({tuple(p[0]) for p in prompt}) > 1  # distinct prompts across groups
    r = RIGHT.astype(np.float64).reshape(P, G)
    np.testing.assert_allclose(np.asarray(ro.adv, np.float64), _np_grpo(r, cfg.adv_eps).ravel(),
                               rtol=1e-5, atol=1e-6)
    equal = (r == r[:, :1]).all(1)
    want_keep = np.repeat(~equal if dynamic else np.ones(P, bool), G).astype(float)
    np.testing.assert_array_equal(np.asarray(ro.keep), want_keep)
    assert float(st["reward"]) == pytest.approx(RIGHT.mean())
    assert float(st["zero_adv_frac"]) == pytest.approx(equal.mean())
    # junk after the end token is not part of the response
    lens = np.array([1 + (np.asarray(ro.resp)[i] >= 10).argmax() for i in range(12)])
    np.testing.assert_array_equal(np.asarray(ro.mask).sum(1), lens)


def _far_rollout(monkeypatch, cfg, seed):
    """(setup, a policy one unit-normal step per weight from the reference, its rollout of 12
    responses from the fixed sampler, the rollout's statistics): seed picks both draws."""
    s = setup(cfg)
    monkeypatch.setattr(net, "sample", _fake_sample(RIGHT))
    rng = np.random.default_rng(seed)
    w = jax.tree_util.tree_map(lambda v: v + jnp.asarray(rng.normal(size=v.shape), v.dtype),
                               s.ref)
    ro, st = jax.jit(make_rollout(cfg, s, 12))(w, jax.random.PRNGKey(seed + 1))
    return s, w, ro, st


def test_rollout_reference_is_the_warm_up_and_behaviour_is_the_sampler(monkeypatch):
    """With a KL penalty and the policy far from the reference: logp_old is the sampling
    policy's, logref the warm-up's (not the behaviour policy's, not zeros); without a KL
    penalty logref is zeros."""
    cfg = dataclasses.replace(CFG, kl_coef=0.1)  # logp_old: what the sampler returned
    s, w, ro, _ = _far_rollout(monkeypatch, cfg, 0)
    lp_w = np.asarray(surrogate.token_logp(w, s.arch, ro.prompt, ro.resp))
    lp_ref = np.asarray(surrogate.token_logp(s.ref, s.arch, ro.prompt, ro.resp))
    assert np.abs(lp_w - lp_ref).max() > 0.5
    np.testing.assert_allclose(np.asarray(ro.logp_old), lp_w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ro.logref), lp_ref, rtol=1e-5, atol=1e-5)
    ro0, _ = make_rollout(CFG, setup(CFG), 12)(w, jax.random.PRNGKey(1))
    assert not np.asarray(ro0.logref).any()


def test_kl_in_the_reward_moves_the_advantage_as_by_hand(monkeypatch):
    """kl_in reward, kl_coef 0.5, the policy far from the reference: the advantages are
    NumPy's GRPO advantages of r - 0.5 sum_t m_t (log pi(y_t) - log pi_ref(y_t)) over each
    response's own tokens (the log-probabilities by a separate forward pass), not those of r;
    dynamic sampling still drops the groups of equal verifier rewards; and the loss adds no
    KL term (it is the loss without a penalty)."""
    cfg = dataclasses.replace(CFG, kl_coef=0.5, kl_in="reward", dynamic_sampling=True)
    s, w, ro, st = _far_rollout(monkeypatch, cfg, 1)
    resp = np.asarray(ro.resp)
    lens = np.array([1 + (resp[i] >= 10).argmax() for i in range(12)])
    m = (np.arange(resp.shape[1])[None] < lens[:, None]).astype(np.float64)
    lp_w, lp_ref = (np.asarray(surrogate.token_logp(p, s.arch, ro.prompt, ro.resp), np.float64)
                    for p in (w, s.ref))
    k1 = np.sum(m * (lp_w - lp_ref), axis=1)
    r = RIGHT.astype(np.float64)
    want = _np_grpo((r - 0.5 * k1).reshape(4, 3), cfg.adv_eps).ravel()
    assert np.abs(want - _np_grpo(r.reshape(4, 3), cfg.adv_eps).ravel()).max() > 0.1
    np.testing.assert_allclose(np.asarray(ro.adv, np.float64), want, rtol=1e-4, atol=1e-4)
    equal = (r.reshape(4, 3) == r.reshape(4, 3)[:, :1]).all(1)
    np.testing.assert_array_equal(np.asarray(ro.keep), np.repeat(~equal, 3).astype(float))
    no_kl = dataclasses.replace(cfg, kl_coef=0.0)
    assert float(surrogate.loss(w, ro, cfg, s.arch, cfg.clip)[0]) == float(
        surrogate.loss(w, ro, no_kl, s.arch, no_kl.clip)[0])


# ---------------------------------------------------------------------------- "every k" rules

def _exact_accuracy(params, arch, pool):
    """P(verified) in NumPy: both accepted answers (END_A, END_B after the digits) teacher-forced
    as one batch of 2N, their probabilities summed per problem."""
    n = len(pool.total)
    ans = np.concatenate([pool.answer, pool.answer])
    ans[np.arange(n, 2 * n), pool.n_digits] = task.END_B
    lp = np.asarray(surrogate.token_logp(params, arch, jnp.asarray(np.tile(pool.prompt, (2, 1))),
                                         jnp.asarray(ans)), np.float64)
    keep = np.arange(task.ANSWER_LEN)[None] <= np.tile(pool.n_digits, 2)[:, None]
    p = np.exp(np.sum(lp * keep, axis=1))
    return float(np.mean(p[:n] + p[n:]))


@pytest.mark.parametrize("steps,every,acc,want", [
    (7, 3, 0.999, [3, 6, 7]),  # not a multiple: the last step is evaluated too
    (7, 3, 1e-9, [3])])        # the first evaluation already reaches warmup_acc: stop there
def test_warmup_evaluates_every_k_steps_and_the_last(steps, every, acc, want):
    """The steps at which the warm-up evaluates (its log lines), by hand; its recorded accuracy
    is that of the params it returns (recomputed in NumPy: both end tokens teacher-forced)."""
    cfg = dataclasses.replace(CFG, warmup=WarmupConfig(steps=steps, eval_every=every, acc=acc,
                                                         batch=16))
    seen = []
    flat, info = warmup.train(cfg, log=lambda m: seen.append(int(m.split()[2].rstrip(":"))))
    assert seen == want and info["steps"] == want[-1]
    params = warmup.unflatten({k: jnp.asarray(v) for k, v in flat.items()})
    _, test, _ = task.make_pools(cfg.n_train, cfg.n_test, cfg.pool_seed)
    acc = _exact_accuracy(params, warmup.arch_of(cfg), test)
    assert abs(acc - info["heldout_acc"]) < 1e-5 * max(acc, 1e-3)


def _fresh_by_hand(t0, t1, B, every):
    """A chunk of updates t0..t1 (1-based) is measured when it is the first or when the
    responses it consumes, ((t0 - 1) B, t1 B], contain a multiple of noise_every."""
    return t0 == 1 or any((t0 - 1) * B < m <= t1 * B for m in range(every, t1 * B + 1, every))


@pytest.mark.slow  # ~45 s of compiling one update with its noise measurement on 2 cores
def test_noise_is_measured_on_chunks_that_cross_a_multiple_of_noise_every():
    """Chunks of one update at B = 12, noise_every 24: noise_fresh against the hand rule (the
    first chunk, and updates 2, 4 that end exactly on 24, 48 responses; not 3, which starts
    right after one). A measured chunk's statistics are those of its update's rollout (drawn
    from fold_in(key, t)) at the policy that sampled it, not the updated one (known rewards:
    the fake sampler, so the groups' advantages are not all zero)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(net, "sample", _fake_sample(RIGHT))
        d = dynamics(CFG, OptimConfig(lr_rule="fixed"), 12)(12, jax.random.PRNGKey(0))
        tx = d.optimizer(3e-2)
        adv = jax.jit(lambda st, ts, ks: d.advance(tx, st, ts, ks))
        st0 = d.init(tx)
        got = {}
        for t in (1, 2, 3, 4, 5):
            ts = jnp.array([t])
            st1, _, m = adv(st0, ts, d.draw(ts))
            assert bool(m["noise_fresh"]) is _fresh_by_hand(t, t, 12, CFG.noise_every), t
            got[t] = (st1, m)
        s = setup(CFG)
        st1, m = got[2]
        ro, _ = jax.jit(make_rollout(CFG, s, 12))(st0.params,
                                                  jax.random.fold_in(jax.random.PRNGKey(0), 2))
        ns = jax.jit(lambda w, ro: noise_stats(w, ro, CFG, s, CFG.clip))
        want, moved = ns(st0.params, ro), ns(st1.params, ro)
    assert abs(float(want["drive_acc"])) > 0
    assert abs(float(moved["drive_acc"]) - float(want["drive_acc"])) > 1e-3 * abs(
        float(want["drive_acc"]))
    for k in ("noise_acc", "signal_acc", "drive_acc", "drive_null"):
        np.testing.assert_allclose(float(m[k]), float(want[k]), rtol=1e-4, atol=1e-9,
                                   err_msg=k)
