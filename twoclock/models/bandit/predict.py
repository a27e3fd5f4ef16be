"""The bandit's theory columns and measured noise scales for each result entry."""
import math

from twoclock.config import OptimConfig
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.bandit.theory import predicted_failure_samples
from twoclock.models.grpo import measured_until, noise_scale, regime_of


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
            keep = measured_until(ck["samples"][0], r[clock]["median"])
            v = float(noise_scale(ck[f"noise_{d}"][:, keep], ck[f"signal_{d}"][:, keep]))
            r["noise_scale"][d] = v if math.isfinite(v) else None
            # no measured signal is labelled noise, as the bandit's results always have: it
            # predicts no random-walk exponent
            r["regime"][d] = regime_of(v, r["batch"], walk=False)
    del sweep, crit  # the bandit has no critical-batch theory
