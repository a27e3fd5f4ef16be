"""Practitioners' logs as they are (issue 50, item 4): a plan with no failure condition (a
progress-only plan), a run already past the target at its first logged point (its crossing
known only to lie in (0, first]), and a target that too few pilot batches reach. Hand values:
acc = s / P on every run, so a crossing of acc >= 1 is P exactly (logged every 100 samples)."""
import csv
import json

import pytest

from tests.helpers import plan_main
from twoclock.pilot import logs as pl
from twoclock.pilot.plan import PilotError

# run, batch, lr (sqrt rule from 0.01 at 8), P (acc = s / P), F (kl = s / F), first logged sample
PILOTS = [("a", 8, 0.01, 1000, 3000, 100), ("b", 8, 0.01, 1100, 3200, 100),
          ("c", 16, 0.0141421356, 1200, 4000, 100), ("d", 16, 0.0141421356, 1250, 4400, 100),
          ("e", 32, 0.02, 1400, 7000, 100), ("f", 32, 0.02, 1500, 6000, 100)]
LAST = 8000


def _log(path, pilots=PILOTS):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "batch", "lr", "samples", "acc", "kl"])
        for run, b, lr, P, F, first in pilots:
            for s in range(first, LAST + 1, 100):
                w.writerow([run, b, f"{lr:.10g}", s, f"{s / P:.12g}", f"{s / F:.12g}"])
    return str(path)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return _log(tmp_path_factory.mktemp("logs") / "l.csv")


