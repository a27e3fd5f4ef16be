"""A batch where at most half the runs reach the target (twoclock/pilot/clocks.py, `minority`):
its median clock lies beyond the runs that never arrived, so its arrivals (the fast tail) are
left out of the fits and the recommendation, and the plan names the batch. Hand values: acc
linear in samples (acc = s / P), so every crossing is P itself; a run whose P lies past its
logged length never arrives."""
import csv

import pytest

from twoclock.pilot import logs as pl
from twoclock.pilot.clocks import Clock, minority
from twoclock.pilot.plan import PilotError

LAST = 6000  # every run logs samples 100..LAST (no step-0 point)
NEVER = 9e9


def _log(path, runs):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "batch", "lr", "samples", "acc"])
        for name, b, P in runs:
            for s in range(100, LAST + 1, 100):
                w.writerow([name, b, 0.01, s, f"{s / P:.12g}"])
    return str(path)


# B 8: one of four arrives, at 500 (the fast tail); B 16: three of four (the median is known);
# B 32, 64: all. Without the rule B 8's one arrival would be the plan's fastest batch.
RUNS = ([("a8", 8, 500.0)] + [(f"n8{i}", 8, NEVER) for i in range(3)]
        + [("a16", 16, 2000.0), ("b16", 16, 2100.0), ("c16", 16, 2200.0), ("n16", 16, NEVER)]
        + [(f"r32{i}", 32, 2400.0 + 100 * i) for i in range(2)]
        + [(f"r64{i}", 64, 3000.0 + 100 * i) for i in range(2)])


def test_the_arrivals_of_a_batch_most_of_whose_runs_never_arrive_are_left_out(tmp_path):
    out = pl.plan_logs(_log(tmp_path / "l.csv", RUNS), "acc>=1", [], predict=[128])
    # by hand: B 8 has 1 of 4 arrivals (<= half), its never-arrived runs end at LAST
    assert out["logs"]["progress_minority"] == [
        {"batch": 8.0, "runs": 4, "arrived": 1, "beyond": float(LAST)}]
    fitted = sorted(r["run"] for r in out["runs"])
    assert "a8" not in fitted and {"a16", "b16", "c16"} <= set(fitted)
    # the recommendation is no longer B 8's lone 500 samples: by hand B 16's measured median
    # counts its never-arrived run as later than any arrival (2000, 2100, 2200, never: 2150)
    rec = out["recommendation"]["constant"]
    assert rec["batch"] != 8.0
    est = {e["batch"]: e for e in out["estimates"]}
    assert 8.0 not in est and est[16.0]["progress"] == pytest.approx(2150.0, rel=1e-9)
    assert est[32.0]["progress"] == pytest.approx(2450.0, rel=1e-9)  # 2400, 2500


def test_the_plan_names_the_batch_in_one_line(tmp_path, capsys):
    from tests.helpers import plan_main
    path = _log(tmp_path / "l.csv", RUNS)
    assert plan_main("plan_minority")(["--logs", path, "--progress", "acc>=1", "--predict",
                                       "128", "--no-figure", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert ("B 8: 1 of 4 runs reached acc>=1, so the batch's median clock lies beyond 6000 "
            "samples") in text


@pytest.mark.parametrize("arrived,runs,left_out", [
    (1, 4, True), (2, 4, True), (3, 4, False),   # the median of 4 needs the 2nd and 3rd
    (1, 2, True), (1, 3, True), (2, 3, False),   # of 3: the 2nd
    (1, 1, False), (0, 4, False)])               # all arrived; none (nothing to leave out)
def test_at_most_half_arrived_is_the_rule(arrived, runs, left_out):
    from types import SimpleNamespace as NS
    L = NS(runs=[NS(batch=8.0)] * runs + [NS(batch=16.0)])
    prog = ([Clock(100.0 + i, True, 1) for i in range(arrived)]
            + [Clock(900.0 - i, False, None) for i in range(runs - arrived)]
            + [Clock(50.0, True, 1)])
    marked, rows = minority(L, prog)
    assert [c.minority for c in marked[:arrived]] == [left_out] * arrived
    assert not any(c.timed for c in marked[arrived:runs])  # never-arrived runs stay out
    assert marked[-1].timed  # another batch is untouched
    # by hand: the shortest never-arrived run ends at 900 - (runs - arrived - 1)
    assert rows == ([{"batch": 8.0, "runs": runs, "arrived": arrived,
                      "beyond": 900.0 - (runs - arrived - 1)}] if left_out else [])


def test_too_few_batches_left_are_refused_naming_the_left_out_batch(tmp_path):
    # B 8 and B 16 each have at most half arriving: two batches remain, the fit needs 3
    runs = ([("a8", 8, 500.0), ("n8", 8, NEVER), ("a16", 16, 900.0), ("n16", 16, NEVER)]
            + [(f"r32{i}", 32, 2400.0) for i in range(2)]
            + [(f"r64{i}", 64, 3000.0) for i in range(2)])
    with pytest.raises(PilotError, match=r"at 2 pilot batches \(B 32, 64\).*never reached: "
                                         r"B 8, 16"):
        pl.plan_logs(_log(tmp_path / "l.csv", runs), "acc>=1", [], predict=[128])


def test_a_prediction_inside_its_first_rollout_batch_says_so(tmp_path):
    """(twoclock/pilot/logs.py, `_first_batch`.) Pilots on Adam's form by hand, N = A sqrt(m (m +
    40)) / lr with A 0.1, lr 0.01 (fixed), K 1 at B 8..64 (196 to 816 samples, each crossed
    after the first logged point): at 4096:64 (m 64) the form gives 0.1 sqrt(64 x 104) / 0.01 =
    815.8 samples, inside the first rollout batch of 4096 (12.7 of its 64 updates); at 512:1,
    0.1 sqrt(512 x 552) / 0.01 = 5316, past its first batch."""
    N = lambda b: 0.1 * (b * (b + 40.0)) ** 0.5 / 0.01
    runs = [(f"r{b}{s}", b, N(b)) for b in (8, 16, 32, 64) for s in "ab"]
    out = pl.plan_logs(_log(tmp_path / "l.csv", runs), "acc>=1", [], predict=["512", "4096:64"],
                       progress_form="adam")
    at = {(p["batch"], p["updates"]): p for p in out["predictions"]}
    assert "first_batch" not in at[(512.0, 1.0)]
    p = at[(4096.0, 64.0)]
    assert p["progress_samples"]["median"] == pytest.approx(N(64), rel=1e-2)
    assert p["first_batch"].startswith("B 4096:64: the form puts the target inside the first "
                                       "rollout batch (")
    assert "so read it as at least 4096" in p["first_batch"]
