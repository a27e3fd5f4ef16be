"""What a sweep will take, worked out before anything is compiled: its memory and its time.

One chunk of updates is traced (jax.make_jaxpr; nothing is compiled) as the program runs it:
where the batch sets the shapes, one checkpoint interval of each group's batch (its `every`
updates and what runs once per checkpoint, such as the policy's noise measurement); otherwise
one update of the largest batch (a traced-length program runs a chunk's work after every
update). Loops count as often as they run (`_runs`). Its outputs give each lane's clocks and
checkpoints; the bytes of its intermediates alive at once (a liveness walk of the program in
order, `_peak_bytes`) give the working set; the compile's own host memory goes by the program's
equations; the bytes of all its intermediates over a measured rate, with each matrix
product's multiply-adds and large constant operands over theirs, give the time. The sums run
over the layout's groups (every chunk of a group has one shape), so the estimate of 10^7
chunks takes what the estimate of one does.
"""
from contextlib import suppress
from dataclasses import dataclass, field
import math
from typing import NamedTuple

import jax
import numpy as np

from twoclock.config import OptimConfig, SweepConfig
from twoclock.engine.memory import held_bytes, memory_limit
from twoclock.engine.kept import Kept
from twoclock.engine.stages import checkpoints, constant_run, program_opt
from twoclock.model import Model
from twoclock.trace import checkpoint_every

# Bytes of intermediates of one lane's update (a noise stream at every lr0), per second per
# device: the quadratic headline's 0.376 s of updates on 2 CPU cores (its 288 runs and 1152
# run 0.376 and 1.42 s, predicted 0.375 and 1.50 s; the bandit's default run 0.33 s, predicted
# 0.21 s; the policy's 37.7 s, predicted 56.8 s; the policy study's cells 0.60-1.03 of their
# measured time: docs/performance.md). Elsewhere the progress bar's ETA is what counts.
BYTES_PER_SECOND = {"cpu": 3.7e10}
# A matrix product runs at its own rate: its multiply-adds (in bytes of its operands' type)
# per second per device, and, where one operand is a large constant of the program (the
# quadratic's --rotate D x D factors), that operand's bytes read from memory once per update
# of a chunk, whatever its lanes (they share it). Fitted on --rotate --dim 3000 at 1, 2 and 8
# lanes per device (4.9, 8.8 and 16.0 ms per chunk update; predicted 6.1, 7.6, 16.2) and
# checked on --dim 1500 (4.1 ms; predicted 4.2): docs/performance.md.
DOT_BYTES_PER_SECOND = {"cpu": 2.23e11}
CONST_READ_BYTES_PER_SECOND = {"cpu": 2.35e10}
LARGE_CONST_BYTES = 2**18  # a constant from this size is counted as the program's own


@dataclass(frozen=True)
class Estimate:
    """What a sweep will take, worked out from one traced update (nothing compiled)."""
    runs: int
    chunks: int
    run_updates: int
    chunk_bytes: int   # the largest chunk's working memory (all its devices together)
    result_bytes: int  # every run's clocks and checkpoints on the host, assembly included
    seconds: float | None
    limit_bytes: int   # memory available to the sweep
    device_bytes: int | None  # one accelerator's memory (None on the CPU)
    programs: int = 1  # distinct programs to compile (one per scan length, or per batch)
    analysis_bytes: int = 0  # what the caller's analysis of the results needs on the host
    program_bytes: int = 0  # the compiled programs' large constants (counted from 256 KiB)
    # what of limit_bytes the process holds already (memory.held_bytes); it moves from one
    # call to the next, so two estimates of one sweep compare equal without it
    process_bytes: int = field(default=0, compare=False)
    compile_bytes: int = 0  # the host memory compiling the largest program takes at its peak

    def fits(self, chunk_bytes: int | None = None) -> bool:
        c = (self.chunk_bytes if chunk_bytes is None else chunk_bytes) + self.program_bytes
        host = (self.result_bytes + self.analysis_bytes + self.process_bytes
                + self.compile_bytes)
        if self.device_bytes is None:  # CPU devices share the host's memory
            return host + c <= self.limit_bytes
        return host <= self.limit_bytes and c <= self.device_bytes

    def line(self) -> str:
        t = "" if self.seconds is None else f", ~{_duration(self.seconds)} of updates"
        consts = (f" + ~{_size(self.program_bytes)} program constants" if self.program_bytes
                  else "")
        consts += f" + ~{_size(self.compile_bytes)} compiling" if self.compile_bytes else ""
        held = f"~{_size(self.process_bytes)} this process + " if self.process_bytes else ""
        return (f"{self.runs} runs in {self.chunks} chunk{'s' * (self.chunks != 1)}, "
                f"{self.run_updates:.3g} "
                f"run-updates: memory {held}~{_size(self.result_bytes)} results + "
                f"{f'~{_size(self.analysis_bytes)} analysis + ' if self.analysis_bytes else ''}"
                f"~{_size(self.chunk_bytes)} per chunk{consts} (available {_size(self.limit_bytes)}"
                f"{'' if self.device_bytes is None else f', {_size(self.device_bytes)} per device'}"
                f"){t} + compiling {self.programs} program{'s' * (self.programs != 1)}")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024


