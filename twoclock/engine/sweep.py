"""The sweep engine: batch x lr0 x seed as jit-compiled, vmapped programs, sharded over devices.

A run's scan length is budget // B updates, so runs are grouped by length: all lanes of a
group (lr0 x seed, and every batch with that length for models whose batch is a traced
scalar) run as one `jax.jit(jax.vmap(run))`. A group larger than `max_lanes` is split into
equal chunks; each chunk's lane axis is sharded over every visible device with a
NamedSharding, so the same code runs on one CPU, a GPU or many hosts (jax.distributed).
Finished chunks go to an optional results store, from which an interrupted sweep resumes.
Every batch and lr0 sees the same seeds. Before compiling, the sweep's memory and time are
estimated from one traced chunk of updates, and a sweep that cannot fit is refused.
"""
from contextlib import nullcontext
from dataclasses import asdict
import math
import os
import sys
import time
from typing import Callable, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from twoclock.atomic import Refused, one_line
from twoclock.config import OptimConfig, SweepConfig, require, require_choice, require_int
from twoclock.engine import codegen as codegens, dtypes
from twoclock.engine.estimate import Estimate, estimate
from twoclock.engine.layout import groups, listed, n_steps_for
from twoclock.engine.keys import seed_keys
from twoclock.engine.runtime import check_devices, fast_rng
from twoclock.model import Model, shapes_only
from twoclock.engine.programs import kept_program
from twoclock.engine.result import SweepResult
from twoclock.engine.stages import checkpoints
from twoclock.engine.store import CorruptChunk
from twoclock.trace import checkpoint_every

DEFAULT_MAX_LANES = 16384


def length_args(model: Model, n_steps: int, n_ckpt: int) -> tuple:
    """The trailing arguments of `program` for runs of n_steps: none where the batch sets
    shapes, else the run length and the checkpoint interval."""
    if model.static_batch:
        return ()
    # NumPy scalars: jnp.int32(n) would compile and run a conversion program per value
    return np.int32(n_steps), np.int32(checkpoint_every(n_steps, n_ckpt))


def lane_sharding() -> NamedSharding:
    """The leading (lane) axis split over every visible device (Auto axes: GSPMD partitions)."""
    return NamedSharding(Mesh(np.array(jax.devices()), ("grid",)), PartitionSpec("grid"))


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, file=sys.stderr, flush=True)


def _global(x: np.ndarray, sharding) -> jax.Array:
    """A lane-sharded global array; each process supplies its own shards (multi-host safe)."""
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def _fetch(tree):
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils
        tree = multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, quiet: bool):
    """A progress bar on a terminal; otherwise nothing (and tqdm, 0.03 s to import, unloaded)."""
    if quiet or not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, unit="upd", unit_scale=True, dynamic_ncols=True, leave=False,
                desc="sweep")


def check_fits(model: Model, model_cfg, opt, sweep, max_lanes: int, n_dev: int,
               analysis_bytes: int = 0) -> Estimate:
    """The estimate; Refused (with it) if the sweep cannot fit in memory, naming the
    max_lanes (--max-lanes) that would make it fit where one would."""
    return _fitted(model, model_cfg, opt, sweep, max_lanes, n_dev, analysis_bytes)[0]


def _fitted(model: Model, model_cfg, opt, sweep, max_lanes: int, n_dev: int,
            analysis_bytes: int = 0) -> tuple:
    """check_fits, and the layout's groups it estimated."""
    grouped = groups(model, sweep, max_lanes, n_dev)
    est = estimate(model, model_cfg, opt, sweep, grouped, n_dev, analysis_bytes)
    if est.fits():
        return est, grouped
    hint = "fewer seeds, batches, lr0s or checkpoints (n_ckpt)"
    per_lane = est.chunk_bytes / max(g.lanes for g in grouped)
    host = est.result_bytes + est.analysis_bytes + est.process_bytes + est.compile_bytes
    lanes = n_dev * int((est.limit_bytes - host - est.program_bytes if est.device_bytes is None
                         else est.device_bytes) / per_lane / n_dev)
    if lanes >= n_dev and est.fits(int(lanes * per_lane)):
        hint = f"max_lanes (--max-lanes) {lanes} or less"
    raise Refused(f"the sweep cannot fit in memory: {est.line()}; use {hint}")


