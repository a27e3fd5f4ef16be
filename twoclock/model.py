"""The one interface every model implements: a NamedTuple of pure functions, as optax does.

A model turns (config, optimizer, batch, key) into `Dynamics`: an optax transform per learning
rate, the start state, the noise of a chunk of updates, and `advance`, which runs the chunk and
gives, per update, each clock's margin (>= 0: its condition held). The engine (`twoclock.engine.stages`) turns these
into first crossings, checkpoints and a `Trace`, for a constant batch (one stage) and for a
schedule (two stages) alike, so neither the clocks nor the result files depend on the model.
"""
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import optax

from twoclock.clock import NEVER

CLOCKS = ("prog", "fail", "div")  # every model's clocks; a model may add its own (`extra_clocks`)


def initial_clocks(model_extra: tuple = ()) -> dict:
    """Every clock at NEVER (0: not yet crossed, `twoclock.clock`): the `clocks` of a model's
    start `RunState`."""
    never = jnp.full((), NEVER, jnp.result_type(float))
    return {name: never for name in CLOCKS + tuple(model_extra)}


def initial_margins(margin0: dict) -> dict:
    """The `margins` of a model's start `RunState`: {clock: float []} from {clock: the margin
    at the start state, or None where the model does not know it (NaN)}."""
    dtype = jnp.result_type(float)
    return {name: jnp.asarray(jnp.nan if m is None else m, dtype) for name, m in margin0.items()}


class RunState(NamedTuple):
    """One run's state between updates."""
    params: Any  # any pytree
    opt_state: optax.OptState
    # clock name -> float []: the first crossing in (fractional, 1-based) updates, NEVER = 0
    clocks: dict
    aux: Any = ()  # model-specific running quantities (the bandit's peak accuracy)
    # margin clock name -> float []: its margin after the last update run (NaN: unknown)
    margins: dict | None = None


class Dynamics(NamedTuple):
    """A model at one (batch, key): its noise stream, and the pure functions of a run on it.

    Runs that differ only in learning rate share the stream: the engine draws each chunk's
    noise once and hands it to every learning rate's `advance`.
    draw(ts_T) -> noise: the randomness of updates ts_T (1-based global indices; update t's is
    drawn from fold_in(key, t)), a pytree with leading axis T.
    advance(tx, state, ts_T, noise) -> (state, hits, metrics) runs those updates; hits
    {clock: [T]} say after which updates each clock's condition held; metrics {name: []}
    describe the state after ts_T[-1].

    A clock's hits are its margin, float [T], where its condition is a continuous metric
    against a threshold: the condition holds iff margin >= 0 (loss <= target: target - loss;
    acc >= target: acc - target). The engine then interpolates the first crossing linearly
    between updates: with m_{t-1} < 0 <= m_t, the clock is t - 1 + m_{t-1} / (m_{t-1} - m_t)
    updates, so it does not sit on the update grid. Such a clock needs its margin at the start
    in init's `RunState.margins` (`initial_margins`; NaN where unknown: the crossing is then
    at the update itself), and the engine carries it, across chunks and stages. A condition
    with no continuous metric (divergence: non-finite numbers) gives bool [T] and crosses at
    whole updates.
    """
    optimizer: Callable[[Any], optax.GradientTransformation]  # lr -> transform
    init: Callable[[optax.GradientTransformation], RunState]
    draw: Callable
    advance: Callable


class Model(NamedTuple):
    """Everything the engine, the studies, the command line and the result files need from a
    model: code outside `twoclock/models/` reads these fields and never the model's name.

    dynamics(cfg, opt, batch) -> dyn(batch, key) -> Dynamics. `batch` is a Python int where
    it sets array shapes (static_batch) and None otherwise; dyn's batch may be traced.
    predict(cfg, opt, sweep, res, runs, crit) adds the theory's predictions and any
    model-specific measurements to the result entries, in place.
    progress_target(cfg): the progress target on the scale of ckpt["progress_frac"] (None: the
    config's `target` is already on that scale).
    presets: named model-config overrides (a regime worth a name).
    phase_boundary(cfg, opt, batches, lr0s, budget): the theory's grid log(N_fail / N_prog)
    for the phase diagram, or None where the model's theory does not give one.
    prepare(cfg, store_root, log): make what dynamics needs and takes long (the policy's
    warm-up), caching it under store_root (None: no store); the engine calls it after its
    memory check, before compiling. prepare(None, store_root, None) only checks its cache
    folder (Refused), at start-up. None: nothing to prepare.
    knobs(cfg) -> (cfg', {name: float}): numbers of cfg that a compiled program takes as an
    argument instead of holding them as constants, so that sweeps of configs that differ only
    there share one program; cfg' is cfg with them at one fixed value, and the sweep's
    programs run dynamics(cfg', opt, batch)'s dyn(batch, key, knob) with knob {name: float32
    []}. dyn(batch, key) (no knob) runs cfg' as it is. None: no knobs.
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
    # XLA's quick CPU code generator gives this model's numbers bit for bit
    # (tests/engine/test_codegen.py), so a short sweep may use it (`twoclock.engine.layout`)
    quick_codegen_exact: bool = False
    title: str = ""  # a figure panel's title
    progress_target: Callable | None = None
    presets: Mapping = MappingProxyType({})
    phase_boundary: Callable | None = None
    prepare: Callable | None = None
    knobs: Callable | None = None


_SHAPES_ONLY = ContextVar("twoclock_shapes_only", default=False)


@contextmanager
def shapes_only():
    """While the engine only traces shapes (its estimate): a model may stand in for what its
    `prepare` has not made yet, as no number of that trace is used."""
    token = _SHAPES_ONLY.set(True)
    try:
        yield
    finally:
        _SHAPES_ONLY.reset(token)


def only_shapes() -> bool:
    return _SHAPES_ONLY.get()


def progress_target(model: Model, cfg) -> float:
    """The model's progress target on the scale of ckpt["progress_frac"]."""
    return float(cfg.target) if model.progress_target is None else model.progress_target(cfg)
