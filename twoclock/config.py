"""Frozen configurations and the one validation helper every entry point uses.

Validation happens here, before anything is traced, so bad input fails with a
one-line ValueError that names the parameter and its allowed range.
"""
from dataclasses import dataclass
import math

OPTIMIZERS = ("sgd", "momentum", "adam")
LR_RULES = ("fixed", "sqrt", "linear")
DRIFT_STATS = ("mean", "norm")


def require(ok: bool, name: str, allowed: str, value) -> None:
    """Raise ValueError('<name> must be <allowed> (got <value>)') unless ok."""
    if not ok:
        raise ValueError(f"{name} must be {allowed} (got {value!r})")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def require_positive(name: str, value) -> None:
    require(_finite(value) and value > 0, name, "a finite number > 0", value)


def require_fraction(name: str, value) -> None:
    require(_finite(value) and 0 < value < 1, name, "in (0, 1)", value)


def require_int(name: str, value, lo: int = 1) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo
    require(ok, name, f"an integer >= {lo}", value)


def require_choice(name: str, value, choices) -> None:
    require(value in choices, name, "one of " + ", ".join(choices), value)


@dataclass(frozen=True)
class OptimConfig:
    """Optimizer and learning-rate rule; lr(B) = lr0 * (B / b0)^p."""
    name: str = "adam"
    lr_rule: str = "sqrt"
    b0: float = 8.0
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    momentum: float = 0.9
    malladi: bool = False  # sqrt-rule companions: 1-beta -> k(1-beta), eps -> eps/sqrt(k)

    def __post_init__(self):
        require_choice("optimizer", self.name, OPTIMIZERS)
        require_choice("lr_rule", self.lr_rule, LR_RULES)
        require_positive("b0", self.b0)
        require(_finite(self.b1) and 0 <= self.b1 < 1, "b1", "in [0, 1)", self.b1)
        require(_finite(self.b2) and 0 <= self.b2 < 1, "b2", "in [0, 1)", self.b2)
        require(_finite(self.eps) and self.eps >= 0, "eps", "a finite number >= 0", self.eps)
        require(_finite(self.momentum) and 0 <= self.momentum < 1, "momentum", "in [0, 1)",
                self.momentum)


@dataclass(frozen=True)
class QuadraticConfig:
    """Noisy quadratic model with a drift block (Model 1 of DESIGN.md).

    h_i = h_max * i^-alpha; per-sample noise covariance sigma^2 * H^gamma; drift block
    gradient -drift_bias + N(0, drift_noise / B). Targets are fractions of L0 = sum(h)/2.
    """
    dim: int = 64
    alpha: float = 1.0
    h_max: float = 1.0
    sigma: float = 1.0
    gamma: float = 1.0
    drift_dim: int = 8
    drift_bias: float = 0.02
    drift_noise: float = 1.0
    drift_stat: str = "mean"
    rotate: bool = False
    random_start: bool = False
    init_seed: int = 0
    target: float = 0.05
    drift_threshold: float = 1.0

    def __post_init__(self):
        require_int("dim", self.dim)
        require(_finite(self.alpha) and self.alpha >= 0, "alpha", "a finite number >= 0",
                self.alpha)
        require_positive("h_max", self.h_max)
        require_positive("sigma", self.sigma)
        require(_finite(self.gamma) and self.gamma >= 0, "gamma", "a finite number >= 0",
                self.gamma)
        require_int("drift_dim", self.drift_dim, lo=0)
        require(_finite(self.drift_bias) and self.drift_bias >= 0, "drift_bias",
                "a finite number >= 0", self.drift_bias)
        require_positive("drift_noise", self.drift_noise)
        require_choice("drift_stat", self.drift_stat, DRIFT_STATS)
        require_int("init_seed", self.init_seed, lo=0)
        require_fraction("target", self.target)
        require_positive("drift_threshold", self.drift_threshold)


@dataclass(frozen=True)
class SweepConfig:
    """The grid: batch x lr0 x seed, each run bounded by a sample budget."""
    batches: tuple = (8, 16, 32, 64, 128, 256)
    lr0s: tuple = (5e-3, 1e-2, 2e-2)
    seeds: int = 16
    budget: int = 200_000
    seed: int = 0
    n_ckpt: int = 128  # checkpoints recorded per run (every ceil(n_steps / n_ckpt) updates)

    def __post_init__(self):
        require(len(self.batches) > 0, "batches", "a non-empty list", self.batches)
        for b in self.batches:
            require_int("batch", b)
        require(len(set(self.batches)) == len(self.batches), "batches", "distinct values",
                self.batches)
        require(len(self.lr0s) > 0, "lr0", "a non-empty list", self.lr0s)
        for lr in self.lr0s:
            require_positive("lr0", lr)
        require_int("seeds", self.seeds)
        require_int("budget", self.budget)
        require(self.budget >= max(self.batches), "budget", f">= the largest batch "
                f"({max(self.batches)})", self.budget)
        require(self.budget < 2**31, "budget", "< 2^31 samples", self.budget)
        require_int("seed", self.seed, lo=0)
        require_int("n_ckpt", self.n_ckpt)
