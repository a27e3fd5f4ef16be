"""Signals are never swallowed (issue 33 items 1-2): wherever SIGINT or SIGTERM lands, a rescue
exits 130 / 143 with its one line and the partial file, and a second signal gets the default
action. Real signals to real processes.

Where a signal lands is made certain with two stand-ins: JAX's garbage-collection callback
(`jax._src.lib._xla_gc_callback`, the place issue 33 found the exception swallowed) calling a
proxy that sends the signal from inside it, and a function whose code is compiled under a path
inside a `jax/` folder (code the handler treats as JAX's). The policy's own cases (a compile
interrupted, the study's second cell) run the real scripts and are slow."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.cli.test_reliability import until
from tests.cli.test_robustness import strict_load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": ROOT}

GC_PROXY = """
import gc, os, signal, sys, time
import jax, jax._src.lib as lib
real = lib._jax

class Proxy:  # the gc callback calls _jax.collect_garbage(): the signal comes from in there
    fired = False
    def __getattr__(self, name):
        return getattr(real, name)
    def collect_garbage(self):
        if not Proxy.fired:
            Proxy.fired = True
            os.kill(os.getpid(), signal.{sig})
        real.collect_garbage()
"""  # then: lib._jax = Proxy(); gc.collect() where the signal is to land

GC_CHILD = GC_PROXY.format(sig="SIGTERM") + """
from twoclock.cli.rescue import Rescue
with Rescue("child", sys.argv[1]) as r:
    r.keep("one simulation", {"prog_n": [1, 2]})
    lib._jax = Proxy()
    gc.collect()  # the signal lands in JAX's gc callback
    lib._jax = real
    time.sleep(2)
print("finished")
"""

SPIN_CHILD = """
import sys, time
import twoclock.cli.rescue as R
from twoclock.cli.rescue import Rescue
handle = R._Signals.handle
def held(self, signum, frame):  # says when the first signal is pending: no timing guesses
    first = self.pending is None
    handle(self, signum, frame)
    if first:
        print("held", flush=True)
R._Signals.handle = held
code = ("def spin(t):\\n    import time\\n    end = time.monotonic() + t\\n"
        "    print('ready', flush=True)\\n"
        "    while time.monotonic() < end:\\n        pass\\n")
scope = {}
exec(compile(code, "/opt/site/jax/_src/spin.py", "exec"), scope)  # "JAX's" code
with Rescue("child", sys.argv[1]) as r:
    scope["spin"](float(sys.argv[2]))
    print("left", flush=True)
    time.sleep(5)
print("finished")
"""

END_CHILD = """
import sys
from twoclock.cli import rescue
code = ("def block(rescue, path):\\n    import os, signal, time\\n"
        "    with rescue.Rescue('child', path) as r:\\n"
        "        open(path, 'w').write('{}')\\n        r.note_written(path)\\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\\n"
        "        end = time.monotonic() + 0.5\\n"
        "        while time.monotonic() < end:\\n            pass\\n")
scope = {}
exec(compile(code, "/opt/site/jax/_src/block.py", "exec"), scope)  # the whole block in "JAX"
scope["block"](rescue, sys.argv[1])
print("finished")
"""


def _child(code: str, *args, **kw):
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_a_signal_inside_jaxs_gc_callback_is_not_swallowed(tmp_path):
    """Before issue 33: "Exception ignored in: <function _xla_gc_callback>", then the program
    ran to its end and exited 0."""
    path = tmp_path / "r.json"
    proc = _child(GC_CHILD, str(path))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (proc.returncode, err)
    assert "finished" not in out and "Exception ignored" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted by SIGTERM after 1 finished simulation" in lines[0]
    (sim,) = strict_load((tmp_path / "r.partial.json").read_text())["simulations"]
    assert sim["clocks"] == {"prog_n": [1, 2]}
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]


def _ready(proc) -> float:
    assert proc.stdout.readline().strip() == "ready"
    return time.monotonic()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_jax_waits_until_jax_returns(tmp_path, sig):
    """Held while the program is in JAX's code (no raise there), raised as soon as it is back
    in its own: 128 + the signal, after the spin, before the sleep ends."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # see test_reliability
    try:
        proc = _child(SPIN_CHILD, str(tmp_path / "r.json"), "1.5")
    finally:
        signal.signal(signal.SIGINT, before)
    t0 = _ready(proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert 1.4 < took < 4.5, took  # the spin's 1.5 s, not the 5 s sleep after it
    name = "SIGINT" if sig == signal.SIGINT else "SIGTERM"
    assert err.strip() == (f"child: interrupted by {name} before any simulation finished; "
                           "nothing to save"), err


def test_a_signal_still_pending_when_the_block_ends_is_not_dropped(tmp_path):
    """Every re-delivery lands in JAX's code until the block ends (as when the signal comes
    during the last chunk's compile and the program's own code after it is short). Before:
    dropped when the handlers were restored, and the program exited 0 (1 in 3-10 runs of
    test_an_interrupt_while_the_policy_compiles_exits_cleanly)."""
    path = tmp_path / "r.json"
    proc = _child(END_CHILD, str(path))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err)
    assert "finished" not in out, out
    assert err.strip() == (f"child: interrupted by SIGTERM after writing {path}; "
                           "the results are there"), err
    assert path.read_text() == "{}"


