"""McCandlish et al. 2018 (An Empirical Model of Large-Batch Training) on the noisy quadratic
model: gradient noise scales and the steps-examples Pareto front."""
import numpy as np

from twoclock.config import require
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.problem import initial_offset, noise_variances, rotation, spectrum


def _eig_offset(cfg: QuadraticConfig, x) -> np.ndarray:
    """Offset from the optimum in the eigenbasis; x in the parameter basis (default: x0)."""
    x = initial_offset(cfg) if x is None else np.asarray(x, np.float64)
    require(x.shape == (cfg.dim,), "x", f"an array of shape ({cfg.dim},)", x.shape)
    q = rotation(cfg)
    return x if q is None else q.T @ x


def b_noise(cfg: QuadraticConfig, x=None) -> float:
    """B_noise = tr(H Sigma) / (G^T H G), G = H x, Sigma the per-sample noise covariance."""
    h, c, e = spectrum(cfg), noise_variances(cfg), _eig_offset(cfg, x)
    return float(np.sum(h * c) / np.sum(h**3 * e * e))


def b_simple(cfg: QuadraticConfig, x=None) -> float:
    """B_simple = tr(Sigma) / |G|^2, G = H x."""
    h, c, e = spectrum(cfg), noise_variances(cfg), _eig_offset(cfg, x)
    return float(np.sum(c) / np.sum(h * h * e * e))


def pareto_fit(S, E) -> dict:
    """Fit (S/S_min - 1)(E/E_min - 1) = 1 to (steps, examples) pairs; B_crit = E_min / S_min.

    The relation is equivalent to S_min / S + E_min / E = 1, linear in (S_min, E_min): solved
    by least squares.
    """
    S, E = np.asarray(S, np.float64), np.asarray(E, np.float64)
    require(S.shape == E.shape and S.size >= 2, "S, E", "arrays of equal length >= 2", S.shape)
    require(bool(np.all(S > 0) and np.all(E > 0)), "S, E", "positive", (S, E))
    A = np.stack([1.0 / S, 1.0 / E], axis=1)
    (s_min, e_min), *_ = np.linalg.lstsq(A, np.ones_like(S), rcond=None)
    return {"s_min": float(s_min), "e_min": float(e_min), "b_crit": float(e_min / s_min)}
