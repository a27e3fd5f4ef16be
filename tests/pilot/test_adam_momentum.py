"""Adam's momentum under a fixed lr, on the quadratic model (docs/plan.md, "Adam's progress
form"): a head start of a constant number of updates, whatever the batch.

By hand, for one coordinate contracting at rate r per update (x_t ~ e^{-r t}), the first moment
m_{t+1} = beta m_t + (1 - beta) g_t with x_{t+1} = x_t - eta m_{t+1} has the characteristic
equation (lambda - 1)(lambda - beta) = -r (1 - beta) lambda, whose slow root contracts at
r (1 + kappa r) + O(r^3), kappa = beta / (1 - beta). The updates to a target C e-folds away go
from C / r to C / (r (1 + kappa r)) = C / r - kappa C: momentum saves kappa C updates at every
batch, not a share of the run. A multiplicative speed-up would save twice as many updates at
B 8 (229 updates without momentum) as at B 256 (117): the test below tells the two apart.

Under the sqrt rule the runs at large batches take 15 to 21 updates, about the 1 / (1 - beta) =
10 the moment averages over, and the saving shrinks with the run (the strict expected failure
in test_adam_form.py). `python -m tests.pilot.test_adam_momentum` prints the table and the
form's exponent at 8x with the head start taken out before the fit and put back after."""
import math

import numpy as np
import pytest

BATCHES, SEEDS, TARGET, LR0 = (8, 16, 32, 64, 128, 256), 64, 0.05, 0.01


def head_start(resamples: int = 2000) -> dict:
    """Updates to the target (the seeds' median clock over B) with beta1 0.9 and 0, fixed lr0,
    at BATCHES: their difference per batch and its bootstrap standard error (the two runs'
    seeds resampled independently), and both clocks in samples (SEEDS seeds a batch)."""
    from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
    from twoclock.models import MODELS
    B = np.array(BATCHES, np.float64)
    n = {}
    for b1 in (0.9, 0.0):
        res = run_sweep(MODELS["quadratic"], QuadraticConfig(target=TARGET),
                        OptimConfig(name="adam", lr_rule="fixed", beta1=b1),
                        SweepConfig(batches=BATCHES, lr0s=(LR0,), seeds=SEEDS, budget=200_000,
                                    n_ckpt=128), quiet=True)
        n[b1] = np.asarray(res.prog_n[:, 0, :], np.float64)
        assert (n[b1] > 0).all(), "a run did not reach the target within the budget"
    upd = lambda b1, i: np.median(n[b1][:, i], axis=1) / B
    rng, every = np.random.default_rng(0), np.arange(SEEDS)
    boot = np.array([upd(0.9, rng.integers(0, SEEDS, SEEDS)) - upd(0.0, rng.integers(
        0, SEEDS, SEEDS)) for _ in range(resamples)])
    return {"saved": upd(0.0, every) - upd(0.9, every), "se": boot.std(axis=0),
            "samples": {b1: np.median(n[b1], axis=1) for b1 in n}, "runs": n}


@pytest.mark.slow
def test_momentum_saves_the_same_updates_at_every_batch_under_a_fixed_lr():
    h = head_start()
    saved, se = h["saved"], h["se"]
    # every pair of batches agrees within 3 standard errors of their difference (k = 3), and the
    # saving is real (above 10 standard errors at the best-measured batch)
    for i in range(len(BATCHES)):
        for j in range(i + 1, len(BATCHES)):
            assert abs(saved[i] - saved[j]) <= 3 * math.hypot(se[i], se[j]), (i, j, saved, se)
    assert saved[-1] > 10 * se[-1], (saved, se)


if __name__ == "__main__":
    from twoclock.pilot import adam
    h = head_start()
    kappa_c = 0.9 / 0.1 * 0.5 * math.log(1 / TARGET)
    print(f"by hand, one coordinate: kappa C = 9 x (1/2) ln(1 / {TARGET:g}) = {kappa_c:.2f}")
    print("| B | " + " | ".join(str(b) for b in BATCHES) + " |")
    print("| updates saved [SE] | " + " | ".join(f"{s:.2f} [{e:.2f}]" for s, e in
                                                 zip(h["saved"], h["se"])) + " |")
    B, k = np.array(BATCHES, np.float64), slice(0, 3)
    n = h["runs"][0.9][:, :32]  # test_adam_form's 32 seeds a batch
    for L in (0.0, float(np.mean(h["saved"])), kappa_c):
        f = adam.fit_adam(np.repeat(B[k], 32), (n[k] + L * B[k, None]).ravel(),
                          np.full(96, LR0), np.ones(96), 0.0, LR0, 8.0, sharp=True)
        pred = np.exp(f.log_median(B)) - L * B
        print(f"head start {L:.2f} taken out and put back: exponent 128 -> 256 "
              f"{math.log2(pred[-1] / pred[-2]):.4f}, 8x error "
              f"{pred[-1] / np.median(n[-1]) - 1:+.1%}")
