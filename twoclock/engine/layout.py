"""How a sweep is laid out before anything is compiled: its memory, its time, its compiler.

The estimate. One update of the largest batch is traced (jax.make_jaxpr; nothing is compiled). Its outputs
give each lane's clocks and checkpoints; the bytes of all its intermediates, a quarter of which
is an upper estimate of XLA's temporaries (measured against `memory_analysis()` on both
models), give the working set; the same bytes over a measured rate give the time.

The code generator. XLA compiles a fused loop on the CPU with its fusion emitters (its default, "fused") or with its
older loop emitters ("quick": `xla_cpu_use_fusion_emitters=False`). Measured on 2 CPU cores
for the quadratic model's one program (docs/performance.md): with the quick emitters, tracing,
lowering and compiling take 0.50-0.55 s instead of 0.74-0.78 s, and the updates run 1.28x
(48 runs) to 1.41x (1152 runs) slower. Where the updates take a fraction of the compile, quick
wins; on a long sweep, or once the compilation cache holds the program, fused does.

The quadratic model's numbers came out bit for bit the same under both (tests/engine/test_codegen.py
checks it over configurations, optimizers and float64). The bandit's clocks and trajectories
did too, but two of its noise diagnostics, sums over group gradients, differed by up to 2 ulps,
so "auto" never picks quick for it (`Model.quick_codegen_exact`).
"""
from contextlib import suppress
from dataclasses import dataclass
import math
import os

import jax
import numpy as np

from twoclock.atomic import Refused
from twoclock.config import OptimConfig, SweepConfig, require_choice
from twoclock.model import Model
from twoclock.engine.stages import checkpoints, constant_run
from twoclock.trace import checkpoint_every

@dataclass(frozen=True)
class Chunk:
    """A slice [start, stop) of one group's noise streams, ordered (batch in group, seed).

    Each stream runs every lr0 of the sweep on one draw of its noise (`twoclock.engine.stages`)."""
    n_steps: int
    static_batch: int | None
    batch_idx: tuple
    start: int
    stop: int
    lanes: int  # padded stream count the program is compiled for


def n_steps_for(budget: int, batch: int) -> int:
    return budget // batch


def chunk_layout(spec: Model, sweep: SweepConfig, max_lanes: int, n_dev: int) -> list:
    """The sweep's chunks: batches grouped by scan length (and by batch if static), groups split
    into equal chunks of at most max_lanes runs, each a multiple of n_dev streams."""
    groups: dict = {}
    for i, b in enumerate(sweep.batches):
        key = (n_steps_for(sweep.budget, b), b if spec.static_batch else None)
        groups.setdefault(key, []).append(i)
    chunks = []
    max_streams = max(1, max_lanes // len(sweep.lr0s))  # runs per chunk <= max_lanes
    for (n_steps, static_b), idx in groups.items():
        total = len(idx) * sweep.seeds
        n_chunks = math.ceil(total / max_streams)
        size = math.ceil(math.ceil(total / n_chunks) / n_dev) * n_dev
        for start in range(0, total, size):
            chunks.append(Chunk(n_steps, static_b, tuple(idx), start, min(start + size, total),
                                size))
    return chunks



# Bytes of intermediates of one lane's update (a noise stream at every lr0), per second per
# device: the quadratic headline's 0.376 s of updates on 2 CPU cores (its 288 runs and 1152
# run 0.376 and 1.42 s, predicted 0.375 and 1.50 s; the bandit's headline runs in half its
# prediction). Elsewhere the progress bar's ETA is what counts.
BYTES_PER_SECOND = {"cpu": 3.7e10}


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

    def fits(self, chunk_bytes: int | None = None) -> bool:
        c = (self.chunk_bytes if chunk_bytes is None else chunk_bytes) + self.program_bytes
        host = self.result_bytes + self.analysis_bytes
        if self.device_bytes is None:  # CPU devices share the host's memory
            return host + c <= self.limit_bytes
        return host <= self.limit_bytes and c <= self.device_bytes

    def line(self) -> str:
        t = "" if self.seconds is None else f", ~{_duration(self.seconds)} of updates"
        consts = (f" + ~{_size(self.program_bytes)} program constants" if self.program_bytes
                  else "")
        return (f"{self.runs} runs in {self.chunks} chunks, {self.run_updates:.3g} "
                f"run-updates: memory ~{_size(self.result_bytes)} results + "
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


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


def parse_size(text: str, name: str = "TWOCLOCK_MEMORY_LIMIT") -> int:
    """Bytes from '8G', '8GB', '8GiB', '512MiB', '1.5t' or '2000000000': K, M, G, T, P, with or
    without 'i' and 'B', are powers of 1024 (as `free -h`, SLURM's --mem and Docker read
    them). Refused (one line naming `name`) for anything else, and for sizes <= 0."""
    import re
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kmgtpKMGTP]?)(i?)([bB]?)\s*",
                     text)
    value = None
    if m and not (m.group(3) and not m.group(2)):  # "8iB" is not a unit
        value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value is None or not math.isfinite(value) or value < 1:
        raise Refused(f"{name} must be a size > 0 like 8G, 8GB, 512MiB or 2000000000 (bytes) "
                      f"(got {text!r})")
    return int(value)


