"""The multi-process path: two processes on one machine (coordinator on 127.0.0.1, JAX's CPU
collectives) write the JSON that one process writes, and only process 0 writes."""
import json
import os
import socket
import subprocess
import sys

from twoclock.cli import engine_flags

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "experiments", "critical_batch.py")
ARGS = ["--batches", "4", "8", "--lr0", "1e-2", "3e-2", "--seeds", "3", "--budget", "640",
        "--dim", "4", "--drift-dim", "2", "--drift-bias", "0.2", "--target", "0.5", "--n-ckpt",
        "4", "--no-figure", "--quiet"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_write_the_json_of_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in engine_flags.CLUSTER_ENV}
    env.update(XLA_FLAGS="--xla_force_host_platform_device_count=1", JAX_PLATFORMS="cpu")
    port = free_port()
    procs = [subprocess.Popen(
        [sys.executable, SCRIPT, *ARGS, "--distributed", "--coordinator", f"127.0.0.1:{port}",
         "--num-processes", "2", "--process-id", str(i), "--store", str(tmp_path / "store"),
         "--json", str(tmp_path / f"p{i}.json")], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for i in range(2)]
    one = subprocess.run([sys.executable, SCRIPT, *ARGS, "--no-store", "--json",
                          str(tmp_path / "one.json")], env=env, capture_output=True, text=True,
                         timeout=300)
    try:
        errs = [p.communicate(timeout=300)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert one.returncode == 0, one.stderr
    assert [p.returncode for p in procs] == [0, 0], errs
    got = json.loads((tmp_path / "p0.json").read_text())
    want = json.loads((tmp_path / "one.json").read_text())
    assert not (tmp_path / "p1.json").exists()  # process 0 reports and writes
    assert got["runs"] == want["runs"] and got["critical_batch"] == want["critical_batch"]
    assert any(r["progress_samples"]["median"] is not None for r in got["runs"])
    assert len(list((tmp_path / "store").glob("*/chunk-*.npz"))) >= 1
