"""Never lose a result: an explicit rescue around a script's simulate-and-publish code.

`with Rescue(prog, path) as r:` opens one. The script hands `r.keep` to every simulation it
runs (`run_sweep(..., keep=r.keep)`), which calls it with each finished simulation's clocks; if
anything inside the block then fails, the kept clocks go to <path stem>.partial.json and the
script exits 3 with one line. Input refused inside the block (`Refused`) exits 2 with one line
instead, as bad input does elsewhere. `r.note_result(out)` and `r.note_written(path)` tell it
that the result dict exists and that its file is on disk.
"""
from contextlib import suppress
import os
import sys
import tempfile
import traceback

from twoclock.atomic import Refused, atomic_write, dumps, one_line

EXIT_BAD_INPUT = 2
EXIT_AFTER_SIMULATION = 3  # simulated, then failed: the clocks are in the .partial.json


class Rescue:
    """The clocks a script has simulated so far, saved if the script then fails."""

    def __init__(self, prog: str, path: str, fallback: tuple = ()):
        self.prog, self.path = prog, path
        self.fallback = tuple(fallback) + (os.getcwd(),)
        self.kept, self.written, self.result = [], None, None

    def keep(self, label: str, clocks: dict, config: dict | None = None,
             store: str | None = None) -> None:
        """A finished simulation's clocks (what the engine's `keep` callback receives)."""
        self.kept.append({"what": label, "store": store, "config": config, "clocks": clocks})

    def note_result(self, result: dict) -> None:
        """The finished result dict, saved in the rescue file if writing it fails."""
        self.result = result

    def note_written(self, path: str) -> None:
        """The result file is on disk: a later failure (the figure) need not save clocks."""
        self.written = path

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

    def __enter__(self) -> "Rescue":
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if error is None or isinstance(error, (SystemExit, GeneratorExit)):
            return False
        if isinstance(error, Refused):
            if not self.kept and not self.written:
                print(f"{self.prog}: error: {error}", file=sys.stderr, flush=True)
                sys.exit(EXIT_BAD_INPUT)
            self.fail(error)
        if not self.kept and not self.written:  # nothing to save: let it propagate
            return False
        self.fail(error)  # KeyboardInterrupt too: save what was simulated, then stop
        return False
