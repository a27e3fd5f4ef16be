"""The shapes study's estimators and theory, NumPy only: the progress clock at several targets
read off the checkpoints, each target's critical batch, the local batch exponent between
adjacent batches, the noise scale along the progress path, and Adam's two theory curves.

Adam's step on a coordinate with mean gradient g and per-sample noise variance c is about
lr g / sqrt(g^2 + c / B) (the preconditioner is the root of the gradient's second moment), so
with B_n = c / g^2 the samples to a target go as
    fixed lr:  N ∝ B sqrt(g^2 + c / B) ∝ sqrt(B (B + B_n))   (local exponent 1/2 + B / (2 (B + B_n)))
    sqrt rule: N ∝ sqrt(B + B_n)                              (critical batch (1+d)^2 (B_min + B_n) - B_n)
For several coordinates (the quadratic's eigen-coordinates under Adam's diagonal
preconditioner) the loss falls at rate sum_i a_i (1 + B / B_i)^(-1/2) per sample under the
sqrt rule, a_i = h_i^2 E[x_i^2] / sqrt(c_i), B_i = c_i / (h_i^2 E[x_i^2]).
"""
import numpy as np

from twoclock.analysis import clocks
from twoclock.analysis.paired import med, paired_ci
from twoclock.clock import Clock, seed_crossings
from twoclock.config import DELTA, require
from twoclock.pilot import adam


def levels(start: float, target: float, n: int) -> list:
    """n targets evenly spaced from start (excluded) to target (included)."""
    require(isinstance(n, int) and n >= 1, "levels", "an integer >= 1", n)
    return [float(start + (target - start) * k / n) for k in range(1, n + 1)]


def crossings(samples_SxC, x_SxC, level: float, x0: float, op: str = "<=") -> np.ndarray:
    """[S] samples at which each seed's checkpointed metric x first meets `op level`, from x0 at
    0 samples (every run's start), interpolated between checkpoints (`twoclock.clock`); NEVER
    (0) where it does not within the run."""
    return seed_crossings(samples_SxC, x_SxC, Clock("x", op, level), x0)


def critical_curve(batches, prog_KxBxS, delta: float = DELTA, idx=None) -> list:
    """Each target's critical batch (`clocks.critical_batch`, CI over seeds) from its clocks
    [B, S]; prog_KxBxS: one [B, S] per target."""
    return [clocks.critical_batch(list(batches), p, delta=delta, idx=idx) for p in prog_KxBxS]


def local_exponents(batches, prog_BxS, idx) -> list:
    """d log N / d log B between each pair of adjacent batches: log(med N(B2) / med N(B1)) /
    log(B2 / B1), with a paired bootstrap CI over seeds (runs that never crossed as inf: an
    exponent a censored median decides is None)."""
    b = [int(v) for v in batches]
    x = clocks.censored(np.asarray(prog_BxS, np.float64))
    out = []
    for k in range(len(b) - 1):
        w = np.log(b[k + 1] / b[k])
        e = paired_ci(lambda hi, lo: np.log(med(hi) / med(lo)) / w, x[k + 1], x[k], idx=idx,
                      undefined=np.nan)
        out.append({"batches": [b[k], b[k + 1]], **e})
    return out


def fixed_exponent(b, b_noise):
    """Adam at a fixed lr, the local exponent d log N / d log B of N ∝ sqrt(B (B + B_n)):
    1/2 + B / (2 (B + B_n)) (1/2 noise-dominated, 1 sign-like)."""
    return adam.local_exponent(np.asarray(b, np.float64), b_noise, 0.0)


def fixed_exponent_between(b1, b2, b_noise):
    """The same theory's exponent between two batches (the secant the measurement is):
    1/2 + log((B2 + B_n) / (B1 + B_n)) / (2 log(B2 / B1))."""
    return 0.5 + np.log((b2 + b_noise) / (b1 + b_noise)) / (2.0 * np.log(b2 / b1))


def sqrt_rule_critical(b_min, b_noise, delta: float = DELTA):
    """Adam under the sqrt rule, N ∝ sqrt(B + B_n): the B where N(B) / N(B_min) = 1 + delta,
    (1 + delta)^2 (B_min + B_n) - B_n."""
    return (1.0 + delta) ** 2 * (b_min + b_noise) - b_noise


