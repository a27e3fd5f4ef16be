"""Results are never lost: atomic chunks, resume after a kill, reuse of identical sweeps."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.store import Store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "experiments", "critical_batch.py")
ARGS = ["--batches", "4", "8", "16", "--lr0", "1e-2", "3e-2", "--seeds", "6", "--budget", "20000",
        "--dim", "8", "--drift-bias", "0.1", "--target", "0.2", "--max-lanes", "3",
        "--no-figure", "--quiet"]


def cli(*args, **kw):
    return subprocess.Popen([sys.executable, SCRIPT, *ARGS, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_killed_sweep_resumes_to_identical_results(tmp_path):
    ref = cli("--no-store", "--json", str(tmp_path / "ref.json"))
    _, err = ref.communicate(timeout=300)
    assert ref.returncode == 0, err
    store = tmp_path / "store"
    p = cli("--store", str(store), "--json", str(tmp_path / "run.json"))
    deadline = time.time() + 240
    while time.time() < deadline:  # kill it as soon as some, but not all, chunks are on disk
        dirs = list(store.glob("*")) if store.exists() else []
        if dirs and len(list(dirs[0].glob("chunk-*.npz"))) >= 2:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    finished = len(list(next(store.glob("*")).glob("chunk-*.npz")))
    assert finished >= 2 and not (tmp_path / "run.json").exists()
    assert not list(next(store.glob("*")).glob(".tmp-*"))  # no torn files
    q = cli("--store", str(store), "--resume", "--json", str(tmp_path / "run.json"))
    _, err = q.communicate(timeout=300)
    assert q.returncode == 0, err
    got = json.loads((tmp_path / "run.json").read_text())
    want = json.loads((tmp_path / "ref.json").read_text())
    assert got["store"]["reused_chunks"] >= finished
    assert got["runs"] == want["runs"] and got["critical_batch"] == want["critical_batch"]


def test_identical_configuration_is_reused(tmp_path):
    cfg, opt = QuadraticConfig(dim=4, drift_dim=2), OptimConfig()
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2,), seeds=2, budget=400, n_ckpt=4)
    store = Store(str(tmp_path), "quadratic", {"any": "config"})
    a = run_sweep("quadratic", cfg, opt, sweep, quiet=True, store=store)
    b = run_sweep("quadratic", cfg, opt, sweep, quiet=True, store=store)
    assert a.reused_chunks == 0 and b.reused_chunks == len(store.finished()) == 2
    np.testing.assert_array_equal(a.prog_n, b.prog_n)
    np.testing.assert_array_equal(a.ckpt[1]["progress_frac"], b.ckpt[1]["progress_frac"])
    assert Store(str(tmp_path), "quadratic", {"any": "other"}).key != store.key


def test_chunked_sweep_equals_one_program():
    cfg, opt = QuadraticConfig(dim=4, drift_dim=2), OptimConfig()
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2, 2e-2), seeds=5, budget=800, n_ckpt=8)
    a = run_sweep("quadratic", cfg, opt, sweep, quiet=True)
    b = run_sweep("quadratic", cfg, opt, sweep, quiet=True, max_lanes=3)
    for k in ("prog_n", "fail_n", "div_n"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    np.testing.assert_array_equal(a.ckpt[0]["drift"], b.ckpt[0]["drift"])
