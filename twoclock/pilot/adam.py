"""Adam's progress clock under any learning-rate rule, from pilots at any lrs and any number of
updates per rollout batch (numpy only, no JAX; docs/plan.md, "Adam's progress form").

Derivation. Per coordinate, Adam's step is about lr g / sqrt(g^2 + sigma^2 / m): lr times the
signal over the root mean square gradient of an update averaged over m samples. With the noise
scale B_n = sigma^2 / g^2 the step in the signal's direction is lr / sqrt(1 + B_n / m) (the
sqrt(1 + B/B_s) slowdown of twoclock/models/quadratic/adam_progress.py, seen from the other
side), so the updates to a target go as sqrt(1 + B_n / m) / lr and the samples, m per update, as

    N(m, lr) = A sqrt(m (m + B_n)) / lr.

Under lr = lr0 (B / b0)^p, N grows as B^(1/2 - p) while m << B_n (noise-dominated: the step is
lr x signal/noise) and as B^(1 - p) past the knee (the step is sign-like, lr per update): a
fixed lr gives B^(1/2) -> B^1, the sqrt rule flat -> B^(1/2) (the "saturation" form of fit.py,
whose critical batch is (1.2^2 - 1) B_n = 0.44 B_n), the linear rule B^(-1/2) -> B^0. The local
exponent is d log N / d log B = 1/2 - p + (1/2) m / (m + B_n).

The lr enters only through 1/lr: the small-lr regime, where each update moves the iterate a
small way along a path that does not depend on the step size. Pilots run at different lrs (not
on one rule) enter the same fit through their own lr; past the curvature limit (lr h ~ 1) a
larger lr buys less than 1/lr says and the form overpromises.

Updates per rollout batch. A run that takes K optimizer updates per rollout batch of B samples
makes updates of m = B / K samples each and uses B / K fresh samples per update; K enters here
and nowhere else (`per_update`). Several epochs over one batch reuse samples, which this counts
as fresh: a reading, not a derivation, of K > 1.

The fit. Each run's clock is brought to the sqrt rule through the reference (b0, lr0):
N' = N (lr / lr0) / sqrt(m / b0), the samples the run would have taken at lr0 sqrt(m / b0),
which is the saturation form in m with a = 1/2. That form is fitted by fit.fit_progress (its
least squares in log N, profile-likelihood band and knee sharpness), and every prediction is
brought back with the rule's lr at the predicted batch and its K. Under the sqrt rule with one
update per batch the two fits coincide: the bring-back cancels.
"""
from dataclasses import dataclass
import math

import numpy as np

from twoclock.pilot import fit as pf

FORM = "adam"
SQRT_C = 1.2**2 - 1.0  # the sqrt rule's critical batch over B_n (delta = 0.2)


def per_update(B, K) -> np.ndarray:
    """m = B / K: the samples each update averages over (and uses), K updates per batch."""
    return np.asarray(B, np.float64) / np.asarray(K, np.float64)


def log_samples(m, lr, b_n):
    """log N(m, lr) - log A = 1/2 log(m (m + B_n)) - log lr (b_n inf: the noise-dominated
    limit, with log A absorbing 1/2 log B_n: 1/2 log m - log lr)."""
    m = np.asarray(m, np.float64)
    if math.isinf(b_n):
        return 0.5 * np.log(m) - np.log(lr)
    return 0.5 * np.log(m * (m + b_n)) - np.log(lr)


def local_exponent(B, b_n: float, p: float, K=1.0):
    """d log N / d log B under lr ~ B^p: 1/2 - p + (1/2) m / (m + B_n), m = B / K."""
    m = per_update(B, K)
    return 0.5 - p + 0.5 * m / (m + b_n)


def log_phi(asymptote, B, lr, K=1.0, optimum: float = 0.0) -> np.ndarray:
    """Each run's log |phi_r| = log(|a_r - optimum| sqrt(m_r) / lr_r): under Adam's floor law
    one number for every run."""
    d = np.abs(np.asarray(asymptote, np.float64) - optimum)
    return np.log(d * np.sqrt(per_update(B, K)) / np.asarray(lr, np.float64))


def floor_scale(asymptote, B, lr, K=1.0, optimum: float = 0.0) -> float:
    """phi of asymptote = optimum + phi lr / sqrt(m) (Adam's noise floor, m = B / K samples an
    update): the geometric mean of (a_r - optimum) sqrt(m_r) / lr_r over the runs, which must all
    lie on the same side of the optimum (a floor above a loss's minimum, or a ceiling below a
    score's maximum, phi then negative)."""
    d = np.asarray(asymptote, np.float64) - optimum
    if not (np.all(d > 0) or np.all(d < 0)):
        raise ValueError(f"asymptote: every run's plateau on one side of the optimum {optimum:g},"
                         f" got {np.asarray(asymptote).tolist()}")
    return float(np.sign(d[0]) * np.exp(np.mean(log_phi(asymptote, B, lr, K, optimum))))


