"""The calibration command end to end on the quadratic: its table agrees with its own rows,
the simulated logs are read back only under the same fingerprint, and a changed model
configuration simulates anew; and its coverage counts and seed sets by hand."""
import json

import pytest

from tests.helpers import load_script
from twoclock.studies.planner import calibrate


def _main():
    return load_script("experiments/plan_calibration.py", "plan_calibration_script").main


def test_calibration_on_the_quadratic(tmp_path, capsys):
    argv = ["--models", "quadratic", "--out", str(tmp_path), "--no-figure"]
    assert _main()(argv) == 0
    out = json.loads((tmp_path / "plan_calibration.json").read_text())
    rows = out["rows"]
    # 6 designs x 2 held-out batches x 2 clocks (progress, drift)
    assert len(rows) == 24 and {r["batch"] for r in rows} == {128, 256}
    assert {r["design"] for r in rows} == {f"{n} batches, {s}" for n in (3, 4)
                                           for s in ("8 seeds", "4 seeds (a)", "4 seeds (b)")}
    cov = {(c["model"], c["kind"]): c for c in out["coverage"]}
    for kind in ("progress", "failure"):
        mine = [r for r in rows if r["kind"] == kind and r["levels"]["0.95"]["covered"] is not None]
        assert cov[("quadratic", kind)]["scored"] == len(mine)
        for lvl in ("0.5", "0.8", "0.95"):
            got = sum(r["levels"][lvl]["covered"] for r in mine) / len(mine)
            assert cov[("quadratic", kind)]["coverage"][lvl] == got
    # a band at a higher level contains the one at a lower level
    for r in rows:
        lo50, hi50 = r["levels"]["0.5"]["ci"]
        lo95, hi95 = r["levels"]["0.95"]["ci"]
        assert lo95 <= lo50 and (hi95 is None or hi95 >= hi50), r
    assert not out["simulations"]["quadratic"]["reused"]
    capsys.readouterr()
    # the same command reads the logs back, and gives the same rows
    assert _main()(argv) == 0
    again = json.loads((tmp_path / "plan_calibration.json").read_text())
    assert again["simulations"]["quadratic"]["reused"] and again["rows"] == rows
    assert "read back" in capsys.readouterr().out
    # another model configuration is another simulation
    assert _main()([*argv, "--sigma", "1.5"]) == 0
    third = json.loads((tmp_path / "plan_calibration.json").read_text())
    assert not third["simulations"]["quadratic"]["reused"]


def test_the_calibrations_first_design_is_the_check_from_logs(tmp_path):
    """plan_check --logs (3 pilot batches x 8 seeds, 64 held-out seeds) and the calibration's
    '3 batches, 8 seeds' design simulate the same runs and plan from the same pilots: the same
    predictions, bands and answers at 95%."""
    from twoclock.config import OptimConfig
    from twoclock.engine.runtime import setup
    from twoclock.models import get
    from twoclock.studies.planner import logs_check
    setup()
    m = get("quadratic")
    cfg, opt = m.config(), OptimConfig()
    check = logs_check.check(m, cfg, opt, logs_path=str(tmp_path / "logs.csv"))
    cal = calibrate.calibrate([(m, cfg)], opt, str(tmp_path), quiet=True)
    first = {(r["batch"], r["clock"]): r for r in cal["rows"] if r["design"] == "3 batches, 8 seeds"}
    assert len(first) == len(check["heldout"]) == 4
    for h in check["heldout"]:
        r = first[(h["batch"], h["clock"])]
        d = r["levels"]["0.95"]
        assert d["predicted"] == h["vs_logged"]["predicted"] and d["ci"] == h["vs_logged"]["ci"]
        assert r["measured"] == h["vs_logged"]["measured"]
        # the answer's own CI over its 64 seeds brackets it (a median of resampled seeds)
        lo, hi = h["measured_ci"]
        assert lo <= h["vs_logged"]["measured"] and (hi is None or h["vs_logged"]["measured"] <= hi)


# ---------------------------------------------------------------------------- calibration

def test_coverage_counts_by_hand():
    def row(model, kind, cov95, cov50, err, hw):
        return {"model": model, "kind": kind, "levels": {
            "0.5": {"covered": cov50, "rel_error": err, "half_width": hw / 3},
            "0.8": {"covered": cov95, "rel_error": err, "half_width": hw / 2},
            "0.95": {"covered": cov95, "rel_error": err, "half_width": hw}}}
    rows = [row("a", "progress", True, True, 0.1, 0.2), row("a", "progress", True, False, -0.2, 0.4),
            row("a", "failure", False, False, 0.3, 0.1),
            {"model": "a", "kind": "failure", "levels": {str(v): {"covered": None, "rel_error": None,
                                                                  "half_width": None}
                                                         for v in calibrate.LEVELS}}]
    got = {(c["model"], c["kind"]): c for c in calibrate.coverage(rows)}
    assert got[("a", "progress")]["scored"] == 2
    assert got[("a", "progress")]["coverage"] == {"0.5": 0.5, "0.8": 1.0, "0.95": 1.0}
    assert got[("a", "all")]["scored"] == 3 and got[("all", "all")]["coverage"]["0.95"] == 2 / 3
    assert got[("a", "all")]["median_half_width"] == pytest.approx(0.2)
    assert got[("a", "progress")]["within_15pct"] == 0.5


def test_the_calibration_designs_are_disjoint_seed_sets_and_nested_batches():
    seeds = [set(s) for _, s in calibrate.SEED_SETS]
    assert seeds[0] == set(range(8)) and seeds[1] | seeds[2] == set(range(8, 16))
    assert not seeds[1] & seeds[2]
