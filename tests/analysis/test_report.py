"""The terminal tables and the strict JSON writer on hand-made results: rows in any order,
ratios to the smallest batch, the 'diverged' rule at exactly half the seeds, the CI's ends,
and non-finite numbers inside dataclasses and arrays."""
from dataclasses import dataclass

import numpy as np

from twoclock.analysis import report, results


def _s(med, lo, hi, reached=4, seeds=4):
    return {"median": med, "ci": [lo, hi], "reached": reached, "seeds": seeds}


def _run(batch, prog, fail, upd, div=0):
    return {"batch": batch, "lr": 0.01, "lr0": 0.01, "progress_samples": prog,
            "failure_samples": fail, "progress_updates": upd,
            "diverged": {"runs": div, "median_samples": 500.0 if div else None}}


def _table(runs):
    out = report.clock_table({"runs": runs, "config": {"sweep": {"budget": 10000}}})
    return {int(line.split()[0]): line for line in out.splitlines()[3:] if line.strip()}


def test_clock_table_is_relative_to_the_smallest_batch_whatever_the_row_order():
    # rows as a sweep given batches (64, 8, 16) lists them; ratios by hand: 3000 / 1000 = 3.00,
    # 8000 / 4000 = 2.00, 47 / 125 = 0.376
    runs = [_run(64, _s(3000.0, 2900.0, 3100.0), _s(8000.0, 7000.0, 9000.0), _s(47.0, 45, 48)),
            _run(8, _s(1000.0, 900.0, 1100.0), _s(4000.0, 3500.0, 4500.0), _s(125.0, 110, 140)),
            _run(16, _s(1500.0, 1400.0, 1600.0), _s(6000.0, 5000.0, 7000.0), _s(94.0, 90, 99))]
    rows = _table(runs)
    assert list(rows) == [8, 16, 64]
    cells = rows[64].split("|")
    assert cells[1].split()[-1] == "x3.00" and cells[2].split()[-1] == "x2.00"
    assert cells[3].split() == ["47", "x0.38"]
    assert rows[16].split("|")[1].split()[-1] == "x1.50"
    assert rows[8].split("|")[1].split()[-1] == "x1.00"


def test_half_the_seeds_diverged_is_reported_as_diverged():
    # 2 of 4 seeds diverged and the progress median is censored: "diverged at" its median
    runs = [_run(8, _s(None, 900.0, None, reached=2), _s(None, None, None, 0), _s(None, 1, None),
                 div=2),
            _run(16, _s(None, 900.0, None, reached=2), _s(None, None, None, 0), _s(None, 1, None),
                 div=1)]
    rows = _table(runs)
    assert "diverged at 500" in rows[8] and "diverged at" not in rows[16].split("|")[1]


def test_critical_table_prints_the_ci_low_then_high():
    out = report.critical_table({"config": {"delta": 0.2}, "critical_batch": [
        {"lr0": 0.01, "batch": 25.0, "ci": [10.0, 40.0], "found": 0.9}]})
    assert "measured 25.0 [10.0, 40.0] (found in 90% of bootstrap resamples)" in out


def _crit(runs, batch=None, theory_batch=None):
    th = {"mechanism": "curvature", "batch": theory_batch, "curvature": 282.8,
          "saturation": None}
    return report.critical_table({
        "config": {"delta": 0.2, "sweep": {"budget": 64}}, "unit": "samples", "runs": runs,
        "critical_batch": [{"lr0": 0.01, "batch": batch, "ci": [None, None], "found": 0.0,
                            "theory": th}]}).splitlines()[1]


def test_critical_table_says_no_run_reached_the_target_within_the_budget():
    """A budget no run reaches: 'measured none in range' beside 'curvature mechanism, B ~ -'
    read as a measured absence and a predicted mechanism; it says what happened instead."""
    never = _s(None, None, None, reached=0)
    runs = [_run(b, never, never, never) for b in (16, 8)]
    assert _crit(runs) == ("  lr0=0.01: no run reached the target within the budget (64 "
                           "samples), so no critical batch was measured; theory: none "
                           "predicted (curvature 282.8, saturation -)")
    # B 8 censored in most seeds, B 16 reached by all: the smallest batch is what is missing
    runs = [_run(8, _s(None, 40.0, None, reached=1), never, never),
            _run(16, _s(50.0, 45.0, 55.0), never, _s(3.0, 3, 3))]
    assert _crit(runs).startswith("  lr0=0.01: the smallest batch (B 8) did not reach the "
                                  "target in most seeds within the budget (64 samples), so no "
                                  "critical batch was measured; theory: none predicted")
    # the smallest batch reached: a critical batch beyond the range is 'none in range'
    runs[0] = _run(8, _s(48.0, 45.0, 50.0), never, _s(6.0, 6, 6))
    assert _crit(runs, theory_batch=40.0) == (
        "  lr0=0.01: measured none in range; theory: curvature mechanism, B ~ 40.0 (curvature "
        "282.8, saturation -)")


@dataclass
class _Part:
    x: float
    y: tuple


def test_write_json_makes_dataclasses_and_arrays_strict(tmp_path):
    path = str(tmp_path / "r.json")
    results.write_json(path, {"cfg": _Part(float("inf"), (1.0, float("nan"))),
                              "a": np.array([[1.0, np.inf], [-np.inf, 2.0]]),
                              "f": np.float32(np.nan)})
    assert results.read_json(path) == {
        "cfg": {"x": None, "y": [1.0, None]}, "a": [[1.0, None], [None, 2.0]], "f": None,
        "non_finite": {"/cfg/x": "inf", "/cfg/y/1": "nan", "/a/0/1": "inf", "/a/1/0": "-inf",
                       "/f": "nan"}}


def test_clock_table_prints_every_extra_clock_of_a_row():
    r = _run(8, _s(1000.0, 900.0, 1100.0), _s(4000.0, 3500.0, 4500.0), _s(125.0, 110, 140))
    r.update(kl_samples=_s(2000.0, 1900.0, 2100.0), null_samples=_s(None, 3000.0, None, 1),
             collapse_samples=_s(7000.0, 6000.0, 8000.0))
    line = _table([r])[8]
    assert "kl 2000 [1900, 2100]" in line and "collapse 7000 [6000, 8000]" in line
    assert "null >10000" in line  # censored: the budget
    assert "progress " not in line and "failure " not in line  # the main clocks stay in columns
