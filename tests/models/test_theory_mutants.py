"""Hand-computed values, definitions and exact limits of the theory modules: the tests that
kill the mutants the other theory tests let live (docs/testing.md, "Mutation score").

Every expected value here is worked out from the formula the module's docstring states, on
numbers chosen so that the arithmetic is short (written out in the comments); nothing is a
recorded output of the code under test. The checks are deterministic: float64 rounding only.
"""
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ndtr, zeta

from tests.helpers import assert_close
from twoclock import OptimConfig, QuadraticConfig
from twoclock.models.bandit import theory as bt
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.quadratic import adam_progress as ap, crossing as cr, drift as dr, \
    first_passage as fp, gaussian, moments as mo, scales as sc
from twoclock.models.quadratic.problem import initial_offset, noise_variances, rotation, spectrum

TIGHT = dict(rtol=1e-12, atol=0)

# ---------------------------------------------------------------------------------------------
# the bandit's theory
# ---------------------------------------------------------------------------------------------

# beta1 = 0.8: sqrt((1 - 0.8) / (1 + 0.8)) = sqrt(1/9) = 1/3 (the noise-dominated Adam step)
BANDIT_OPT = OptimConfig(beta1=0.8)
# M = 2, E = 3, drift_dim 9 (sqrt = 3), s_tr = 2
BANDIT = BanditConfig(drift_dim=9, drift_train_scale=2.0, minibatches=2, epochs=3)


def at(eps):
    """BANDIT with the symmetric clip eps (None: unclipped), the config the theory reads."""
    return dataclasses.replace(BANDIT, clip_low=eps, clip_high=None)


