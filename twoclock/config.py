"""Frozen configurations and the one validation helper every entry point uses.

Validation happens here, before anything is traced, so bad input fails with a
one-line ValueError that names the parameter and its allowed range.
"""
from dataclasses import dataclass, field
import math

OPTIMIZERS = ("sgd", "momentum", "adam")
LR_RULES = ("fixed", "sqrt", "linear")


def param(default, help: str, choices=None):
    """A config field whose help text (and choices) the command line reads from its metadata."""
    meta = {"help": help} if choices is None else {"help": help, "choices": tuple(choices)}
    return field(default=default, metadata=meta)


def require(ok: bool, name: str, allowed: str, value) -> None:
    """Raise ValueError('<name> must be <allowed> (got <value>)') unless ok."""
    if not ok:
        raise ValueError(f"{name} must be {allowed} (got {value!r})")


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def require_positive(name: str, value) -> None:
    require(finite(value) and value > 0, name, "a finite number > 0", value)


def require_fraction(name: str, value) -> None:
    require(finite(value) and 0 < value < 1, name, "in (0, 1)", value)


def require_int(name: str, value, lo: int = 1) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo
    require(ok, name, f"an integer >= {lo}", value)


def require_choice(name: str, value, choices) -> None:
    require(value in choices, name, "one of " + ", ".join(choices), value)


@dataclass(frozen=True)
class OptimConfig:
    """Optimizer and learning-rate rule; lr(B) = lr0 * (B / b0)^p."""
    name: str = param("adam", "optimizer: sgd | momentum | adam", choices=OPTIMIZERS)
    lr_rule: str = param("sqrt", "learning-rate rule lr(B) = lr0 (B / b0)^p: fixed | sqrt | linear",
                         choices=LR_RULES)
    b0: float = param(8.0, 'reference batch of the learning-rate rule')
    beta1: float = param(0.9, "Adam's beta1")
    beta2: float = param(0.999, "Adam's beta2")
    eps: float = param(1e-8, "Adam's epsilon")
    momentum: float = param(0.9, 'heavy-ball coefficient')
    malladi: bool = param(False, "square-root-rule companions: 1 - beta -> k (1 - beta), "
                                 "eps -> eps / sqrt(k), k = B / b0")

    def __post_init__(self):
        require_choice("optimizer", self.name, OPTIMIZERS)
        require_choice("lr_rule", self.lr_rule, LR_RULES)
        require_positive("b0", self.b0)
        require(finite(self.beta1) and 0 <= self.beta1 < 1, "beta1", "in [0, 1)", self.beta1)
        require(finite(self.beta2) and 0 <= self.beta2 < 1, "beta2", "in [0, 1)", self.beta2)
        require(finite(self.eps) and self.eps >= 0, "eps", "a finite number >= 0", self.eps)
        require(finite(self.momentum) and 0 <= self.momentum < 1, "momentum", "in [0, 1)",
                self.momentum)


@dataclass(frozen=True)
class SweepConfig:
    """The grid: batch x lr0 x seed, each run bounded by a sample budget."""
    batches: tuple = param((8, 16, 32, 64, 128, 256), 'batch sizes')
    lr0s: tuple = param((5e-3, 1e-2, 2e-2), 'base learning rates at batch b0')
    seeds: int = param(16, 'seeds per (batch, lr0)')
    budget: int = param(200_000, 'sample budget per run')
    seed: int = param(0, 'base PRNG seed')
    n_ckpt: int = param(128, 'checkpoints recorded per run')

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
