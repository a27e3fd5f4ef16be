"""The results store: finished sweep chunks on disk, keyed by a hash of the configuration.

Layout: <root>/<model>-<key>/config.json and chunk-<i>.npz, each written atomically
(temporary file, then os.replace), so a killed sweep leaves only whole chunks behind and
`--resume` continues from them. An identical configuration finds every chunk and
recomputes nothing.
"""
import hashlib
import json
import os
import tempfile

import numpy as np


def config_key(config: dict) -> str:
    """16 hex digits of sha256 over the canonical JSON of the configuration."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Store:
    """One sweep's folder of finished chunks."""

    def __init__(self, root: str, model: str, config: dict):
        self.config = config
        self.key = config_key(config)
        self.path = os.path.join(root, f"{model}-{self.key}")

    def _chunk(self, i: int) -> str:
        return os.path.join(self.path, f"chunk-{i:05d}.npz")

    def finished(self) -> list:
        if not os.path.isdir(self.path):
            return []
        return sorted(int(f[6:11]) for f in os.listdir(self.path)
                      if f.startswith("chunk-") and f.endswith(".npz"))

    def load(self, i: int) -> dict:
        with np.load(self._chunk(i)) as z:
            return {k: z[k] for k in z.files}

    def save(self, i: int, arrays: dict) -> None:
        os.makedirs(self.path, exist_ok=True)
        cfg = os.path.join(self.path, "config.json")
        if not os.path.exists(cfg):
            _atomic(cfg, lambda f: f.write(json.dumps(self.config, indent=1, sort_keys=True)),
                    text=True)
        _atomic(self._chunk(i), lambda f: np.savez(f, **arrays))

    def clear(self) -> None:
        for i in self.finished():
            os.remove(self._chunk(i))


def _atomic(path: str, write, text: bool = False) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    try:
        with os.fdopen(fd, "w" if text else "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
