"""Values valid in their range but wrong in the simulation's float type, refused before simulating.

A sweep runs in float32 unless x64 is on. `--beta2 0.99999999` is in [0, 1), but rounds to 1 in
float32, so Adam's second moment never moves and every run is censored; `--b0 1e-300` is > 0,
but the scaled learning rate lr0 (B / b0)^p overflows to inf. `check(...)` works out what the
simulation will compute from the configuration (every batch's learning rate, Adam's betas and
eps after the square-root companions, each model field and its square, a nested config's
fields too) in that type and raises `Refused`, one line naming the parameter, where a value
would become inf, 0 or 1.

The rule for zero: a value given as 0 is exactly 0 in every type and is taken as given (where
its range allows it: `--eps 0`, no epsilon); a nonzero value that rounds to 0 (`--eps 1e-300`
in float32) is refused, as it would silently be another value than the one asked for.
"""
from dataclasses import fields, is_dataclass
import math

import jax
import numpy as np

from twoclock.atomic import Refused
from twoclock.scaling import companions


def dtype():
    """The simulation's float type: float64 with x64 on, else float32."""
    return np.float64 if jax.config.jax_enable_x64 else np.float32


def _cast(v, dt):
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return dt(v)


def _lr(opt, lr0: float, batch) -> float:
    """The rule's learning rate at batch in Python floats (inf where it overflows)."""
    try:
        return opt.lr(lr0, batch)  # (OptimConfig holds b0 > 0)
    except OverflowError:
        return math.inf


def check(model_cfg, opt, batches, lr0s) -> None:
    """Refused unless every derived quantity is finite, and nonzero where it should be, in the
    simulation's float type (see the module's docstring)."""
    dt = dtype()
    kind = np.dtype(dt).name
    hint = "" if dt is np.float64 else "; --x64 simulates in float64"

    def finite(label: str, v, dt=dt, why="the simulation's type", hint=hint) -> None:
        x = _cast(v, dt)
        name = np.dtype(dt).name
        if not np.isfinite(x) or (v != 0 and x == 0):
            raise Refused(f"{label} must be finite, and nonzero unless given as 0, in {name}, "
                          f"{why} (got {v!r}, which is {float(x)!r} in {name}){hint}")

    p = opt.exponent
    for b in batches:
        for lr0 in lr0s:
            lr = _lr(opt, lr0, b)
            # the engine hands every lane its learning rate in float32, with --x64 too
            finite(f"the learning rate at batch {b} (lr0 {lr0:g} x ({b} / b0 {opt.b0:g})^{p:g})",
                   lr, np.float32, "the type the engine passes learning rates in", "")
    if opt.name == "adam":
        for b in batches:
            b1, b2, eps = companions(opt, b)
            for name, beta in (("beta1", b1), ("beta2", b2)):
                if beta > 0 and not _cast(beta, dt) < 1:
                    at = f" (at batch {b}, after the --malladi companions)" if opt.malladi else ""
                    raise Refused(f"{name} must round below 1 in {kind}, the simulation's "
                                  f"type{at}: 1 - {name} = {1 - beta:.3g} is below its "
                                  f"resolution {np.finfo(dt).epsneg:.3g} (got {beta!r}){hint}")
            finite(f"eps (at batch {b})" if opt.malladi else "eps", eps) if eps else None
    if opt.name == "momentum" and not _cast(opt.momentum, dt) < 1:
        raise Refused(f"momentum must round below 1 in {kind} (got {opt.momentum!r}){hint}")
    for name, v in _floats(model_cfg):
        if v != 0:
            finite(name, v)
            finite(f"{name}^2 (a variance, or a square the model computes)", v * v)


def _floats(cfg, prefix: str = ""):
    """(name, value) of every float field, a nested config's as prefix_field (its flag's
    spelling: warmup_lr for --warmup-lr)."""
    for f in fields(cfg):
        v = getattr(cfg, f.name)
        if is_dataclass(v) and not isinstance(v, type):
            yield from _floats(v, f"{prefix}{f.name}_")
        elif isinstance(v, float):
            yield prefix + f.name, v
