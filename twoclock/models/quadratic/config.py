"""The noisy quadratic model's configuration."""
from dataclasses import dataclass

from twoclock.config import (finite, param, require, require_choice, require_fraction, require_int,
                             require_positive)

DRIFT_STATS = ("mean", "norm")


@dataclass(frozen=True)
class QuadraticConfig:
    """Noisy quadratic model with a drift block.

    h_i = h_max * i^-alpha; per-sample noise covariance sigma^2 * H^gamma; drift block
    gradient -drift_bias + N(0, drift_noise / B). Targets are fractions of L0 = sum(h)/2.
    """
    dim: int = param(64, 'progress-block dimension')
    alpha: float = param(1.0, 'spectrum h_i = h_max i^-alpha')
    h_max: float = param(1.0, 'largest curvature')
    sigma: float = param(1.0, 'noise scale: C = sigma^2 H^gamma')
    gamma: float = param(1.0, 'noise exponent gamma')
    drift_dim: int = param(8, 'drift-block size')
    drift_bias: float = param(0.02, 'drift pull b')
    drift_noise: float = param(1.0, 'per-sample drift-gradient variance c_d')
    drift_stat: str = param("mean", 'drift statistic: mean | norm', choices=DRIFT_STATS)
    rotate: bool = param(False, 'random rotation of H and C')
    random_start: bool = param(False, 'start at N(0, 1) offsets')
    init_seed: int = param(0, 'seed of the rotation and the random start')
    target: float = param(0.05, 'progress target as a fraction of the initial loss, in (0, 1)')
    drift_threshold: float = param(1.0, 'failure: drift statistic threshold')

    def __post_init__(self):
        require_int("dim", self.dim)
        require(finite(self.alpha) and self.alpha >= 0, "alpha", "a finite number >= 0",
                self.alpha)
        require_positive("h_max", self.h_max)
        require_positive("sigma", self.sigma)
        require(finite(self.gamma) and self.gamma >= 0, "gamma", "a finite number >= 0",
                self.gamma)
        require_int("drift_dim", self.drift_dim, lo=0)
        require(finite(self.drift_bias) and self.drift_bias >= 0, "drift_bias",
                "a finite number >= 0", self.drift_bias)
        require_positive("drift_noise", self.drift_noise)
        require_choice("drift_stat", self.drift_stat, DRIFT_STATS)
        require_int("init_seed", self.init_seed, lo=0)
        require_fraction("target", self.target)
        require_positive("drift_threshold", self.drift_threshold)
