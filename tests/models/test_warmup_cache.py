"""The policy warm-up's cache is as safe as the store (issue 33 items 3, 4, 6; issue 29 item 4):
keyed by a sha256 of the network, the pools and `dataclasses.asdict(WarmupConfig)`; a
truncated, empty, random, foreign, edited or wrong-shape file is named in one line and trained
again; an unwritable cache keeps the trained params in memory with one line; a killed writer's
temporary files are removed; the folder follows the store (`--no-store`: none) unless
TWOCLOCK_POLICY_CACHE says; the memory check refuses before anything trains.

A tiny configuration (4 warm-up steps of a 16-wide network) keeps each training to seconds;
`train` is wrapped to count how often it runs."""
from contextlib import redirect_stderr
from dataclasses import replace
import errno
import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_robustness import run_main
from twoclock import atomic
from twoclock.models.policy import PolicyConfig, WarmupConfig, warmup

CFG = PolicyConfig(n_train=256, n_test=32, n_ood=32, d_model=16, n_heads=2, d_mlp=32,
                   warmup=WarmupConfig(steps=4, eval_every=2, batch=32))
TINY = ["--model", "policy", "--batches", "16", "--seeds", "1", "--budget", "32",
        "--n-train", "256", "--n-test", "32", "--n-ood", "32", "--d-model", "16",
        "--n-heads", "2", "--d-mlp", "32", "--warmup-steps", "4", "--warmup-eval-every", "2",
        "--warmup-batch", "32", "--no-figure", "--quiet"]


@pytest.fixture(scope="module")
def reference():
    """CFG's warm-up trained with no cache: the params every reload must give back."""
    warmup._READY.clear()
    flat, info = warmup.prepare(CFG, None)
    return {k: v.copy() for k, v in flat.items()}, info


@pytest.fixture
def counted(monkeypatch, reference):
    """warmup.train counted; nothing prepared in this process yet; no cache variable."""
    calls = []
    real = warmup.train

    def train(cfg, log=None):
        calls.append(cfg)
        return real(cfg, log)
    monkeypatch.setattr(warmup, "train", train)
    monkeypatch.delenv(warmup.CACHE_ENV, raising=False)
    monkeypatch.setattr(warmup, "_READY", {})
    return calls


def _prepare(root) -> tuple:
    """(flat params, stderr lines) of a fresh prepare under the store root."""
    warmup._READY.clear()
    err = io.StringIO()
    with redirect_stderr(err):
        flat, _ = warmup.prepare(CFG, str(root))
    return flat, err.getvalue().strip().splitlines()


def _same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def _path(root) -> str:
    return os.path.join(str(root), "policy_warmup", warmup.key_of(CFG) + ".npz")


def test_the_key_hashes_the_network_the_pools_and_every_warmup_field():
    """The key, recomputed from the fields by hand, and changed by each WarmupConfig field."""
    want = {"version": warmup.VERSION,
            "arch": {"vocab": 14, "seq_len": 10, "d_model": 16, "n_layers": 2, "n_heads": 2,
                     "d_mlp": 32},
            "pools": {"n_train": 256, "n_test": 32, "pool_seed": 0},
            "warmup": {"noise": 0.6, "end_b": 0.5, "lr": 3e-3, "batch": 32, "steps": 4,
                       "acc": 0.3, "eval_every": 2, "seed": 0}}
    blob = json.dumps(want, sort_keys=True).encode()
    assert warmup.key_of(CFG) == hashlib.sha256(blob).hexdigest()[:20]
    other = {"noise": 0.5, "end_b": 0.4, "lr": 1e-3, "batch": 64, "steps": 5, "acc": 0.4,
             "eval_every": 3, "seed": 1}
    keys = {warmup.key_of(replace(CFG, warmup=replace(CFG.warmup, **{f: v})))
            for f, v in other.items()}
    assert len(keys) == len(other) and warmup.key_of(CFG) not in keys


def test_a_cached_warmup_is_reloaded_without_training(tmp_path, counted, reference):
    flat, lines = _prepare(tmp_path)
    assert len(counted) == 1 and lines == []
    again, lines = _prepare(tmp_path)
    assert len(counted) == 1 and lines == []
    _same(again, reference[0])
    _same(flat, reference[0])


def _truncated(path):
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:len(data) // 2])


def _random(path):
    Path(path).write_bytes(np.random.default_rng(0).bytes(4096))


def _edited(path):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    k = next(k for k in arrays if k != "__info__")
    arrays[k] = arrays[k] + 1.0
    np.savez(path, **arrays)


