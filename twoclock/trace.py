"""What one simulated run returns: first crossings and checkpointed metrics.

Every model's `make_run` returns a pure function whose output is a `Trace`, so the
sweep engine, the clocks and the result files never need to know which model ran.
"""
import math
from typing import NamedTuple

import jax


class Trace(NamedTuple):
    """First crossings of one run (NEVER, 0: not within the budget; `twoclock.clock`) and
    checkpointed metrics.

    prog_t / fail_t / div_t are 1-based update indices, fractional where the clock's margin
    is interpolated between updates (`Clock.fraction`, in `twoclock.engine.stages.crossed`);
    prog_n / fail_n / div_n are the samples consumed by then (batch * t for a constant batch).
    """
    prog_t: jax.Array  # float []
    fail_t: jax.Array  # float []
    div_t: jax.Array   # float []: first update whose metrics are non-finite (a whole update)
    prog_n: jax.Array  # float []
    fail_n: jax.Array  # float []
    div_n: jax.Array   # float []
    extra: dict        # model-specific first crossings, e.g. {"collapse_n": float []}
    ckpt: dict         # metrics at checkpoints, each [n_ckpt]; always has "samples"


def checkpoint_every(n_steps: int, n_ckpt: int) -> int:
    """Updates between checkpoints so that a run of n_steps records at most n_ckpt of them."""
    return max(1, math.ceil(n_steps / n_ckpt))