def _agreed(flags: np.ndarray) -> np.ndarray:
    """Process 0's flags on every process (one decision per chunk in a multi-process run)."""
    if jax.process_count() == 1:
        return flags
    from jax.experimental import multihost_utils  # here: only multi-process runs need it
    return np.asarray(multihost_utils.broadcast_one_to_all(flags))


def _all(ok: bool) -> bool:
    """True only if every process says ok."""
    if jax.process_count() == 1:
        return ok
    from jax.experimental import multihost_utils  # here: only multi-process runs need it
    return bool(np.all(multihost_utils.process_allgather(np.array([ok]))))


def run_sweep(model: Model, model_cfg, opt: OptimConfig, sweep: SweepConfig, quiet: bool = False,
              store=None, resume: bool = False, max_lanes: int = DEFAULT_MAX_LANES,
              on_chunk: Callable | None = None, analysis_bytes: int = 0,
              codegen: str = "auto", keep: Callable | None = None) -> SweepResult:
    """Run the whole grid and return every per-seed clock.

    Before compiling, the memory and time are estimated (shown unless quiet); a grid that
    cannot fit, with analysis_bytes more for the caller's analysis of the results (e.g.
    results.analysis_bytes), raises Refused (a ValueError). store: a
    twoclock.engine.store.Store; finished chunks are saved there as they complete. A complete store
    (identical configuration and code) is reused outright; a partial one only with
    resume=True, and otherwise recomputed (its chunks are replaced, never deleted). A chunk
    that fails its identity or checksum is reported and recomputed. on_chunk(i) runs after
    chunk i is saved. codegen: XLA's code generator on the CPU, "auto" (the quicker-compiling
    one for a short sweep of a model whose numbers it leaves unchanged), "quick" or "fused"
    (`twoclock.engine.layout`). keep(label, clocks, config, store) receives the clocks once
    simulated, e.g. a script's `twoclock.cli.rescue.Rescue.keep`.
    """
    require(isinstance(model, Model), "model", "a Model (twoclock.models.MODELS[name])",
            type(model).__name__)
    check_devices()  # JAX_PLATFORMS=gpu without a GPU: one line, before anything else
    fast_rng()
    require(isinstance(model_cfg, model.config), "model_cfg", f"a {model.config.__name__}",
            type(model_cfg).__name__)
    require(isinstance(opt, OptimConfig), "opt", "an OptimConfig", type(opt).__name__)
    require(isinstance(sweep, SweepConfig), "sweep", "a SweepConfig", type(sweep).__name__)
    require_int("max_lanes", max_lanes)
    require_choice("codegen", codegen, codegens.CODEGENS)
    dtypes.check(model_cfg, opt, sweep.batches, sweep.lr0s)  # beta2 that rounds to 1, ...
    # configs that differ only in the model's knobs share their programs
    program_cfg, knob = (model_cfg, None) if model.knobs is None else model.knobs(model_cfg)
    with shapes_only():  # refused before the model prepares anything (the policy's warm-up)
        est, grouped = _fitted(model, program_cfg, opt, sweep, max_lanes, jax.device_count(),
                               analysis_bytes)
    run = _Settings(model, program_cfg, knob, opt, sweep, listed(grouped),
                    codegens.choose(codegen, model, est), quiet, resume)
    _log(f"[{model.name}] {est.line()} ({run.codegen} codegen)", quiet)
    if model.prepare is not None:  # its caches beside the store's chunks (no store: none)
        model.prepare(model_cfg, None if store is None else os.path.dirname(store.path),
                      lambda m: _log(m, quiet))
    config = {"model": model.name, "model_cfg": model_cfg, "optimizer": opt, "sweep": sweep}
    progress = _Progress(store)
    try:
        with (store.lock(lambda m: _log(m, False)) if store is not None
              and jax.process_index() == 0 else nullcontext()):
            res = _run(run, store, on_chunk, progress)
    except BaseException:  # Ctrl-C, SIGTERM, a failure: hand over the chunks that finished
        if keep is not None and progress.finished:
            keep(f"run_sweep {model.name} (interrupted)", progress.clocks(sweep), config,
                 progress.store_path())
        raise
    if keep is not None:
        keep(f"run_sweep {model.name}", {k: getattr(res, k) for k in
                                         ("batches", "lr0s", "lrs_BxL", "prog_n", "fail_n",
                                          "div_n", "prog_t", "extra")},
             config, progress.store_path())
    return res


