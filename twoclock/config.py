"""Frozen configurations and the one validation helper every entry point uses.

Validation happens here, before anything is traced, so bad input fails with a
one-line ValueError that names the parameter and its allowed range.
"""
from dataclasses import dataclass, field
import math
import numbers

OPTIMIZERS = ("sgd", "momentum", "adam")
LR_RULES = ("fixed", "sqrt", "linear")
CARRY_MODES = ("rescale", "carry", "reset")  # the optimizer state at a schedule's switch
DELTA = 0.2  # critical batch: the smallest B with N_prog(B) / N_prog(B_min) >= 1 + DELTA
RULE_EXPONENT = {"fixed": 0.0, "sqrt": 0.5, "linear": 1.0}  # p of lr(B) = lr0 (B / b0)^p


def param(default, help: str, choices=None):
    """A config field whose help text (and choices) the command line reads from its metadata."""
    meta = {"help": help} if choices is None else {"help": help, "choices": tuple(choices)}
    return field(default=default, metadata=meta)


def option(default, help: str, **argparse_kw):
    """A config field whose flag argparse cannot derive from its type (an optional path, a
    repeated flag, a positional argument): argparse_kw says how (type, nargs, const, metavar,
    action; positional=True for an argument without --)."""
    return field(default=default, metadata={"help": help, "argparse": argparse_kw})


NUMBER_OR_NONE = "a number or none"  # an `option` type: a float, or None for 'none'


def require(ok: bool, name: str, allowed: str, value) -> None:
    """Raise ValueError('<name> must be <allowed> (got <value>)') unless ok."""
    if not ok:
        raise ValueError(f"{name} must be {allowed} (got {value!r})")


def finite(x) -> bool:
    """A real number (numpy's included, bool excluded) that is neither inf nor nan."""
    return isinstance(x, numbers.Real) and not _boolean(x) and math.isfinite(x)


def _boolean(x) -> bool:
    return isinstance(x, bool) or type(x).__name__ == "bool_"


def require_positive(name: str, value) -> None:
    require(finite(value) and value > 0, name, "a finite number > 0", value)


def require_fraction(name: str, value) -> None:
    require(finite(value) and 0 < value < 1, name, "in (0, 1)", value)


def require_int(name: str, value, lo: int = 1) -> None:
    ok = isinstance(value, numbers.Integral) and not _boolean(value) and value >= lo
    require(ok, name, f"an integer >= {lo}", value)


def require_choice(name: str, value, choices) -> None:
    require(value in choices, name, "one of " + ", ".join(choices), value)


def scaled_lr(lr0, batch, b0, p):
    """The learning-rate rule lr(B) = lr0 (B / b0)^p, written here once: the optimizer's
    (`OptimConfig.lr`), the engine's float checks and the planner's rule read from logs."""
    return lr0 * (batch / b0) ** p


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

    @property
    def exponent(self) -> float:
        """p of the rule lr(B) = lr0 (B / b0)^p: 0, 1/2, 1 for fixed, sqrt, linear."""
        return RULE_EXPONENT[self.lr_rule]

    def lr(self, lr0, batch):
        """The rule's learning rate at batch: lr0 (batch / b0)^p."""
        return scaled_lr(lr0, batch, self.b0, self.exponent)

    def lr_grid(self, batches, lr0s) -> list:
        """lr_BxL[i][j] = lr(lr0s[j], batches[i]) as nested lists (np.array() them)."""
        return [[self.lr(lr0, b) for lr0 in lr0s] for b in batches]


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
        for name, flag in (("batches", "batches"), ("lr0s", "lr0")):
            v = getattr(self, name)
            ok = hasattr(v, "__len__") and not isinstance(v, (str, bytes, dict)) and len(v) > 0
            require(ok, flag, "a non-empty list", v)
        for b in self.batches:
            require_int("batch", b)
        require(len(set(self.batches)) == len(self.batches), "batches", "distinct values",
                self.batches)
        for lr in self.lr0s:
            require_positive("lr0", lr)
        require(len(set(self.lr0s)) == len(self.lr0s), "lr0", "distinct values", self.lr0s)
        require_int("seeds", self.seeds)
        require(self.seeds < 2**31, "seeds", "< 2^31", self.seeds)
        require_int("budget", self.budget)
        require(self.budget >= max(self.batches), "budget", f">= the largest batch "
                f"({max(self.batches)})", self.budget)
        require(self.budget < 2**31, "budget", "< 2^31 samples", self.budget)
        require_int("seed", self.seed, lo=0)
        # PRNGKey keeps 32 bits of the seed: 2^32 would silently repeat seed 0
        require(self.seed < 2**32, "seed", "an integer in [0, 2^32 - 1]", self.seed)
        require_int("n_ckpt", self.n_ckpt)
        # at most one checkpoint per update: more would change no number, only hold
        # n_ckpt slots per run in a traced-length program (10^7 of them: gigabytes)
        object.__setattr__(self, "n_ckpt", min(int(self.n_ckpt),
                                               int(self.budget) // int(min(self.batches))))
        # numpy numbers (np.int64(8), np.float32) are welcome and stored as Python numbers,
        # so configuration keys, JSON and hashes are the same whichever was passed
        for name, kind in (("batches", int), ("lr0s", float)):
            object.__setattr__(self, name, tuple(kind(v) for v in getattr(self, name)))
        for name in ("seeds", "budget", "seed", "n_ckpt"):
            object.__setattr__(self, name, int(getattr(self, name)))


def require_carry(carry: str) -> None:
    require(carry in CARRY_MODES, "carry", "one of " + ", ".join(CARRY_MODES), carry)


# ------------------------------------------------------------------- two-stage batch schedules

def switch_updates(switch: int, b1: int) -> int:
    """n1: whole updates at batch b1 before the switch (rounded down to a multiple of b1)."""
    return int(switch) // int(b1)


def stage_steps(b1: int, b2: int, switch: int, budget: int) -> tuple:
    """(n1, n2): updates at batch b1 and at batch b2 within the sample budget."""
    require_int("batch1", b1)
    require_int("batch2", b2)
    require(isinstance(switch, numbers.Integral) and 0 <= switch <= budget, "switch",
            f"an integer number of samples in [0, budget={budget}]", switch)
    n1 = switch_updates(switch, b1)
    n2 = (budget - n1 * b1) // b2
    require(n1 + n2 >= 1, "budget", f">= one update (b1={b1}, b2={b2})", budget)
    return n1, n2


@dataclass(frozen=True)
class Schedule:
    """Batch1 for the first `switch` samples (rounded down to whole updates), then batch2."""
    batch1: int
    batch2: int
    switch: int

    def __post_init__(self):
        require_int("batch1", self.batch1)
        require_int("batch2", self.batch2)
        require_int("switch", self.switch, lo=0)
