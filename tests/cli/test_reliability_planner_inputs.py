"""Reliability of the planner's checks (issue 55): every output path and every grid checked
before the first simulation (one line, exit 2), and the calibration's cached logs never read
back mixed with another run's (the stale-read recipe, end to end with SIGTERM)."""
from contextlib import nullcontext, redirect_stderr, redirect_stdout
import io
import json
import os
import signal
import subprocess
import sys
import time
from unittest import mock

import pytest

from twoclock.cli import run_study
from twoclock.studies import STUDIES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _main(study, argv, simulate: bool = False):
    """study's command in this process: (exit code, stdout, stderr); unless simulate, a sweep
    that starts fails the test."""
    out, err = io.StringIO(), io.StringIO()
    never = nullcontext() if simulate else mock.patch(
        "twoclock.engine.sweep._run", side_effect=AssertionError("simulated"))
    with redirect_stdout(out), redirect_stderr(err), \
            mock.patch("twoclock.cli.run_study.setup"), never:
        try:
            code = run_study.main(study, list(argv))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def _one_line(code, out, err, want: int = 2) -> str:
    assert code == want and err.count("\n") == 1 and "Traceback" not in err + out, (code, err)
    return err.strip()


@pytest.mark.parametrize("flag, path, says", [
    ("--logs", "/proc/x.csv", "the folder of --logs must be a folder this process can write"),
    ("--csv", "/proc/x.csv", "the folder of --csv must be a folder this process can write"),
    ("--logs", "FOLDER", "--logs must be a file path, not a folder"),
    ("--csv", "FOLDER", "--csv must be a file path, not a folder"),
])
def test_an_unwritable_log_or_csv_path_is_refused_before_simulating(tmp_path, flag, path, says):
    """Before issue 55: simulated, then FileNotFoundError / IsADirectoryError, exit 3."""
    path = str(tmp_path) if path == "FOLDER" else path
    line = _one_line(*_main(STUDIES.plan_check, [flag, path, "--quiet", "--out",
                                                 str(tmp_path / "o")]))
    assert line.startswith("plan_check.py: error: " + says), line
    assert not (tmp_path / "o").exists() or not os.listdir(tmp_path / "o")


@pytest.mark.parametrize("args", [["--seeds", "100000000"], ["--pilot-seeds", "100000000"]])
def test_a_held_out_grid_that_cannot_fit_is_refused_before_the_pilots_run(tmp_path, args):
    """Before issue 55: the pilots ran, then the held-out grid was refused with exit 3."""
    line = _one_line(*_main(STUDIES.plan_check, ["--logs", *args, "--quiet", "--out",
                                                 str(tmp_path)]))
    assert "the sweep cannot fit in memory" in line, line


def test_the_calibration_refuses_an_unwritable_out_before_simulating(tmp_path):
    (tmp_path / "f").write_text("")
    line = _one_line(*_main(STUDIES.plan_calibration, [
        "--models", "quadratic", "--quiet", "--no-figure", "--out", str(tmp_path / "f"),
        "--json", str(tmp_path / "r.json")]))
    assert "--out (the simulated logs) must be a folder" in line, line


def test_a_target_met_at_the_first_logged_point_is_one_line_and_then_refused_up_front(tmp_path):
    """`plan_calibration.py --n-ckpt 64 --dim 16` (issue 55): the first run stops after the
    pilots, before the held-out runs (exit 3, one line, the pilots' clocks kept); the second
    reads the pilots back and refuses without simulating (exit 2), where it printed a
    PilotError traceback (exit 1)."""
    argv = ["--models", "quadratic", "--n-ckpt", "64", "--dim", "16", "--quiet", "--no-figure",
            "--out", str(tmp_path)]
    code, out, err = _main(STUDIES.plan_calibration, argv, simulate=True)
    lines = [x for x in err.splitlines() if x.startswith("plan_calibration.py:")]
    assert code == 3 and len(lines) == 1 and "Traceback" not in err, (code, err)
    # as the planner reads them (before: 'already meets --progress' for any first-point run)
    assert "progress fit needs 3; past it at the first logged point" in lines[0]
    assert (tmp_path / "plan_calibration.partial.json").exists()
    assert not (tmp_path / "plan_calibration_quadratic_heldout.csv").exists()
    line = _one_line(*_main(STUDIES.plan_calibration, argv))
    assert "--progress 'progress_frac<=" in line and "past it at the first logged" in line, line


def test_the_check_from_logs_stops_after_pilots_that_meet_the_target_at_their_first_point(
        tmp_path):
    """plan_check --logs with the same settings: one line, exit 3 (the pilots' clocks kept),
    and the held-out runs never simulated (before: simulated, then refused by the plan)."""
    code, out, err = _main(STUDIES.plan_check, [
        "--logs", "--n-ckpt", "64", "--dim", "16", "--pilot-seeds", "2", "--seeds", "2",
        "--quiet", "--out", str(tmp_path)], simulate=True)
    lines = [x for x in err.splitlines() if x.startswith("plan_check.py:")]
    assert code == 3 and len(lines) == 1 and "Traceback" not in err, (code, err)
    assert "progress fit needs 3; past it at the first logged point" in lines[0]
    assert (tmp_path / "plan_check_quadratic_logs.csv").exists()
    assert not (tmp_path / "plan_check_quadratic_logs.csv.heldout.csv").exists()


def _run(args, cwd, **kw):
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "experiments",
                                                          "plan_calibration.py"), *args],
                            cwd=cwd, env={**os.environ, "PYTHONPATH": ROOT},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_the_stale_read_recipe_ends_in_a_fresh_simulation(tmp_path):
    """Issue 55's recipe: run A; a run of --dim 32 killed (SIGTERM) once it has rewritten the
    pilots' file; A again. Before: 'read back (same fingerprint)', exit 0, B's pilots beside
    A's held-out logs. Now: one line, a fresh simulation, A's rows."""
    args = ["--models", "quadratic", "--no-figure", "--quiet", "--out", "o"]
    a = _run(args, tmp_path)
    assert a.communicate(timeout=600) and a.returncode == 0
    rows = json.loads((tmp_path / "o" / "plan_calibration.json").read_text())["rows"]
    pilots = tmp_path / "o" / "plan_calibration_quadratic_pilots.csv"
    before = pilots.stat().st_mtime_ns
    b = _run([*args, "--dim", "32"], tmp_path)
    while pilots.stat().st_mtime_ns == before and b.poll() is None:
        time.sleep(0.02)
    b.send_signal(signal.SIGTERM)
    b.communicate(timeout=120)
    assert b.returncode == 143  # interrupted (128 + SIGTERM), after it rewrote the pilots
    c = _run(args, tmp_path)
    out, err = c.communicate(timeout=600)
    assert c.returncode == 0, err
    said = [x for x in err.splitlines() if "simulating anew" in x]
    assert len(said) == 1 and "Traceback" not in err and "read back" not in out, err
    again = json.loads((tmp_path / "o" / "plan_calibration.json").read_text())
    assert not again["simulations"]["quadratic"]["reused"] and again["rows"] == rows
