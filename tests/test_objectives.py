"""Group advantages, PPO/GRPO ratio clipping and exact KL (twoclock.objectives)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.helpers import assert_close
from twoclock import objectives as obj

KINDS = ("grpo", "grpo_bessel", "drgrpo", "rloo")


@st.composite
def reward_groups(draw):
    """r [P, G] of 0/1 verifier rewards, G >= 2, with some all-equal groups."""
    G = draw(st.integers(2, 12))
    P = draw(st.integers(1, 6))
    rows = [draw(st.lists(st.integers(0, 1), min_size=G, max_size=G)) for _ in range(P)]
    return np.asarray(rows, np.float32)


@given(reward_groups(), st.sampled_from(KINDS))
def test_advantages_have_zero_mean_per_group_and_vanish_on_equal_groups(r, kind):
    A = np.asarray(obj.advantages(jnp.asarray(r), kind))
    assert A.shape == r.shape
    assert_close(A.mean(axis=1), np.zeros(r.shape[0]), rtol=0, atol=1e-5, what="group mean")
    equal = np.all(r == r[:, :1], axis=1)
    assert_close(A[equal], np.zeros_like(A[equal]), rtol=0, atol=0, what="equal-group adv")
    assert np.array_equal(np.asarray(obj.zero_advantage_groups(jnp.asarray(r))), equal)
    # a correct response never gets a lower advantage than a wrong one in its group
    for p in np.flatnonzero(~equal):
        assert A[p][r[p] == 1].min() > A[p][r[p] == 0].max()


@given(reward_groups())
def test_rloo_is_the_leave_one_out_baseline(r):
    A = np.asarray(obj.advantages(jnp.asarray(r), "rloo"))
    P, G = r.shape
    loo = np.array([[r[p, i] - np.delete(r[p], i).mean() for i in range(G)] for p in range(P)])
    assert_close(A, loo, rtol=1e-6, atol=1e-6, what="RLOO")


@given(reward_groups())
def test_grpo_is_drgrpo_over_the_group_std(r):
    eps = 1e-6
    A = np.asarray(obj.advantages(jnp.asarray(r), "grpo", eps))
    dr = np.asarray(obj.advantages(jnp.asarray(r), "drgrpo"))
    assert_close(dr, r - r.mean(axis=1, keepdims=True), rtol=0, atol=1e-6, what="Dr.GRPO")
    assert_close(A, dr / (r.std(axis=1, keepdims=True) + eps), rtol=1e-5, atol=1e-6, what="GRPO")


def test_the_bessel_corrected_std_by_hand_at_group_4():
    """r = (1, 0, 0, 0): centred (3/4, -1/4, -1/4, -1/4), squares summing to 3/4. Population
    std sqrt(3/16) gives (sqrt 3, -1/sqrt 3, ...); Bessel's sqrt(3/4 / 3) = 1/2 gives
    (3/2, -1/2, -1/2, -1/2), sqrt(3/4) times the population's."""
    r = jnp.asarray([[1.0, 0.0, 0.0, 0.0]], jnp.float32)
    s3 = np.sqrt(3.0)
    assert_close(obj.advantages(r, "grpo", 0.0), [[s3, -1 / s3, -1 / s3, -1 / s3]], rtol=1e-6,
                 atol=0, what="population std")
    assert_close(obj.advantages(r, "grpo_bessel", 0.0), [[1.5, -0.5, -0.5, -0.5]], rtol=1e-6,
                 atol=0, what="Bessel-corrected std")
    # r = (1, 0, 0, 1): centred +-1/2, population std 1/2, Bessel's sqrt(1 / 3)
    r2 = jnp.asarray([[1.0, 0.0, 0.0, 1.0]], jnp.float32)
    assert_close(obj.advantages(r2, "grpo", 0.0), [[1.0, -1.0, -1.0, 1.0]], rtol=1e-6, atol=0,
                 what="population std, two right")
    h = 0.5 / np.sqrt(1 / 3)  # 0.8660...
    assert_close(obj.advantages(r2, "grpo_bessel", 0.0), [[h, -h, -h, h]], rtol=1e-6, atol=0,
                 what="Bessel-corrected std, two right")
    # the default eps sits in the denominator: 0.75 / (0.5 + 1e-6)
    assert_close(obj.advantages(r, "grpo_bessel")[0, 0], 0.75 / 0.500001, rtol=1e-6, atol=0,
                 what="with eps")


