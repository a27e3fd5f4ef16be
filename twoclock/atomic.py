"""Files that are never half-written, and JSON that is always strict.

The one atomic file write: a temporary file in the target's folder, then os.replace, so a
reader (or a killed run) only ever sees the old file or the whole new one. The file gets the
mode an ordinary open() would give it (0666 & ~umask, so 0644 under umask 022): mkstemp's
own 0600 would hide results, figures and stores from collaborators on a shared cluster.

Strict JSON: every non-finite float, wherever it sits, becomes null and is listed, with what it
was, under the result's top-level "non_finite" ({JSON pointer: "inf" | "-inf" | "nan"}).
Output paths are checked before a run (`check_file`, `check_folder`); what is refused before
simulating raises `Refused`.

A file a later run reads back is listed, with its sha256 and size, in a manifest written last
with the fingerprint of the run that wrote it (`write_manifest`), and checked on read
(`verify_manifest`): a file rewritten, edited or truncated since no longer matches.

Caches follow one rule (`cache_dir`): an environment variable names the folder ('off', 'none'
or empty: no cache), else the caller's default. A folder written by several runs is held with
`folder_lock`, under which a temporary file is what a killed writer left behind, and removed.
"""
from contextlib import contextmanager, suppress
from dataclasses import asdict, is_dataclass
import fcntl
import hashlib
import json
import math
import os
import socket
import tempfile

import numpy as np


def umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    with suppress(OSError, ValueError):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but nowhere else)
    os.umask(mask)
    return mask


TMP_PREFIX = ".tmp-"  # what a write killed before its rename leaves behind


def atomic_write(path: str, write, binary: bool = False) -> str:
    """Call write(file) on a temporary file next to path, then move it onto path; returns path.

    write(f) gets a text file (binary=False) or a binary one; on any error the temporary file
    is removed and path is left as it was.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX,
                               suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # the rename must not reach the disk before the data
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def cache_dir(env: str, default: str | None) -> str | None:
    """The one rule for where a cache lives: $env where set ('off', 'none' or empty: no cache),
    else default (None: no cache)."""
    d = os.environ.get(env)
    if d is None:
        return default
    return None if d.strip().lower() in ("off", "none", "") else d


def checksum(arrays: dict) -> str:
    """sha256 over the arrays' names, dtypes, shapes and bytes."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def file_digest(path: str) -> dict:
    """{"sha256", "bytes"} of a file's contents."""
    h, n = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            n += len(block)
    return {"sha256": h.hexdigest(), "bytes": n}


def write_manifest(path: str, fingerprint: str, files, **extra) -> None:
    """The manifest of files a run wrote (each already on disk, atomically): the run's
    fingerprint and every file's digest (by name, relative to the manifest's folder), written
    atomically and last, so that a file rewritten since no longer matches it."""
    folder = os.path.dirname(os.path.abspath(path))
    digests = {os.path.relpath(os.path.abspath(p), folder): file_digest(p) for p in files}
    atomic_write(path, lambda f: json.dump({"fingerprint": fingerprint, "files": digests,
                                            **extra}, f, indent=1, sort_keys=True))


