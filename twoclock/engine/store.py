"""The results store: finished sweep chunks on disk, keyed by the configuration and the code.

Layout: <root>/<model>-<key>/identity.json and chunk-<i>.npz. The key hashes the configuration,
a fingerprint of the package's source (every file under twoclock/), the versions of the
libraries that compute the numbers (jax, jaxlib, optax, numpy), the backend, its device kind
and XLA_FLAGS, so an edited model, an upgraded JAX or a GPU never finds the CPU's chunks. Each
chunk is written atomically (twoclock.atomic) and carries its identity (store key, slot, lanes)
and a sha256 of its arrays; a chunk that is unreadable, misplaced or altered is reported in one
line and recomputed. identity.json is checked on a store instance's first save or load (a
reused store's too): one missing or edited is named in one line and rewritten. A lock file
keeps two runs of one configuration from working on the store at once: the second waits for
the first.
Nothing here deletes a chunk: one is only ever replaced, atomically, by an identical one.
"""
import hashlib
import json
import os
import sys

import jax
import jaxlib
import numpy as np
import optax

from twoclock.atomic import atomic_write, checksum, folder_lock, one_line

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # twoclock/


class CorruptChunk(Exception):
    """A stored chunk that cannot be trusted; the message names the file and why."""


def config_key(config: dict) -> str:
    """16 hex digits of sha256 over the canonical JSON of the configuration."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def source_fingerprint(root: str = PACKAGE_DIR) -> str:
    """sha256 over every file under root (relative path and bytes; bytecode caches skipped)."""
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def xla_flags() -> str:
    """XLA_FLAGS as they can change a number: the host device count (which setup() sets from
    the cores, and the configuration's device count already covers) left out."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    return " ".join(sorted(f for f in flags
                           if not f.startswith("--xla_force_host_platform_device_count")))


def code_identity(root: str = PACKAGE_DIR) -> dict:
    """What besides the configuration decides a chunk's numbers: the source, the library
    versions, the backend and its device kind (a GPU's arithmetic is not the CPU's), and the
    XLA flags (one may change a compiler's arithmetic)."""
    return {"source": source_fingerprint(root), "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "optax": optax.__version__, "numpy": np.__version__,
            "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
            "xla_flags": xla_flags()}


def _canonical(x):
    return json.loads(json.dumps(x, sort_keys=True))


class Store:
    """One sweep's folder of finished chunks.

    config: the JSON-ready configuration; code: code_identity() unless given (tests)."""

    def __init__(self, root: str, model: str, config: dict, code: dict | None = None):
        self.config = config
        self.identity = {"config": config, "code": code_identity() if code is None else code}
        self.key = config_key(self.identity)
        self.path = os.path.join(root, f"{model}-{self.key}")

    def _chunk(self, i: int) -> str:
        return os.path.join(self.path, f"chunk-{i:05d}.npz")

    def finished(self) -> list:
        if not os.path.isdir(self.path):
            return []
        return sorted(int(f[6:11]) for f in os.listdir(self.path)
                      if f.startswith("chunk-") and f.endswith(".npz") and f[6:11].isdigit())

    def load(self, i: int, lanes: dict) -> dict:
        """Chunk i's arrays; CorruptChunk unless it reads, is slot i of this store with these
        lanes, and matches its checksum. identity.json is checked on the first load too: one
        that is missing or edited is named in one line and rewritten (the chunks carry the
        store's key, so they stay valid); where it cannot be written, the line says so."""
        self._check_identity(reading=True)
        path = self._chunk(i)
        try:
            with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads(bytes(arrays.pop("__identity__")).decode())
        except Exception as e:  # BadZipFile, EOFError, pickle refusal, zlib, KeyError, ...
            raise CorruptChunk(f"{path} is unreadable ({one_line(e)})") from None
        want = {"key": self.key, "slot": i, "lanes": _canonical(lanes)}
        got = {k: meta.get(k) for k in want}
        if got != want:
            raise CorruptChunk(f"{path} holds store {got['key']} slot {got['slot']} lanes "
                               f"{got['lanes']}, not slot {i} lanes {want['lanes']} of {self.key}")
        if checksum(arrays) != meta.get("sha256"):
            raise CorruptChunk(f"{path} does not match its checksum")
        return arrays

    def identity_ok(self) -> bool:
        """identity.json is there, reads, and is this store's identity."""
        try:
            with open(os.path.join(self.path, "identity.json")) as f:
                return json.load(f) == _canonical(self.identity)
        except (OSError, ValueError):
            return False

    def _check_identity(self, reading: bool) -> None:
        """identity.json (re)written where it is missing, truncated or not this store's, once
        per instance. reading: a store whose chunks are reused, where a failure to write it
        is said in one line instead of raised (a read-only store is still read)."""
        if getattr(self, "_identity_checked", False):
            return
        if not self.identity_ok():
            path = os.path.join(self.path, "identity.json")
            text = json.dumps(self.identity, indent=1, sort_keys=True)
            if not reading:  # saving: an OSError (a full disk) is the caller's
                atomic_write(path, lambda f: f.write(text))
            else:
                try:
                    atomic_write(path, lambda f: f.write(text))
                    said = "rewritten"
                except OSError as e:
                    said = f"cannot be rewritten ({one_line(e)})"
                print(f"store: {path} is missing or not this store's identity; {said}",
                      file=sys.stderr, flush=True)
        self._identity_checked = True

    def save(self, i: int, arrays: dict, lanes: dict) -> None:
        """Chunk i, atomically; identity.json is (re)written first where it is missing,
        truncated or not this store's (an OSError, e.g. a full disk, is the caller's)."""
        self._check_identity(reading=False)
        meta = {"key": self.key, "slot": i, "lanes": _canonical(lanes), "sha256": checksum(arrays)}
        tag = np.frombuffer(json.dumps(meta).encode(), np.uint8)
        atomic_write(self._chunk(i), lambda f: np.savez(f, __identity__=tag, **arrays),
                     binary=True)

    def lock(self, log):
        """Hold the store's lock file; if another run holds it, log(...) once and wait. Where
        the lock file cannot be opened (a read-only disk), log(...) once and go on: finished
        chunks can still be read, and a chunk that cannot be saved is the sweep's to handle
        (`twoclock.atomic.folder_lock`)."""
        return folder_lock(self.path, log, f"store {self.path}")
