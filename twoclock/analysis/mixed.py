"""The share of mixed-reward groups: where a GRPO update moves anything.

A group of G responses to one prompt with pass rate p has a nonzero group advantage only when
its rewards differ, i.e. unless all G pass (p^G) or all G fail ((1 - p)^G):

    p_mix(p, G) = 1 - p^G - (1 - p)^G,

0 at p = 0 and p = 1, largest (1 - 2^(1 - G)) at p = 1/2. Over a pool of prompts with pass
rates p_i (the policy's per-prompt probability of a verified answer, each drawn alike) the
expected share is the mean of p_mix(p_i, G), which is not p_mix of the mean pass rate: a
pool split into prompts the policy always solves and prompts it never does has no mixed
groups at any mean. NumPy only (docs/regimes.md uses it for the regime map's predictions).
"""
import numbers

import numpy as np

from twoclock.config import require


def _check_group(G) -> int:
    ok = isinstance(G, numbers.Integral) and not isinstance(G, bool) and G >= 1
    require(ok, "G", "an integer >= 1 (responses per prompt)", G)
    return int(G)


def _check_rates(p) -> np.ndarray:
    a = np.asarray(p, np.float64)
    require(a.size > 0 and bool(np.all(np.isfinite(a))) and bool(np.all((a >= 0) & (a <= 1))),
            "p", "pass rates in [0, 1], at least one", p if a.size <= 8 else f"{a.size} values")
    return a


def p_mix(p, G: int):
    """1 - p^G - (1 - p)^G: the probability that a group of G responses at pass rate p has
    rewards that differ (elementwise over p; a float for a scalar p)."""
    G = _check_group(G)
    a = _check_rates(p)
    out = 1.0 - a ** G - (1.0 - a) ** G
    # at G = 1 the two terms sum to 1 exactly in reals; keep float error from going negative
    out = np.clip(out, 0.0, 1.0)
    return float(out) if np.ndim(p) == 0 else out


def mean_p_mix(pass_rates, G: int, weights=None) -> float:
    """The expected share of mixed-reward groups over a pool of prompts with these pass rates,
    each sampled with probability proportional to weights (None: uniformly)."""
    m = np.atleast_1d(p_mix(pass_rates, G))
    if weights is None:
        return float(np.mean(m))
    w = np.asarray(weights, np.float64)
    require(w.shape == m.shape and bool(np.all(np.isfinite(w))) and bool(np.all(w >= 0))
            and float(np.sum(w)) > 0, "weights",
            "finite, >= 0, one per pass rate, not all 0", f"shape {w.shape}")
    return float(np.sum(w * m) / np.sum(w))