def verify_manifest(path: str, fingerprint: str, files) -> tuple:
    """(manifest, None) when path is a manifest of this fingerprint and every file is there
    with its digest; else (None, why): one line naming the file and what is wrong ("" when
    nothing was ever written: no manifest and none of the files)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        with open(path) as f:
            man = json.load(f)
        listed = man["files"]
    except FileNotFoundError:
        there = [p for p in files if os.path.exists(p)]
        return None, (f"{there[0]} has no manifest ({path})" if there else "")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"{path} is unreadable ({one_line(e)})"
    if man.get("fingerprint") != fingerprint:
        return None, f"{path} is of another configuration or code"
    for p in files:
        want = listed.get(os.path.relpath(os.path.abspath(p), folder)) if isinstance(
            listed, dict) else None
        if want is None:
            return None, f"{p} is not in its manifest ({path})"
        try:
            got = file_digest(p)
        except OSError as e:
            return None, f"{p} is unreadable ({one_line(e)})"
        if got != want:
            return None, f"{p} does not match its manifest's checksum ({got['bytes']} bytes)"
    return man, None


def stale_temp(name: str) -> bool:
    """A temporary file of atomic_write, or of the policy warm-up's writer before it used
    atomic_write (<key>.npz.<pid>.tmp)."""
    return name.startswith(TMP_PREFIX) or (name.endswith(".tmp") and ".npz." in name)


@contextmanager
def folder_lock(folder: str, log, what: str):
    """Hold folder/.lock; if another run holds it, log(...) once and wait. Where the lock file
    cannot be opened (a read-only disk), log(...) once and go on unlocked. Once held, the
    temporary files in folder are a killed writer's and are removed. what names the folder
    in the lines (e.g. "store PATH")."""
    try:
        os.makedirs(folder, exist_ok=True)
        f = open(os.path.join(folder, ".lock"), "a+")
    except OSError as e:
        log(f"{what}: cannot open its lock ({one_line(e)}); reading it unlocked")
        yield
        return
    with f:
        locked = True
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another run"
            log(f"{what} is in use ({holder}); waiting for that run to finish")
            fcntl.flock(f, fcntl.LOCK_EX)
        except OSError as e:  # a file system without locks: atomic writes still protect
            log(f"{what}: no file locking here ({e.strerror}); continuing")
            locked = False
        with suppress(OSError):  # a full disk: the lock holds without its note
            if locked:  # the only writer now: a temporary file is what a killed run left
                for name in os.listdir(folder):
                    if stale_temp(name):
                        os.remove(os.path.join(folder, name))
            os.ftruncate(f.fileno(), 0)  # unbuffered: nothing left for close() to fail on
            os.write(f.fileno(), f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield  # closing the file releases the lock, also when the process is killed


class Refused(ValueError):
    """Input refused before simulating: a bad value, an unwritable path, a grid that cannot fit."""


def check_folder(folder: str, what: str) -> None:
    """Refused unless folder exists (or can be created) and a file can be written in it."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".tmp-probe-")
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise Refused(f"{what} must be a folder this process can write in (got {folder!r}: "
                      f"{e.strerror or e})") from None


def check_reusable_folder(folder: str, what: str) -> None:
    """check_folder, except that a folder that exists but cannot be written is accepted: what
    it holds (a store's finished chunks, a cache) is still read, and new files stay in memory."""
    try:
        check_folder(folder, what)
    except Refused:
        if not os.path.isdir(folder):
            raise


def check_file(path: str, what: str) -> None:
    """Refused unless path is not a folder and its folder passes check_folder."""
    if os.path.isdir(path):
        raise Refused(f"{what} must be a file path, not a folder (got {path!r})")
    check_folder(os.path.dirname(os.path.abspath(path)), f"the folder of {what}")


# ------------------------------------------------------------------------------- strict JSON

def _pointer(where: tuple) -> str:
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in where)


def plain(obj, found: dict, lenient: bool = False, where: tuple = ()):
    """obj as JSON-ready Python values; non-finite floats become None, noted in found[pointer].

    Numpy scalars and arrays, tuples and dataclasses are converted; anything else is a
    TypeError naming where it is, unless lenient (then its repr, for a rescue file)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isfinite(v):
            return v
        found[_pointer(where)] = str(v)
        return None
    if isinstance(obj, dict):
        return {_key(k): plain(v, found, lenient, where + (_key(k),)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v, found, lenient, where + (i,)) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist(), found, lenient, where)
    if is_dataclass(obj) and not isinstance(obj, type):
        return plain(asdict(obj), found, lenient, where)
    if lenient:
        return repr(obj)
    raise TypeError(f"not JSON serialisable at {_pointer(where) or '/'}: {type(obj).__name__}")


def _key(k) -> str:
    return k if isinstance(k, str) else str(k)


def strict(obj: dict, lenient: bool = False) -> dict:
    """The dict to write: plain(obj), plus "non_finite" {pointer: what it was} if any were."""
    found: dict = {}
    out = plain(obj, found, lenient)
    if found:
        out["non_finite"] = {**out.get("non_finite", {}), **found}
    return out


def dumps(obj: dict, lenient: bool = False) -> str:
    return json.dumps(strict(obj, lenient), indent=1, allow_nan=False) + "\n"


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
