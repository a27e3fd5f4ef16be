"""Results are never lost and never stale: atomic chunks, resume after a kill, reuse of identical
sweeps only (configuration and code), corrupt chunks recomputed, the umask's file modes, a lock."""
import dataclasses
from dataclasses import asdict
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import threading
import time

import jax
import numpy as np
import pytest

from twoclock import MODELS, OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.engine.store import Store
from twoclock.engine.layout import chunk_layout as plan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
    # a kill during a write leaves at most its temporary file; never a torn chunk
    assert len(list(next(store.glob("*")).glob(".tmp-*"))) <= 1
    q = cli("--store", str(store), "--resume", "--json", str(tmp_path / "run.json"))
    _, err = q.communicate(timeout=300)
    assert q.returncode == 0, err
    got = json.loads((tmp_path / "run.json").read_text())
    want = json.loads((tmp_path / "ref.json").read_text())
    assert got["store"]["reused_chunks"] >= finished
    assert got["runs"] == want["runs"] and got["critical_batch"] == want["critical_batch"]
    assert not list(next(store.glob("*")).glob(".tmp-*"))  # the resumed run cleared it


def test_identical_configuration_is_reused(tmp_path):
    cfg, opt = QuadraticConfig(dim=4, drift_dim=2), OptimConfig()
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2,), seeds=2, budget=400, n_ckpt=4)
    store = Store(str(tmp_path), "quadratic", {"any": "config"})
    a = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True, store=store)
    b = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True, store=store)
    assert a.reused_chunks == 0 and b.reused_chunks == len(store.finished()) == 2
    np.testing.assert_array_equal(a.prog_n, b.prog_n)
    np.testing.assert_array_equal(a.ckpt[1]["progress_frac"], b.ckpt[1]["progress_frac"])
    assert Store(str(tmp_path), "quadratic", {"any": "other"}).key != store.key


def test_chunked_sweep_equals_one_program():
    cfg, opt = QuadraticConfig(dim=4, drift_dim=2), OptimConfig()
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2, 2e-2), seeds=5, budget=800, n_ckpt=8)
    a = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True)
    b = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True, max_lanes=3)
    for k in ("prog_n", "fail_n", "div_n"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    np.testing.assert_array_equal(a.ckpt[0]["drift"], b.ckpt[0]["drift"])


# ------------------------------------------------------------- the key: configuration and code

TINY = dict(cfg=QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.1, target=0.3),
            sweep=SweepConfig(batches=(4, 8), lr0s=(1e-2, 2e-2), seeds=3, budget=400, n_ckpt=4))


def tiny_sweep(store=None, sweep=None, **kw):
    return run_sweep(MODELS["quadratic"], TINY["cfg"], OptimConfig(), sweep or TINY["sweep"],
                     quiet=True, store=store, **kw)


