"""The one interface every model implements: a NamedTuple of pure functions, as optax does.

A model turns (config, optimizer, batch, lr, key) into `Dynamics`: an optax transform, the
start state, and `advance`, which runs a chunk of updates and says, per update, which clock's
condition held. The engine (`twoclock.stages`) turns these into first crossings, checkpoints
and a `Trace`, for a constant batch (one stage) and for a schedule (two stages) alike, so
neither the clocks nor the result files depend on the model.
"""
from typing import Any, Callable, NamedTuple

import jax
import optax

CLOCKS = ("prog", "fail", "div")  # every model's clocks; a model may add its own (`extra_clocks`)


class RunState(NamedTuple):
    """One run's state between updates."""
    params: jax.Array
    opt_state: optax.OptState
    clocks: dict  # clock name -> int32 []: first 1-based update whose condition held (0 = never)
    aux: Any = ()  # model-specific running quantities (the bandit's peak accuracy)


class Dynamics(NamedTuple):
    """A model at one (batch, lr, key): pure functions over its RunState.

    advance(state, ts_T) -> (state, hits, metrics) runs updates ts_T (1-based global indices,
    each drawing its randomness from fold_in(key, t)); hits {clock: bool [T]} say after which
    updates each clock's condition held; metrics {name: []} describe the state after ts_T[-1].
    """
    tx: optax.GradientTransformation
    init: Callable[[], RunState]
    advance: Callable


class Model(NamedTuple):
    """Everything the engine, the command line and the result files need from a model.

    dynamics(cfg, opt, batch) -> dyn(batch, lr, key) -> Dynamics. `batch` is a Python int
    where it sets array shapes (static_batch) and None otherwise; dyn's batch and lr may be
    traced. predict(cfg, opt, sweep, res, runs, crit) adds the theory's predictions and any
    model-specific measurements to the result entries, in place.
    """
    name: str
    config: type
    dynamics: Callable
    predict: Callable
    describe_batch: Callable  # (cfg, batch) -> dict of what a batch is made of
    default_sweep: dict       # batches, lr0s, seeds, budget of the headline
    static_batch: bool
    unit: str = "samples"
    batch_unit: str = "samples per update"
    extra_clocks: tuple = ()
    progress_label: str = "loss / initial loss"  # what ckpt["progress_frac"] measures
