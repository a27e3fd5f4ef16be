"""The quadratic model's phase boundary N_fail = N_prog from its theory."""
import math

import numpy as np

from twoclock.models.quadratic import theory


def phase_boundary(cfg, opt, batches, lr0s, budget: int) -> dict | None:
    """Theory grid log(N_fail / N_prog) [L][B] for Adam on the unrotated quadratic model (-10:
    the mean-field progress never reaches the target within the budget, so failure wins; +10:
    the drift never reaches its threshold); None for another optimizer or a rotated problem,
    which the theory does not cover. N_fail is `theory.adam_failure_samples` (the first passage
    of Adam's exact drift step law; its noise-dominated leading term is
    D* sqrt(c_d B0) / (lr0 b) (B/B0)^(1/2-p)), N_prog the mean-field Adam recursion
    `theory.adam_progress_samples`; the boundary is the grid's zero contour."""
    if opt.name != "adam" or cfg.rotate:
        return None
    ratio = np.empty((len(lr0s), len(batches)))
    for j, lr0 in enumerate(lr0s):
        for i, b in enumerate(batches):
            nf = theory.adam_failure_samples(cfg, opt, lr0, b)["samples"]
            npg = theory.adam_progress_samples(cfg, opt, lr0, b, budget=budget)
            ratio[j, i] = (-10.0 if npg is None else 10.0 if nf is None
                           else math.log(nf / npg))
    return {"batches": [float(b) for b in batches], "lr0s": [float(l) for l in lr0s],
            "log_ratio": ratio.tolist(),
            "source": "twoclock.models.quadratic.theory.adam_failure_samples / "
                      "adam_progress_samples"}