class _Settings(NamedTuple):
    """What run_sweep fixed before running: the model, its grid, its chunks, its compiler."""
    model: Model
    model_cfg: object  # as its programs see it (`Model.knobs`)
    knob: dict | None  # the programs' knobs, or None
    opt: OptimConfig
    sweep: SweepConfig
    chunks: list
    codegen: str  # "quick" or "fused" (codegen.choose)
    quiet: bool
    resume: bool


class _Progress:
    """What a sweep has finished so far, and whether its store still takes chunks."""

    def __init__(self, store):
        self.store, self.store_ok = store, store is not None
        self.finished, self.total = [], 0  # [(chunk, arrays)], chunks in the sweep

    def store_path(self):
        return self.store.path if self.store_ok else None

    def save(self, ci: int, out: dict, lanes: dict) -> None:
        """store.save, unless the store failed before; a store that fails now (a full disk,
        a read-only folder) is switched off in one line and the sweep goes on in memory."""
        if not self.store_ok:
            return
        try:
            self.store.save(ci, out, lanes)
        except OSError as e:
            self.store_ok = False
            _log(f"store {self.store.path}: cannot write chunk {ci} ({one_line(e)}); the store "
                 "is off from here, the chunks stay in memory for the JSON", False)

    def clocks(self, sweep) -> dict:
        """The finished chunks' clocks (no checkpoints): per chunk its lanes (streams are
        (batch in group, seed), each with every lr0) and [streams, lr0] arrays."""
        return {"batches": sweep.batches, "lr0s": sweep.lr0s, "chunks_total": self.total,
                "chunks_finished": len(self.finished),
                "chunks": [{"lanes": asdict(c), **{k: v for k, v in out.items()
                                                   if not k.startswith("ckpt/")}}
                           for c, out in self.finished]}


def _reusable(run: _Settings, store) -> set:
    """The chunks a store holds that this sweep reuses: all of them when it is complete, a
    partial sweep's only with resume."""
    if store is None:
        return set()
    n = len(run.chunks)
    on_disk = np.zeros(n, bool)
    on_disk[[i for i in store.finished() if i < n]] = True
    done = set(np.flatnonzero(_agreed(on_disk)).tolist())
    if done and not run.resume and len(done) < n:
        _log(f"store {store.path}: {len(done)}/{n} chunks of an interrupted sweep;"
             " recomputing them (pass --resume to reuse them)", run.quiet)
        return set()
    if done:
        _log(f"store {store.path}: reusing {len(done)}/{n} finished chunks", run.quiet)
    return done


def _simulate(run: _Settings, c, lrs_BxL, keys_S) -> dict:
    """One chunk's clocks, extras and checkpoints, [streams, L, ...] (padding dropped)."""
    sweep, batches, S = run.sweep, run.sweep.batches, run.sweep.seeds
    # a traced batch: one program for every run length (the length is an argument)
    fn = kept_program(run.model, run.model_cfg, run.opt, c.n_steps, sweep.n_ckpt,
                      c.static_batch, run.codegen, run.knob is not None)
    g = len(c.batch_idx)
    batch_N = np.repeat([batches[i] for i in c.batch_idx], S).astype(np.float32)
    lr_NxL = np.repeat(lrs_BxL[list(c.batch_idx)], S, axis=0).astype(np.float32)
    key_N = np.tile(keys_S, (g, 1))
    lane = np.arange(c.start, c.start + c.lanes).clip(max=c.stop - 1)  # pad: repeat last
    lanes_on = lane_sharding()
    args = [_global(a[lane], lanes_on) for a in (batch_N, lr_NxL, key_N)]
    # in the simulation's float type (float64 with x64), as a config's number would be: one
    # beyond its range is inf there, as in a program that holds it as a constant
    real = jax.dtypes.canonicalize_dtype(np.float64)
    with np.errstate(over="ignore"):
        knob = () if run.knob is None else ({k: np.asarray(v, real)
                                             for k, v in run.knob.items()},)
    tr = _fetch(fn(*args, *length_args(run.model, c.n_steps, sweep.n_ckpt), *knob))
    n = c.stop - c.start
    out = {name: np.asarray(getattr(tr, name))[:n]  # [streams, L, ...]
           for name in ("prog_n", "fail_n", "div_n", "prog_t")}
    out.update({f"extra/{k}": np.asarray(v)[:n] for k, v in tr.extra.items()})
    C = checkpoints(c.n_steps, checkpoint_every(c.n_steps, sweep.n_ckpt))
    out.update({f"ckpt/{k}": np.asarray(v)[:n, ..., :C] for k, v in tr.ckpt.items()})
    return out


