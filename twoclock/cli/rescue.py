"""Never lose a result: an explicit rescue around a script's simulate-and-publish code.

`with Rescue(prog, path) as r:` opens one. The script hands `r.keep` to every simulation it
runs (`run_sweep(..., keep=r.keep)`), which calls it with each finished simulation's clocks; if
anything inside the block then fails, the kept clocks go to <path stem>.partial.json and the
script exits 3 with one line. Input refused inside the block (`Refused`) exits 2 with one line
instead, as bad input does elsewhere. `r.note_result(out)` and `r.note_written(path)` tell it
that the result dict exists and that its file is on disk.

Ctrl-C (SIGINT) and SIGTERM (what `timeout`, SLURM and `kill` send) are treated alike: while a
rescue is open either raises a KeyboardInterrupt (`Terminated` for SIGTERM), so that the sweep
hands over its finished chunks, an atomic write in progress removes its temporary file, and
the rescue saves the clocks, says in one line how many chunks were kept (and, with a store,
that --resume continues), and exits 128 + the signal's number: 130 for SIGINT, 143 for
SIGTERM, as a shell reports a process killed by that signal.

Where the signal lands matters. Raised inside JAX's own Python (its garbage-collection
callback, where Python prints "Exception ignored" and goes on; the code around an XLA compile,
where it crashed the interpreter at exit), the exception is lost or harmful; so the handler
records the signal there and re-delivers it to the main thread every RETRY_S seconds until it
lands in the program's own code (or code that code called), and raises it there. A second
signal while one is pending gets the default action (the process is killed by it). A signal
still pending when the block ends (it came while JAX ran, and the program finished without
running enough of its own code for a re-delivery to land there) is acted on then: the same
line, the same exit code, never a silent exit 0. The
re-delivery is a signal of its own (RETRY_SIGNAL), not the received one again: two deliveries
of one signal number can merge into one, and a user's second Ctrl-C must never be taken for
our re-delivery.
"""
from contextlib import contextmanager, suppress
import os
import signal
import sys
import tempfile
import threading
import traceback


EXIT_BAD_INPUT = 2
EXIT_AFTER_SIMULATION = 3  # simulated, then failed: the clocks are in the .partial.json
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM  # 130, 143


SIGNALS = (signal.SIGINT, signal.SIGTERM)
HERE = os.path.abspath(__file__)
RETRY_S = 0.02  # a signal that landed inside JAX is re-delivered this often
# a real-time signal where the platform has them (nothing sends it by default), else SIGUSR2
RETRY_SIGNAL = (signal.SIGRTMIN + 2) if hasattr(signal, "SIGRTMIN") else signal.SIGUSR2


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, like Ctrl-C's KeyboardInterrupt."""


def _in(path: str, package: str) -> bool:
    return f"{os.sep}{package}{os.sep}" in path


def safe_to_raise(frame) -> bool:
    """Whether an exception raised at frame reaches the program: False where the innermost
    frame that is JAX's or the program's own is JAX's (its callbacks, its compile path)."""
    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # twoclock/
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path == HERE:  # a handler of ours (a re-delivery handled inside handle()): look past
            frame = frame.f_back
            continue
        if path.startswith(ours + os.sep) or path == script:
            return True
        if _in(path, "jax") or _in(path, "jaxlib"):
            return False
        frame = frame.f_back
    return True