def test_a_second_signal_gets_the_default_action(tmp_path):
    """A program stuck in JAX's code with a signal pending: a second SIGTERM kills it (the
    shell's 143). Before issue 33 the first one raised inside JAX's code."""
    proc = _child(SPIN_CHILD, str(tmp_path / "r.json"), "30")
    t0 = _ready(proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "held"
    time.sleep(0.2)
    assert proc.poll() is None  # held: the program is still in "JAX"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - t0 < 20


def test_a_re_delivery_handled_inside_our_handler_does_not_raise_there():
    """A re-delivery can be handled while handle() runs (its frame is the innermost): the
    walk looks past the handler's frames to JAX's code under it, so nothing is raised inside
    the handler (where it would skip the second signal's default action) or into JAX's code."""
    import twoclock.cli.rescue as rescue
    scope = {}
    exec(compile("import sys\ndef handler():\n    return sys._getframe()\n", rescue.HERE,
                 "exec"), scope)
    exec(compile("def jax_code(f):\n    return f()\n", "/opt/site/jax/_src/x.py", "exec"),
         scope)
    assert not rescue.safe_to_raise(scope["jax_code"](scope["handler"]))
    exec(compile("def ours(f):\n    return f()\n", rescue.__file__.replace(
        "rescue.py", "flags.py"), "exec"), scope)
    assert rescue.safe_to_raise(scope["ours"](scope["handler"]))


@pytest.mark.slow
def test_a_second_signal_is_never_taken_for_a_re_delivery(tmp_path):
    """Re-deliveries every 0.2 ms (a hundred times the default rate) and a second SIGTERM among
    them, eight times: each is killed by it. Before the re-delivery had a signal of its own,
    a second signal merged with one and was lost (1 to 2 in 8 exited 143 after the spin)."""
    child = SPIN_CHILD.replace("from twoclock.cli.rescue import Rescue",
                               "R.RETRY_S = 0.0002\nfrom twoclock.cli.rescue import Rescue")
    codes = []
    for i in range(8):
        proc = _child(child, str(tmp_path / "r.json"), "20")
        _ready(proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.stdout.readline().strip() == "held"  # pending, re-delivered every 0.2 ms
        time.sleep(0.1 + 0.01 * i)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        codes.append(proc.returncode)
    assert codes == [-signal.SIGTERM] * 8, codes


def _script(argv, cwd, env=None):
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env or ENV, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        signal.signal(signal.SIGINT, before)


POLICY_TINY = ["--model", "policy", "--batches", "16", "--seeds", "1", "--budget", "32",
               "--n-train", "256", "--n-test", "32", "--n-ood", "32", "--d-model", "16",
               "--n-heads", "2", "--d-mlp", "32", "--warmup-steps", "4",
               "--warmup-eval-every", "2", "--warmup-batch", "32", "--no-figure"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_while_the_policy_compiles_exits_cleanly(tmp_path, sig):
    """Sent 2 s after the warm-up's last line, while the first chunk compiles. Before issue
    33: the right line, then a segfault (exit 139)."""
    # no compilation cache: a cached program would finish its chunk within the 2 s
    env = {**ENV, "TWOCLOCK_CACHE_DIR": "off"}
    proc = _script([os.path.join(ROOT, "experiments", "critical_batch.py"), *POLICY_TINY,
                    "--out", str(tmp_path)], tmp_path, env)
    try:
        until(proc, lambda ln: "held-out accuracy" in ln, time.monotonic() + 300,
              "the warm-up never finished")
        time.sleep(2)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    lines = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert len(lines) == 1, err
    # the signal lands while the chunk compiles (nothing saved) or, on a fast machine, just
    # after it finished (its clocks saved: as the sweep's one chunk, or, once the sweep has
    # returned, as its one finished simulation): either way one line and the signal's exit
    # code or, if no re-delivery landed in the program's own code before it finished, once
    # the result is written
    if "nothing to save" not in lines[0] and "the results are there" not in lines[0]:
        assert ("after 1 of 1 chunks; their clocks are saved" in lines[0]
                or "after 1 finished simulation; its clocks are saved" in lines[0]), lines[0]
        assert (tmp_path / "critical_batch_policy.partial.json").is_file(), lines[0]


@pytest.mark.slow
def test_sigterm_in_the_policy_studys_second_cell_saves_the_first(tmp_path):
    """The reproduction of issue 33 item 1: `kill -TERM` at "cell 2/2". Before: swallowed
    (the study ran to its end and exited 0, or needed SIGKILL)."""
    argv = [os.path.join(ROOT, "experiments", "policy_study.py"), "--seeds", "2", "--budget",
            "256", "--batches", "64", "128", "--early-samples", "128", "--parts", "rules",
            "--no-figure", "--out", "k"]
    proc = subprocess.Popen([sys.executable, *argv], cwd=tmp_path, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 1500
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            if "cell 2/2" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 143, (proc.returncode, err)
    lines = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert len(lines) == 1 and "interrupted by SIGTERM after 1 finished simulation" in lines[0]
    partial = json.loads((tmp_path / "k" / "policy_study_rules.partial.json").read_text())
    assert len(partial["simulations"]) == 1
    (store,) = [d for d in (tmp_path / "k" / "store").iterdir() if d.name.startswith("policy-")]
    assert len(list(store.glob("chunk-*.npz"))) == 2  # the first cell's two chunks
    assert not list(tmp_path.rglob(".tmp-*"))
