"""Self-audit tests of several targets at once (twoclock.pilot.levels; docs/testing.md, "Self-audit"): runs with K updates per rollout batch enter the joint
fit at m = B / K. The oracle is the form written out here, N = A sqrt(m (m + B_n)) / lr."""
import math

import numpy as np

from twoclock.pilot import levels

X, C0, C1 = np.array([-0.05, 0.0, 0.05]), math.log(40.0), 10.0  # B_n 24.26, 40, 65.95
A_L = np.array([30.0, 50.0, 90.0])


def _plans(K):
    """Three one-target plans whose runs take K updates per batch of B = K m: their clocks are
    the formula's at m samples per update (by hand), off by +-1e-3 in log."""
    plans = []
    for l in range(3):
        m = np.repeat([8.0, 16.0, 32.0, 64.0], 2)
        lr = np.where(np.arange(m.size) % 3 == 0, 0.03, 0.01)
        n = A_L[l] * np.sqrt(m * (m + math.exp(C0 + C1 * X[l]))) / lr
        n = n * np.exp(1e-3 * (-1.0) ** np.arange(m.size))
        plans.append({"runs": [{"batch": float(K * x), "updates": float(K), "lr": float(r),
                                "progress_samples": float(v)} for x, r, v in zip(m, lr, n)],
                      "fit": {"rule": {"p": 0.0, "lr0": 0.01, "b0": 8.0 * K,
                                       "off_rule_runs": 0},
                              "progress_form_error": {"curvature": 0.0}},
                      "predictions": [], "source": "made here"})
    return plans


def test_runs_with_k_updates_per_batch_give_the_noise_scale_per_update():
    out = levels.joint_plan(["acc>=0.45", "acc>=0.5", "acc>=0.55"], _plans(4.0))
    for l, row in enumerate(out["targets"]):
        # B_n in samples per update: 40 e^(10 x) (with m = B the fit would read 4x the batch)
        assert abs(row["noise_scale"] / math.exp(C0 + C1 * X[l]) - 1) < 0.02, l
