"""The bandit's theory columns and measured noise scales for each result entry."""
import numpy as np

from twoclock.config import OptimConfig
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.bandit.theory import noise_scale, predicted_failure_samples


def predict(cfg: BanditConfig, opt: OptimConfig, sweep, res, runs, crit) -> None:
    """Theory's failure clock and, per direction, the measured noise scale (seeds pooled) and
    regime for each (batch, lr0) entry of a result (in place). Each direction is measured over
    the checkpoints that decide its clock: skill up to the median progress clock, drift up to
    the median failure clock (the whole run where that clock is censored)."""
    for r in runs:
        i, j = res.batches.index(r["batch"]), res.lr0s.index(r["lr0"])
        r["theory"] = {"failure_samples": predicted_failure_samples(cfg, opt, r["lr0"],
                                                                    r["batch"])}
        ck = {k: v[j] for k, v in res.ckpt[i].items()}  # [S, C]
        r["noise_scale"], r["regime"] = {}, {}
        for d, clock in (("skill", "progress_samples"), ("drift", "failure_samples")):
            until = r[clock]["median"]
            keep = ck["samples"][0] <= (until if until is not None else np.inf)
            keep[0] = True  # at least the first checkpoint
            v = float(noise_scale(ck[f"noise_{d}"][:, keep], ck[f"signal_{d}"][:, keep]))
            r["noise_scale"][d] = v if np.isfinite(v) else None
            r["regime"][d] = "noise" if v > r["batch"] else "signal"
    del sweep, crit  # the bandit has no critical-batch theory