def test_the_key_fingerprints_every_source_file_and_the_jax_versions(tmp_path, monkeypatch):
    import shutil

    import jax

    from twoclock.engine import store as store_mod
    pkg = tmp_path / "twoclock"
    shutil.copytree(store_mod.PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    base = store_mod.source_fingerprint(str(pkg))
    assert base == store_mod.source_fingerprint()  # content, not location
    noise = pkg / "models" / "quadratic" / "dynamics.py"
    noise.write_text(noise.read_text() + "\n# an edited noise model\n")
    edited = store_mod.source_fingerprint(str(pkg))
    (pkg / "data.txt").write_text("any file counts")
    assert len({base, edited, store_mod.source_fingerprint(str(pkg))}) == 3
    key = lambda code=None: Store(str(tmp_path), "quadratic", {"a": 1}, code=code).key
    assert key() == key() == key(store_mod.code_identity())
    assert key({**store_mod.code_identity(), "source": edited}) != key()
    monkeypatch.setattr(jax, "__version__", "0.0.0")
    assert key() != key(store_mod.code_identity(store_mod.PACKAGE_DIR) | {"jax": "x"})


def test_edited_code_recomputes_instead_of_reusing(tmp_path):
    from twoclock.engine.store import code_identity
    code = code_identity()
    first = tiny_sweep(Store(str(tmp_path), "quadratic", {"c": 1}, code=code))
    again = tiny_sweep(Store(str(tmp_path), "quadratic", {"c": 1}, code=code))
    edited = tiny_sweep(Store(str(tmp_path), "quadratic", {"c": 1},
                              code={**code, "source": "edited"}))
    assert first.reused_chunks == 0 and again.reused_chunks == 2 and edited.reused_chunks == 0


# ------------------------------------------------------------------------------ corrupt chunks

def _truncate(p):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garble(p):
    b = bytearray(p.read_bytes())
    b[len(b) // 2: len(b) // 2 + 64] = bytes(64)  # zeros over the middle of an array
    p.write_bytes(bytes(b))


CORRUPTIONS = {  # slot -> what happened to its file
    1: _truncate,
    2: lambda p: p.write_bytes(b""),  # zero-length
    3: _garble,
    4: lambda p: p.write_bytes(b"\x80\x04K\x01."),  # a pickle: np.load would unpickle it
    5: lambda p: p.write_bytes(p.with_name("chunk-00000.npz").read_bytes()),  # wrong slot
    0: lambda p: _tamper(p),  # a well-formed file whose numbers were changed
}


def _tamper(p):
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["prog_n"] = arrays["prog_n"] + 1
    np.savez(p, **arrays)


def test_corrupt_chunks_are_named_in_one_line_each_and_recomputed(tmp_path, capsys):
    store = Store(str(tmp_path), "quadratic", {"c": 1})
    # chunks hold one noise stream per device, so 6 seeds per device give >= 6 chunks on any
    # device count
    sweep = dataclasses.replace(TINY["sweep"], seeds=6 * jax.device_count())
    run = lambda: run_sweep(MODELS["quadratic"], TINY["cfg"], OptimConfig(), sweep, quiet=True,
                            store=store, max_lanes=2)
    want = run()
    chunks = plan(MODELS["quadratic"], sweep, 2, jax.device_count())
    assert len(store.finished()) == len(chunks) >= 6
    bad = {i: os.path.join(store.path, f"chunk-{i:05d}.npz") for i in CORRUPTIONS}
    for i, corrupt in CORRUPTIONS.items():
        corrupt(Path(bad[i]))
    capsys.readouterr()
    got = run()
    err = capsys.readouterr().err.splitlines()
    for i, path in bad.items():
        lines = [ln for ln in err if path in ln]
        assert len(lines) == 1 and "recomputing" in lines[0], (i, err)
    assert got.reused_chunks == len(chunks) - len(bad)
    for k in ("prog_n", "fail_n", "div_n", "prog_t"):
        np.testing.assert_array_equal(getattr(got, k), getattr(want, k))
    np.testing.assert_array_equal(got.ckpt[0]["drift"], want.ckpt[0]["drift"])
    for i in bad:  # recomputed and whole again
        store.load(i, asdict(chunks[i]))


def test_a_chunk_of_another_store_is_not_used(tmp_path, capsys):
    a = Store(str(tmp_path), "quadratic", {"c": 1})
    b = Store(str(tmp_path), "quadratic", {"c": 2})
    tiny_sweep(a)
    tiny_sweep(b)
    shutil_copy = Path(a.path, "chunk-00000.npz").read_bytes()
    Path(b.path, "chunk-00000.npz").write_bytes(shutil_copy)
    capsys.readouterr()
    assert tiny_sweep(b).reused_chunks == 1
    assert "holds store " + a.key in capsys.readouterr().err


# ---------------------------------------------------------------------------------- file modes

@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_respect_the_umask(tmp_path, mask, mode):
    from twoclock.analysis import results
    from twoclock.figures.style import figure, save
    old = os.umask(mask)
    try:
        results.write_json(str(tmp_path / "r.json"), {"x": 1})
        fig, _ = figure()
        paths = save(fig, str(tmp_path / "fig"))
        s = Store(str(tmp_path / "store"), "quadratic", {"c": 1})
        s.save(0, {"a": np.arange(3)}, {"slot": 0})
        with s.lock(print):
            pass
    finally:
        os.umask(old)
    files = [tmp_path / "r.json", *map(Path, paths), Path(s.path, "chunk-00000.npz"),
             Path(s.path, "identity.json"), Path(s.path, ".lock")]
    assert {oct(f.stat().st_mode & 0o777) for f in files} == {oct(mode)}
    assert not list(tmp_path.rglob(".tmp-*"))


# ------------------------------------------------------------------------------ two runs at once

def test_a_second_run_waits_for_the_first_and_destroys_nothing(tmp_path):
    # a chunk holds one noise stream per device: 3 seeds per device give 3 chunks per batch group
    sweep = dataclasses.replace(TINY["sweep"], seeds=3 * jax.device_count())
    run = lambda store, **kw: tiny_sweep(store, sweep, max_lanes=3, **kw)
    t0 = time.perf_counter()
    want = run(None)
    alone = time.perf_counter() - t0  # what the second run takes when nothing holds it up
    store = Store(str(tmp_path), "quadratic", {"c": 1})
    with pytest.raises(KeyboardInterrupt):  # an interrupted first run: 2 chunks on disk
        run(store, on_chunk=lambda i: i == 1 and _raise(KeyboardInterrupt))
    before = {p.name: p.stat().st_ino for p in Path(store.path).glob("chunk-*")}
    n_chunks = len(plan(MODELS["quadratic"], sweep, 3, jax.device_count()))
    assert len(before) == 2 < n_chunks
    second = {}
    with store.lock(print):  # the first run is still at work
        t = threading.Thread(target=lambda: second.update(res=run(store)))
        t.start()
        t.join(timeout=2 * alone + 2)
        assert t.is_alive() and "res" not in second  # it waits
        assert {p.name: p.stat().st_ino for p in Path(store.path).glob("chunk-*")} == before
    t.join(timeout=300)
    np.testing.assert_array_equal(second["res"].prog_n, want.prog_n)
    assert len(store.finished()) == n_chunks


def _raise(e):
    raise e


def test_the_lock_clears_what_a_killed_writer_left(tmp_path):
    """A SIGKILL during an atomic write leaves its temporary file; the next holder removes it
    (and nothing else)."""
    store = Store(str(tmp_path), "quadratic", {"any": "config"})
    os.makedirs(store.path, exist_ok=True)
    left = os.path.join(store.path, ".tmp-killed.npz")
    keep = os.path.join(store.path, "chunk-00000.npz")
    for f in (left, keep):
        with open(f, "w") as fh:
            fh.write("x")
    with store.lock(lambda m: None):
        assert not os.path.exists(left) and os.path.exists(keep)
