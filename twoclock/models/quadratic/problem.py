"""The noisy quadratic problem: spectrum, noise, rotation and start (no dynamics)."""
import numpy as np

from twoclock.models.quadratic.config import QuadraticConfig


def spectrum(cfg: QuadraticConfig) -> np.ndarray:
    """h_D: curvatures h_max * i^-alpha, i = 1..dim."""
    i = np.arange(1, cfg.dim + 1, dtype=np.float64)
    return cfg.h_max * i ** (-cfg.alpha)


def noise_variances(cfg: QuadraticConfig) -> np.ndarray:
    """c_D: per-sample gradient-noise variances in the eigenbasis, sigma^2 h^gamma."""
    return cfg.sigma**2 * spectrum(cfg) ** cfg.gamma


def rotation(cfg: QuadraticConfig) -> np.ndarray | None:
    """Q_DxD, a Haar-random orthogonal matrix (fixed by init_seed), or None if not rotated."""
    if not cfg.rotate:
        return None
    rng = np.random.default_rng(cfg.init_seed)
    q, r = np.linalg.qr(rng.standard_normal((cfg.dim, cfg.dim)))
    return q * np.sign(np.diag(r))


def initial_offset(cfg: QuadraticConfig) -> np.ndarray:
    """x0_D = theta0 - theta* in the parameter basis: all ones, or N(0, 1) if random_start."""
    if cfg.random_start:
        return np.random.default_rng(cfg.init_seed + 1).standard_normal(cfg.dim)
    return np.ones(cfg.dim)


def initial_loss(cfg: QuadraticConfig) -> float:
    """L0 = 1/2 sum_i h_i (Q^T x0)_i^2 (= sum(h)/2 for the default start)."""
    x0 = initial_offset(cfg)
    q = rotation(cfg)
    e0 = x0 if q is None else q.T @ x0
    return float(0.5 * np.sum(spectrum(cfg) * e0**2))