def memory_limit() -> int:
    """TWOCLOCK_MEMORY_LIMIT (parse_size: 8G, 512MiB, bytes), else the smaller of the host's
    available memory and this process's cgroup allowance."""
    text = os.environ.get("TWOCLOCK_MEMORY_LIMIT")
    if text is not None and text.strip():
        return parse_size(text)
    limits = []
    with suppress(OSError, ValueError):
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        limits.append(int(info["MemAvailable"].split()[0]) * 1024)
    with suppress(OSError, ValueError):
        with open("/sys/fs/cgroup/memory.max") as f, open("/sys/fs/cgroup/memory.current") as g:
            limits.append(int(f.read()) - int(g.read()))
    return min(limits) if limits else 2**63


def _sub_jaxprs(eqn):
    """The jaxprs an equation runs (a scan's body, a cond's branches, a pjit's program)."""
    for p in eqn.params.values():
        for q in p if isinstance(p, (tuple, list)) else (p,):
            if hasattr(q, "jaxpr") and hasattr(q, "consts"):  # a ClosedJaxpr
                yield q.jaxpr
            elif type(q).__name__ == "Jaxpr":
                yield q


def _walk_bytes(jaxpr) -> int:
    """Bytes of every intermediate in a jaxpr, sub-programs included (an upper bound: XLA
    reuses and fuses buffers)."""
    total = 0
    for e in jaxpr.eqns:
        total += sum(int(np.prod(v.aval.shape)) * v.aval.dtype.itemsize for v in e.outvars
                     if hasattr(v.aval, "shape"))
        total += sum(_walk_bytes(q) for q in _sub_jaxprs(e))
    return total


def _dot_bytes(jaxpr) -> int:
    """Multiply-adds of every dot_general in a jaxpr (sub-programs included), in bytes of its
    operands' type: a matrix-vector product with a D x D constant (the quadratic's --rotate)
    makes only [D] intermediates but D^2 multiply-adds, which _walk_bytes would miss."""
    total = 0
    for e in jaxpr.eqns:
        if e.primitive.name == "dot_general":
            (lc, _), _ = e.params["dimension_numbers"]
            lhs, out = e.invars[0].aval, e.outvars[0].aval
            contracted = int(np.prod([lhs.shape[i] for i in lc]))
            total += int(np.prod(out.shape)) * contracted * lhs.dtype.itemsize
        total += sum(_dot_bytes(q) for q in _sub_jaxprs(e))
    return total


# the bytes of a program's constants (the quadratic's D x D rotation and noise factors) held at
# once while it is built and run: the host array, XLA's literal, the compiled program's copy,
# and the compilation cache's serialised program
CONST_COPIES = 4


