"""Never lose a result: an explicit rescue around a script's simulate-and-publish code.

`with Rescue(prog, path) as r:` opens one. The script hands `r.keep` to every simulation it
runs (`run_sweep(..., keep=r.keep)`), which calls it with each finished simulation's clocks; if
anything inside the block then fails, the kept clocks go to <path stem>.partial.json and the
script exits 3 with one line. Input refused inside the block (`Refused`) exits 2 with one line
instead, as bad input does elsewhere. `r.note_result(out)` and `r.note_written(path)` tell it
that the result dict exists and that its file is on disk.

Ctrl-C (SIGINT) and SIGTERM (what `timeout`, SLURM and `kill` send) are treated alike: while a
rescue is open SIGTERM raises `Terminated`, a KeyboardInterrupt, so that the sweep hands over
its finished chunks, an atomic write in progress removes its temporary file, and the rescue
saves the clocks, says in one line how many chunks were kept (and, with a store, that
--resume continues), and exits 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM, as
a shell reports a process killed by that signal.
"""
from contextlib import suppress
import os
import signal
import sys
import tempfile
import threading
import traceback

from twoclock.atomic import Refused, atomic_write, dumps, one_line

EXIT_BAD_INPUT = 2
EXIT_AFTER_SIMULATION = 3  # simulated, then failed: the clocks are in the .partial.json
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM  # 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, like Ctrl-C's KeyboardInterrupt."""


def _raise_terminated(signum, frame):
    raise Terminated()


class Rescue:
    """The clocks a script has simulated so far, saved if the script then fails."""

    def __init__(self, prog: str, path: str, fallback: tuple = ()):
        self.prog, self.path = prog, path
        self.fallback = tuple(fallback) + (os.getcwd(),)
        self.kept, self.written, self.result, self.ahead = [], None, None, None

    def keep(self, label: str, clocks: dict, config: dict | None = None,
             store: str | None = None) -> None:
        """A finished simulation's clocks (what the engine's `keep` callback receives)."""
        self.kept.append({"what": label, "store": store, "config": config, "clocks": clocks})

    def note_result(self, result: dict) -> None:
        """The finished result dict, saved in the rescue file if writing it fails."""
        self.result = result

    def note_written(self, path: str) -> None:
        """The result file is on disk: a later failure (the figure) need not save clocks, and
        the file save_ahead wrote is removed."""
        self.written = path
        if self.ahead:
            with suppress(OSError):
                os.remove(self.ahead)
            self.ahead = None

    def save_ahead(self, note: str) -> str | None:
        """Write the kept clocks now, before a step that could take the process down with no
        exception to catch (memory the kernel refuses: SIGKILL); removed once the result file
        is written. Returns where they went."""
        self.ahead = self.save(RuntimeError(note))
        return self.ahead

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

    def interrupted(self, error: KeyboardInterrupt):
        """One line (which signal, what finished, where it is), then exit 130 or 143."""
        term = isinstance(error, Terminated)
        what, code = ("SIGTERM", EXIT_SIGTERM) if term else ("SIGINT", EXIT_SIGINT)
        stores = sorted({k["store"] for k in self.kept if k["store"]})
        if self.written:
            msg = f"after writing {self.written}; the results are there"
        elif not self.kept:
            msg = "before any simulation finished; nothing to save"
        else:
            done = [k for k in self.kept if "chunks_total" not in k["clocks"]]
            part = [k["clocks"] for k in self.kept if "chunks_total" in k["clocks"]]
            parts = [f"{len(done)} finished simulation{'s' * (len(done) != 1)}"] if done else []
            parts += [f"{c['chunks_finished']} of {c['chunks_total']} chunks" for c in part]
            saved = self.save(error)
            msg = (f"after {' and '.join(parts)}; their clocks are saved in "
                   f"{saved or 'no writable place'}")
            if stores:
                msg += (f"; the finished chunks are in {', '.join(stores)}: rerun with --resume "
                        "to continue from them")
        print(f"{self.prog}: interrupted by {what} {msg}", file=sys.stderr, flush=True)
        sys.exit(code)

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
        self._sigterm = False  # False: not ours to restore (None: a handler set outside Python)
        if threading.current_thread() is threading.main_thread():  # signals reach only it
            self._sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if self._sigterm is not False:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self._sigterm is None
                          else self._sigterm)
            self._sigterm = False
        if error is None or isinstance(error, (SystemExit, GeneratorExit)):
            return False
        if isinstance(error, KeyboardInterrupt):
            self.interrupted(error)
        if isinstance(error, Refused):
            if not self.kept and not self.written:
                print(f"{self.prog}: error: {error}", file=sys.stderr, flush=True)
                sys.exit(EXIT_BAD_INPUT)
            self.fail(error)
        if not self.kept and not self.written and self.result is None:  # nothing to save
            return False
        self.fail(error)
        return False
