"""Reliability, second round (issue 24): a store that cannot be written never costs a result,
SIGINT and SIGTERM keep the finished chunks and say how to continue, the clocks reach the disk
before the theory runs, a read-only finished store is reused.

Real file systems where the test can mount them (tests run as root here, for whom chmod 0o555
does not stop a write): a 64 KiB tmpfs filled up mid-sweep, and a read-only bind mount. Where
mounting is refused the test is skipped; the fake writer raising ENOSPC runs everywhere.
"""
import argparse
from contextlib import contextmanager, redirect_stderr
import errno
import io
import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from tests.cli.test_robustness import TINY, run_main, strict_load
from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.cli import rescue as rescue_mod
from twoclock.engine import store as store_mod
from twoclock.engine.store import Store
from twoclock.models import MODELS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUAD = MODELS["quadratic"]
CFG = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.1, target=0.3)
# 4 chunks on any device count: 2 per batch, each 2 noise streams per device
N_DEV = jax.device_count()
SWEEP = SweepConfig(batches=(4, 8), lr0s=(1e-2,), seeds=4 * N_DEV, budget=320, n_ckpt=4)
CODE = {"source": "test"}  # a fixed code identity: no fingerprint of the tree per store


def _store(root) -> Store:
    return Store(str(root), "quadratic", {"test": "reliability"}, code=CODE)


def _sweep(**kw):
    return run_sweep(QUAD, CFG, OptimConfig(), SWEEP, quiet=True, max_lanes=2 * N_DEV, **kw)


@pytest.fixture(scope="module")
def reference():
    """The same sweep with no store: the numbers a failing store must not change."""
    return _sweep()


def _same(a, b) -> None:
    for k in ("prog_n", "fail_n", "div_n", "prog_t"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))


def _sh(*cmd) -> bool:
    return subprocess.run(cmd, capture_output=True).returncode == 0


@contextmanager
def mounted(*how):
    """A mount for the test's duration; skip where this process may not mount."""
    target = how[-1]
    if not _sh("mount", *how):
        pytest.skip("cannot mount here (needs root with CAP_SYS_ADMIN)")
    try:
        yield target
    finally:
        _sh("umount", "-l", target)


@contextmanager
def read_only(folder):
    """folder made read-only for root too: a read-only bind mount of itself."""
    folder = str(folder)
    with mounted("--bind", folder, folder):
        if not _sh("mount", "-o", "remount,ro,bind", folder):
            pytest.skip("cannot remount read-only here")
        yield folder


# ------------------------------------------------------- 1. a failing store never costs a result

def test_a_store_that_fills_up_is_switched_off_and_the_json_is_still_written(tmp_path,
                                                                               monkeypatch):
    """Fake writer: the second chunk's save raises ENOSPC (runs everywhere). Before issue 24
    the OSError left run_sweep before the rescue got the clocks: a traceback, exit 1."""
    real = store_mod.atomic_write
    calls = []

    def full(path, write, binary=False):
        calls.append(path)
        if os.path.basename(path).startswith("chunk-") and len(calls) > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(path, write, binary)
    monkeypatch.setattr(store_mod, "atomic_write", full)
    code, _, err = run_main([*TINY, "--max-lanes", "2", "--store", str(tmp_path / "s"),
                             "--out", str(tmp_path), "--no-figure"])
    lines = err.strip().splitlines()
    assert code == 0 and len(lines) == 1, err
    assert "No space left on device" in lines[0] and "the store is off from here" in lines[0]
    saved = strict_load((tmp_path / "critical_batch_quadratic.json").read_text())
    assert len(saved["runs"]) == 2
    assert not (tmp_path / "critical_batch_quadratic.partial.json").exists()


