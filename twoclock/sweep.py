"""The sweep engine: batch x lr0 x seed as one jit-compiled, vmapped program per scan length.

A run's scan length is budget // B updates, so runs are grouped by length: all lanes of a
group (lr0 x seed, and every batch with that length for models whose batch is a traced
scalar) run as one `jax.jit(jax.vmap(run))`. Every batch and lr0 sees the same seeds.
"""
from dataclasses import dataclass
import sys
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from twoclock.config import OptimConfig, SweepConfig
from twoclock.scaling import lr_for_batch


@dataclass(frozen=True)
class ModelSpec:
    """How the engine builds runs of a model.

    make_run(model_cfg, opt, n_steps, n_ckpt, batch) -> run(batch, lr, key) -> Trace.
    static_batch: the batch sets array shapes, so each batch compiles its own program.
    """
    name: str
    make_run: Callable
    static_batch: bool
    unit: str = "samples"
    # CLI hooks: add_args(argparse group) adds model flags; config_from_args(ns) -> model_cfg
    add_args: Callable | None = None
    config_from_args: Callable | None = None


MODELS: dict = {}


def register(spec: ModelSpec) -> None:
    MODELS[spec.name] = spec


@dataclass
class SweepResult:
    """Per-(batch, lr0, seed) first crossings, in samples (0 = never), and checkpoints.

    prog_n / fail_n / div_n / prog_t: int64 [B, L, S]; extra[name]: [B, L, S];
    ckpt[b][name]: [L, S, C_b] (checkpoint counts differ between batches).
    """
    batches: tuple
    lr0s: tuple
    lrs_BxL: np.ndarray
    n_steps_B: np.ndarray
    prog_n: np.ndarray
    fail_n: np.ndarray
    div_n: np.ndarray
    prog_t: np.ndarray
    extra: dict
    ckpt: list
    seconds: float
    padded_fraction: float  # scanned-but-unused updates / useful updates


def seed_keys(seed: int, n_seeds: int) -> jax.Array:
    base = jax.random.PRNGKey(seed)
    return jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.arange(n_seeds))


def n_steps_for(budget: int, batch: int) -> int:
    return budget // batch


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def run_sweep(model: str, model_cfg, opt: OptimConfig, sweep: SweepConfig,
              quiet: bool = False) -> SweepResult:
    """Run the whole grid; one compiled program per distinct scan length (or batch)."""
    spec = MODELS[model]
    batches, lr0s, S = tuple(sweep.batches), tuple(sweep.lr0s), sweep.seeds
    nB, nL = len(batches), len(lr0s)
    lrs_BxL = np.array([[lr_for_batch(lr0, b, opt.b0, opt.lr_rule) for lr0 in lr0s]
                        for b in batches])
    n_steps_B = np.array([n_steps_for(sweep.budget, b) for b in batches])
    keys_S = seed_keys(sweep.seed, S)

    groups: dict = {}
    for i, b in enumerate(batches):
        gkey = (n_steps_B[i], b if spec.static_batch else None)
        groups.setdefault(gkey, []).append(i)

    shape = (nB, nL, S)
    out = {k: np.zeros(shape, np.int64) for k in ("prog_n", "fail_n", "div_n", "prog_t")}
    extra: dict = {}
    ckpt: list = [None] * nB
    scanned = useful = 0
    t_start = time.perf_counter()
    for (n_steps, static_b), idx in groups.items():
        t0 = time.perf_counter()
        run = spec.make_run(model_cfg, opt, int(n_steps), sweep.n_ckpt, static_b)
        # lanes ordered (batch in group, lr0, seed)
        g = len(idx)
        batch_N = np.repeat([batches[i] for i in idx], nL * S).astype(np.float32)
        lr_N = np.repeat(lrs_BxL[idx].reshape(-1), S).astype(np.float32)
        key_N = jnp.tile(keys_S, (g * nL, 1))
        tr = jax.jit(jax.vmap(run))(batch_N, lr_N, key_N)
        tr = jax.device_get(tr)
        every = int(np.ceil(n_steps / sweep.n_ckpt))
        scanned += g * nL * S * every * int(np.ceil(n_steps / every))
        useful += g * nL * S * int(n_steps)
        for name, field in (("prog_n", tr.prog_n), ("fail_n", tr.fail_n),
                            ("div_n", tr.div_n), ("prog_t", tr.prog_t)):
            out[name][idx] = np.asarray(field).reshape(g, nL, S)
        for name, v in tr.extra.items():
            extra.setdefault(name, np.zeros(shape, np.asarray(v).dtype))[idx] = \
                np.asarray(v).reshape(g, nL, S)
        for j, i in enumerate(idx):
            ckpt[i] = {k: np.asarray(v).reshape(g, nL, S, -1)[j] for k, v in tr.ckpt.items()}
        bs = ",".join(str(batches[i]) for i in idx)
        _log(f"[{model}] batch {bs}: {g * nL * S} runs x {n_steps} updates "
             f"in {time.perf_counter() - t0:.1f} s", quiet)
    return SweepResult(batches, lr0s, lrs_BxL, n_steps_B, out["prog_n"], out["fail_n"],
                       out["div_n"], out["prog_t"], extra, ckpt,
                       time.perf_counter() - t_start, scanned / max(useful, 1) - 1.0)
