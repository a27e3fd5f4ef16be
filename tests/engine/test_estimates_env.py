"""Estimates that count what they used to leave out, and the environment (issue 24, classes 4
and 6): the --rotate D x D constants in memory and time, --n-ckpt clamped to the updates,
TWOCLOCK_MEMORY_LIMIT with units (garbage refused in one line), JAX_PLATFORMS naming a backend
the machine lacks, and the store key's backend and XLA_FLAGS."""
import dataclasses
import math
import os
import shutil
import subprocess
import sys

import jax
import pytest

from twoclock import OptimConfig, QuadraticConfig, SweepConfig
from twoclock.atomic import Refused
from twoclock.engine import estimate, memory, store as store_mod
from twoclock.engine.sweep import check_fits
from twoclock.models import MODELS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUAD = MODELS["quadratic"]
SWEEP = SweepConfig(batches=(8, 16), lr0s=(1e-2,), seeds=4, budget=800, n_ckpt=4)


def _est(cfg, sweep=SWEEP):
    return check_fits(QUAD, cfg, OptimConfig(), sweep, 1024, jax.device_count())


def _priced(monkeypatch, cfg, sweep, step=math.inf, dot=math.inf, read=math.inf):
    """The estimate's seconds with each of its three rates set (bytes per second)."""
    for name, rate in (("BYTES_PER_SECOND", step), ("DOT_BYTES_PER_SECOND", dot),
                       ("CONST_READ_BYTES_PER_SECOND", read)):
        monkeypatch.setitem(getattr(estimate, name), jax.default_backend(), rate)
    return _est(cfg, sweep).seconds