def _wrong_shape(path):
    """Consistent in itself (its checksum recomputed), but not this network's shapes."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays.pop("__info__")).decode())
    k = sorted(arrays)[0]
    arrays[k] = np.zeros(arrays[k].size + 1, arrays[k].dtype)
    meta["sha256"] = atomic.checksum(arrays)
    tag = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(path, __info__=tag, **arrays)


def _foreign(path):
    """Another warm-up's file under this key's name."""
    other = replace(CFG, warmup=replace(CFG.warmup, seed=1))
    flat = {k: np.zeros(s, np.float32) for k, s in warmup.shapes(other).items()}
    warmup.save(path, flat, {"steps": 0}, other)


def _pickled(path):
    with open(path, "wb") as f:
        np.save(f, np.array([{"a": 1}], dtype=object), allow_pickle=True)


CORRUPT = {"truncated": (_truncated, "is unreadable"),
           "empty": (lambda p: Path(p).write_bytes(b""), "is unreadable"),
           "random": (_random, "is unreadable"), "pickled": (_pickled, "is unreadable"),
           "edited": (_edited, "does not match its checksum"),
           "wrong_shape": (_wrong_shape, "other shapes"), "foreign": (_foreign, "holds warm-up")}


@pytest.mark.parametrize("kind", CORRUPT)
def test_a_corrupt_cache_file_is_named_in_one_line_and_trained_again(tmp_path, counted,
                                                                    reference, kind):
    """Before issue 33: BadZipFile, EOFError, a pickle ValueError or a reshape TypeError
    (exit 1) for every later run; an edited file was used as it was."""
    _prepare(tmp_path)
    spoil, why = CORRUPT[kind]
    spoil(_path(tmp_path))
    flat, lines = _prepare(tmp_path)
    assert len(counted) == 2
    assert len(lines) == 1 and _path(tmp_path) in lines[0] and why in lines[0], lines
    assert "training it again" in lines[0]
    _same(flat, reference[0])
    again, lines = _prepare(tmp_path)  # the file written again is whole
    assert len(counted) == 2 and lines == []


def test_an_unwritable_cache_keeps_the_trained_warmup_in_memory(tmp_path, counted, reference,
                                                                 monkeypatch):
    """A write that fails (EROFS: a read-only TWOCLOCK_POLICY_CACHE) gives one line, the
    trained params, and no file; before issue 33 the OSError lost the trained warm-up."""
    def refuse(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(warmup, "atomic_write", refuse)
    monkeypatch.setenv(warmup.CACHE_ENV, str(tmp_path / "cache"))
    flat, lines = _prepare(tmp_path / "store")
    assert len(lines) == 1 and "cannot write" in lines[0] and "stays in memory" in lines[0]
    _same(flat, reference[0])
    assert not [f for f in os.listdir(tmp_path / "cache") if f.endswith(".npz")]
    assert not (tmp_path / "store").exists()  # the variable wins over the store


def test_a_cache_path_that_is_a_file_is_refused_at_start_up(tmp_path, counted, monkeypatch):
    """Before issue 33: FileExistsError after the warm-up had trained."""
    (tmp_path / "f").write_text("not a folder")
    monkeypatch.setenv(warmup.CACHE_ENV, str(tmp_path / "f"))
    code, _, err = run_main([*TINY, "--out", str(tmp_path / "o")])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "policy warm-up cache" in err and str(tmp_path / "f") in err
    assert counted == []


def test_the_cache_follows_the_store_and_the_variable(tmp_path, counted, monkeypatch):
    """Under the store's root by default; none without a store; TWOCLOCK_POLICY_CACHE wins,
    'off' turns it off. Before issue 33 it was results/store/policy_warmup under the working
    directory whatever --store, --out or --no-store said."""
    assert warmup.folder(str(tmp_path)) == os.path.join(str(tmp_path), "policy_warmup")
    assert warmup.folder(None) is None
    monkeypatch.setenv(warmup.CACHE_ENV, str(tmp_path / "c"))
    assert warmup.folder(None) == warmup.folder("x") == str(tmp_path / "c")
    monkeypatch.setenv(warmup.CACHE_ENV, "off")
    assert warmup.folder(str(tmp_path)) is None


def test_a_killed_writers_temporary_files_are_removed(tmp_path, counted):
    """Left by a SIGKILL during a write: atomic_write's .tmp-* and the old writer's
    <key>.npz.<pid>.tmp."""
    folder = tmp_path / "policy_warmup"
    folder.mkdir()
    stale = [folder / f"{warmup.key_of(CFG)}.npz.12345.tmp", folder / ".tmp-abc.npz"]
    for p in stale:
        p.write_bytes(b"half")
    _prepare(tmp_path)
    assert not any(p.exists() for p in stale)
    assert sorted(os.listdir(folder)) == [".lock", warmup.key_of(CFG) + ".npz"]


def test_the_memory_check_refuses_before_the_warmup_trains(tmp_path, counted, monkeypatch):
    """TWOCLOCK_MEMORY_LIMIT=1M (20M for the default config) on an uncached config: refused
    from the estimate (with a stand-in for the warm-up), nothing trained. Before issue 33 the warm-up trained first
    (121 s for the default config) and the sweep was refused after."""
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", "1M")
    monkeypatch.setattr("twoclock.engine.sweep._run", lambda *a, **k: pytest.fail("simulated"))
    code, _, err = run_main([*TINY, "--out", str(tmp_path)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "cannot fit in memory" in err
    assert counted == [] and not list((tmp_path / "store").rglob("*.npz"))


def test_warmup_flags_keep_their_spelling_and_nest(tmp_path):
    """--warmup-lr sets warmup.lr (the flags of issue 29's flat fields, spelled as before)."""
    from twoclock.cli.run_study import parse
    from twoclock.studies import STUDIES
    _, cfg, *_ = parse(STUDIES.headline, ["--model", "policy", "--warmup-lr", "1e-3",
                                          "--warmup-steps", "7"], "critical_batch.py")
    assert cfg.warmup == WarmupConfig(lr=1e-3, steps=7) and cfg.d_model == 64
    code, _, err = run_main(["--model", "policy", "--warmup-noise", "1.0",
                             "--out", str(tmp_path)])
    assert code == 2 and err.strip() == ("critical_batch.py: error: --warmup-noise must be in "
                                         "[0, 1) (got 1.0)"), err
