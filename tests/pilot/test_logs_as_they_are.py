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