@pytest.mark.parametrize("lr0s", [(1e-2,), (1e-2, 2e-2)])
def test_the_rotation_is_in_the_estimate(monkeypatch, lr0s):
    """dim 300 with --rotate: three 300 x 300 float32 constants (the rotation and the noise
    factors) in memory; in time, by hand, each update's three products with them: D^2
    multiply-adds per lr0 of each lane, and each constant read once per update of a chunk
    whatever its lanes (they share it). Before issue 24 the estimate counted only [D]
    intermediates; before issue 33 the products ran at the elementwise rate and the reads
    were not counted (4.2x the measured time of --dim 3000 at 16 seeds)."""
    sweep = dataclasses.replace(SWEEP, lr0s=lr0s)
    rotated = QuadraticConfig(dim=300, rotate=True)
    plain, rot = _est(QuadraticConfig(dim=300), sweep), _est(rotated, sweep)
    assert getattr(rot, "program_bytes", 0) >= estimate.CONST_COPIES * 3 * 300 * 300 * 4
    assert plain.program_bytes == 0 and "program constants" in rot.line()
    D, n_dev = 300, jax.device_count()
    updates = {8: 100, 16: 50}  # budget 800 at each batch
    lane_updates = sum(-(-sweep.seeds // n_dev) * n for n in updates.values())
    chunk_updates = sum(updates.values())
    assert _priced(monkeypatch, rotated, sweep, dot=1.0) == \
        lane_updates * 3 * len(lr0s) * D * D * 4
    assert _priced(monkeypatch, rotated, sweep, read=1.0) == chunk_updates * 3 * D * D * 4
    assert _priced(monkeypatch, QuadraticConfig(dim=300), sweep, dot=1.0, read=1.0) == 0


def test_n_ckpt_is_clamped_to_the_updates(monkeypatch):
    """--n-ckpt 10^7 on runs of at most 100 updates: 100 checkpoints, the estimate of 100
    (before issue 24 a traced program held 10^7 slots per run, which the estimate missed)."""
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", "8G")  # the same limit for both estimates
    big = SweepConfig(batches=(8, 16), lr0s=(1e-2,), seeds=4, budget=800, n_ckpt=10**7)
    assert big.n_ckpt == 100
    exact = SweepConfig(batches=(8, 16), lr0s=(1e-2,), seeds=4, budget=800, n_ckpt=100)
    assert _est(QuadraticConfig(dim=4), big) == _est(QuadraticConfig(dim=4), exact)


@pytest.mark.parametrize("text, size", [
    ("8GB", 8 * 2**30), ("8G", 8 * 2**30), ("8gib", 8 * 2**30), ("512MiB", 512 * 2**20),
    ("2G", 2 * 2**30), (" 1.5 T ", int(1.5 * 2**40)), ("2000000000", 2 * 10**9),
    ("100k", 100 * 1024), ("1e9", 10**9), ("64KB", 64 * 1024)])
def test_the_memory_limit_reads_the_usual_units(monkeypatch, text, size):
    """Before issue 24 '8GB' was read as 8 bytes, and 'garbage' raised a bare ValueError."""
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", text)
    assert memory.memory_limit() == size


@pytest.mark.parametrize("text", ["garbage", "-5G", "0", "0.1", "nan", "inf", "8iB", "1e400",
                                  "8 GBs", "G", "--1"])
def test_a_bad_memory_limit_is_refused_in_one_line(monkeypatch, text):
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", text)
    with pytest.raises(Refused) as e:
        memory.memory_limit()
    msg = str(e.value)
    assert "TWOCLOCK_MEMORY_LIMIT" in msg and repr(text) in msg and "\n" not in msg


def test_the_environment_is_refused_in_one_line_before_simulating(tmp_path, monkeypatch):
    """JAX_PLATFORMS=gpu on a machine with no GPU (before issue 24: a traceback; a subprocess,
    as JAX starts its backend once a process), and a TWOCLOCK_MEMORY_LIMIT of garbage (a
    20-line traceback): exit 2, one line each, nothing written."""
    from tests.cli.test_reliability import TINY, run_main
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", "garbage")
    code, _, err = run_main([*TINY, "--no-store", "--out", str(tmp_path)])
    assert code == 2 and err.count("\n") == 1 and "TWOCLOCK_MEMORY_LIMIT" in err, err
    if shutil.which("nvidia-smi") or os.path.exists("/dev/kfd"):
        pytest.skip("this machine may have a GPU")
    p = subprocess.run(
        [sys.executable, os.path.join(ROOT, "experiments", "critical_batch.py"), *TINY,
         "--no-store", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": ROOT, "JAX_PLATFORMS": "gpu"})
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "JAX_PLATFORMS='gpu'" in lines[0], p.stderr
    assert not os.listdir(tmp_path)


def test_the_store_key_covers_the_backend_and_xla_flags(monkeypatch):
    """A GPU's or another XLA flag's numbers never reuse the CPU's chunks; the host device
    count flag (set by setup() from the cores) is left to the configuration's device count."""
    code = store_mod.code_identity()
    assert code["backend"] == jax.default_backend() and code["device_kind"]
    key = lambda c: store_mod.Store("/tmp", "quadratic", {"c": 1}, code=c).key
    assert key({**code, "backend": "gpu"}) != key(code)
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=7")
    assert store_mod.xla_flags() == ""
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true "
                                    "--xla_force_host_platform_device_count=7")
    assert store_mod.code_identity()["xla_flags"] == "--xla_cpu_enable_fast_math=true"


def _vm_rss() -> int:
    """This process's resident memory as the kernel reports it in /proc/self/status."""
    with open("/proc/self/status") as f:
        kib = next(line.split()[1] for line in f if line.startswith("VmRSS:"))
    return int(kib) * 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_a_memory_limit_counts_what_the_process_already_holds(monkeypatch):
    """TWOCLOCK_MEMORY_LIMIT is the whole process's budget: a tiny sweep (a few KiB of
    results and chunk) under a limit below the interpreter's and JAX's own resident memory is
    refused, naming it (issue 33, item 6: the policy's ~21 MiB chunk against a peak RSS of
    767 MB). The host's available memory already leaves the process out: nothing added there."""
    tiny = SweepConfig(batches=(8, 16), lr0s=(1e-2,), seeds=2, budget=160, n_ckpt=2)
    cfg = QuadraticConfig(dim=4, drift_dim=2)
    memory._footprint.cache_clear()  # measured once a process: here, now
    monkeypatch.delenv("TWOCLOCK_MEMORY_LIMIT", raising=False)
    free = _est(cfg, tiny)
    assert free.process_bytes == 0 and "this process" not in free.line()
    rss = _vm_rss()
    assert rss > 20 * 2**20  # Python with JAX and NumPy loaded
    limit = rss // 2
    assert free.result_bytes + free.chunk_bytes < limit  # what the old check compared
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", str(limit))
    with pytest.raises(Refused, match="cannot fit.* this process") as e:
        _est(cfg, tiny)
    assert "\n" not in str(e.value)
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", str(2 * rss + 2**30))
    held = _est(cfg, tiny)
    assert held.fits() and abs(held.process_bytes - rss) < 0.25 * rss
    # one measurement a process: every estimate, and the --max-lanes one suggests, agree
    assert _est(cfg, tiny).process_bytes == held.process_bytes


def test_a_grid_of_millions_of_chunks_is_refused_in_seconds(tmp_path):
    """critical_batch.py --seeds 10^8 --max-lanes 8 --batches 8 16: 10^8 chunks (3 lr0s,
    2 streams a chunk). Refused in one line, exit 2, in a time that does not grow with the
    chunks (before issue 33 the layout listed every chunk and the estimate summed over them:
    nothing after 60 s at 2.7 GB). 60 s covers the interpreter's and JAX's start on a busy
    machine; listing the chunks takes minutes."""
    cmd = [sys.executable, os.path.join(ROOT, "experiments", "critical_batch.py"), "--seeds",
           "100000000", "--max-lanes", "8", "--batches", "8", "16", "--no-store", "--no-figure",
           "--out", str(tmp_path / "out")]
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": ROOT})
    except subprocess.TimeoutExpired:
        pytest.fail("not refused within 60 s")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert "cannot fit" in lines[0] and "600000000 runs in 100000000 chunks" in lines[0], lines
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")
