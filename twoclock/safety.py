"""Never lose a result: output paths checked before a run, strict JSON, and a record of every
simulation so that a failure after it still saves them.

Every file is written by twoclock.atomic.atomic_write: whole, and with the umask's mode.

Strict JSON: every non-finite float, wherever it sits, becomes null and is listed, with what it
was, under the result's top-level "non_finite" ({JSON pointer: "inf" | "-inf" | "nan"}).

The rescue: `rescue(prog, path)` is a context manager around a script's simulate-and-publish
code. The engine hands every finished simulation to `keep`; if anything inside the block then
fails, the kept clocks go to <path stem>.partial.json and the script exits 3 with one line. Input
refused inside the block (`Refused`) exits 2 with one line instead, as bad input does elsewhere.
"""
from contextlib import contextmanager, suppress
from dataclasses import asdict, is_dataclass
import json
import math
import os
import sys
import tempfile
import traceback

import numpy as np

from twoclock.atomic import atomic_write

EXIT_BAD_INPUT = 2
EXIT_AFTER_SIMULATION = 3  # simulated, then failed: the clocks are in the .partial.json


class Refused(ValueError):
    """Input refused before simulating: a bad value, an unwritable path, a grid that cannot fit."""


# ------------------------------------------------------------------------- paths, checked early

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


# ---------------------------------------------------------------------------- the rescue

_ACTIVE: list = []  # the open rescues, innermost last


def keep(label: str, clocks: dict, config: dict | None = None, store: str | None = None) -> None:
    """Hand a finished simulation's clocks to every open rescue (nothing happens outside one)."""
    for r in _ACTIVE:
        r.kept.append({"what": label, "store": store, "config": config, "clocks": clocks})


def note_written(path: str) -> None:
    """The result file is on disk: a later failure (the figure) need not save clocks."""
    for r in _ACTIVE:
        r.written = path


def note_result(result: dict) -> None:
    """The finished result dict, saved in the rescue file if writing it fails."""
    for r in _ACTIVE:
        r.result = result


class _Rescue:
    def __init__(self, prog: str, path: str, fallback: tuple):
        self.prog, self.path, self.fallback = prog, path, fallback
        self.kept, self.written, self.result = [], None, None

    def partial_path(self) -> str:
        stem = self.path[:-5] if self.path.endswith(".json") else self.path
        return stem + ".partial.json"

    def save(self, error: BaseException) -> str | None:
        """Write the kept clocks (and the result, if built) to the first writable place."""
        body = dumps({"error": one_line(error), "traceback": traceback.format_exception(error),
                      "result": self.result, "simulations": self.kept}, lenient=True)
        name = os.path.basename(self.partial_path())
        places = [self.partial_path()] + [os.path.join(d, name) for d in self.fallback]
        for p in places + [os.path.join(tempfile.gettempdir(), name)]:
            with suppress(OSError):
                return atomic_write(p, lambda f: f.write(body))
        return None

    def fail(self, error: BaseException):
        stores = sorted({k["store"] for k in self.kept if k["store"]})
        where = f" (finished chunks in {', '.join(stores)})" if stores else ""
        if self.written:
            msg = f"{one_line(error)} after writing {self.written}; the results are there"
        else:
            saved = self.save(error)
            msg = (f"{one_line(error)} after simulating; the clocks are saved in "
                   f"{saved or 'no writable place'}{where}")
        print(f"{self.prog}: error: {msg}", file=sys.stderr, flush=True)
        sys.exit(EXIT_AFTER_SIMULATION)


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


@contextmanager
def rescue(prog: str, path: str, fallback: tuple = ()):
    """Around simulate-and-publish code: see the module docstring. path: the result JSON."""
    r = _Rescue(prog, path, tuple(fallback) + (os.getcwd(),))
    _ACTIVE.append(r)
    try:
        yield r
    except Refused as e:
        if not r.kept and not r.written:
            print(f"{prog}: error: {e}", file=sys.stderr, flush=True)
            sys.exit(EXIT_BAD_INPUT)
        r.fail(e)
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as e:  # KeyboardInterrupt too: save what was simulated, then stop
        if not r.kept and not r.written:
            raise
        r.fail(e)
    finally:
        _ACTIVE.remove(r)