def test_unknown_advantage_is_named():
    with pytest.raises(ValueError, match="advantage"):
        obj.advantages(jnp.zeros((2, 4)), "ppo")


eps_st = st.floats(0.01, 0.9)


# 16 samples in every example: the ops are elementwise, and one shape compiles once
@given(eps_st, eps_st, st.lists(st.floats(-3, 3), min_size=16, max_size=16),
       st.lists(st.floats(0.0, 1.0), min_size=16, max_size=16))
def test_surrogate_is_unclipped_inside_the_band(el, eh, adv, u):
    adv = np.asarray(adv, np.float32)
    # inside [1-el, 1+eh]; u = 0 or 1 would put a float32 ratio on an edge, where rounding
    # decides (test_the_band_edges_are_exact checks the edges themselves)
    u = np.clip(np.asarray(u[:adv.size], np.float32), 1e-5, 1 - 1e-5)
    ratio = (1 - el) + (el + eh) * u
    clip = obj.clip_band(el, eh)
    clipped = obj.ppo_objective(jnp.asarray(ratio), jnp.asarray(adv), clip)
    plain = obj.ppo_objective(jnp.asarray(ratio), jnp.asarray(adv), obj.UNCLIPPED)
    assert_close(clipped, ratio * adv, rtol=1e-6, atol=1e-6, what="clipped surrogate")
    assert_close(plain, ratio * adv, rtol=1e-6, atol=1e-6, what="unclipped surrogate")
    assert not np.any(np.asarray(obj.clipped_mask(jnp.asarray(ratio), jnp.asarray(adv), clip)))


@given(eps_st, eps_st, st.lists(st.floats(-3, 3).filter(lambda a: abs(a) > 1e-3),
                                min_size=16, max_size=16),
       st.lists(st.floats(-1.5, 1.5), min_size=16, max_size=16))
def test_clipped_samples_give_no_gradient(el, eh, adv, logr):
    adv = jnp.asarray(adv, jnp.float32)
    logr = jnp.asarray(logr[:adv.size], jnp.float32)
    clip = obj.clip_band(el, eh)
    g = jax.grad(lambda lr: jnp.sum(obj.ppo_objective(jnp.exp(lr), adv, clip)))(logr)
    ratio = jnp.exp(logr)
    mask = np.asarray(obj.clipped_mask(ratio, adv, clip))
    g, ratio, adv = np.asarray(g), np.asarray(ratio), np.asarray(adv)
    assert_close(g[mask], np.zeros(mask.sum()), rtol=0, atol=0, what="clipped gradient")
    # elsewhere the gradient is d(ratio A)/d log ratio = ratio * A (never zero)
    assert_close(g[~mask], (ratio * adv)[~mask], rtol=1e-5, atol=1e-6, what="live gradient")


def test_clip_higher_is_asymmetric():
    r = jnp.asarray([1.25, 1.25, 0.85, 0.75])
    a = jnp.asarray([1.0, -1.0, -1.0, -1.0])
    m = np.asarray(obj.clipped_mask(r, a, obj.clip_band(0.2, 0.28)))
    # A > 0 at 1.25 < 1.28 is live; A < 0 only clips below 0.8
    assert m.tolist() == [False, False, False, True]
    m = np.asarray(obj.clipped_mask(r, a, obj.clip_band(0.2, 0.2)))
    assert m.tolist() == [True, False, False, True]


