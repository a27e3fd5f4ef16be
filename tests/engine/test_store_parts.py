"""The results store's parts by hand, without a sweep: the key, the source fingerprint, the
chunk listing, a chunk's identity file, and the lock (twoclock.engine.store)."""
import fcntl
import json
import os
import socket
import threading
import time

import numpy as np
import pytest

from twoclock.engine.store import CorruptChunk, Store, code_identity, config_key, source_fingerprint

CODE = {"source": "s", "jax": "j"}  # a stand-in code identity: no fingerprint of the package


def test_config_key_is_16_hex_digits_of_the_canonical_json():
    a = {"model": {"dim": 8, "alpha": 1.0}, "seeds": 4}
    b = {"seeds": 4, "model": {"alpha": 1.0, "dim": 8}}  # the same, in another order
    assert config_key(a) == config_key(b)
    assert len(config_key(a)) == 16 and int(config_key(a), 16) >= 0
    assert config_key(a) != config_key({**a, "seeds": 5})


def test_source_fingerprint_reads_every_file_but_bytecode(tmp_path):
    (tmp_path / "a.pyc").write_bytes(b"bytecode")  # sorts before b.py in its folder
    (tmp_path / "b.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.py").write_text("y = 2\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "b.cpython.pyc").write_bytes(b"cache")
    fp = lambda: source_fingerprint(str(tmp_path))
    base = fp()
    (tmp_path / "a.pyc").write_bytes(b"other bytecode")
    (tmp_path / "__pycache__" / "b.cpython.pyc").write_bytes(b"other cache")
    (tmp_path / "__pycache__" / "new.txt").write_text("a cache folder is never read")
    assert fp() == base
    seen = {base}
    for edit in (lambda: (tmp_path / "b.py").write_text("x = 3\n"),
                 lambda: (tmp_path / "sub" / "c.py").write_text("y = 4\n"),
                 lambda: (tmp_path / "sub" / "c.py").rename(tmp_path / "sub" / "d.py")):
        edit()
        assert fp() not in seen
        seen.add(fp())


def test_the_key_hashes_the_configuration_and_the_given_code(tmp_path):
    s = Store(str(tmp_path), "quadratic", {"a": 1}, code=CODE)
    assert s.identity == {"config": {"a": 1}, "code": CODE}
    assert s.key == config_key({"config": {"a": 1}, "code": CODE})
    assert s.path == os.path.join(str(tmp_path), "quadratic-" + s.key)
    assert Store(str(tmp_path), "quadratic", {"a": 1}).identity["code"] == code_identity()


def test_finished_lists_the_chunk_files_only(tmp_path):
    s = Store(str(tmp_path), "quadratic", {"a": 1}, code=CODE)
    assert s.finished() == []  # no folder yet
    for i in (0, 3, 12345):
        s.save(i, {"x": np.arange(3.0)}, {"slot": i})
    for stray in ("chunk-a0001.npz", "chunk-00007.tmp", "identity-00002.npz", ".tmp-x.npz"):
        open(os.path.join(s.path, stray), "w").close()
    assert s.finished() == [0, 3, 12345]
    np.testing.assert_array_equal(s.load(12345, {"slot": 12345})["x"], np.arange(3.0))


def test_save_writes_the_identity_file_and_load_checks_each_chunk(tmp_path):
    s = Store(str(tmp_path), "quadratic", {"a": [1, 2]}, code=CODE)
    s.save(0, {"x": np.ones(2)}, {"lanes": [0, 1]})
    with open(os.path.join(s.path, "identity.json")) as f:
        assert json.load(f) == s.identity
    assert set(s.load(0, {"lanes": [0, 1]})) == {"x"}
    with pytest.raises(CorruptChunk, match="slot 0 lanes"):
        s.load(0, {"lanes": [0, 2]})
    obj = np.empty(1, object)  # a pickled array: a chunk is never unpickled
    np.savez(os.path.join(s.path, "chunk-00001.npz"), __identity__=np.frombuffer(json.dumps(
        {"key": s.key, "slot": 1, "lanes": {}}).encode(), np.uint8), x=obj)
    with pytest.raises(CorruptChunk, match="unreadable"):
        s.load(1, {})


def test_the_lock_waits_for_its_holder_names_it_then_records_itself(tmp_path):
    s = Store(str(tmp_path), "quadratic", {"a": 1}, code=CODE)
    os.makedirs(s.path)
    logs, inside = [], threading.Event()

    def second_run():
        with s.lock(logs.append):
            inside.set()

    with open(os.path.join(s.path, ".lock"), "a+") as held:
        held.write("pid 1 on a-host-with-a-long-name\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file: flock makes the store's wait
        t = threading.Thread(target=second_run)
        t.start()
        for _ in range(500):
            if logs:
                break
            time.sleep(0.01)
        assert len(logs) == 1 and "in use (pid 1 on a-host-with-a-long-name)" in logs[0], logs
        assert not inside.is_set()
    t.join(10)  # closing `held` released the lock
    assert inside.is_set()
    with open(os.path.join(s.path, ".lock")) as f:
        assert f.read() == f"pid {os.getpid()} on {socket.gethostname()}\n"
