"""The policy's predict hook: each direction's measured noise scale, its regime, and the batch
exponent the theory predicts for its clock, against the measured one.

Adam, per update of B responses with lr = lr0 (B / b0)^p (twoclock.scaling):
- noise-dominated direction (B < B_simple): the step along it is ~lr sqrt(B) b / sqrt(c), so
  the statistic moves ~lr / sqrt(B) per response and its clock N(B) ~ B^(1/2 - p): flat under
  the sqrt rule, ~sqrt(B) under the fixed rule;
- signal-dominated (B > B_simple): Adam saturates to sign descent, ~lr per update, so
  N(B) ~ B^(1 - p): ~sqrt(B) under the sqrt rule, ~B under the fixed rule;
- a random walk (no detectable mean drive, B_simple = inf: a reward-indifferent direction
  whose per-group gradients average to zero): Adam's step along it is ~lr per update with a
  random sign, so after N / B updates the statistic has moved ~lr sqrt(N / B) and
  N(B) ~ B^(1 - 2p): flat under the sqrt rule, ~B under the fixed rule.
"""
import numpy as np

from twoclock.config import RULE_EXPONENT, OptimConfig
from twoclock.models.grpo import measured_until, noise_scale, regime_of
from twoclock.models.policy.config import PolicyConfig

# each measured direction and the clock (a run entry's "<clock>_samples") it decides
DIRECTIONS = {"acc": "progress", "null": "null", "kl": "kl", "entropy": "entropy"}


def predicted_exponent(regime: str, rule: str) -> float:
    """d log N / d log B of a clock whose direction is in `regime` under the lr rule."""
    p = RULE_EXPONENT[rule]
    return {"random walk": 1.0 - 2 * p, "noise": 0.5 - p, "signal": 1.0 - p}[regime]


def measured_exponent(batches, medians):
    """Least-squares slope of log median against log B over the uncensored (finite, positive)
    entries, in any order (None if fewer than two)."""
    pts = [(np.log(b), np.log(m)) for b, m in zip(batches, medians)
           if m is not None and np.isfinite(m) and m > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def predict(cfg: PolicyConfig, opt: OptimConfig, sweep, res, runs, crit) -> None:
    """Per (batch, lr0) entry, in place: noise_scale and regime per direction (seeds pooled,
    fresh measurements up to the median of that direction's clock, the whole run where it is
    censored), the theory's exponent per clock, and the measured exponent at that lr0."""
    for r in runs:
        i, j = res.batches.index(r["batch"]), res.lr0s.index(r["lr0"])
        ck = {k: np.asarray(v[j]) for k, v in res.ckpt[i].items()}  # [S, C]
        r["noise_scale"], r["regime"] = {}, {}
        th = r.setdefault("theory", {})
        th["exponent"] = {}
        for d, clock in DIRECTIONS.items():
            until = r.get(f"{clock}_samples", {}).get("median")
            keep = measured_until(ck["samples"][0], until, ck["noise_fresh"][0] > 0)
            # the means in the checkpoints' type, their ratio in float64
            n, s = (np.float64(np.mean(ck[f"{q}_{d}"][:, keep])) for q in ("noise", "signal"))
            v = float(noise_scale(n, s))
            r["noise_scale"][d] = v if np.isfinite(v) else None
            r["regime"][d] = regime_of(v, r["batch"])
            th["exponent"][clock] = predicted_exponent(r["regime"][d], opt.lr_rule)
    for lr0 in {r["lr0"] for r in runs}:
        rows = sorted((r for r in runs if r["lr0"] == lr0), key=lambda r: r["batch"])
        for clock in DIRECTIONS.values():
            key = f"{clock}_samples"
            slope = measured_exponent([r["batch"] for r in rows],
                                      [r.get(key, {}).get("median") for r in rows])
            for r in rows:
                r.setdefault("measured_exponent", {})[clock] = slope
    del sweep, crit