def test_the_dual_clip_by_hand():
    """verl's dual clip at c = 3 on the band (0.8, 1.2), per sample by hand:
    A -1, r 4: min(-4, -1.2) = -4, max(-4, -3) = -3 (bound, no gradient); A -1, r 2: -2 (c A is
    lower); A -1, r 0.5: min(-0.5, -0.8) = -0.8; A 2, r 4: min(8, 2.4) = 2.4 (a positive
    advantage is never dual-clipped, though c A = 6 is larger); A -2, r 3.5: max(-7, -6) = -6.
    Unclipped (no band), A -1, r 4: max(-4, -3) = -3."""
    r = jnp.asarray([4.0, 2.0, 0.5, 4.0, 3.5])
    a = jnp.asarray([-1.0, -1.0, -1.0, 2.0, -2.0])
    band = obj.clip_band(0.2)
    assert_close(obj.ppo_objective(r, a, band, 3.0), [-3.0, -2.0, -0.8, 2.4, -6.0],
                 rtol=1e-6, atol=0, what="dual-clipped surrogate")
    assert_close(obj.ppo_objective(r, a, band), [-4.0, -2.0, -0.8, 2.4, -7.0], rtol=1e-6,
                 atol=0, what="without the dual clip")
    assert_close(obj.ppo_objective(r, a, obj.UNCLIPPED, 3.0), [-3.0, -2.0, -0.5, 8.0, -6.0],
                 rtol=1e-6, atol=0, what="dual clip alone")
    assert np.asarray(obj.clipped_mask(r, a, band, 3.0)).tolist() == [
        True, False, True, True, True]
    assert np.asarray(obj.clipped_mask(r, a, obj.UNCLIPPED, 3.0)).tolist() == [
        True, False, False, False, True]
    # d j / d r: 0 where bound, A on the live branch r A, 0 on the band's clipped branch
    g = jax.grad(lambda r: jnp.sum(obj.ppo_objective(r, a, band, 3.0)))(r)
    assert_close(g, [0.0, -1.0, 0.0, 0.0, 0.0], rtol=0, atol=0, what="dual-clip gradient")
    j, m = obj.log_ratio_objective(jnp.log(r), jnp.zeros(5), a, band, 3.0)
    assert_close(j, [-3.0, -2.0, -0.8, 2.4, -6.0], rtol=1e-6, atol=0, what="from log ratios")
    assert np.asarray(m).tolist() == [True, False, True, True, True]


def _softmax_kl_case(K: int, seed: int):
    """Logits of pi and pi_old, log pi_ref, for a softmax over K responses (float64 NumPy)."""
    rng = np.random.default_rng(seed)
    theta, theta_old, z_ref = (rng.normal(size=K) * 1.5 for _ in range(3))
    return theta, theta_old, z_ref - np.log(np.sum(np.exp(z_ref)))


def _expected_penalty_grad(theta, theta_old, logref, penalty):
    """d/d theta of E_{y ~ pi_old}[penalty(log pi(y), log pi_old(y), log pi_ref(y))], the
    expectation by enumeration of the K responses (pi_old fixed)."""
    logp_old = jax.nn.log_softmax(jnp.asarray(theta_old))
    w = jnp.exp(logp_old)
    f = lambda t: jnp.sum(w * penalty(jax.nn.log_softmax(t), logp_old, jnp.asarray(logref)))
    return np.asarray(jax.grad(f)(jnp.asarray(theta)), np.float64)


def _exact_kl_grad(theta, logref, reverse=False):
    """Autodiff of the exact KL(pi || pi_ref) (or KL(pi_ref || pi)) of softmax(theta)."""
    def kl(t):
        lp, lr = jax.nn.log_softmax(t), jnp.asarray(logref)
        return jnp.sum(jnp.exp(lr) * (lr - lp)) if reverse else jnp.sum(jnp.exp(lp) * (lp - lr))
    return np.asarray(jax.grad(kl)(jnp.asarray(theta)), np.float64)


