"""Self-audit tests of the Adam form (twoclock.pilot.adam; docs/testing.md, "Self-audit"): the knee as a rollout batch under K updates per batch. The oracle is the
form written out here, N = A sqrt(m (m + B_n)) / lr with m = B / K, and the sqrt rule's
critical batch (1.2^2 - 1) B_n derived by hand, never the module's own functions."""
import numpy as np
import pytest

from twoclock.pilot import adam


def _exact(m, lr, A=50.0, b_n=40.0):
    return A * np.sqrt(m * (m + b_n)) / lr


@pytest.mark.parametrize("k_pred", [1.0, 4.0])
def test_the_critical_batch_is_in_rollout_samples_k_pred_times_the_update_knee(k_pred):
    # by hand: under the sqrt rule N ~ sqrt(m + B_n); N(m) / N(0) = 1.2 at m = (1.44 - 1) B_n
    # = 17.6 samples per update for B_n = 40; with K_pred updates per batch the rollout batch
    # is K_pred x that (70.4 at K 4)
    m = np.repeat([8.0, 16.0, 32.0, 64.0, 128.0], 2)
    lr = 0.01 * np.ones_like(m)
    f = adam.fit_adam(m, _exact(m, lr), lr, np.ones_like(m), p=0.0, lr0=0.01, b0=8.0,
                      k_pred=k_pred)
    c = f.critical(0.95)
    assert c["batch"] == pytest.approx(0.44 * 40.0 * k_pred, rel=1e-3)
    for v in c["ci"]:
        if v is not None:  # an exact fit: the band's ends at the point, in rollout samples
            assert v == pytest.approx(0.44 * 40.0 * k_pred, rel=2e-2)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_both_ends_of_the_band_move_with_the_rules_lr(p):
    # the rule enters a prediction only through its lr (N ~ 1/lr) and the update's m: so at
    # each batch both ends of the band sit where the sqrt rule's ends sit, shifted by exactly
    # the log of the lr ratio, by hand lr_sqrt / lr_rule = (B / b0)^(1/2 - p)
    m = np.repeat([8.0, 16.0, 32.0, 64.0], 3)
    lr = 0.01 * np.sqrt(m / 8.0)
    N = _exact(m, lr) * np.exp(0.05 * np.tile([-1.0, 0.0, 1.0], 4))
    K = np.ones_like(m)
    sq = adam.fit_adam(m, N, lr, K, p=0.5, lr0=0.01, b0=8.0)
    other = adam.fit_adam(m, N, lr, K, p=p, lr0=0.01, b0=8.0)
    B = np.array([16.0, 256.0, 2048.0])
    shift = (0.5 - p) * np.log(B / 8.0)
    for a, b in zip(other.log_interval(B, 0.95), sq.log_interval(B, 0.95)):
        np.testing.assert_allclose(a, b + shift, atol=1e-9)
    med = other.log_median(B)
    lo, hi = other.log_interval(B, 0.95)
    assert np.all(lo < med) and np.all(med < hi)
