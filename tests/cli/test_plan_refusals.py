"""The planner's command line refuses a bad setting in one line that names the flag as typed
and what it takes, with exit 2, before anything is read or planned."""
import os

import pytest

from twoclock.cli.plan import main
from twoclock.pilot.config import PlanConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv")


def _refused(capsys, tmp_path, argv) -> str:
    """main(argv)'s one-line error (exit 2, no file written), without the prog's prefix."""
    with pytest.raises(SystemExit) as e:
        main([*argv, "--no-figure", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    out = tmp_path / "out"  # the outputs' check may make the folder; nothing goes in it
    assert not out.exists() or not any(out.iterdir())
    return err.strip().removeprefix("plan.py: error: ")


@pytest.mark.parametrize("argv, says", [
    (["--level", "1.5"], "--level must be in (0, 1), the bands' confidence level (got 1.5)"),
    (["--level", "0"], "--level must be in (0, 1), the bands' confidence level (got 0.0)"),
    (["--level", "nan"], "--level must be in (0, 1), the bands' confidence level (got nan)"),
    (["--margin", "-1"], "--margin must be in [0, 1), the share of the failure clock left at "
                         "the target (got -1.0)"),
    (["--margin", "1"], "--margin must be in [0, 1), the share of the failure clock left at "
                        "the target (got 1.0)"),
])
def test_level_and_margin_are_refused_naming_the_flag_and_the_range(capsys, tmp_path, argv,
                                                                     says):
    assert _refused(capsys, tmp_path, argv) == says
    # from logs as well: the same line
    assert _refused(capsys, tmp_path, ["--logs", EXAMPLE, "--progress", "heldout_acc>=0.75",
                                       *argv]) == says


@pytest.mark.parametrize("argv, said", [
    (["--predict", "100.5"], "'100.5'"), (["--predict", "512", "100.5:2"], "'100.5:2'"),
    (["--predict", "2048:4", "1e3", "3.75"], "'3.75'")])
def test_a_predicted_batch_must_be_a_whole_number_of_samples(capsys, tmp_path, argv, said):
    assert _refused(capsys, tmp_path, argv) == (
        f"--predict must be a whole number of samples per rollout batch (got {said})")
    with pytest.raises(ValueError, match=r"^--predict must be a whole number of samples"):
        PlanConfig(predict=tuple(argv[1:]))


def test_a_failure_condition_given_twice_is_refused_before_the_logs_are_fitted(capsys,
                                                                              tmp_path):
    """Each --failure is fitted and reported once: the same one twice is a slip, refused."""
    base = ["--logs", EXAMPLE, "--progress", "heldout_acc>=0.75"]
    assert _refused(capsys, tmp_path, [*base, "--failure", "kl>=1.5", "--failure",
                                       "kl>=1.5"]) == (
        "--failure 'kl>=1.5': given twice; give each failure condition once")
    assert _refused(capsys, tmp_path, [*base, "--failure", "kl>=1.5", "--failure", "drift>=2",
                                       "--failure", "kl >= 1.50"]) == (
        "--failure 'kl >= 1.50': the same condition as --failure 'kl>=1.5'; give each failure "
        "condition once")
    # the Python entry, which the command calls, refuses the same
    from twoclock import plan_logs
    with pytest.raises(ValueError, match=r"^--failure 'kl>=1.5': given twice; give each"):
        plan_logs(EXAMPLE, "heldout_acc>=0.75", ["kl>=1.5", "kl>=1.5"])


def test_the_way_to_the_adam_form_reads_as_a_flag_with_the_python_spelling_beside_it(
        capsys, tmp_path):
    """A refusal the command line shares with the Python entry names the flag first and the
    keyword as Python spells it, never Python syntax alone."""
    said = _refused(capsys, tmp_path, ["--predict", "2048:4"])  # the published table: K 1
    assert said == ("--predict 2048:4: the default progress forms do not model K updates per "
                    "rollout batch and plan runs with the pilots' K (1); use --progress-form "
                    "adam (progress_form=\"adam\" in Python)")
    from tests.pilot.test_logs_adam import _log
    said = _refused(capsys, tmp_path, ["--logs", _log(tmp_path), "--progress", "acc>=0.5"])
    assert said == ("--updates: the pilots take different optimizer updates per rollout batch "
                    "(K 1: r0, r1, r2, r4, r5, r6; K 2: r3; K 4: r7) and the default progress "
                    "forms do not account for K: plan runs with one K, or use --progress-form "
                    "adam (progress_form=\"adam\" in Python)")
