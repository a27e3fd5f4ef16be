"""twoclock/cli/launch.py and rescue.loading: a Ctrl-C or SIGTERM before a study's first
simulation (its imports, JAX's setup, the parsing) ends in one line and exit 130 (128 + SIGINT's
2) or 143, never a traceback from inside an import and never a signal lost in JAX's callback."""
import importlib.abc
import os
import signal
import subprocess
import sys

import pytest

from tests.cli.test_signals import GC_PROXY
from twoclock.cli.launch import study_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _CtrlC(importlib.abc.MetaPathFinder):
    """A Ctrl-C that lands while `name` is being imported."""
    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path, target=None):
        if fullname == self.name:
            raise KeyboardInterrupt


@pytest.mark.parametrize("module", ["twoclock.studies", "twoclock.cli.run_study"])
def test_a_ctrl_c_while_the_study_loads_is_one_line(module, monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, module, raising=False)
    if module == "twoclock.cli.run_study":  # `from twoclock.cli import run_study` reads it
        monkeypatch.delattr("twoclock.cli.run_study", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_CtrlC(module), *sys.meta_path])
    monkeypatch.setattr(sys, "argv", ["critical_batch.py"])
    try:
        with pytest.raises(SystemExit) as exit_:
            study_main("headline")([])
    except KeyboardInterrupt:  # (caught: pytest would take it for the user's own Ctrl-C)
        pytest.fail("the Ctrl-C escaped as a KeyboardInterrupt: a traceback for the user")
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    assert err.splitlines() == ["critical_batch.py: interrupted by SIGINT before any simulation "
                                "began; nothing to save"], err


GC_CHILD = GC_PROXY.format(sig="SIGINT") + """
from twoclock.cli.rescue import loading
with loading("child"):
    lib._jax = Proxy()
    gc.collect()  # the signal lands in JAX's gc callback
    lib._jax = real
    time.sleep(2)
print("finished")
"""


def test_a_ctrl_c_in_jaxs_gc_callback_while_loading_is_not_lost():
    """Before: "Exception ignored in: <function _xla_gc_callback>", and the study ran to its
    end and exited 0 (seen with a Ctrl-C 0.8 s after `python experiments/critical_batch.py`)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # not inherited ignored
    try:
        proc = subprocess.Popen([sys.executable, "-c", GC_CHILD], cwd=ROOT, text=True,
                                env={**os.environ, "PYTHONPATH": ROOT},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        signal.signal(signal.SIGINT, before)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "finished" not in out and "Exception ignored" not in err, err
    assert err.strip() == ("child: interrupted by SIGINT before any simulation began; "
                           "nothing to save"), err


def test_a_ctrl_c_while_twoclock_run_loads_the_studies_is_one_line(monkeypatch, capsys):
    from twoclock.cli import main
    monkeypatch.delitem(sys.modules, "twoclock.studies", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_CtrlC("twoclock.studies"), *sys.meta_path])
    try:
        with pytest.raises(SystemExit) as exit_:
            main.main(["run", "critical_batch"])
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C escaped as a KeyboardInterrupt: a traceback for the user")
    assert exit_.value.code == 130
    assert capsys.readouterr().err.splitlines() == [
        "twoclock run: interrupted by SIGINT before any simulation began; nothing to save"]