class _Signals:
    """SIGINT and SIGTERM raised where it is safe (see the module doc), while installed."""

    def __init__(self):
        self.pending = None  # the signal received, once one is
        self.raised = False  # whether it was raised in the program's code
        self.closing = False  # the rescue is handling the interrupt: nothing more to raise
        self.saved, self.retrier, self.stop = {}, None, threading.Event()

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():  # signals reach only it
            return
        for sig in SIGNALS:
            old = signal.getsignal(sig)
            if old is signal.SIG_IGN:  # started with it ignored (nohup, `&`): keep that
                continue
            self.saved[sig] = old
            signal.signal(sig, self.handle)
        if self.saved:
            self.saved[RETRY_SIGNAL] = signal.getsignal(RETRY_SIGNAL)
            signal.signal(RETRY_SIGNAL, self.retry)

    def restore(self) -> int | None:
        """Our handlers out; returns the signal received and never raised, if one was."""
        self.closing = True
        self.stop.set()
        if self.retrier is not None:
            self.retrier.join()  # no re-delivery is sent after this
        for sig, old in self.saved.items():
            if sig == RETRY_SIGNAL and old in (None, signal.SIG_DFL):
                old = signal.SIG_IGN  # a re-delivery still in flight must not kill (its default)
            # None: a handler set outside Python, not ours to restore
            signal.signal(sig, signal.SIG_DFL if old is None else old)
        self.saved = {}
        return None if self.raised else self.pending

    def _redeliver(self) -> None:
        main = threading.main_thread().ident
        while not self.stop.wait(RETRY_S):
            # a real signal to the main thread: it also wakes a sleep or a wait there
            signal.pthread_kill(main, RETRY_SIGNAL)

    def _raise_if_safe(self, frame) -> None:
        if not safe_to_raise(frame):
            if self.retrier is None:
                self.retrier = threading.Thread(target=self._redeliver, daemon=True)
                self.retrier.start()
            return
        self.stop.set()
        self.raised = True
        raise Terminated() if self.pending == signal.SIGTERM else KeyboardInterrupt()

    def handle(self, signum, frame):
        if self.closing:
            return
        if self.pending is not None:  # a second signal: the default action
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.pending = signum
        self._raise_if_safe(frame)

    def retry(self, signum, frame):
        if self.pending is None or self.stop.is_set():  # stop: raised already, or closing
            return
        self._raise_if_safe(frame)


@contextmanager
def loading(prog: str):
    """Around what comes before a command's first simulation (its imports, JAX's setup, the
    parsing): a SIGINT or SIGTERM is raised where it is safe, as inside a rescue (a signal that
    lands in JAX's garbage-collection callback there was lost, and the run went on to exit 0),
    and ends in one line and exit 130 or 143; nothing had run, so nothing is saved."""
    signals = _Signals()
    signals.install()
    error = None
    try:
        yield
    except KeyboardInterrupt as e:
        error = e
    finally:
        unraised = signals.restore()
    if error is None and unraised is not None:
        error = Terminated() if unraised == signal.SIGTERM else KeyboardInterrupt()
    if error is not None:
        what, code = (("SIGTERM", EXIT_SIGTERM) if isinstance(error, Terminated)
                      else ("SIGINT", EXIT_SIGINT))
        print(f"{prog}: interrupted by {what} before any simulation began; nothing to save",
              file=sys.stderr, flush=True)
        sys.exit(code)


class Rescue:
    """The clocks a script has simulated so far, saved if the script then fails."""

    def __init__(self, prog: str, path: str, fallback: tuple = (), resume_flag: bool = True):
        self.prog, self.path = prog, path
        # how the interrupted line says to continue: the command's --resume where it has one,
        # else the same command again (a study whose sweeps always read their store resumes so)
        self.resume_flag = resume_flag
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
        from twoclock.atomic import atomic_write, dumps, one_line  # (numpy: loaded late)
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
            one = len(done) == 1 and not part
            msg = (f"after {' and '.join(parts)}; {'its' if one else 'their'} clocks are saved in "
                   f"{saved or 'no writable place'}")
            if stores:
                how = "with --resume" if self.resume_flag else "the same command"
                msg += (f"; the finished chunks are in {', '.join(stores)}: rerun {how} to "
                        "continue from them")
        print(f"{self.prog}: interrupted by {what} {msg}", file=sys.stderr, flush=True)
        sys.exit(code)

    def fail(self, error: BaseException):
        from twoclock.atomic import one_line
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
        self._signals = _Signals()
        self._signals.install()
        return self

    def __exit__(self, kind, error, tb) -> bool:
        unraised = self._signals.restore()
        if error is None and unraised is not None:  # it never landed in the program's code
            self.interrupted(Terminated() if unraised == signal.SIGTERM else KeyboardInterrupt())
        if error is None or isinstance(error, (SystemExit, GeneratorExit)):
            return False
        if isinstance(error, KeyboardInterrupt):
            self.interrupted(error)
        from twoclock.atomic import Refused
        if isinstance(error, Refused):
            if not self.kept and not self.written:
                print(f"{self.prog}: error: {error}", file=sys.stderr, flush=True)
                sys.exit(EXIT_BAD_INPUT)
            self.fail(error)
        if not self.kept and not self.written and self.result is None:  # nothing to save
            return False
        self.fail(error)
        return False