def _duration(s: float) -> str:
    if s < 10:  # a short sweep's updates: "0.4 s", not "0 s"
        return f"{s:.2g} s"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _sub_jaxprs(eqn):
    """The jaxprs an equation runs (a scan's body, a cond's branches, a pjit's program)."""
    for p in eqn.params.values():
        for q in p if isinstance(p, (tuple, list)) else (p,):
            if hasattr(q, "jaxpr") and hasattr(q, "consts"):  # a ClosedJaxpr
                yield q.jaxpr
            elif type(q).__name__ == "Jaxpr":
                yield q


def _runs(e, subs: list):
    """What an equation's sub-programs cost as it runs them, from each one's cost (a number, or
    a tuple of numbers compared by its first): a scan's body as many times as its length, a
    cond's costliest branch (an upper bound: which branch runs is known only at run time), a
    while loop's body once (its trip count is too), anything else (a pjit, a custom
    derivative) once each."""
    if not subs:
        return 0
    if e.primitive.name == "cond":
        return max(subs)
    n = int(e.params.get("length", 1)) if e.primitive.name == "scan" else 1
    if isinstance(subs[0], tuple):
        return tuple(n * sum(parts) for parts in zip(*subs))
    return n * sum(subs)


def _walk_bytes(jaxpr) -> int:
    """Bytes of every intermediate a jaxpr makes as it runs, sub-programs included (`_runs`;
    an upper bound: XLA reuses and fuses buffers)."""
    total = 0
    for e in jaxpr.eqns:
        total += sum(int(np.prod(v.aval.shape)) * v.aval.dtype.itemsize for v in e.outvars
                     if hasattr(v.aval, "shape"))
        total += _runs(e, [_walk_bytes(q) for q in _sub_jaxprs(e)])
    return total


def _nbytes(v) -> int:
    return int(np.prod(v.aval.shape)) * v.aval.dtype.itemsize if hasattr(v.aval, "shape") else 0


def _literal(v) -> bool:
    return type(v).__name__ == "Literal"


# control flow whose sub-programs XLA compiles as computations of their own, with buffers of
# their own: their peaks add to the caller's (a pjit or a custom derivative is inlined)
CONTROL_FLOW = frozenset({"scan", "while", "cond"})


def _peak_bytes(jaxpr) -> int:
    """The working set of a jaxpr's intermediates, its equations run in order: a value lives
    from the equation that makes it to the last that reads it (the jaxpr's outputs to its
    end); an inlined sub-program holds its own peak (its outputs included) while its equation
    runs; a loop body's or a branch's peak is added whole (XLA gives those computations
    buffers of their own: against `memory_analysis()` this gives 93 and 196 MiB for
    the policy's update at B 64 and 512 where XLA's temporaries are 65 and 171 MiB). Its
    inputs are the caller's."""
    last = {}
    for i, e in enumerate(jaxpr.eqns):
        for v in e.invars:
            if not _literal(v):
                last[v] = i
    for v in jaxpr.outvars:
        if not _literal(v):
            last[v] = len(jaxpr.eqns)
    owned = set()
    live = peak = nested = 0
    for i, e in enumerate(jaxpr.eqns):
        subs = [_peak_bytes(q) for q in _sub_jaxprs(e)]
        if e.primitive.name in CONTROL_FLOW:
            nested += sum(subs)
            subs = []
        # an inlined sub-program's peak includes the outputs it makes
        peak = max(peak, live + max([sum(_nbytes(v) for v in e.outvars)] + subs))
        for v in e.outvars:
            if last.get(v, -1) > i:
                owned.add(v)
                live += _nbytes(v)
        for v in {v for v in e.invars if not _literal(v)}:
            if v in owned and last[v] == i:
                owned.discard(v)
                live -= _nbytes(v)
    return peak + nested