def _run(run: _Settings, store, on_chunk, progress=None) -> SweepResult:
    progress = progress or _Progress(store)
    sweep, chunks = run.sweep, run.chunks
    batches, lr0s, S = tuple(sweep.batches), tuple(sweep.lr0s), sweep.seeds
    nL = len(lr0s)
    lrs_BxL = np.array(run.opt.lr_grid(batches, lr0s))
    keys_S = np.asarray(seed_keys(sweep.seed, S))
    progress.total = len(chunks)
    done = _reusable(run, store)

    flat: dict = {}  # group key -> {name: [lanes, ...]}
    scanned = useful = reused = 0
    t_start = time.perf_counter()
    bar = _progress(sum((c.stop - c.start) * nL * c.n_steps for c in chunks), run.quiet)
    for ci, c in enumerate(chunks):
        every = checkpoint_every(c.n_steps, sweep.n_ckpt)
        scanned += c.lanes * nL * every * math.ceil(c.n_steps / every)
        useful += (c.stop - c.start) * nL * c.n_steps
        out = None
        if ci in done:
            try:
                out = store.load(ci, asdict(c))
            except CorruptChunk as e:
                _log(f"store: {e}; recomputing it", False)
            if not _all(out is not None):  # every process recomputes it, or none
                out = None
            reused += out is not None
        if out is None:
            t0 = time.perf_counter()
            out = _simulate(run, c, lrs_BxL, keys_S)
            if store is not None and jax.process_index() == 0:  # one writer on a shared disk
                progress.save(ci, out, asdict(c))
            progress.finished.append((c, out))  # before the line: a signal may follow it
            bs = ",".join(str(batches[i]) for i in c.batch_idx)
            if not sys.stderr.isatty():  # a terminal has the progress bar instead
                _log(f"[{run.model.name}] batch {bs}: streams {c.start}-{c.stop} of "
                     f"{len(c.batch_idx) * S} x {nL} lr0 x {c.n_steps} updates in "
                     f"{time.perf_counter() - t0:.1f} s", run.quiet)
        else:
            progress.finished.append((c, out))
        for k, v in out.items():
            flat.setdefault((c.n_steps, c.static_batch), {}).setdefault(k, []).append(v)
        bar.update((c.stop - c.start) * nL * c.n_steps)
        if on_chunk is not None:
            on_chunk(ci)
    bar.close()
    return _assemble(run, flat, lrs_BxL, time.perf_counter() - t_start,
                     scanned / max(useful, 1) - 1.0, reused)


def _assemble(run: _Settings, flat: dict, lrs_BxL, seconds: float, padded: float,
              reused: int) -> SweepResult:
    """The chunks' arrays, per group, as one [batch, lr0, seed] result."""
    batches, lr0s, S = tuple(run.sweep.batches), tuple(run.sweep.lr0s), run.sweep.seeds
    nB, nL = len(batches), len(lr0s)
    shape = (nB, nL, S)
    res = {k: np.zeros(shape, np.float64) for k in ("prog_n", "fail_n", "div_n", "prog_t")}
    extra: dict = {}
    ckpt: list = [None] * nB
    seen = set()
    for c in run.chunks:
        gkey = (c.n_steps, c.static_batch)
        if gkey in seen:
            continue
        seen.add(gkey)
        idx, g = list(c.batch_idx), len(c.batch_idx)
        # streams are (batch in group, seed), each with every lr0: to [g, lr0, seed, ...]
        arrays = {k: np.swapaxes(np.concatenate(v).reshape((g, S, nL) + v[0].shape[2:]), 1, 2)
                  for k, v in flat[gkey].items()}
        for k, v in arrays.items():
            if k in res:
                res[k][idx] = v
            elif k.startswith("extra/"):
                extra.setdefault(k[6:], np.zeros(shape, v.dtype))[idx] = v
        for j, i in enumerate(idx):
            ckpt[i] = {k[5:]: v[j] for k, v in arrays.items() if k.startswith("ckpt/")}
    n_steps_B = np.array([n_steps_for(run.sweep.budget, b) for b in batches])
    return SweepResult(batches, lr0s, lrs_BxL, n_steps_B, res["prog_n"], res["fail_n"],
                       res["div_n"], res["prog_t"], extra, ckpt, seconds, padded,
                       reused_chunks=reused, codegen=run.codegen)