def simple_noise_scale(h, c, ex2) -> float:
    """B_simple = tr(Sigma) / E|G|^2 of a diagonal quadratic at offsets with second moments
    E[x_i^2]: sum(c) / sum(h^2 E[x^2]) (per-sample noise variances c, curvatures h)."""
    h, c, ex2 = (np.asarray(v, np.float64) for v in (h, c, ex2))
    return float(np.sum(c) / np.sum(h * h * ex2))


def adam_coordinate_critical(h, c, ex2, b_min, delta: float = DELTA) -> float:
    """The sqrt rule's critical batch of Adam's per-coordinate rate at one point of the path:
    the B where sum_i a_i (1 + B / B_i)^(-1/2) falls to 1 / (1 + delta) of its value at b_min
    (bisection on log B; inf if it does not by 1e12)."""
    h, c, ex2 = (np.asarray(v, np.float64) for v in (h, c, ex2))
    g2 = h * h * ex2
    a, bi = g2 / np.sqrt(c), c / g2
    rate = lambda b: np.sum(a / np.sqrt(1.0 + b / bi))
    goal = rate(b_min) / (1.0 + delta)
    lo, hi = np.log(b_min), np.log(1e12)
    if rate(np.exp(hi)) > goal:
        return float("inf")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rate(np.exp(mid)) > goal else (lo, mid)
    return float(np.exp(0.5 * (lo + hi)))


def path_slowdown(b, b_min, w, b_noise, rule: str = "sqrt"):
    """N(B) / N(B_min) of a path walked in pieces: piece j took w_j samples at B_min and has
    noise scale B_j (inf: no signal, noise-dominated at every batch); each piece slows as
    Adam's theory says at its own B_j, sqrt((B + B_j) / (B_min + B_j)) under the sqrt rule and
    sqrt(B (B + B_j) / (B_min (B_min + B_j))) at a fixed lr."""
    w, bn = np.asarray(w, np.float64), np.asarray(b_noise, np.float64)
    with np.errstate(invalid="ignore"):  # inf / inf where there is no signal: 1
        f = np.where(np.isinf(bn), 1.0, np.sqrt((b + bn) / (b_min + bn)))
    if rule == "fixed":
        f = f * np.sqrt(b / b_min)
    return float(np.sum(w * f) / np.sum(w))


def path_critical(b_min, w, b_noise, delta: float = DELTA) -> float:
    """The sqrt rule's critical batch of a path in pieces (`path_slowdown` = 1 + delta),
    bisected on log B; inf if not by 1e12."""
    goal = 1.0 + delta
    lo, hi = np.log(b_min), np.log(1e12)
    if path_slowdown(np.exp(hi), b_min, w, b_noise) < goal:
        return float("inf")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if path_slowdown(np.exp(mid), b_min, w, b_noise) < goal else (lo, mid)
    return float(np.exp(0.5 * (lo + hi)))


def path_exponent(b1, b2, b_min, w, b_noise) -> float:
    """The fixed-lr exponent between b1 and b2 of a path in pieces: log(N(b2) / N(b1)) /
    log(b2 / b1), N from `path_slowdown`."""
    n1 = path_slowdown(b1, b_min, w, b_noise, "fixed")
    n2 = path_slowdown(b2, b_min, w, b_noise, "fixed")
    return float(np.log(n2 / n1) / np.log(b2 / b1))


def log_rise(values, targets) -> float | None:
    """The least-squares slope of log(value) on the target (the rise per unit of target) over
    the finite values; None with fewer than two."""
    v, t = np.asarray(values, np.float64), np.asarray(targets, np.float64)
    ok = np.isfinite(v) & (v > 0)
    if ok.sum() < 2:
        return None
    return float(np.polyfit(t[ok], np.log(v[ok]), 1)[0])


__all__ = ["levels", "crossings", "critical_curve", "local_exponents", "fixed_exponent",
           "fixed_exponent_between", "sqrt_rule_critical", "simple_noise_scale",
           "adam_coordinate_critical", "path_slowdown", "path_critical", "path_exponent",
           "log_rise"]
