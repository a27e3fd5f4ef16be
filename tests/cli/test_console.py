"""The one command: `twoclock` (the console script the README's install puts beside the
interpreter) and `python -m twoclock` dispatch to the planner, every study and the figures, and
refuse an unknown command or study in one line with exit 2."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(os.path.dirname(sys.executable), "twoclock")


def _run(args, cwd=ROOT, timeout=300):
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, MPLBACKEND="Agg"))
    return done.returncode, done.stdout, done.stderr


def test_the_install_puts_a_twoclock_command_beside_the_interpreter():
    assert os.path.exists(SCRIPT), f"no console script {SCRIPT}: pip install -e . writes it"
    code, out, err = _run([SCRIPT, "--help"])
    assert code == 0, err
    for word in ("plan", "run", "figures", "critical_batch", "policy_study"):
        assert word in out, out


@pytest.mark.parametrize("args, prog", [(["plan", "--help"], "usage: twoclock plan"),
                                        (["run", "critical_batch", "--help"],
                                         "usage: twoclock run critical_batch"),
                                        (["run", "headline", "--help"],
                                         "usage: twoclock run headline"),
                                        (["figures", "--help"], "paper_figures")])
def test_python_m_twoclock_reaches_each_commands_own_help(args, prog):
    code, out, err = _run([sys.executable, "-m", "twoclock", *args])
    assert code == 0, err
    assert prog in out, out


@pytest.mark.parametrize("args, says", [
    (["nosuch"], "no command 'nosuch'; the commands are plan, run, figures"),
    (["run", "nosuch"], "run: no study 'nosuch'; the studies are "),
    ([], "usage: twoclock"),
    # no study: the refusal names what is missing and the choices (it had printed the usage
    # and exited 2 with no error line); the choices by hand, in order, from experiments/
    (["run"], "twoclock: error: run: give a study to run: one of bandit_regimes, clipping, "
              "critical_batch, damage_study, headline, phase, phase_diagram, plan_calibration, "
              "plan_check, policy_study, regime_map, schedule, shapes, time_to_target, "
              "updates_cost")])
def test_an_unknown_command_or_study_is_one_line_and_exit_2(args, says):
    code, out, err = _run([sys.executable, "-m", "twoclock", *args])
    assert code == 2, (out, err)
    assert says in (err or out), (out, err)
    if args:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert not out, out


def test_twoclock_plan_is_the_scripts_plan(tmp_path):
    """The same plan from `twoclock plan` and from experiments/plan.py, from the shipped pilots."""
    runs = os.path.join(ROOT, "twoclock", "data", "example_pilot_runs.csv")
    outs = {}
    for name, cmd in (("cli", [SCRIPT, "plan"]),
                      ("script", [sys.executable, os.path.join(ROOT, "experiments", "plan.py")])):
        code, _, err = _run([*cmd, runs, "--predict", "512", "--no-figure",
                             "--out", str(tmp_path / name)])
        assert code == 0, err
        with open(tmp_path / name / "plan.json") as f:
            outs[name] = {k: v for k, v in json.load(f).items() if k not in ("seconds",
                                                                             "versions")}
    assert outs["cli"] == outs["script"]