@pytest.mark.parametrize("estimator", ["k1", "k3"])
@pytest.mark.parametrize("on_policy", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampled_kl_has_the_gradient_of_the_exact_kl(estimator, on_policy, seed):
    """E_{y ~ pi_old}[grad sampled_kl] = grad KL(pi || pi_ref), by enumeration over K = 5
    responses of a softmax policy, on-policy (pi_old = pi, the first inner step) and off it
    (the later steps); its expected value is KL(pi || pi_ref) too."""
    with jax.enable_x64(True):
        theta, theta_old, logref = _softmax_kl_case(5, seed)
        theta_old = theta if on_policy else theta_old
        pen = lambda lp, lo, lr: obj.sampled_kl(lp, lo, lr, estimator)
        got = _expected_penalty_grad(theta, theta_old, logref, pen)
        want = _exact_kl_grad(theta, logref)
        assert_close(got, want, rtol=1e-9, atol=1e-12, what=f"{estimator} expected gradient")
        lp, lo = (np.asarray(jax.nn.log_softmax(jnp.asarray(t))) for t in (theta, theta_old))
        value = np.sum(np.exp(lo) * np.asarray(pen(jnp.asarray(lp), jnp.asarray(lo),
                                                   jnp.asarray(logref))))
        assert_close(value, np.sum(np.exp(lp) * (lp - logref)), rtol=1e-9, atol=0,
                     what=f"{estimator} expected value")


def test_the_uncorrected_estimators_have_the_wrong_gradients():
    """The oracle tells the old penalty from the new: without the ratio, on-policy, k1's
    expected gradient is 0 and k3's is grad KL(pi_ref || pi) (TRL's and verl's low-variance
    penalty), both away from grad KL(pi || pi_ref) on this case; k2's is grad KL(pi ||
    pi_ref) on-policy only. As a reward, k1 has the right gradient and k3 does not."""
    with jax.enable_x64(True):
        theta, _, logref = _softmax_kl_case(5, 0)
        k1 = lambda lp, lo, lr: lp - lr
        k3 = lambda lp, lo, lr: jnp.exp(lr - lp) - (lr - lp) - 1.0
        g1 = _expected_penalty_grad(theta, theta, logref, k1)
        g3 = _expected_penalty_grad(theta, theta, logref, k3)
        want = _exact_kl_grad(theta, logref)
        assert_close(g1, np.zeros(5), rtol=0, atol=1e-12, what="plain k1")
        assert_close(g3, _exact_kl_grad(theta, logref, reverse=True), rtol=1e-9, atol=1e-12,
                     what="plain k3")
        assert np.max(np.abs(want)) > 0.1 and np.max(np.abs(g3 - want)) > 0.05
        # k2 = (log r)^2 / 2 (verl's "mse"), no ratio: on-policy its gradient is the right one,
        # E_pi[log(pi / pi_ref) grad log pi] = grad KL(pi || pi_ref); off-policy it is not
        k2 = lambda lp, lo, lr: 0.5 * (lp - lr) ** 2
        assert_close(_expected_penalty_grad(theta, theta, logref, k2), want, rtol=1e-9,
                     atol=1e-12, what="plain k2 on-policy")
        _, theta_old, _ = _softmax_kl_case(5, 0)
        off = _expected_penalty_grad(theta, theta_old, logref, k2)
        assert np.max(np.abs(off - want)) > 0.05
        # in the reward, an estimate f(y) at the behaviour policy (no gradient) acts through
        # the score function, E_pi[grad log pi(y) f(y)] = grad sum_y pi(y) f(y), f held:
        # k1's is grad KL(pi || pi_ref), k3's grad KL(pi || pi_ref) - grad KL(pi_ref || pi)
        as_reward = lambda k: (lambda lp, lo, lr: jnp.exp(lp - lo) * k(lo, lo, lr))
        assert_close(_expected_penalty_grad(theta, theta, logref, as_reward(k1)), want,
                     rtol=1e-9, atol=1e-12, what="k1 in the reward")
        assert_close(_expected_penalty_grad(theta, theta, logref, as_reward(k3)),
                     want - _exact_kl_grad(theta, logref, reverse=True), rtol=1e-9, atol=1e-12,
                     what="k3 in the reward")


def test_kl_in_the_reward_by_hand_at_group_4():
    """r = (1, 0, 0, 1), log pi_old - log pi_ref = (0.2, -0.4, 0, 0.6), coefficient 1/2: the
    rewards become (0.9, 0.2, 0, 0.7), mean 0.45, so Dr. GRPO's advantages are (0.45, -0.25,
    -0.45, 0.25) instead of (0.5, -0.5, -0.5, 0.5); the population std is sqrt(0.53 / 4) =
    0.36401, GRPO's (1.23624, -0.68680, -1.23624, 0.68680). No gradient reaches the
    log-probabilities."""
    r = jnp.asarray([[1.0, 0.0, 0.0, 1.0]])
    lp_old, lp_ref = jnp.asarray([[-1.0, -1.6, -1.2, -0.6]]), jnp.full((1, 4), -1.2)
    shaped = obj.kl_penalised_rewards(r, lp_old, lp_ref, 0.5)
    assert_close(shaped, [[0.9, 0.2, 0.0, 0.7]], rtol=0, atol=1e-6, what="penalised rewards")
    assert_close(obj.advantages(shaped, "drgrpo"), [[0.45, -0.25, -0.45, 0.25]], rtol=0,
                 atol=1e-6, what="Dr. GRPO")
    assert_close(obj.advantages(shaped, "grpo", 0.0), [[1.23624, -0.68680, -1.23624, 0.68680]],
                 rtol=1e-5, atol=0, what="GRPO")
    g = jax.grad(lambda lp: jnp.sum(obj.kl_penalised_rewards(r, lp, lp_ref, 0.5) ** 2))(lp_old)
    assert not np.any(np.asarray(g))


@given(st.integers(2, 10), st.integers(0, 10_000))
def test_exact_kl_and_entropy(K, seed):
    rng = np.random.default_rng(seed)
    lp = jax.nn.log_softmax(jnp.asarray(rng.normal(size=(3, K)) * 2, jnp.float32))
    lq = jax.nn.log_softmax(jnp.asarray(rng.normal(size=(3, K)) * 2, jnp.float32))
    p, q = np.exp(np.asarray(lp, np.float64)), np.exp(np.asarray(lq, np.float64))
    assert_close(obj.kl(lp, lq), np.sum(p * np.log(p / q), axis=1), rtol=1e-4, atol=1e-5,
                 what="KL")
    assert_close(obj.kl(lp, lp), np.zeros(3), rtol=0, atol=1e-6, what="KL(p||p)")
    assert_close(obj.entropy(lp), -np.sum(p * np.log(p), axis=1), rtol=1e-4, atol=1e-5,
                 what="entropy")
    assert np.all(np.asarray(obj.entropy(lp)) <= np.log(K) + 1e-5)


@given(eps_st, eps_st, st.lists(st.floats(-3, 3).filter(lambda a: abs(a) > 1e-3),
                                min_size=16, max_size=16),
       st.lists(st.floats(0.0, 3.0), min_size=16, max_size=16))
def test_surrogate_and_mask_equal_the_numpy_definition_on_both_sides_of_the_band(el, eh, adv, r):
    """min(r A, clip(r, 1 - el, 1 + eh) A) and the clipped set, against NumPy in float64, for
    ratios on both sides of both edges (a band of 1 +- 2 eps differs at ratios in between)."""
    adv = np.asarray(adv, np.float32)
    # half the ratios just outside an edge, within eps/2 of it, where a wider band would differ
    edges = np.where(np.arange(adv.size) % 2 == 0, 1 + eh * 1.5, 1 - el * 1.5)
    ratio = np.where(np.arange(adv.size) % 4 < 2, edges, np.asarray(r[:adv.size])).astype(
        np.float32)
    ratio = ratio.clip(1e-3)
    lo, hi = 1 - el, 1 + eh
    away = (np.abs(ratio - lo) > 1e-5) & (np.abs(ratio - hi) > 1e-5)  # float32 rounding at an edge
    r64, a64 = ratio.astype(np.float64), adv.astype(np.float64)
    want = np.minimum(r64 * a64, np.clip(r64, lo, hi) * a64)
    got = np.asarray(obj.ppo_objective(jnp.asarray(ratio), jnp.asarray(adv), obj.clip_band(el, eh)))
    assert_close(got[away], want[away], rtol=1e-5, atol=1e-6, what="clipped surrogate")
    mask = ((a64 > 0) & (r64 > hi)) | ((a64 < 0) & (r64 < lo))
    m = np.asarray(obj.clipped_mask(jnp.asarray(ratio), jnp.asarray(adv), obj.clip_band(el, eh)))
    assert np.array_equal(m[away], mask[away])
    o2, m2 = obj.log_ratio_objective(jnp.log(jnp.asarray(ratio)), jnp.zeros(adv.shape),
                                     jnp.asarray(adv), obj.clip_band(el, eh))
    assert_close(np.asarray(o2)[away], want[away], rtol=1e-4, atol=1e-5, what="log-ratio surrogate")
    assert np.array_equal(np.asarray(m2)[away], mask[away])


def test_the_band_edges_are_exact():
    """Ratios 1 +- eps * (1 +- 1e-3): clipped just outside the band, live just inside."""
    el, eh = 0.2, 0.3
    r = np.array([1 + eh * 1.001, 1 + eh * 0.999, 1 - el * 1.001, 1 - el * 0.999], np.float32)
    a = np.array([1.0, 1.0, -1.0, -1.0], np.float32)
    m = np.asarray(obj.clipped_mask(jnp.asarray(r), jnp.asarray(a), obj.clip_band(el, eh))).tolist()
    assert m == [True, False, True, False]
    o = np.asarray(obj.ppo_objective(jnp.asarray(r), jnp.asarray(a), obj.clip_band(el, eh)))
    assert_close(o, [1 + eh, r[1], -(1 - el), -r[3]], rtol=1e-6, atol=0,
                 what="objective at the edges")
    # unclipped (eps None): no mask, plain ratio * A even far outside
    o, m = obj.log_ratio_objective(jnp.log(jnp.asarray(r * 3)), jnp.zeros(4), jnp.asarray(a),
                                   obj.UNCLIPPED)
    assert_close(o, r * 3 * a, rtol=1e-6, atol=0, what="unclipped")
    assert not np.any(np.asarray(m))


def test_advantages_on_any_leading_shape_with_the_default_eps():
    """[runs, P, G] rewards: each group's estimator as in 2-D (RLOO's G / (G - 1) uses the
    group axis, the last), and GRPO's default eps is 1e-6."""
    r = np.random.default_rng(0).integers(0, 2, size=(2, 3, 5)).astype(np.float32)
    r[0, 0] = [1, 0, 0, 0, 0]
    cen = r - r.mean(-1, keepdims=True)
    assert_close(obj.advantages(jnp.asarray(r), "rloo"), cen * 5 / 4, rtol=1e-6, atol=1e-6,
                 what="RLOO [2, 3, 5]")
    # std 0.4 on the first group: eps = 1e-6 vs 2e-6 differs by 2.5e-6 relative
    assert_close(obj.advantages(jnp.asarray(r), "grpo"), cen / (r.std(-1, keepdims=True) + 1e-6),
                 rtol=2e-7, atol=0, what="GRPO default eps")


def test_kl_entropy_and_equal_groups_reduce_only_the_last_axis():
    """[2, 3, K] and [K] inputs: each distribution's (each group's) own value, as in 2-D."""
    rng = np.random.default_rng(1)
    lp = np.asarray(jax.nn.log_softmax(jnp.asarray(rng.normal(size=(2, 3, 5)), jnp.float32)))
    lq = np.asarray(jax.nn.log_softmax(jnp.asarray(rng.normal(size=(2, 3, 5)), jnp.float32)))
    p = np.exp(lp.astype(np.float64))
    kl = np.sum(p * (lp - lq), axis=-1)
    ent = -np.sum(p * lp, axis=-1)
    assert_close(obj.kl(jnp.asarray(lp), jnp.asarray(lq)), kl, rtol=1e-5, atol=1e-6, what="KL")
    assert_close(obj.entropy(jnp.asarray(lp)), ent, rtol=1e-5, atol=1e-6, what="entropy")
    assert_close(obj.kl(jnp.asarray(lp[1, 2]), jnp.asarray(lq[1, 2])), kl[1, 2], rtol=1e-5,
                 atol=1e-6, what="KL of one distribution")
    assert_close(obj.entropy(jnp.asarray(lp[1, 2])), ent[1, 2], rtol=1e-5, atol=1e-6,
                 what="entropy of one distribution")
    r = np.array([[[1, 1, 1], [0, 1, 0]], [[0, 0, 0], [1, 0, 1]]], np.float32)  # [2, 2, 3]
    got = np.asarray(obj.zero_advantage_groups(jnp.asarray(r)))
    assert got.tolist() == [[True, False], [True, False]]
    assert not np.asarray(obj.zero_advantage_groups(jnp.asarray([0.0, 1.0, 1.0])))


def test_the_edge_itself_and_zero_advantages_are_never_clipped():
    """clipped: A > 0 and ratio > 1 + clip_high, or A < 0 and ratio < 1 - clip_low (strict).
    1 +- 1/4 is exact in float32, so ratios 1.25 and 0.75 sit on the edges; a zero advantage
    is never counted as clipped, however far out its ratio (it has no gradient to clip)."""
    r = jnp.asarray([1.25, 0.75, 3.0, 0.1, 1.25, 0.75], jnp.float32)
    a = jnp.asarray([1.0, -1.0, 0.0, 0.0, 0.0, 0.0], jnp.float32)
    assert not np.any(np.asarray(obj.clipped_mask(r, a, obj.clip_band(0.25, 0.25))))
    # just outside each edge, the same signs are clipped (the test is not vacuous)
    out = jnp.asarray([1.2500001, 0.7499999], jnp.float32)
    m = obj.clipped_mask(out, a[:2], obj.clip_band(0.25, 0.25))
    assert np.asarray(m).tolist() == [True, True]


def test_log_ratio_objective_takes_the_ratio_to_the_old_policy():
    """ratio = exp(logp - logp_old) with nonzero old log-probabilities; by hand at eps 0.2:
    min(1.5, 1.2) = 1.2, min(-0.5, -0.8) = -0.8, and 1.1, -0.9 inside the band."""
    logp_old = jnp.asarray([-0.5, -2.0, -1.0, -3.0], jnp.float32)
    r = np.array([1.5, 0.5, 1.1, 0.9], np.float32)
    o, m = obj.log_ratio_objective(logp_old + jnp.log(r), logp_old,
                                   jnp.asarray([1.0, -1.0, 1.0, -1.0]), obj.clip_band(0.2, 0.2))
    assert_close(o, [1.2, -0.8, 1.1, -0.9], rtol=1e-5, atol=0, what="surrogate")
    assert np.asarray(m).tolist() == [True, True, False, False]