def floor_at(phi: float, B, lr, K=1.0, optimum: float = 0.0):
    """The predicted asymptote optimum + phi lr / sqrt(m) at batch B, lr and K."""
    return optimum + phi * np.asarray(lr, np.float64) / np.sqrt(per_update(B, K))


def floor_levels(target: float, asymptote, predicted: float, optimum: float = 0.0):
    """The level at which to read each pilot's clock, its own asymptote a_r plus the target's
    signed distance from the predicted run's asymptote: a_r + (target - predicted). None where
    the target lies at or past the predicted asymptote (seen from the optimum): the predicted
    run's expected metric never reaches it."""
    if (float(target) - predicted) * (predicted - optimum) <= 0:
        return None
    return np.asarray(asymptote, np.float64) + (float(target) - float(predicted))


@dataclass(frozen=True)
class AdamFit:
    """The Adam form fitted to runs at their own lr and K: `base` the sqrt-rule-equivalent
    clock (fit.ProgressFit, saturation, in m), predictions under lr0 (B / b0)^p with K_pred
    updates per batch. The interface of fit.ProgressFit (log_median, log_interval, critical)."""
    base: pf.ProgressFit
    p: float
    lr0: float
    b0: float
    k_pred: float = 1.0
    form: str = FORM

    @property
    def a(self) -> float:  # the growth past the knee under the rule
        return 1.0 - self.p

    @property
    def m(self) -> float:  # the knee's sharpness (fit.py's m, not samples per update)
        return self.base.m

    @property
    def log_n_min(self) -> float:  # the floor under the sqrt rule through (b0, lr0)
        return self.base.log_n_min

    @property
    def dof(self) -> int:
        return self.base.dof

    @property
    def sse(self) -> float:
        return self.base.sse

    @property
    def noise_scale(self) -> float | None:
        """B_n in samples per update (None: beyond the pilots' reach)."""
        lbc = self.base.log_b_crit
        s = self.base.m  # shape 1/(2s) log(1 + c (m / B_crit)^s), c = 1.2^(2s) - 1 = (m/B_n)^s
        return None if lbc is None else math.exp(lbc) / (1.2 ** (2 * s) - 1.0) ** (1.0 / s)

    def lr(self, B):
        """The prediction's rule lr0 (B / b0)^p."""
        return self.lr0 * (np.asarray(B, np.float64) / self.b0) ** self.p

    def _back(self, m, lr):
        """log N - log N' at m samples per update and lr: 1/2 log(m / b0) - log(lr / lr0)."""
        return 0.5 * np.log(m / self.b0) - np.log(np.asarray(lr, np.float64) / self.lr0)

    def log_at(self, B, lr, K):
        """log N of a run at batch B, its own lr and K updates per batch."""
        m = per_update(B, K)
        return self.base.log_median(m) + self._back(m, lr)

    def log_median(self, B):
        return self.log_at(B, self.lr(B), self.k_pred)

    def log_interval(self, B, level: float):
        B = np.atleast_1d(np.asarray(B, np.float64))
        m = per_update(B, self.k_pred)
        lo, hi = self.base.log_interval(m, level)
        return lo + self._back(m, self.lr(B)), hi + self._back(m, self.lr(B))

    def critical(self, level: float) -> dict:
        """The knee as a rollout batch (K_pred updates each): the sqrt rule's critical batch
        0.44 B_n, whatever rule the pilots or the prediction use."""
        c = self.base.critical(level)
        k = self.k_pred
        return {"batch": None if c["batch"] is None else c["batch"] * k,
                "ci": [None if v is None else v * k for v in c["ci"]]}


def fit_adam(B, N, lr, K, p: float, lr0: float, b0: float, k_pred: float = 1.0,
             sharp: bool = False) -> AdamFit:
    """The Adam form fitted to runs at batch B, samples N, their own lr and K updates per
    batch; predictions under lr0 (B / b0)^p with k_pred updates per batch."""
    m = per_update(B, K)
    lr = np.asarray(lr, np.float64)
    n_sqrt = np.asarray(N, np.float64) * (lr / lr0) / np.sqrt(m / b0)
    base = pf.fit_progress(m, n_sqrt, "saturation", 0.5, sharp=sharp)
    return AdamFit(base, p, lr0, b0, k_pred)


__all__ = ["FORM", "per_update", "log_samples", "local_exponent", "log_phi", "floor_scale",
           "floor_at", "floor_levels", "AdamFit", "fit_adam"]