def _dot_bytes(jaxpr, large: frozenset = frozenset()) -> tuple[int, int]:
    """(multiply-adds, bytes of large-constant operands) of every dot_general a jaxpr runs
    (sub-programs included, `_runs`), the first in bytes of its operands' type: a matrix-vector
    product with a D x D constant (the quadratic's --rotate) makes only [D] intermediates but
    D^2 multiply-adds, which _walk_bytes would miss, and reads the D^2 constant. large: the
    (shape, dtype) of the program's large constants."""
    macs = read = 0
    for e in jaxpr.eqns:
        if e.primitive.name == "dot_general":
            (lc, _), _ = e.params["dimension_numbers"]
            lhs, out = e.invars[0].aval, e.outvars[0].aval
            contracted = int(np.prod([lhs.shape[i] for i in lc]))
            macs += int(np.prod(out.shape)) * contracted * lhs.dtype.itemsize
            read += sum(int(np.prod(v.aval.shape)) * v.aval.dtype.itemsize for v in e.invars
                        if (tuple(v.aval.shape), v.aval.dtype) in large)
        m, r = _runs(e, [_dot_bytes(q, large) for q in _sub_jaxprs(e)]) or (0, 0)
        macs, read = macs + m, read + r
    return macs, read


# the bytes of a program's constants (the quadratic's D x D rotation and noise factors) held at
# once while it is built and run: the host array, XLA's literal, the compiled program's copy,
# and the compilation cache's serialised program
CONST_COPIES = 4


# What compiling a program takes of the host's memory at its peak, by the equations of its traced
# update (sub-programs included): the resident memory a fresh process gains compiling its first
# program, on 2 CPU cores: 116 MiB for the quadratic (176 equations), 139-148 MiB for the bandit
# (656), 640-680 MiB for the policy (4606); later programs reuse it (the policy's four: 640,
# then +94, +24 and -2 MiB). docs/performance.md.
COMPILE_BASE_BYTES = 100 * 2**20
COMPILE_BYTES_PER_EQN = 0.12 * 2**20


def _n_eqns(jaxpr) -> int:
    return sum(1 + sum(_n_eqns(q) for q in _sub_jaxprs(e)) for e in jaxpr.eqns)


class _Traced(NamedTuple):
    """What one traced update (one lane, every lr0) costs: its intermediates' bytes (all, per
    update of its chunk, and the most alive at once), its products' multiply-adds and
    large-constant reads (per update), its constants, its output, its equations."""
    step: float
    live: int
    macs: float
    read: float
    consts: int
    per_ckpt: int
    clocks_bytes: int
    eqns: int


# the traces estimated before, so that a process estimating sweeps of one program (another lr
# rule, another value of the model's knobs) traces it once
TRACES = Kept(64)


def _trace(spec: Model, model_cfg, opt: OptimConfig, b: int, nL: int, every: int = 1) -> _Traced:
    key = (model_cfg, program_opt(opt), b, nL, every, jax.config.jax_enable_x64)
    return TRACES.get(spec, key, lambda: _traced(spec, model_cfg, opt, b, nL, every))


def _traced(spec: Model, model_cfg, opt: OptimConfig, b: int, nL: int, every: int) -> _Traced:
    """One checkpoint interval of `every` updates (one checkpoint), per update."""
    one = constant_run(spec, model_cfg, opt, every, 1, b if spec.static_batch else None)
    lr_L = np.full(nL, 1e-3, np.float32)  # a lane is one noise stream run at every lr0
    key = np.zeros(2, np.uint32)  # a raw key's shape; PRNGKey(0) would compile a program
    closed, out = jax.make_jaxpr(one, return_shape=True)(np.float32(b), lr_L, key)
    arrays = [np.asarray(c) for c in closed.consts if hasattr(c, "shape")]
    large = frozenset((c.shape, c.dtype) for c in arrays if c.nbytes >= LARGE_CONST_BYTES)
    macs, read = _dot_bytes(closed.jaxpr, large)
    per_ckpt = sum(a.dtype.itemsize * a.size for a in jax.tree.leaves(out.ckpt))  # C = 1
    return _Traced(_walk_bytes(closed.jaxpr) / every, _peak_bytes(closed.jaxpr), macs / every,
                   read / every, sum(int(c.nbytes) for c in arrays), per_ckpt,
                   sum(a.dtype.itemsize * a.size for a in jax.tree.leaves(out)) - per_ckpt,
                   _n_eqns(closed.jaxpr))


