"""A run past the progress target at its first logged point, where fewer than three pilot
batches crossed it between logged points: its crossing is bounded in [L, s1] (L the latest
timed clock at a smaller batch; samples to a target do not fall with the batch under lr ~ B^p,
p <= 1/2) and fitted at sqrt(L s1) (pilot.logs.bounded); and the calibration's check from logs
(logs_check.crossings_seen) accepts what the planner accepts.

Hand values as in test_logs_as_they_are: acc = s / P on every run, logged every 100 samples
from `first`, so a crossing of acc >= 1 between logged points is P exactly."""
import math

import pytest

from tests.pilot.test_logs_as_they_are import PILOTS, _log
from twoclock.pilot import envelope, logs as pl
from twoclock.pilot.conditions import parse_condition
from twoclock.pilot.plan import PilotError
from twoclock.studies.planner.logs_check import crossings_seen

# B 8 and 16 cross between logged points (clocks 1000, 1100, 1200, 1250); B 32 is logged from
# 1500 on and its acc there is 1500 / 1400 >= 1: past the target at its first point
TWO = PILOTS[:4]
LATE = ("g", 32, 0.02, 1400, 7000, 1500)
USED = math.sqrt(1250 * 1500)  # by hand: 1369.306...


def test_the_first_point_run_is_bounded_by_the_smaller_batches_and_used(tmp_path, capsys,
                                                                       monkeypatch):
    from tests.helpers import plan_main
    path = _log(tmp_path / "l.csv", TWO + [LATE])
    assert plan_main("plan_bound")(["--logs", path, "--progress", "acc>=1", "--predict", "64",
                                    "--no-figure", "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "g (B 32) in [1250, 1500] at 1369" in text
    out = pl.plan_logs(path, "acc>=1", [], predict=[64])
    assert out["logs"]["progress_first_point"] == [
        {"run": "g", "batch": 32, "bound": [1250.0, 1500.0], "used": pytest.approx(USED)}]
    assert {r["run"]: r["progress_samples"] for r in out["runs"]} == pytest.approx(
        {"a": 1000, "b": 1100, "c": 1200, "d": 1250, "g": USED}, rel=1e-9)
    # the exponent envelope past B 32 is anchored on g's whole bound [1250, 1500]
    # (pilot/envelope.py), which a crossing seen at sqrt(L s1) would not carry
    L, H = out["predictions"][0]["progress_samples"]["envelope"]["anchor"]
    assert L <= 1250 and H >= 1500
    # without it, the plan is the plan of a log in which g crossed at sqrt(L s1) between
    # logged points
    monkeypatch.setattr(envelope, "ON", False)
    out = pl.plan_logs(path, "acc>=1", [], predict=[64])
    at = _log(tmp_path / "at.csv", TWO + [("g", 32, 0.02, USED, 7000, 100)])
    seen = pl.plan_logs(at, "acc>=1", [], predict=[64])
    a, b = out["predictions"][0]["progress_samples"], seen["predictions"][0]["progress_samples"]
    assert [a["median"], *a["ci"]] == pytest.approx([b["median"], *b["ci"]], rel=1e-6)


def test_with_three_batches_timed_a_first_point_run_stays_out(tmp_path):
    """Enough batches crossed: the run stays the bound (0, s1], left out (as before)."""
    path = _log(tmp_path / "l.csv", PILOTS + [("g", 64, 0.0282842712, 1400, 7000, 1500)])
    out = pl.plan_logs(path, "acc>=1", [])
    assert out["logs"]["progress_first_point"] == [{"run": "g", "batch": 64,
                                                    "bound": [0.0, 1500.0]}]
    assert "g" not in {r["run"] for r in out["runs"]}


def test_under_a_rule_steeper_than_sqrt_there_is_no_lower_end(tmp_path):
    """lr ~ B (p = 1): samples to a target may fall with B, so no bound: refused as before."""
    lin = [(r, b, 0.01 * b / 8, P, F, s) for r, b, _, P, F, s in TWO + [LATE]]
    with pytest.raises(PilotError, match=r"at 2 pilot batches \(B 8, 16\).*first logged point: "
                                         r"B 32"):
        pl.plan_logs(_log(tmp_path / "l.csv", lin), "acc>=1", [])


def test_the_calibrations_check_accepts_what_the_planner_accepts(tmp_path):
    conds = [parse_condition("acc>=1", "--progress"), parse_condition("kl>=1", "--failure")]
    crossings_seen(_log(tmp_path / "ok.csv", TWO + [LATE]), ["acc", "kl"], conds)  # no raise
    # too few batches even with the bound (the smallest is first-point: no lower end)
    first = ("z", 4, 0.00707106781, 60, 5000, 100)
    with pytest.raises(PilotError, match=r"at 2 pilot batches \(B 8, 16\).*point: B 4"):
        crossings_seen(_log(tmp_path / "few.csv", TWO + [first]), ["acc", "kl"], conds)
    # a failure met at the first point is still refused, as the planner refuses it
    bad = PILOTS[:-1] + [("f", 32, 0.02, 1500, 50, 100)]
    with pytest.raises(PilotError, match="run 'f' already meets --failure 'kl>=1'"):
        crossings_seen(_log(tmp_path / "bad.csv", bad), ["acc", "kl"], conds)