def test_a_plan_with_no_failure_condition_is_a_progress_only_plan(path, tmp_path, capsys):
    """Before: refused ('--failure: give at least one failure condition'). Now the progress
    clock is planned; no failure clock, no bound on one; the recommendation is the batch with
    the fewest samples to the target (B 8: the median of 1000 and 1100)."""
    assert plan_main("plan_progress_only")(["--logs", path, "--progress", "acc>=1",
                                            "--predict", "8", "64", "--no-figure",
                                            "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "progress-only plan: no --failure condition" in text
    assert "failure clocks, one fit each" not in text
    with open(tmp_path / "plan.json") as f:
        out = json.load(f)
    assert out["progress_only"].startswith("progress-only plan")
    assert out["failures"] == [] and out["logs"]["failures"] == []
    assert {r["run"]: r["progress_samples"] for r in out["runs"]} == pytest.approx(
        {run: P for run, _, _, P, _, _ in PILOTS}, rel=1e-9)
    for p in out["predictions"]:
        assert p["failure_samples"]["median"] is None and p["no_failure_before"] is None
        assert p["failure_clock"] is None and p["progress_samples"]["median"] > 0
    assert out["failure_exponent"]["value"] is None and out["failure_exponent"]["clock"] is None
    rec = out["recommendation"]
    assert rec["constant"]["batch"] == 8 and rec["unsafe"] == []
    assert rec["constant"]["progress_samples"] == pytest.approx(1050.0, rel=1e-9)
    assert rec["failure_clocks"] == []


def test_a_plan_with_a_failure_condition_says_nothing_of_progress_only(path):
    out = pl.plan_logs(path, "acc>=1", ["kl>=1"])
    assert "progress_only" not in out and out["recommendation"]["failure_clocks"] == ["kl>=1"]
    # the progress clocks are the progress-only plan's: the failure condition changes no clock
    alone = pl.plan_logs(path, "acc>=1", [])
    assert [r["progress_samples"] for r in out["runs"]] == \
        [r["progress_samples"] for r in alone["runs"]]


# the smallest pilot, B 4, is past acc >= 1 at its first logged point (100 / 60 >= 1)
FIRST = ("z", 4, 0.00707106781, 60, 5000, 100)


def test_a_run_past_the_target_at_its_first_point_is_a_bound_not_a_refusal(tmp_path, capsys):
    """Before: refused ('already meets --progress ... at its first logged point'). Now its
    crossing is interval-censored in (0, 100]: left out of the fits, kept as that bound; the
    other runs' clocks (P) and the plan from them are those of the log without it."""
    path = _log(tmp_path / "first.csv", PILOTS + [FIRST])
    assert plan_main("plan_first_point")(["--logs", path, "--progress", "acc>=1", "--failure",
                                          "kl>=1", "--no-figure", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "1 runs already met acc>=1 at their first logged point" in text
    assert "z (B 4) in (0, 100]" in text
    with open(tmp_path / "plan.json") as f:
        out = json.load(f)
    lg = out["logs"]
    assert lg["progress_first_point"] == [{"run": "z", "batch": 4, "bound": [0.0, 100.0]}]
    z = next(c for c in lg["curves"] if c["run"] == "z")["acc>=1"]
    # its first row: after the header and six runs of 80 rows (100 to 8000)
    assert z["clock"] == 100.0 and z["crossed"] and z["line"] == 1 + 6 * 80 + 1
    assert {r["run"]: r["progress_samples"] for r in out["runs"]} == pytest.approx(
        {run: P for run, _, _, P, _, _ in PILOTS}, rel=1e-9)
    assert lg["progress_censored"] == []
    # the bracket is the other runs' (100 / 1000), not z's whole (0, 100]
    assert lg["bracket"]["acc>=1"] == pytest.approx(0.1, rel=1e-9)
    without = pl.plan_logs(_log(tmp_path / "without.csv"), "acc>=1", ["kl>=1"])
    for k in ("predictions", "estimates", "critical_batch", "recommendation", "runs"):
        assert out[k] == without[k], k
    assert "progress_first_point" not in without["logs"]


def test_a_failure_met_at_the_first_point_is_still_refused(tmp_path):
    """A failure's crossing before the first point is not a bound the failure fit takes."""
    path = _log(tmp_path / "l.csv", PILOTS[:-1] + [("f", 32, 0.02, 1500, 50, 100)])
    with pytest.raises(PilotError, match="run 'f' already meets --failure 'kl>=1' at its first"):
        pl.plan_logs(path, "acc>=1", ["kl>=1"])


NEVER = 1e9  # acc = s / 1e9 never reaches 1 within 8000 samples


def test_a_target_three_batches_reach_is_planned_from_them(tmp_path):
    """B 64 never reaches the target: planned from B 8, 16, 32 (as without it), B 64 named."""
    path = _log(tmp_path / "l.csv", PILOTS + [("g", 64, 0.0282842712, NEVER, 5000, 100)])
    out = pl.plan_logs(path, "acc>=1", [])
    assert out["logs"]["progress_censored"] == ["g"]
    assert [r["run"] for r in out["runs"]] == ["a", "b", "c", "d", "e", "f"]
    alone = pl.plan_logs(_log(tmp_path / "w.csv"), "acc>=1", [])
    assert out["critical_batch"] == alone["critical_batch"]


def test_a_target_fewer_than_three_batches_reach_is_refused_in_one_line(tmp_path, capsys):
    """Only B 8 and 16 cross it between logged points; B 4 is past it at its first point and
    B 32 never reaches it: one line, exit 2, naming each."""
    pilots = PILOTS[:4] + [(r, b, lr, NEVER, F, s) for r, b, lr, _, F, s in PILOTS[4:]]
    path = _log(tmp_path / "l.csv", pilots + [FIRST])
    want = ("--progress 'acc>=1': crossed between logged points at 2 pilot batches (B 8, 16), "
            "the progress fit needs 3; past it at the first logged point: B 4; never reached: "
            "B 32")
    with pytest.raises(PilotError) as e:
        pl.plan_logs(path, "acc>=1", ["kl>=1"])
    assert str(e.value) == want
    with pytest.raises(SystemExit) as e:
        plan_main("plan_too_few")(["--logs", path, "--progress", "acc>=1", "--no-figure",
                                   "--out", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(want), err