def estimate(spec: Model, model_cfg, opt: OptimConfig, sweep: SweepConfig, chunks: list,
             n_dev: int, analysis_bytes: int = 0) -> Estimate:
    """Memory and time of a planned sweep, from one traced update (the largest batch)."""
    b, nL = max(sweep.batches), len(sweep.lr0s)
    one = constant_run(spec, model_cfg, opt, 1, 1, b if spec.static_batch else None)
    lr_L = np.full(nL, 1e-3, np.float32)  # a lane is one noise stream run at every lr0
    key = np.zeros(2, np.uint32)  # a raw key's shape; PRNGKey(0) would compile a program
    closed, out = jax.make_jaxpr(one, return_shape=True)(np.float32(b), lr_L, key)
    step = _walk_bytes(closed.jaxpr)
    work = step + _dot_bytes(closed.jaxpr)  # what one update costs in time
    consts = sum(int(np.asarray(c).nbytes) for c in closed.consts if hasattr(c, "shape"))
    per_ckpt = sum(a.dtype.itemsize * a.size for a in jax.tree.leaves(out.ckpt))  # C = 1
    clocks_bytes = sum(a.dtype.itemsize * a.size for a in jax.tree.leaves(out)) - per_ckpt
    chunk_bytes = result_bytes = run_updates = cost = 0
    for c in chunks:
        n_c = checkpoints(c.n_steps, checkpoint_every(c.n_steps, sweep.n_ckpt))
        lane = clocks_bytes + per_ckpt * n_c  # one lane's output on the host
        # on the device a traced-length program holds n_ckpt checkpoints per lane
        dev = clocks_bytes + per_ckpt * (n_c if spec.static_batch else sweep.n_ckpt)
        # working set: output twice (device and host copies) and a quarter of every
        # intermediate of one update (an upper estimate of XLA's temporaries, measured)
        chunk_bytes = max(chunk_bytes, c.lanes * (2 * dev + step // 4 + 4 * (nL + 3)))
        result_bytes += 2 * (c.stop - c.start) * lane  # chunks kept, then assembled
        run_updates += (c.stop - c.start) * nL * c.n_steps
        cost += math.ceil(c.lanes / n_dev) * c.n_steps * work
    rate = BYTES_PER_SECOND.get(jax.default_backend())
    device = None
    if jax.default_backend() != "cpu":
        with suppress(Exception):  # memory_stats is optional for a backend
            device = int(jax.devices()[0].memory_stats()["bytes_limit"]) * n_dev
    programs = {(c.n_steps, c.static_batch) if spec.static_batch else c.lanes for c in chunks}
    # every compiled program is kept (and so are its constants) until the sweep ends
    program_bytes = CONST_COPIES * consts * len(programs) if consts >= 2**18 else 0
    return Estimate(len(sweep.batches) * len(sweep.lr0s) * sweep.seeds, len(chunks), run_updates,
                    chunk_bytes, result_bytes, None if rate is None else cost / rate,
                    memory_limit(), device, len(programs), int(analysis_bytes), program_bytes)


# ------------------------------------------------------------------ the code generator

CODEGENS = ("auto", "quick", "fused")

# "auto" picks quick below this many estimated seconds of updates per program: there the quick
# compile saves 0.2-0.3 s and its slower run costs at most ~0.1 s, also with a filled cache
QUICK_BELOW_S = 0.25


def choose(codegen: str, spec: Model, est: Estimate) -> str:
    """"quick" or "fused": codegen itself, or for "auto" quick only on the CPU, for a model whose
    numbers it leaves unchanged, and a sweep estimated at under QUICK_BELOW_S s per program."""
    require_choice("codegen", codegen, CODEGENS)
    if codegen != "auto":
        return codegen
    short = est.seconds is not None and est.seconds < QUICK_BELOW_S * est.programs
    quick = jax.default_backend() == "cpu" and spec.quick_codegen_exact and short
    return "quick" if quick else "fused"


def compiler_options(choice: str) -> dict | None:
    """The XLA options of a choice from `choose` (None: XLA's defaults). The option only exists
    on the CPU; on another backend both choices compile the same."""
    require_choice("codegen", choice, CODEGENS[1:])
    if choice == "quick" and jax.default_backend() == "cpu":
        return {"xla_cpu_use_fusion_emitters": False}
    return None