def test_a_real_full_disk_mid_sweep_costs_nothing(tmp_path, reference):
    """A 64 KiB tmpfs, filled to the last byte after the first chunk: every later save fails
    with a real ENOSPC; the sweep finishes in memory with the numbers of a sweep with no
    store, and says so in one line."""
    root = tmp_path / "tmpfs"
    root.mkdir()
    with mounted("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(root)):
        st = _store(root)

        def fill(i):
            if i == 0:
                with open(root / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
                    while True:
                        f.write(b"\0" * 4096)
        err = io.StringIO()
        with redirect_stderr(err):
            res = _sweep(store=st, on_chunk=fill)
        _same(res, reference)
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and "No space left" in lines[0] and "off from here" in lines[0]
        assert not [f for f in os.listdir(st.path) if f.startswith(".tmp-")]


def test_a_store_made_read_only_mid_sweep_costs_nothing(tmp_path, reference):
    """The store folder remounted read-only after the first chunk (EROFS for root too)."""
    st = _store(tmp_path)

    def freeze(i):
        if i == 0:
            stack.append(read_only(st.path))
            stack[-1].__enter__()
    stack = []
    err = io.StringIO()
    try:
        with redirect_stderr(err):
            res = _sweep(store=st, on_chunk=freeze)
    finally:
        for m in stack:
            m.__exit__(None, None, None)
    _same(res, reference)
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "Read-only file system" in lines[0], lines


def test_a_finished_store_on_a_read_only_disk_is_reused(tmp_path, reference):
    """Before issue 24 taking the lock raised (EROFS on .lock): a traceback, nothing reused."""
    st = _store(tmp_path)
    _sweep(store=st)
    err = io.StringIO()
    with read_only(tmp_path), redirect_stderr(err):
        res = _sweep(store=_store(tmp_path))
    _same(res, reference)
    assert res.reused_chunks == len(st.finished()) > 1
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "cannot open its lock" in lines[0], lines


def test_identity_json_is_checked_and_rewritten(tmp_path):
    """A truncated or foreign identity.json is replaced on the next save (before issue 24 it
    was written once and never read again)."""
    st = _store(tmp_path)
    _sweep(store=st)
    ident = os.path.join(st.path, "identity.json")
    assert st.identity_ok()
    for bad in ('{"config": ', '{"config": {}, "code": {}}'):
        with open(ident, "w") as f:
            f.write(bad)
        assert not st.identity_ok()
        _store(tmp_path).save(99, {"x": np.zeros(1)}, {"lanes": 1})  # a new instance's save
        with open(ident) as f:
            assert json.load(f) == json.loads(json.dumps(st.identity))


# ------------------------------------------------------------------------------- 2. signals

def test_sigterm_inside_a_rescue_keeps_the_finished_chunks(tmp_path):
    """SIGTERM (in process) after the second of four chunks, no store: exit 143, one line
    naming the chunks kept, the partial file holds them. Before issue 24 SIGTERM killed the
    process with nothing saved."""
    path = tmp_path / "r.json"
    err = io.StringIO()

    def term(i):
        if i == 1:
            os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(SystemExit) as e, redirect_stderr(err):
        with rescue_mod.Rescue("t", str(path)) as r:
            _sweep(on_chunk=term, keep=r.keep)
    assert e.value.code == rescue_mod.EXIT_SIGTERM == 143
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "interrupted by SIGTERM after 2 of 4 chunks" in lines[0], lines
    assert "--resume" not in lines[0]
    (sim,) = strict_load((tmp_path / "r.partial.json").read_text())["simulations"]
    assert sim["clocks"]["chunks_finished"] == 2 and len(sim["clocks"]["chunks"]) == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def until(proc, seen, deadline: float, what: str) -> list:
    """proc's stderr lines until one for which seen(line) holds; AssertionError naming what
    if none comes before the deadline."""
    lines = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if seen(line):
            return lines
    raise AssertionError(f"{what}: {lines}")


def _first_chunk(proc, deadline: float) -> list:
    """stderr lines until the first finished chunk's line."""
    return until(proc, lambda ln: "streams" in ln and "updates in" in ln, deadline,
                 "no chunk finished")


@pytest.mark.parametrize("sig, store", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_real_signal_mid_sweep_saves_the_finished_chunks(tmp_path, sig, store):
    """A real SIGINT (with a store) and SIGTERM (--no-store) sent to a running
    experiments/critical_batch.py once its first chunk is done: one line naming the signal,
    the chunks kept and (with a store) --resume; exit 130 / 143; the partial JSON holds the
    finished chunks; no temporary file left. Before issue 24: a 41-line KeyboardInterrupt
    traceback (SIGINT) and a silent exit 143 with nothing saved (SIGTERM)."""
    # each of the 12 chunks must outlast the test's reaction to the first chunk's line: at a
    # budget of 200000 a chunk took 0.1 s, and on contended cores the whole sweep finished
    # before the signal came (the partial file then held the finished clocks, not chunks).
    # 2e6 samples make a chunk ~1 s on 2 cores, so 11 s of chunks remain when the signal goes.
    argv = [sys.executable, os.path.join(ROOT, "experiments", "critical_batch.py"),
            "--batches", "4", "--lr0", "1e-2", "--seeds", "48", "--budget", "2000000",
            "--dim", "4", "--drift-dim", "2", "--max-lanes", "4", "--n-ckpt", "4",
            "--no-figure", "--out", str(tmp_path)]
    argv += ["--store", str(tmp_path / "store")] if store else ["--no-store"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": ROOT}  # this tree's twoclock
    # a test run started in the background (nohup, `&`) has SIGINT ignored, which a child
    # inherits, and Python then installs no KeyboardInterrupt handler. A handler (not an
    # ignore) is reset to the default at exec, so the child starts as it would at a terminal.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        _first_chunk(proc, time.monotonic() + 60)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    lines = [ln for ln in (err or "").splitlines() if "streams" not in ln]
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    name = "SIGINT" if sig == signal.SIGINT else "SIGTERM"
    assert len(lines) == 1 and f"interrupted by {name} after" in lines[0], err
    assert ("--resume" in lines[0]) == store
    (sim,) = strict_load((tmp_path / "critical_batch_quadratic.partial.json")
                         .read_text())["simulations"]
    kept = sim["clocks"]["chunks_finished"]
    assert kept >= 1 and f"after {kept} of 12 chunks" in lines[0]
    leftovers = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs
                 if f.startswith(".tmp-")]
    assert not leftovers
    if store:
        (folder,) = os.listdir(tmp_path / "store")
        assert len([f for f in os.listdir(tmp_path / "store" / folder)
                    if f.startswith("chunk-")]) >= kept


# ---------------------------------------------------------- 3. the clocks before the theory

def test_the_clocks_are_on_disk_before_the_theory_runs(tmp_path, monkeypatch):
    """A theory that takes the process down (here: SIGKILL-like, an exception the rescue
    never sees) finds the clocks already written; a finished run leaves no partial file."""
    seen = {}

    def predict(*a, **k):
        seen["partial"] = strict_load((tmp_path / "critical_batch_quadratic.partial.json")
                                      .read_text())
    monkeypatch.setitem(MODELS, "quadratic", QUAD._replace(predict=predict))
    code, _, err = run_main([*TINY, "--no-store", "--out", str(tmp_path), "--no-figure"])
    assert code == 0, err
    (sim,) = seen["partial"]["simulations"]
    assert len(sim["clocks"]["prog_n"]) == 2
    assert not (tmp_path / "critical_batch_quadratic.partial.json").exists()


@pytest.mark.parametrize("resume_flag, says", [(True, "rerun with --resume to continue"),
                                               (False, "rerun the same command to continue")])
def test_the_interrupted_line_names_only_a_way_to_resume_the_command_has(tmp_path, resume_flag,
                                                                          says):
    """The policy and damage studies have no --resume (their sweeps always read their store):
    their interrupted line said 'rerun with --resume', which their parser refuses."""
    err = io.StringIO()
    with pytest.raises(SystemExit) as e, redirect_stderr(err):
        with rescue_mod.Rescue("t", str(tmp_path / "r.json"), resume_flag=resume_flag) as r:
            r.keep("cell", {"chunks_finished": 1, "chunks_total": 2, "chunks": [{}]},
                   store=str(tmp_path / "store"))
            os.kill(os.getpid(), signal.SIGTERM)
    assert e.value.code == 143
    (line,) = err.getvalue().strip().splitlines()
    assert f"the finished chunks are in {tmp_path / 'store'}: {says} from them" in line, line
    assert ("--resume" in line) is resume_flag


@pytest.mark.parametrize("has", [False, True])
def test_the_guard_knows_whether_the_command_has_resume(has, monkeypatch, tmp_path):
    """cli.common.guard builds the rescue from the parsed flags: --resume only where the parser
    has it (the engine flags), so the line of a study without it says to rerun the command."""
    from twoclock.cli import common
    seen = {}

    class Spy(rescue_mod.Rescue):
        def __init__(self, *a, **k):
            seen.update(k)
            super().__init__(*a, **k)
    monkeypatch.setattr(common, "Rescue", Spy)
    ns = argparse.Namespace(out=str(tmp_path), json=None, no_figure=True,
                            **({"resume": False} if has else {}))
    with common.guard(ns, "x", "x.py"):
        pass
    assert seen["resume_flag"] is has