def test_bandit_drift_moves_and_the_clip_boundary_by_hand():
    assert_close(bt.adam_noise_step(BANDIT_OPT), 1 / 3, **TIGHT, what="Adam noise step")
    assert math.isnan(bt.adam_noise_step(OptimConfig(name="momentum")))
    # m_free = M E lr sqrt(D_d) / 3 = 2 * 3 * 0.01 * 3 / 3 = 0.06
    assert_close(bt.drift_move_per_batch(BANDIT, BANDIT_OPT, 0.01), 0.06, **TIGHT,
                 what="m_free")
    # RMS log-ratio 0.5 s_tr m_free = 0.5 * 2 * 0.06 = 0.06
    eps_star = bt.drift_logratio_per_batch(BANDIT, BANDIT_OPT, 0.01)
    assert_close(eps_star, 0.06, **TIGHT, what="eps*")
    # clipping binds strictly above the boundary: eps < eps* binds, eps = eps* does not
    assert bt.clip_binds(at(0.05), BANDIT_OPT, 0.01)
    assert not bt.clip_binds(at(eps_star), BANDIT_OPT, 0.01)
    assert not bt.clip_binds(at(None), BANDIT_OPT, 0.01)
    # the lr at which eps = 0.12 binds: 0.12 / (0.5 * 2 * 2 * 3 * 3 / 3) = 0.12 / 6
    assert_close(bt.binding_lr(BANDIT, BANDIT_OPT, 0.12), 0.02, **TIGHT, what="binding lr")
    # soft cap: m_cap = eps / (0.5 s_tr CLIP_BITE) = 0.1 / (0.5 * 2 * 0.25) = 0.4,
    # 1 / m = 1 / 0.06 + 1 / 0.4, and the delay m_free / m = 1 + 0.06 / 0.4 = 1.15
    assert_close(bt.clipped_move_per_batch(at(0.1), BANDIT_OPT, 0.01), 0.06 * 0.4 / 0.46,
                 **TIGHT, what="clipped move")
    assert_close(bt.predicted_delay(at(0.1), BANDIT_OPT, 0.01), 1.15, **TIGHT, what="delay")
    # a narrow clip: m_cap = 0.01 / 0.25 = 0.04, the soft cap 1 / (1 / 0.06 + 1 / 0.04) = 0.024
    # falls below the floor 0.6 m_free = 0.036, so the move is 0.036 and the delay 1 / 0.6
    assert_close(bt.clipped_move_per_batch(at(0.01), BANDIT_OPT, 0.01), 0.036, **TIGHT,
                 what="clipped move at the floor")
    assert_close(bt.predicted_delay(at(0.01), BANDIT_OPT, 0.01), 1 / 0.6, **TIGHT,
                 what="delay at the floor")
    # one inner step per batch (M = E = 1) is on-policy: nothing is clipped, whatever eps
    single = dataclasses.replace(BANDIT, minibatches=1, epochs=1, clip_low=0.001)
    assert bt.clipped_move_per_batch(single, BANDIT_OPT, 0.01) == \
        bt.drift_move_per_batch(single, BANDIT_OPT, 0.01)
    assert bt.predicted_delay(single, BANDIT_OPT, 0.01) == 1.0
    assert not bt.clip_binds(single, BANDIT_OPT, 0.01)
    assert bt.clip_binds(dataclasses.replace(single, epochs=2), BANDIT_OPT, 0.01)
    # unclipped: the free move, no delay
    assert bt.clipped_move_per_batch(at(None), BANDIT_OPT, 0.01) == \
        bt.drift_move_per_batch(BANDIT, BANDIT_OPT, 0.01)
    assert bt.predicted_delay(at(None), BANDIT_OPT, 0.01) == 1.0
    for f, name in ((lambda: bt.drift_move_per_batch(BANDIT, BANDIT_OPT, 0.0), "lr"),
                    (lambda: bt.binding_lr(BANDIT, BANDIT_OPT, 0.0), "eps"),
                    (lambda: at(-0.1), "clip_low")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            f()


def test_bandit_noise_scales_are_mean_noise_over_mean_signal():
    assert bt.drift_noise_scale(BanditConfig(drift_bias=0.5, drift_noise=4.0)) == 16.0
    assert bt.drift_noise_scale(BanditConfig(drift_bias=0.0)) == math.inf
    noise = np.array([[1.0, 3.0], [2.0, 2.0], [4.0, 0.0]])
    signal = np.array([[0.5, 1.5], [0.5, -0.5], [-1.0, 0.0]])
    # per row: means (2, 1) -> 2; (2, 0) -> no signal; (2, -0.5) -> no signal
    np.testing.assert_array_equal(bt.noise_scale(noise, signal, axis=-1), [2.0, np.inf, np.inf])
    # pooled: mean noise 12 / 6 = 2, mean signal 1 / 6 (the means are taken before the ratio)
    assert_close(bt.noise_scale(noise, signal), 12.0, **TIGHT, what="pooled B_simple")
    # one batch's checkpoints [L, S, C] = [1, 3, 2]: per run by default, [L, S]; pooled, [L]
    ck = {"noise_skill": noise[None], "signal_skill": signal[None],
          "noise_drift": 2 * noise[None], "signal_drift": signal[None]}
    got = bt.noise_scales(ck)
    np.testing.assert_array_equal(got["skill"], [[2.0, np.inf, np.inf]])
    np.testing.assert_array_equal(got["drift"], [[4.0, np.inf, np.inf]])
    assert_close(bt.noise_scales(ck, axis=(-2, -1))["drift"], [24.0], **TIGHT, what="pooled")


def test_bandit_failure_clock_eps_rules_and_bad_input_by_hand():
    cfg = BanditConfig(drift_bias=0.05, drift_noise=25.0, drift_threshold=2.0, minibatches=2)
    # Adam, fixed rule, eps = 0.5: step = lr b / (sqrt(c_d M / B + b^2) + eps)
    # B = 128: sqrt(25 * 2 / 128 + 0.0025) = sqrt(0.3931...) ; N = B thr / (M E step)
    opt = OptimConfig(lr_rule="fixed", eps=0.5)
    step = 0.01 * 0.05 / (math.sqrt(25 * 2 / 128 + 0.05**2) + 0.5)
    assert_close(bt.predicted_failure_samples(cfg, opt, 0.01, 128), 128 * 2.0 / (2 * step),
                 **TIGHT, what="Adam with eps")
    # Malladi companions at B = 32 (k = 4): eps -> eps / 2
    mal = OptimConfig(lr_rule="sqrt", eps=0.5, malladi=True)
    step = 0.01 * 2 * 0.05 / (math.sqrt(25 * 2 / 32 + 0.05**2) + 0.25)
    assert_close(bt.predicted_failure_samples(cfg, mal, 0.01, 32), 32 * 2.0 / (2 * step),
                 **TIGHT, what="Adam, Malladi eps")
    # SGD under the linear rule: lr(64) = 0.01 * 8, N = 64 * 2 / (2 * 0.08 * 0.05) = 16000
    sgd = OptimConfig(name="sgd", lr_rule="linear")
    assert_close(bt.predicted_failure_samples(cfg, sgd, 0.01, 64), 16000.0, **TIGHT, what="SGD")
    assert bt.predicted_failure_samples(BanditConfig(drift_bias=0.0), sgd, 0.01, 64) == math.inf
    with pytest.raises(ValueError, match="^lr0 must be"):
        bt.predicted_failure_samples(cfg, sgd, 0.0, 64)


# ---------------------------------------------------------------------------------------------
# scales: McCandlish's noise scales and the Pareto front
# ---------------------------------------------------------------------------------------------

def test_scales_pareto_fit_on_two_points_below_one_and_its_bad_input():
    # S_min = 1/4, E_min = 1/2: (S/S_min - 1)(E/E_min - 1) = 1 at S = 1/2, E = 1 and at
    # S = 3/4, E = 3/4. Two points fix the two unknowns; values below 1 are valid.
    fit = sc.pareto_fit([0.5, 0.75], [1.0, 0.75])
    assert_close([fit["s_min"], fit["e_min"], fit["b_crit"]], [0.25, 0.5, 2.0], rtol=1e-12,
                 atol=1e-15, what="two-point Pareto fit")
    for S, E in (([1.0, 2.0], [1.0, 2.0, 3.0]),   # unequal lengths
                 ([1.0], [1.0]),                   # one point
                 ([0.0, 2.0], [1.0, 2.0]),         # S not positive
                 ([1.0, 2.0], [1.0, 0.0]),         # E not positive
                 ([1.0, 2.0], [1.0, -2.0])):
        with pytest.raises(ValueError, match="^S, E must be"):
            sc.pareto_fit(S, E)


def test_scales_noise_scales_at_a_given_offset_by_hand():
    # dim 2, alpha 1: h = (1, 1/2), c = sigma^2 h = (1, 1/2); at x = (1, 2): G = H x = (1, 1),
    # B_noise = (1 + 1/4) / (1 + 1/2) = 5/6 and B_simple = (1 + 1/2) / (1 + 1) = 3/4
    cfg = QuadraticConfig(dim=2)
    assert_close(sc.b_noise(cfg, [1.0, 2.0]), 5 / 6, **TIGHT, what="B_noise")
    assert_close(sc.b_simple(cfg, [1.0, 2.0]), 3 / 4, **TIGHT, what="B_simple")
    with pytest.raises(ValueError, match="^x must be"):
        sc.b_noise(cfg, [1.0, 2.0, 3.0])


# ---------------------------------------------------------------------------------------------
# moments: exact E[L_t] of SGD and heavy ball
# ---------------------------------------------------------------------------------------------

def _dense_expected_loss(cfg, mu, batch, lr, n_steps):
    """E[L_t], t = 0..n_steps, in the parameter basis: the mean and covariance of the stacked
    state (x_t, x_{t-1}) pushed through the heavy-ball map with dense H and Sigma (no
    eigenbasis, no closed form); x_{-1} = x_0."""
    q = rotation(cfg)
    q = np.eye(cfg.dim) if q is None else q
    H = q @ np.diag(spectrum(cfg)) @ q.T
    Sig = q @ np.diag(noise_variances(cfg)) @ q.T
    D, I = cfg.dim, np.eye(cfg.dim)
    A = np.block([[(1 + mu) * I - lr * H, -mu * I], [I, np.zeros((D, D))]])
    N = np.zeros((2 * D, 2 * D))
    N[:D, :D] = lr * lr * Sig / batch
    m, C = np.concatenate([initial_offset(cfg)] * 2), np.zeros((2 * D, 2 * D))
    out = []
    for _ in range(n_steps + 1):
        out.append(0.5 * (m[:D] @ H @ m[:D] + np.trace(H @ C[:D, :D])))
        m, C = A @ m, A @ C @ A.T + N
    return np.array(out)


# dim 1 (h = c = x0 = 1), lr 0.1, B 4: q = lr^2 c / B = 0.0025.
# SGD: E[L_t] = 1/2 (0.81^t + q sum_{j<t} 0.81^j).
# Heavy ball mu = 0.5 (a = 1.4): x_1 = 0.9 + n_0, x_2 = 0.76 + 1.4 n_0 + n_1,
# x_3 = 0.614 + 1.46 n_0 + 1.4 n_1 + n_2 with Var n = q.
HAND = {"sgd": [0.5, 0.5 * (0.81 + 0.0025), 0.5 * (0.6561 + 0.0025 * 1.81),
                0.5 * (0.531441 + 0.0025 * 2.4661)],
        "momentum": [0.5, 0.5 * (0.81 + 0.0025), 0.5 * (0.76**2 + 0.0025 * 2.96),
                     0.5 * (0.614**2 + 0.0025 * (1.46**2 + 1.96 + 1))]}


@pytest.mark.parametrize("name", ["sgd", "momentum"])
def test_moments_expected_loss_by_hand(name):
    cfg, opt = QuadraticConfig(dim=1), OptimConfig(name=name, momentum=0.5)
    assert_close(mo.expected_loss(cfg, opt, 4, 0.1, 3), HAND[name], **TIGHT, what="recursion")
    assert_close(mo.expected_loss_at(cfg, opt, 4, 0.1, np.arange(4)), HAND[name], rtol=1e-11,
                 atol=0, what="closed form")


@pytest.mark.parametrize("name, rotate, lr", [("sgd", True, 0.7), ("momentum", True, 0.3),
                                              ("momentum", False, 2.95)])
def test_moments_expected_loss_equals_a_dense_reference(name, rotate, lr):
    """A rotated random start (the eigenbasis must be used on both H and x0), and lr h > 1 + mu
    (real negative roots) unrotated, against the dense parameter-basis propagation."""
    cfg = QuadraticConfig(dim=4, alpha=1.3, sigma=0.7, gamma=0.5, rotate=rotate,
                          random_start=True, init_seed=3)
    opt = OptimConfig(name=name, momentum=0.5)
    ref = _dense_expected_loss(cfg, 0.5 if name == "momentum" else 0.0, 3, lr, 40)
    assert_close(mo.expected_loss(cfg, opt, 3, lr, 40), ref, rtol=1e-10, atol=0,
                 what="recursion")
    t = np.array([0, 1, 2, 3, 5, 8, 13, 20, 27, 33, 38, 40])  # 12 points: one compilation
    assert_close(mo.expected_loss_at(cfg, opt, 3, lr, t), ref[t], rtol=1e-9, atol=0,
                 what="closed form")


@pytest.mark.parametrize("name, lr", [("sgd", 2.0), ("momentum", 3.0)])
def test_moments_expected_loss_with_a_root_on_the_unit_circle(name, lr):
    """lr h = 2 (SGD: 1 - lr h = -1) and lr h = 2 (1 + mu) (heavy ball mu = 0.5: roots -1 and
    -1/2): the mean never decays and the variance grows; the closed form's geometric sums
    take their ratio-1 branch. SGD by hand: E[L_t] = 1/2 (1 + lr^2 c t / B) = 1/2 + 2 t."""
    cfg, opt = QuadraticConfig(dim=1), OptimConfig(name=name, momentum=0.5)
    t = np.arange(12)
    ref = 0.5 + 2.0 * t if name == "sgd" else _dense_expected_loss(cfg, 0.5, 1, lr, 11)
    assert_close(mo.expected_loss(cfg, opt, 1, lr, 11), ref, rtol=1e-12, atol=0,
                 what="recursion")
    assert_close(mo.expected_loss_at(cfg, opt, 1, lr, t), ref, rtol=1e-10, atol=0,
                 what="closed form")


def test_moments_expected_loss_shapes_edges_and_bad_input():
    cfg, sgd = QuadraticConfig(dim=1), OptimConfig(name="sgd")
    # batch 1 and t 0 are valid; a scalar gives a float, arrays broadcast
    assert mo.expected_loss_at(cfg, sgd, 1, 0.1, 0) == 0.5
    assert isinstance(mo.expected_loss_at(cfg, sgd, 1, 0.1, 2), float)
    got = mo.expected_loss_at(cfg, sgd, np.array([[1.0], [4.0]]), np.array([0.1, 0.2]), 1)
    assert got.shape == (2, 2)
    assert_close(got[1, 0], HAND["sgd"][1], **TIGHT, what="broadcast entry")
    np.testing.assert_array_equal(mo.expected_loss(cfg, sgd, 1, 0.1, 0), [0.5])
    mom = OptimConfig(name="momentum", momentum=0.5)
    for f, name in ((lambda: mo.expected_loss_at(cfg, sgd, 1, 0.0, 1), "lr"),
                    (lambda: mo.expected_loss_at(cfg, sgd, 0.5, 0.1, 1), "batch"),
                    (lambda: mo.expected_loss_at(cfg, sgd, 1, 0.1, -1), "t"),
                    (lambda: mo.expected_loss(cfg, mom, 1, -0.1, 1), "lr"),
                    (lambda: mo.expected_loss(cfg, mom, 0.5, 0.1, 1), "batch"),
                    (lambda: mo.expected_loss(cfg, mom, 1, 0.1, -1), "n_steps")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            f()
    assert_close(mo.expected_loss(cfg, mom, 1, 0.1, 1)[1], mo.expected_loss_at(cfg, mom, 1, 0.1, 1),
                 rtol=1e-12, atol=0, what="batch 1 is valid")


# ---------------------------------------------------------------------------------------------
# crossing: the exact first t with E[L_t] <= target
# ---------------------------------------------------------------------------------------------

def _sgd_crossing_1d(lr, batch, target):
    """dim 1 (h = c = x0 = 1): E[L_t] / L0 = r^t + F (1 - r^t), r = (1 - lr)^2, F = q / (1 - r),
    q = lr^2 / B; the first t with this <= target, solved for t."""
    r = (1 - lr) ** 2
    F = lr * lr / batch / (1 - r)
    return math.ceil(math.log((target - F) / (1 - F)) / math.log(r))


@pytest.mark.parametrize("lr, batch, target", [(0.1, 4, 0.05), (1e-4, 1, 0.3), (3e-6, 2, 0.05)])
def test_crossing_steps_to_target_by_hand_near_and_far(lr, batch, target):
    """Crossings at 16, ~1.8e3 and ~5e5 updates (far ones need the block to double many times),
    and exactly at max_steps: found at max_steps, 0 one update short."""
    cfg, opt = QuadraticConfig(dim=1, target=target), OptimConfig(name="sgd")
    t = _sgd_crossing_1d(lr, batch, target)
    assert cr.steps_to_target(cfg, opt, batch, lr, 10**7) == t
    assert cr.steps_to_target(cfg, opt, batch, lr, t) == t
    assert cr.steps_to_target(cfg, opt, batch, lr, t - 1) == 0


@pytest.mark.parametrize("name, lr", [("sgd", 0.9), ("momentum", 0.05), ("momentum", 1.2)])
def test_crossing_steps_to_target_is_the_first_crossing_of_the_dense_reference(name, lr):
    """Rotated random start, dim 5 (padded to 8 inside): the first t of the dense
    parameter-basis E[L_t] that meets the target, for a monotone and two oscillating runs."""
    cfg = QuadraticConfig(dim=5, alpha=0.7, sigma=0.5, rotate=True, random_start=True,
                          init_seed=1, target=0.3)
    L = _dense_expected_loss(cfg, 0.5 if name == "momentum" else 0.0, 2, lr, 400)
    hit = np.nonzero(L[1:] <= cfg.target * L[0])[0]
    assert hit.size, L[-1] / L[0]
    opt = OptimConfig(name=name, momentum=0.5)
    assert cr.steps_to_target(cfg, opt, 2, lr, 400) == hit[0] + 1


def test_crossing_steps_to_target_many_shapes_divergence_and_bad_input():
    cfg, sgd = QuadraticConfig(dim=1), OptimConfig(name="sgd")
    got = cr.steps_to_target_many(cfg, sgd, np.array([[1.0], [4.0]]), np.array([0.1, 2.5]),
                                  1000)
    assert got.shape == (2, 2) and got.dtype == np.int64
    # lr 0.1 at B = 4 by hand; at B = 1 the floor F = 0.01 / 0.19 > 0.05: never; lr h = 2.5 > 2
    # diverges: never
    assert got[1, 0] == _sgd_crossing_1d(0.1, 4, 0.05) and got[0, 0] == 0
    assert got[0, 1] == got[1, 1] == 0
    for f, name in ((lambda: cr.steps_to_target(cfg, sgd, 1, 0.1, 0), "max_steps"),
                    (lambda: cr.steps_to_target(cfg, sgd, 1, 0.0, 10), "lr"),
                    (lambda: cr.steps_to_target_many(cfg, sgd, [1.0], [-0.1], 10), "lr"),
                    (lambda: cr.steps_to_target_many(cfg, sgd, [0.5], [0.1], 10), "batch")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            f()


# ---------------------------------------------------------------------------------------------
# adam_progress: mean-field Adam, its progress clock and critical batches
# ---------------------------------------------------------------------------------------------

def _meanfield_reference(cfg, b1, b2, eps, lr, batch, n_steps):
    """Mean-field Adam written as a 2x2 linear system per coordinate: z = (x, m),
    z' = A_t z + n_t xi with xi ~ N(0, c / B) and the preconditioner P_t fixed by the EMA of
    E[g^2] = h^2 E[x^2] + c / B. Returns E[L_t] and the rows (mean x, Var x, Cov(x_t, x_{t-1}))
    for t = 0..n_steps, each [T + 1, D]."""
    h, c, x0 = spectrum(cfg), noise_variances(cfg), initial_offset(cfg)  # unrotated
    q = c / batch
    mu = [np.array([x, 0.0]) for x in x0]
    S = [np.zeros((2, 2)) for _ in h]
    v = np.zeros_like(h)
    loss, rows = [0.5 * np.sum(h * x0 * x0)], [(x0, np.zeros_like(h), np.zeros_like(h))]
    for t in range(1, n_steps + 1):
        row = []
        for i in range(h.size):
            v[i] = b2 * v[i] + (1 - b2) * (h[i] ** 2 * (mu[i][0] ** 2 + S[i][0, 0]) + q[i])
            P = lr / (math.sqrt(v[i] / (1 - b2**t)) + eps) / (1 - b1**t)
            A = np.array([[1 - P * (1 - b1) * h[i], -P * b1], [(1 - b1) * h[i], b1]])
            n = np.array([-P * (1 - b1), 1 - b1])
            cov_lag = (A @ S[i])[0, 0]  # Cov(x_t, x_{t-1}): the noise of step t is fresh
            mu[i], S[i] = A @ mu[i], A @ S[i] @ A.T + q[i] * np.outer(n, n)
            row.append((mu[i][0], S[i][0, 0], cov_lag))
        rows.append(tuple(np.array(r) for r in zip(*row)))
        loss.append(0.5 * sum(h[i] * (mu[i][0] ** 2 + S[i][0, 0]) for i in range(h.size)))
    return np.array(loss), [np.stack(r) for r in zip(*rows)]


@pytest.mark.parametrize("malladi", [False, True])
def test_adam_progress_meanfield_equals_the_linear_system_reference(malladi):
    """B = 16, b0 = 8: Malladi's companions at k = 2 are beta1 0.8, beta2 0.98, eps / sqrt(2).
    A random start, so that no offset is 1."""
    cfg = QuadraticConfig(dim=3, sigma=1.5, random_start=True)
    opt = OptimConfig(beta1=0.9, beta2=0.99, eps=1e-2, malladi=malladi)
    b1, b2, eps = (0.8, 0.98, 1e-2 / math.sqrt(2)) if malladi else (0.9, 0.99, 1e-2)
    ref, ref_rows = _meanfield_reference(cfg, b1, b2, eps, 0.05, 16, 25)
    loss, mx, t, rows = ap._adam_meanfield(cfg, opt, 0.05, 16.0, 25, record=True)
    assert t == 25
    assert_close(loss, ref, rtol=1e-12, atol=0, what="E[L_t]")
    assert_close(mx, ref_rows[0][-1], rtol=1e-12, atol=0, what="mean x at the end")
    for got, want, what in zip(rows, ref_rows, ("mean", "variance", "lag covariance")):
        assert_close(got, want, rtol=1e-11, atol=1e-15, what=what)
    # stopped at the first E[L_t] <= stop_at: rows and losses 0..t, recorded or not
    stop = 0.5 * (ref[10] + ref[11])
    assert np.all(np.diff(ref[:12]) < 0)  # so t = 11 is the first at or below the midpoint
    for record in (True, False):
        out = ap._adam_meanfield(cfg, opt, 0.05, 16.0, 25, stop_at=stop, record=record)
        assert out[2] == 11 and out[0].shape == (12,)
        if record:
            assert [r.shape[0] for r in out[3]] == [12, 12, 12]


def test_adam_progress_clock_by_hand_and_at_its_budget():
    """E[L_t]'s first crossing of the target on the reference, interpolated linearly between
    t - 1 and t, in samples; found with a budget of exactly B t samples, None with one sample
    less; stop_at ends the recursion there."""
    cfg, opt = QuadraticConfig(dim=3, sigma=0.3, target=0.2), OptimConfig(lr_rule="fixed",
                                                                             eps=0.0)
    ref, _ = _meanfield_reference(cfg, 0.9, 0.999, 0.0, 0.05, 8, 200)
    t = int(np.argmax(ref[1:] <= 0.2 * ref[0])) + 1
    assert 10 < t < 200
    before, after = ref[t - 1] - 0.2 * ref[0], ref[t] - 0.2 * ref[0]
    assert before > 0 >= after
    want = 8.0 * (t - 1 + before / (before - after))  # strictly inside (8 (t - 1), 8 t]
    assert 8.0 * (t - 1) < want < 8.0 * t
    assert_close(ap.adam_progress_samples(cfg, opt, 0.05, 8, budget=8 * t), want, **TIGHT,
                 what="interpolated mean-field progress clock")
    assert ap.adam_progress_samples(cfg, opt, 0.05, 8, budget=8 * t - 1) is None
    # the noise-scale estimates: ((1 + delta)^2 - 1) B_noise at the mean offset at t
    _, rows = _meanfield_reference(cfg, 0.9, 0.999, 0.0, 0.05, 8, t)
    for method, f in (("noise", sc.b_noise), ("simple", sc.b_simple)):
        got = ap.critical_batch_saturation(cfg, opt, 0.05, method=method, b_ref=8, delta=0.5)
        assert_close(got, 1.25 * f(cfg, rows[0][-1]), rtol=1e-9, atol=0, what=method)
    assert ap.critical_batch_saturation(cfg, opt, 0.05, method="noise", b_ref=8,
                                        budget=8 * t - 1) is None
    with pytest.raises(ValueError, match="^method must be"):
        ap.critical_batch_saturation(cfg, opt, 0.05, method="other")
    with pytest.raises(ValueError, match="^optimizer must be"):
        ap.adam_progress_samples(cfg, OptimConfig(name="sgd"), 0.05, 8)
    with pytest.raises(ValueError, match="^rotate must be"):
        ap.adam_progress_samples(QuadraticConfig(rotate=True), opt, 0.05, 8)


def test_adam_progress_passage_is_the_crossing_when_the_noise_vanishes():
    """sigma = 1e-6: the loss is all but deterministic, so its median first passage is the
    first crossing of E[L] (and None beyond the budget)."""
    cfg, opt = QuadraticConfig(dim=3, sigma=1e-6, target=0.2), OptimConfig(eps=0.0)
    ref, _ = _meanfield_reference(cfg, 0.9, 0.999, 0.0, 0.05, 8, 200)
    t = int(np.argmax(ref[1:] <= 0.2 * ref[0])) + 1
    assert ap.adam_progress_passage(cfg, opt, 0.05, 8) == 8.0 * t
    assert ap.adam_progress_passage(cfg, opt, 0.05, 8, budget=8 * (t - 1)) is None
    assert ap.critical_batch_passage(cfg, opt, 0.05, budget=8 * (t - 1)) is None
    # the measured rule on it: N(16) / N(8) = 16 t(16) / (8 t(8)) >= 1.2 at the first doubling
    # (sqrt rule: lr(16) = 0.05 sqrt(2)), so B_crit = 8 * 2^(0.2 / (r - 1))
    ref16, _ = _meanfield_reference(cfg, 0.9, 0.999, 0.0, 0.05 * math.sqrt(2), 16, 200)
    r = 16 * (int(np.argmax(ref16[1:] <= 0.2 * ref16[0])) + 1) / (8 * t)
    assert r >= 1.2
    assert_close(ap.critical_batch_passage(cfg, opt, 0.05), 8 * 2 ** (0.2 / (r - 1)),
                 **TIGHT, what="first-passage critical batch")


# h_max = 2, sigma = 1, gamma = 1: c_1 = 2 on the stiffest coordinate
@pytest.mark.parametrize("name, rule, lr0, want", [
    ("adam", "sqrt", 0.01, 200.0),                    # (sqrt(c1) b0^p / (lr0 h))^(1/(p+1/2))
    ("adam", "fixed", 0.01, 5000.0),                  # (sqrt(2) / 0.02)^2
    ("adam", "linear", 0.01, (400 * math.sqrt(2)) ** (2 / 3)),  # (sqrt(2) 8 / 0.02)^(2/3)
    ("adam", "fixed", 10.0, 1.0),                     # (sqrt(2) / 20)^2 < 1: one sample
    ("sgd", "sqrt", 0.1, 200.0),                      # b0 (1 / (lr0 h))^(1/p) = 8 * 5^2
    ("sgd", "fixed", 0.1, None),                      # lr never grows: never
    ("sgd", "sqrt", 0.5, 1.0),                        # lr0 h = 1 already
    ("momentum", "linear", 0.01, 40.0),               # lr0 / (1 - 0.9) h = 0.2: 8 * 5
    ("momentum", "sqrt", 0.05, 1.0),                  # lr0 / (1 - 0.9) h = 1
])
def test_adam_progress_critical_batch_curvature_by_hand(name, rule, lr0, want):
    opt = OptimConfig(name=name, lr_rule=rule, momentum=0.9)
    got = ap.critical_batch_curvature(QuadraticConfig(dim=2, h_max=2.0), opt, lr0)
    assert got == want if want is None else abs(got - want) <= 1e-12 * want, (got, want)


def test_adam_progress_first_slowdown_interpolates_on_log_b_and_asks_for_enough_budget():
    """A clock that slows by r(b) on the doubling grid from B = 8 (n_ref = 100 samples)."""
    def clock_of(r):
        asked = {}

        def clock(b, budget):
            asked[b] = budget
            return None if r.get(b) is None else 100 * r[b]
        return clock, asked
    clock, asked = clock_of({16: 1.1, 32: 1.5})
    # between 16 and 32: 16 * 2^((1.2 - 1.1) / (1.5 - 1.1))
    assert_close(ap._first_slowdown(clock, 8.0, 100, 0.2, 1000), 16 * 2**0.25, **TIGHT,
                 what="interpolated")
    assert asked == {16: 1000, 32: 1600}  # max(budget, 4 b n_ref / B)
    clock, _ = clock_of({16: 1.2})        # exactly 1 + delta at a grid point: that point
    assert ap._first_slowdown(clock, 8.0, 100, 0.2, 1000) == 16.0
    clock, _ = clock_of({16: 1.1})        # then never within the budget: the first such b
    assert ap._first_slowdown(clock, 8.0, 100, 0.2, 1000) == 32.0
    clock, asked = clock_of({8 * 2**k: 1.0 for k in range(1, 14)})
    assert ap._first_slowdown(clock, 8.0, 100, 0.2, 10) is None and max(asked) == 8 * 2**12


# ---------------------------------------------------------------------------------------------
# drift: Adam's step law, its drift path and first passage, and the linear failure clock
# ---------------------------------------------------------------------------------------------

def test_drift_adam_step_law_at_the_first_update_is_the_sign_of_the_gradient():
    """t = 1: m_hat = g_1 and v_hat = g_1^2, so the step is sign(g_1): E = 2 Phi(mu / s) - 1,
    E[step^2] = 1, whatever beta1, beta2."""
    for mu, s2 in ((-0.05, 0.05), (-1.0, 0.25), (0.3, 4.0)):
        r, r2 = dr.adam_step_law(0.9, 0.99, mu, s2, np.array([1]))
        assert_close(r, 2 * ndtr(mu / math.sqrt(s2)) - 1, rtol=1e-9, atol=1e-12, what="r_1")
        assert_close(r2, 1.0, rtol=1e-9, atol=0, what="r2_1")


@pytest.mark.parametrize("b1, ratio", [(0.9, 100.0), (0.9, 1.0), (0.99, 0.1)])
def test_drift_adam_step_law_series_equals_the_direct_sums(b1, ratio, monkeypatch):
    """Past _T_DIRECT updates the law comes from a power series; the direct sums, allowed to
    run that far, give the same numbers (s^2 / mu^2 from noise- to signal-dominated; with
    beta1 = 0.99 the bias correction 1 - beta1^t is still 0.92 at t = 257). Measured
    agreement 5e-14; 1e-9 allowed."""
    mu, t = -0.05, np.array([257, 300, 700])
    series = dr.adam_step_law(b1, 0.999, mu, ratio * mu * mu, t)
    monkeypatch.setattr(dr, "_T_DIRECT", 704)
    direct = dr.adam_step_law(b1, 0.999, mu, ratio * mu * mu, t)
    for a, b, what in zip(series, direct, ("r", "r2")):
        assert_close(a, b, rtol=1e-9, atol=0, what=what)


def _drift_path_by_definition(b1, b2, mu, s2, lr, n):
    """(D_n, V_n) summed directly: D_n = -lr sum_t r_t and V_n = s^2 sum_{k<=n} c_k(n)^2,
    c_k(n) = sum_{t=k}^n b1^(t-k) e_t, the gain e_t = lr a_t (1 - b1) / (1 - b1^t) with
    a_t = sd(step_t) / sd(m_hat_t) and Var m_hat_t = s^2 sum_k w_{t,k}^2."""
    t = np.arange(1, n + 1)
    r, r2 = dr.adam_step_law(b1, b2, mu, s2, t)
    lag = t[None, :] - t[:, None]                        # [k, j]: j - k
    B1 = np.where(lag >= 0, b1 ** np.maximum(lag, 0), 0.0)   # b1^(j-k) for j >= k, else 0
    var_m = s2 * np.sum((B1 * (1 - b1) / (1 - b1**t)[None, :]) ** 2, axis=0)  # over k <= j
    e = lr * np.sqrt((r2 - r * r) / var_m) * (1 - b1) / (1 - b1**t)
    return -lr * np.sum(r), s2 * np.sum(np.square(B1 @ e))


DRIFT_LAW = (0.8, 0.99, -0.1, 0.3, 0.02)  # b1, b2, mu, s^2, lr


@pytest.mark.parametrize("n", [1, 2, 7, 256, 257, 300])
def test_drift_path_at_its_last_update_is_its_definition(n):
    """The last entry of a path of n updates (within and across _ar1's blocks of 256)."""
    D, V = dr.drift_path(*DRIFT_LAW, n)
    assert D.shape == V.shape == (n,)
    want_D, want_V = _drift_path_by_definition(*DRIFT_LAW, n)
    assert_close(D[-1], want_D, rtol=1e-12, atol=0, what="D_n")
    assert_close(V[-1], want_V, rtol=1e-10, atol=0, what="V_n")


def test_drift_path_inside_the_path_is_its_definition():
    """Inside a 300-update path V_n is the definition truncated at n (its last update's gain
    e_n, not the path's): from the first updates, where the gains still change, to the end."""
    _, V = dr.drift_path(*DRIFT_LAW, 300)
    for n in (1, 2, 7, 150, 299):
        assert_close(V[n - 1], _drift_path_by_definition(*DRIFT_LAW, n)[1], rtol=1e-10, atol=0,
                     what=f"V_{n} of 300")


def test_drift_crossed_is_the_first_passage_law_of_a_drifting_brownian_motion():
    # P(max_{s<=1} W_s >= a) for drift D and variance V at time 1: Phi((D - a) / sqrt V)
    # + exp(2 a D / V) Phi(-(D + a) / sqrt V); without drift the reflection principle 2 Phi(-a)
    D, V = np.array([0.0, 1.0, 0.5, -0.5]), np.array([1.0, 1.0, 0.25, 4.0])
    want = [2 * ndtr(-1.0), ndtr(0.0) + math.exp(2) * ndtr(-2.0),
            ndtr(-1.0) + math.exp(4) * ndtr(-3.0), ndtr(-0.75) + math.exp(-0.25) * ndtr(-0.25)]
    assert_close(dr._crossed(D, V, 1.0), want, rtol=1e-12, atol=0, what="first passage")


def _rice_by_quad(mu, v):
    """E[u] - mu under the upcrossing density u N(u; mu, v^2) on u > 0, by quadrature."""
    dens = lambda u, k: u**k * math.exp(-0.5 * ((u - mu) / v) ** 2)
    lo, hi = 0.0, max(mu, 0.0) + 12 * v
    return quad(dens, lo, hi, args=(2,), epsabs=0, epsrel=1e-12)[0] / quad(
        dens, lo, hi, args=(1,), epsabs=0, epsrel=1e-12)[0] - mu


def test_drift_rice_excess_is_the_mean_velocity_at_an_upcrossing():
    """At mu = 0 the upcrossing law u N(u; 0, v^2) on u > 0 has mean v sqrt(pi / 2); elsewhere
    its mean by quadrature (a velocity well above, near and below 0); no noise, no excess."""
    assert_close(dr._rice_excess(0.0, 2.0), math.sqrt(2 * math.pi), **TIGHT, what="mu = 0")
    mu, v = np.array([1.0, 0.3, -1.0, 0.5]), np.array([0.5, 2.0, 1.0, 0.0])
    want = [_rice_by_quad(m, s) for m, s in zip(mu[:3], v[:3])] + [0.0]
    assert_close(dr._rice_excess(mu, v), want, rtol=1e-9, atol=0, what="Rice excess")


def test_drift_crossed_per_update_moves_the_barrier_out():
    """The Brownian law with the barrier at thr + beta sd_1 + b1 / (1 - b1) * (Rice excess of a
    step N(dD, sd_1^2 (1 - b1) / (1 + b1))), sd_1^2 the variance added by the update (0 where V
    falls), beta = -zeta(1/2) / sqrt(2 pi). beta1 = 0.8: (1 - b1) / (1 + b1) = 1/9, owed 4x."""
    D, V, thr = np.array([0.1, 0.3, 0.45]), np.array([0.04, 0.09, 0.08]), 0.5
    sd1, dD = np.sqrt([0.04, 0.05, 0.0]), np.array([0.1, 0.2, 0.15])
    beta = -zeta(0.5) / math.sqrt(2 * math.pi)

    def law(a):  # Phi((D - a) / sqrt V) + exp(2 a D / V) Phi(-(D + a) / sqrt V), a per update
        return ndtr((D - a) / np.sqrt(V)) + np.exp(2 * a * D / V) * ndtr(-(D + a) / np.sqrt(V))

    assert_close(dr.crossed_per_update(D, V, thr), law(thr + beta * sd1), rtol=1e-12, atol=0,
                 what="b1 = 0")
    owed = 4 * np.array([_rice_by_quad(d, s / 3) if s > 0 else 0.0 for d, s in zip(dD, sd1)])
    assert_close(dr.crossed_per_update(D, V, thr, 0.8), law(thr + beta * sd1 + owed), rtol=1e-9,
                 atol=0, what="b1 = 0.8")


def test_drift_adam_failure_norm_stat_regimes_and_limits():
    """Noiseless sign descent at lr per update: drift_stat "norm" crosses at the first n with
    D_d (n lr)^2 >= thr^2; the regime is "signal" from B = c_d / b^2 on; past max_updates:
    None."""
    cfg = QuadraticConfig(drift_dim=4, drift_bias=0.5, drift_noise=1e-6, drift_threshold=1.0,
                          drift_stat="norm")
    opt = OptimConfig(lr_rule="fixed", eps=0.0)
    got = dr.adam_failure_samples(cfg, opt, 0.03, 8)
    assert got["updates"] == math.ceil(1.0 / (0.03 * 2)) and got["samples"] == 8 * got["updates"]
    assert got["method"] == "mean-field"
    # the noise-dominated leading form, per drift coordinate of the norm: / sqrt(D_d)
    assert_close(got["leading"], math.sqrt(1e-6 * 8) / (0.03 * 0.5) / 2, **TIGHT, what="leading")
    mean = QuadraticConfig(drift_dim=4, drift_bias=0.5, drift_noise=1.0, drift_threshold=1.0)
    assert dr.adam_failure_samples(mean, opt, 0.03, 4)["regime"] == "signal"     # B = c_d / b^2
    assert dr.adam_failure_samples(mean, opt, 0.03, 3.99)["regime"] == "noise"
    never = dr.adam_failure_samples(mean, opt, 0.03, 4, max_updates=10)
    assert never["samples"] is None and never["updates"] is None
    with pytest.raises(ValueError, match="^drift_bias must be"):
        dr.adam_failure_samples(QuadraticConfig(drift_bias=0.0), opt, 0.03, 4)
    with pytest.raises(ValueError, match="^batch must be"):
        dr.adam_failure_samples(mean, opt, 0.03, 0.5)


def test_drift_linear_failure_bad_input():
    sgd = OptimConfig(name="sgd")
    for cfg, name in ((QuadraticConfig(drift_stat="norm"), "drift_stat"),
                      (QuadraticConfig(drift_dim=0), "drift_bias"),
                      (QuadraticConfig(drift_bias=0.0), "drift_bias")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            dr.linear_failure_samples(cfg, sgd, 0.01, 8)
    with pytest.raises(ValueError, match="^lr0 must be"):
        dr.linear_failure_samples(QuadraticConfig(), sgd, 0.0, 8)


# ---------------------------------------------------------------------------------------------
# first_passage: the loss's marginal law, the copula's crossing term, the median
# ---------------------------------------------------------------------------------------------

def test_first_passage_wilson_hilferty_quantile_by_hand():
    """A gamma with shape 4, scale 1/2 (mean 2, k2 1, k3 1: skewness 1), shifted by s:
    z(x) = (cbrt((x - s) / 2) - (1 - 1/36)) * 6; below the support, g = 0. With no skewness
    the law is normal: z = (x - mean) / sd."""
    with jax.enable_x64(True):
        z = fp._quantile_z(jnp.array([2.0, 3.0, 2.0, 2.0, 2.0, 5.0]), jnp.ones(6),
                           jnp.array([1.0, 1.0, 1.0, 1.0, 0.0, -1.0]),
                           jnp.array([2.0, 3.0, 0.25, -1.0, 3.0, 4.0]))
    want = [1 / 6, 1 / 6, (0.5 - 35 / 36) * 6, -(35 / 36) * 6, 1.0, -1.0]
    assert_close(np.asarray(z), want, rtol=1e-5, atol=1e-12, what="Wilson-Hilferty z")


def test_first_passage_upper_lower_is_the_bivariate_normal_probability():
    """P(Z1 > a, Z2 <= b): at a = b = 0 it is 1/4 - asin(rho) / (2 pi) (Sheppard); with rho = 0
    (1 - Phi(a)) Phi(b); with rho = 1 Phi(b) - Phi(a) when a < b, else 0; rho = -1:
    1 - Phi(max(a, -b))."""
    rho = np.array([-0.9, 0.5, 0.9, 0.0, 1.0, 1.0, -1.0])
    a = np.array([0.0, 0.0, 0.0, 0.3, -0.5, 0.5, 0.2])
    b = np.array([0.0, 0.0, 0.0, -0.7, 0.4, -0.4, -0.6])
    with jax.enable_x64(True):
        got = np.asarray(gaussian.upper_lower(jnp.asarray(a), jnp.asarray(b), jnp.asarray(rho)))
    want = [0.25 - math.asin(r) / (2 * math.pi) for r in rho[:3]] + [
        (1 - ndtr(0.3)) * ndtr(-0.7), ndtr(0.4) - ndtr(-0.5), 0.0, 1 - ndtr(0.6)]
    # Genz's method: about 1e-15 absolute (2.8e-17 measured here)
    assert_close(got, want, rtol=0, atol=1e-15, what="P(Z1 > a, Z2 <= b)")


def _phi(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _upper_upper_reference(h, k, rho):
    """P(X > h, Y > k) by adaptive quadrature over x > h of phi(x) P(Y > k | X = x), where
    Y | X = x ~ N(rho x, 1 - rho^2): about 1e-16 absolute."""
    s = math.sqrt(1.0 - rho * rho)
    return quad(lambda x: _phi(x) * ndtr(-(k - rho * x) / s), h, math.inf, epsabs=1e-16,
                epsrel=1e-13, limit=200)[0]


def test_first_passage_bivariate_normal_to_genz_accuracy():
    """P(X > h, Y > k) on a grid of h, k in [-2.5, 1.9] and rho in [-0.999, 0.999] (both of
    Genz's branches, |rho| < 0.925 and >= 0.925), against adaptive quadrature of phi(x) Q((k -
    rho x) / s) over x > h: within 1e-15, twice Genz's stated 5e-16 (4.4e-16 measured). A
    constant of the Taylor branch off by 1/8 -> 1/9 is 1e-12 off."""
    hk = [-2.5, -0.7, 0.0, 0.05, 0.61, 1.9]
    # +-0.926: the Taylor branch's edge, where its highest terms weigh most
    rhos = [-0.999, -0.95, -0.93, -0.926, -0.5, 0.0, 0.3, 0.9, 0.926, 0.93, 0.95, 0.99, 0.999]
    h, k, rho = (x.ravel() for x in np.meshgrid(hk, hk, rhos))
    with jax.enable_x64(True):
        got = np.asarray(gaussian.upper_upper(jnp.asarray(h), jnp.asarray(k),
                                               jnp.asarray(rho)))
    want = [_upper_upper_reference(*c) for c in zip(h, k, rho)]
    assert_close(got, want, rtol=0, atol=1e-15, what="P(X > h, Y > k)")


def test_first_passage_small_inverse_and_psd_clip():
    """inv_small is the inverse and psd_small returns a PSD matrix as it is, for 1x1 and 3x3
    blocks in batches of rank 3 and 4; an indefinite matrix has its negative LDL^T pivots set to
    0: diag(1, -1, 2) -> diag(1, 0, 2), and [[1, 2, 0], [2, 1, 0], [0, 0, 3]] (pivots 1, -3,
    3; l21 = 2) -> [[1, 2, 0], [2, 4, 0], [0, 0, 3]]."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(2, 5, 3, 3))
    P = A @ np.swapaxes(A, -1, -2) + 0.1 * np.eye(3)
    bad = np.array([[[1.0, 0, 0], [0, -1, 0], [0, 0, 2]], [[1, 2, 0], [2, 1, 0], [0, 0, 3]]])
    want_bad = np.array([[[1.0, 0, 0], [0, 0, 0], [0, 0, 2]], [[1, 2, 0], [2, 4, 0], [0, 0, 3]]])
    with jax.enable_x64(True):
        for M in (P, P[0]):  # [2, 5, 3, 3] and [5, 3, 3]
            assert_close(np.asarray(gaussian.inv_small(jnp.asarray(M))), np.linalg.inv(M),
                         rtol=1e-10, atol=1e-12, what="inverse")
            assert_close(np.asarray(gaussian.psd_small(jnp.asarray(M))), M, rtol=1e-12,
                         atol=1e-12, what="PSD clip of a PSD matrix")
        assert_close(np.asarray(gaussian.psd_small(jnp.asarray(bad))), want_bad, rtol=0,
                     atol=1e-15, what="PSD clip of an indefinite matrix")
        for one in (np.array([[[2.0]], [[-1.0]]]), np.full((2, 3, 1, 1), -1.0)):
            inv = np.asarray(gaussian.inv_small(jnp.asarray(one)))
            psd = np.asarray(gaussian.psd_small(jnp.asarray(one)))
            assert inv.shape == psd.shape == one.shape  # assert_close would broadcast
            assert_close(inv, 1.0 / one, rtol=0, atol=0, what="1x1 inverse")
            assert_close(psd, np.maximum(one, 0.0), rtol=0, atol=0, what="1x1 PSD clip")


def _pair_reference(h, k, rho):
    """(L, E[X], E[Y], E[X^2], E[Y^2], E[XY]) given X > h, Y > k by adaptive quadrature over x
    of the conditional law Y | X = x ~ N(rho x, 1 - rho^2): with z = (k - rho x) / s,
    E[Y^j; Y > k | x] is Q(z), m Q(z) + s phi(z), m^2 Q(z) + 2 m s phi(z) + s^2 (z phi(z) +
    Q(z)) for j = 0, 1, 2 (m = rho x), L = _upper_upper_reference. Independent of Rosenbaum's
    closed form."""
    s = math.sqrt(1.0 - rho * rho)

    def part(x, j):
        m, z = rho * x, (k - rho * x) / s
        q, p = ndtr(-z), _phi(z)
        y0, y1, y2 = q, m * q + s * p, m * m * q + 2 * m * s * p + s * s * (z * p + q)
        return _phi(x) * (x * y0, y1, x * x * y0, y2, x * y1)[j]

    L = _upper_upper_reference(h, k, rho)
    v = [quad(part, h, math.inf, args=(j,), epsabs=0, epsrel=1e-12, limit=200)[0]
         for j in range(5)]
    return np.array([L] + [x / L for x in v])


def test_first_passage_pair_moments_match_quadrature():
    """The truncated bivariate normal's mass and moments, on a grid of h, k in [-2.5, 4] and
    rho in [0, 0.999] (the filter meets rho >= 0: over the 30 configurations of
    tools/passage_check.py, rho in [0, 1) and L >= 0.42), against _pair_reference. L is good to
    about 1e-15 absolute, so moments to about 1e-15 / L relative; quad's relative 1e-12 is
    the larger term where L >= 1e-6 (3e-14 relative measured over 300 random points)."""
    hk = np.array([-2.5, -0.6, 0.3, 0.61, 1.7, 4.0])
    h, k, rho = (x.ravel() for x in np.meshgrid(hk, hk, [0.0, 0.3, 0.88, 0.95, 0.999]))
    want = np.stack([_pair_reference(*c) for c in zip(h, k, rho)])
    keep = want[:, 0] >= 1e-6
    h, k, rho, want = h[keep], k[keep], rho[keep], want[keep]
    with jax.enable_x64(True):
        got = np.stack([np.asarray(x) for x in gaussian.pair_moments(
            jnp.asarray(h), jnp.asarray(k), jnp.asarray(rho))], 1)
    assert keep.sum() > 120
    assert_close(got, want, rtol=1e-9, atol=1e-15, what="L and the truncated moments")
    # rho = +-1 (the filter clips rho to [-1, 1]) is taken as +-0.999999: finite, and at rho = 1
    # L = Q(max(h, k)) to the clipped pair's spread, sqrt(1 - 0.999999^2) = 1.4e-3
    # (h = k at rho = 1 and h = -k at rho = -1 make (k - rho h) / sqrt(1 - rho^2) 0 / 0 unclipped)
    h1, k1 = np.array([0.3, -0.5, 0.3, 0.3, 0.3]), np.array([0.1, 0.4, 0.3, -0.2, -0.3])
    with jax.enable_x64(True):
        edge = np.stack([np.asarray(x) for x in gaussian.pair_moments(
            jnp.asarray(h1), jnp.asarray(k1), jnp.asarray([1.0, 1.0, 1.0, -1.0, -1.0]))], 1)
    assert np.isfinite(edge).all()
    assert_close(edge[:3, 0], ndtr(-np.maximum(h1, k1))[:3], rtol=1.5e-3, atol=0,
                 what="L at rho = 1")


def test_first_passage_truncated_normal_fit_inverts_its_moments():
    """al of a standard normal truncated to > al, recovered from (E - al)^2 / Var: the exact
    moments (lambda = phi(al) / Q(al), Var = 1 + al lambda - lambda^2) in, al out. The table
    is linear interpolation in x = log(ratio - 1) on 4001 points: error <= dx^2 / 8 max |al''|,
    with al''(x) taken from the exact curve (plus 1e-7 for the 2e5-point curve it is built
    from); the truncation edge moments (lambda, 1 - Var) against scipy's truncnorm."""
    from scipy.stats import truncnorm
    def moment_ratio(al):  # (E - al)^2 / Var of the standard normal truncated to > al
        lam = np.exp(-0.5 * al * al - np.log(ndtr(-al))) / np.sqrt(2.0 * np.pi)
        return (lam - al) ** 2 / (1.0 + al * lam - lam * lam)

    al = np.linspace(-11.5, 7.5, 1901)
    ratio = moment_ratio(al)
    x = np.log(ratio - 1.0)
    curv = np.abs(np.gradient(np.gradient(al, x), x))
    bound = gaussian._TN_DX ** 2 / 8.0 * curv.max() + 1e-7
    with jax.enable_x64(True):
        fit = np.asarray(gaussian.tn_fit(jnp.asarray(ratio)))
        lam_j, shrink = (np.asarray(v) for v in gaussian.tn_edge(jnp.asarray(al)))
    assert_close(fit, al, rtol=0, atol=bound, what="al from its moment ratio")
    # the table's ends, al = 8 and -12 (the look-up stops 1e-6 of a cell short of the last
    # entry), and beyond them: clipped to the end values
    ends = np.array([8.0, -12.0, 10.0, -14.0])
    with jax.enable_x64(True):
        fit_e = np.asarray(gaussian.tn_fit(jnp.asarray(moment_ratio(ends))))
    short = 1e-6 * abs(gaussian._TN_AL[-1] - gaussian._TN_AL[-2]) + 1e-12
    assert_close(fit_e, [8.0, -12.0, 8.0, -12.0], rtol=0, atol=short, what="the table's ends")
    mean, v = truncnorm.stats(al, np.inf, moments="mv")
    assert_close(lam_j, mean, rtol=1e-12, atol=0, what="lambda = E[Z | Z > al]")
    assert_close(shrink, 1.0 - v, rtol=1e-10, atol=1e-13, what="1 - Var(Z | Z > al)")


def test_first_passage_loss_cumulants_and_lag_correlation_by_hand():
    """L = sum_i w_i x_i^2 with x_i ~ N(m_i, V_i): each term is w V times a noncentral chi^2
    with 1 degree of freedom and noncentrality lam = m^2 / V, whose cumulants are (1 + lam),
    2 (1 + 2 lam), 8 (1 + 3 lam); Cov(x^2, y^2) = 2 C^2 + 4 m_x m_y C for a Gaussian pair."""
    w, m, V = np.array([[1.0, 0.5]]), np.array([[1.0, 2.0]]), np.array([[1.0, 4.0]])
    m_prev, V_prev, C = np.array([[2.0, 0.0]]), np.array([[2.0, 1.0]]), np.array([[0.5, 1.0]])
    with jax.enable_x64(True):
        mean, k2, k3, rho = (np.asarray(x) for x in fp._loss_stats(*(jnp.asarray(a) for a in (
            w, m, V, m_prev, V_prev, C))))
    # lam = (1, 1): w V = (1, 2)
    assert_close(mean, 1 * 2 + 2 * 2, **TIGHT, what="mean")
    assert_close(k2, 1 * 6 + 4 * 6, **TIGHT, what="k2")
    assert_close(k3, 1 * 32 + 8 * 32, **TIGHT, what="k3")
    # Cov = 1 (2 / 4 + 4 * 2 * 0.5) + 1/4 (2 + 0); Var L_{t-1} = 2 (4 + 16) + 1/4 * 2 (1 + 0)
    assert_close(rho, (4.5 + 0.5) / math.sqrt(30 * 40.5), **TIGHT, what="lag-one correlation")
    with jax.enable_x64(True):   # a deterministic previous loss: no correlation
        rho0 = fp._loss_stats(*(jnp.asarray(a) for a in (w, m, V, m_prev, 0 * V_prev, 0 * C)))[3]
    assert float(rho0[0]) == 0.0


def _marginal_p(w, m, V, target):
    """P(L <= target) of the module's shifted-gamma marginal (its own quantile, tested above)."""
    with jax.enable_x64(True):
        mean, k2, k3, _ = fp._loss_stats(*(jnp.asarray(a) for a in (w, m, V, m, V, 0 * m)))
        return float(ndtr(fp._quantile_z(mean, k2, k3, target)))


def test_first_passage_median_of_independent_steps_with_a_constant_hazard():
    """Identical, independent steps (C = 0): P(not crossed by t) = (1 - p)^t with p the marginal
    P(L <= target), so the median is ceil(log(1/2) / log(1 - p)), here past one chunk of 1024
    rows. Cut short, a run extrapolates its last hazard: to the same median when the hazard
    is constant, and from the last step's hazard when that one differs; without
    extrapolation it reports 0."""
    h, T, target = np.array([1.0, 0.5]), 1400, 1.5
    m = np.tile([[2.0, 2.0]], (T + 1, 1))
    V = np.tile([[0.05, 0.1]], (T + 1, 1))  # E[L] = 3.05, sd 0.55: P(L <= 1.5) ~ 6e-4
    m[0], V[0] = [3.0, 3.0], [0.0, 0.0]   # the start: deterministic, far above the target
    C = np.zeros_like(m)
    p = _marginal_p(h / 2, m[1], V[1], target)
    n = math.ceil(math.log(0.5) / math.log1p(-p))
    assert 1025 < n < T and abs(math.log(0.5) / math.log1p(-p) - n + 0.5) < 0.49, (p, n)
    assert fp.median_from_moments(h, m, V, C, target) == n
    for rows in (301, 1025, 1026):  # 1024 steps: a whole chunk; 1025: one past it
        assert fp.median_from_moments(h, m[:rows], V[:rows], C[:rows], target,
                                      extrapolate=True) == n
        assert fp.median_from_moments(h, m[:rows], V[:rows], C[:rows], target) == 0
    # the last of 300 steps has a larger spread: the extrapolation continues at its hazard
    V[300] = [0.06, 0.12]
    p_last = _marginal_p(h / 2, m[300], V[300], target)
    log_surv = 299 * math.log1p(-p) + math.log1p(-p_last)
    want = 300 + math.ceil((math.log(0.5) - log_surv) / math.log1p(-p_last))
    assert want < n - 50
    assert fp.median_from_moments(h, m[:301], V[:301], C[:301], target, extrapolate=True) == want


def test_first_passage_a_frozen_loss_never_crosses_later():
    """x_t = x_{t-1} (C = V, rho = 1 exactly): after the first step the hazard is exactly 0,
    so if the first step missed the target it never crosses: 0, also when extrapolating."""
    h = np.array([1.0])
    m, V = np.array([[3.0], [1.0], [1.0], [1.0]]), np.array([[0.0], [1.0], [1.0], [1.0]])
    C = np.array([[0.0], [0.0], [1.0], [1.0]])
    assert _marginal_p(h / 2, m[1], V[1], 0.2) < 0.5
    assert fp.median_from_moments(h, m, V, C, 0.2) == 0
    assert fp.median_from_moments(h, m, V, C, 0.2, extrapolate=True) == 0


def test_first_passage_median_steps_without_noise_is_the_crossing_of_the_expected_loss():
    """sigma = 1e-6: the loss is deterministic, so its median first passage is the first t with
    E[L_t] <= target, for SGD and heavy ball; found at max_steps = t, 0 one update short."""
    cfg = QuadraticConfig(dim=4, sigma=1e-6, target=0.1)
    for name, lr, B in (("sgd", 0.3, 4), ("momentum", 0.3, 4), ("momentum", 0.05, 2)):
        opt = OptimConfig(name=name, momentum=0.5)
        t = cr.steps_to_target(cfg, opt, B, lr, 2000)
        assert t > 3
        assert fp.median_steps(cfg, opt, B, lr, 2000) == t
        assert fp.median_steps(cfg, opt, B, lr, t) == t
        assert fp.median_steps(cfg, opt, B, lr, t - 1) == 0
    opt = OptimConfig(name="sgd")
    got = fp.median_steps_many(cfg, opt, np.array([[1.0], [4.0]]), np.array([0.3, 0.05]), 2000)
    assert got.shape == (2, 2) and got.dtype == np.int64
    assert got[1, 0] == cr.steps_to_target(cfg, opt, 4, 0.3, 2000)
    for f, name in ((lambda: fp.median_steps(cfg, opt, 1, 0.1, 0), "max_steps"),
                    (lambda: fp.median_steps(cfg, opt, 1, -0.1, 10), "lr"),
                    (lambda: fp.median_steps(cfg, opt, 0.5, 0.1, 10), "batch"),
                    (lambda: fp.median_steps(cfg, OptimConfig(), 1, 0.1, 10), "optimizer")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            f()


def test_adam_progress_meanfield_stops_at_its_noise_floor():
    """sigma 10: E[L] settles at 10% of L0, far above a 1% target. The first plateau check is
    the first multiple of 1000 updates past 10000, where the loss has moved < 0.1% in 1000."""
    cfg = QuadraticConfig(dim=2, sigma=10.0, target=0.01)
    loss, _, t = ap._adam_meanfield(cfg, OptimConfig(), 0.05, 8.0, 50_000, stop_at=0.0075)
    assert t == 11_000 and loss.shape == (11_001,)
    assert loss[-1] > (1 - 1e-3) * loss[-1001] and loss[-1] > 0.0075


@pytest.mark.parametrize("sat, cur, passage, want", [
    (10.0, 20.0, 15.0, ("saturation", 10.0, "mean-field")),        # saturation binds first
    (20.0, 20.0, 15.0, ("saturation", 20.0, "mean-field")),        # a tie goes to saturation
    (30.0, 20.0, 15.0, ("curvature", 15.0, "mean-field first-passage")),
    (None, 20.0, None, ("curvature", None, "mean-field first-passage")),
    (None, None, 15.0, ("curvature", 15.0, "mean-field first-passage")),
    (None, None, None, (None, None, "mean-field first-passage")),  # neither: no mechanism
])
def test_adam_progress_mechanism_is_the_smaller_estimate(sat, cur, passage, want, monkeypatch):
    """The decision alone, with the three estimates stubbed (each is tested on its own)."""
    monkeypatch.setattr(ap, "critical_batch_saturation", lambda *a, **k: sat)
    monkeypatch.setattr(ap, "critical_batch_curvature", lambda *a, **k: cur)
    monkeypatch.setattr(ap, "critical_batch_passage", lambda *a, **k: passage)
    got = ap.critical_batch_mechanism(QuadraticConfig(), OptimConfig(), 0.01)
    assert (got["mechanism"], got["batch"], got["method"]) == want
    assert got["curvature"] == cur and got["saturation"] == sat


@pytest.mark.parametrize("mu, lr, batch, target, dim, sigma", [
    (0.0, 2.0, 100, 0.68, 2, 1.0),                          # SGD: 1 - lr h = -1 on h_max
    (0.6, (1 - math.sqrt(0.6)) ** 2, 1, 0.7, 1, 3.0),       # heavy ball's double root
    (0.5, 2.95, 1000, 0.3, 2, 1.0),                         # real negative roots on h_max
])
def test_crossing_on_the_special_cases_of_the_closed_form(mu, lr, batch, target, dim, sigma):
    """The branches the closed form takes on the stiffest coordinate, against the dense
    reference. SGD at lr h = 2 (dim 2, h = (1, 1/2)): E[L_t] = 1/2 (1 + 0.04 t) + 1/4 * 0.02 =
    0.505 + 0.02 t grows, so it never meets 0.68 L0 = 0.51 (without the variance's growth it
    would at t = 1). Heavy ball: also every target halfway between E[L_t] and E[L_t+1],
    t = 1..12, so that the early, transient part of the curve is pinned."""
    opt = OptimConfig(name="momentum" if mu else "sgd", momentum=mu or 0.5)
    cfg = QuadraticConfig(dim=dim, sigma=sigma, target=target)
    L = _dense_expected_loss(cfg, mu, batch, lr, 300)
    mids = (L[1:13] + L[2:14]) / (2 * L[0])
    fracs = [target] + ([] if mu == 0 else [f for f in mids if f < 1])  # E[L] may rise first
    for frac in fracs:
        hit = np.nonzero(L[1:] <= frac * L[0])[0]
        want = hit[0] + 1 if hit.size else 0
        assert (want == 0) == (mu == 0)
        got = cr.steps_to_target(QuadraticConfig(dim=dim, sigma=sigma, target=float(frac)), opt,
                                 batch, lr, 300)
        assert got == want, (frac, got, want)


@pytest.mark.parametrize("below", [0.5, 0.6])
def test_first_passage_median_from_moments_does_not_depend_on_its_chunks(monkeypatch, below):
    """median_from_moments evaluates a path in compiled chunks, and each chunk's first hazard
    needs the previous chunk's last u. SGD moments (dim 8, B 1, lr h 1/8), a target below the
    floor, crossed through many small hazards: chunks of 7 rows give the single chunk's
    median (carrying a wrong u moved it by one update: 79 -> 78 at 0.5 x the floor)."""
    cfg = QuadraticConfig(dim=8, drift_dim=0)
    h, c, e0 = spectrum(cfg), noise_variances(cfg), initial_offset(cfg)
    lr, T = 0.125 / h.max(), 300
    a = 1.0 - lr * h
    m, V = [e0.astype(float)], [np.zeros_like(h)]
    for _ in range(T):
        m.append(a * m[-1])
        V.append(a * a * V[-1] + lr * lr * c)
    m, V = np.array(m), np.array(V)
    C = np.concatenate([np.zeros((1, h.size)), a * V[:-1]])  # Cov(x_t, x_{t-1}) = a V_{t-1}
    target = below * float(0.5 * np.sum(h * (m[-1] ** 2 + V[-1])))
    whole = fp.median_from_moments(h, m, V, C, target, extrapolate=True)
    assert 20 < whole < T, whole
    monkeypatch.setattr(fp, "_CHUNK", 7)
    assert fp.median_from_moments(h, m, V, C, target, extrapolate=True) == whole