def estimate(spec: Model, model_cfg, opt: OptimConfig, sweep: SweepConfig, groups,
             n_dev: int, analysis_bytes: int = 0) -> Estimate:
    """Memory and time of a planned sweep (its `layout.groups`), from one traced update: of
    the largest batch, or, where the batch sets the shapes (static_batch), of each group's."""
    nL = len(sweep.lr0s)
    every = lambda g: checkpoint_every(g.n_steps, sweep.n_ckpt)
    if spec.static_batch:  # a program runs `every` updates, then a checkpoint's work
        traced = {(g.static_batch, every(g)): _trace(spec, model_cfg, opt, g.static_batch, nL,
                                                     every(g)) for g in groups}
    else:  # a traced-length program runs a checkpoint's work after every update
        traced = {None: _trace(spec, model_cfg, opt, max(sweep.batches), nL)}
    chunk_bytes = result_bytes = run_updates = 0
    lane_work = chunk_reads = 0.0  # (seconds at rate 1) of the lanes' updates, the reads
    rates = [r.get(jax.default_backend()) for r in (BYTES_PER_SECOND, DOT_BYTES_PER_SECOND,
                                                    CONST_READ_BYTES_PER_SECOND)]
    step_rate, dot_rate, read_rate = (math.inf if r is None else r for r in rates)
    for g in groups:  # every chunk of a group has its lanes; together they hold its streams
        t = traced[(g.static_batch, every(g)) if spec.static_batch else None]
        n_c = checkpoints(g.n_steps, checkpoint_every(g.n_steps, sweep.n_ckpt))
        lane = t.clocks_bytes + t.per_ckpt * n_c  # one lane's output on the host
        # on the device a traced-length program holds n_ckpt checkpoints per lane
        dev = t.clocks_bytes + t.per_ckpt * (n_c if spec.static_batch else sweep.n_ckpt)
        # working set: output twice (device and host copies) and the most bytes of one
        # update's intermediates alive at once (`_peak_bytes`)
        chunk_bytes = max(chunk_bytes, g.lanes * (2 * dev + t.live + 4 * (nL + 3)))
        result_bytes += 2 * g.streams * lane  # chunks kept, then assembled
        run_updates += g.streams * nL * g.n_steps  # padded lanes are no runs
        lane_updates = g.n_chunks * math.ceil(g.lanes / n_dev) * g.n_steps
        lane_work += lane_updates * (t.step / step_rate + t.macs / dot_rate)
        chunk_reads += g.n_chunks * g.n_steps * t.read / read_rate
    # a lane's update, then the constants its chunk reads once
    seconds = None if None in rates else lane_work + chunk_reads
    device = None
    if jax.default_backend() != "cpu":
        with suppress(Exception):  # memory_stats is optional for a backend
            device = int(jax.devices()[0].memory_stats()["bytes_limit"]) * n_dev
    programs = {(g.n_steps, g.static_batch) if spec.static_batch else g.lanes for g in groups}
    # every compiled program is kept (and so are its constants) until the sweep ends
    consts = max(t.consts for t in traced.values())
    program_bytes = CONST_COPIES * consts * len(programs) if consts >= LARGE_CONST_BYTES else 0
    compile_bytes = int(COMPILE_BASE_BYTES
                        + COMPILE_BYTES_PER_EQN * max(t.eqns for t in traced.values()))
    return Estimate(len(sweep.batches) * len(sweep.lr0s) * sweep.seeds,
                    sum(g.n_chunks for g in groups), run_updates, chunk_bytes, result_bytes,
                    seconds, memory_limit(), device,
                    len(programs), int(analysis_bytes), program_bytes, held_bytes(),
                    compile_bytes)
