"""The practitioner design with --floor-out (twoclock/studies/planner/practitioner.py:
floor_out_plan, floor_out_summary): the metric's optimum from its condition, the summary's
bookkeeping by hand, and the flag's one-line refusal."""
import math

import numpy as np
import pytest

from tests.pilot.test_floorout import PHI, _logs, clock, write_csv
from twoclock.pilot.conditions import parse_condition
from twoclock.studies.planner import practitioner as pr


def test_the_optimum_follows_the_condition(tmp_path):
    # a loss falling to its target: optimum 0; the same curves as an accuracy 1 - loss rising
    # to 1 - T: optimum 1, the same clocks (by hand: the shift is the same distance)
    path = write_csv(tmp_path / "loss.csv")
    got = pr.floor_out_plan(path, "loss<=0.1", parse_condition("loss<=0.1", "--progress"), [256])
    assert got["floor_out"]["optimum"] == 0.0
    assert abs(got["predictions"][0]["progress_samples"]["median"] / clock(256) - 1) < 2e-3
    cols = _logs()
    cols["acc"] = [1.0 - v for v in cols.pop("loss")]
    acc = tmp_path / "acc.csv"
    with open(acc, "w", encoding="utf-8") as f:
        f.write(",".join(cols) + "\n")
        f.writelines(",".join(f"{x}" for x in row) + "\n" for row in zip(*cols.values()))
    got = pr.floor_out_plan(str(acc), "acc>=0.9", parse_condition("acc>=0.9", "--progress"),
                            [256])
    assert got["floor_out"]["optimum"] == 1.0
    assert math.isclose(got["floor_out"]["runs"][0]["plateau"], 1 - PHI / math.sqrt(8),
                        abs_tol=3e-5)
    assert abs(got["predictions"][0]["progress_samples"]["median"] / clock(256) - 1) < 2e-3


def test_a_refused_floor_out_plan_is_its_line(tmp_path):
    path = write_csv(tmp_path / "l.csv", late=16)  # run r16's tail still falls
    got = pr.floor_out_plan(path, "loss<=0.1", parse_condition("loss<=0.1", "--progress"), [256])
    assert isinstance(got, str) and "run 'r16' still moves" in got


def _row(seed, times, err, fo, covered=True, width=1.5):
    f = {"refused": fo} if isinstance(fo, str) else {
        "refused": None, "rel_error": fo, "covered": covered, "width": width}
    return {"model": "m", "rule": "fixed", "seed": seed, "times_largest_pilot": times,
            "rel_error": err, "floor_out": f}


def test_the_floor_out_summary_by_hand():
    rows = [_row(0, 2, 0.10, -0.05), _row(0, 8, 0.20, 0.10, width=2.0),
            _row(1, 2, -0.02, 0.04, covered=False), _row(1, 8, -0.30, -0.10, width=3.0),
            _row(2, 2, 0.05, "run 'B8' still moves"), _row(2, 8, 0.05, "run 'B8' still moves"),
            _row(3, 8, 0.40, 0.20)]
    s = next(x for x in pr.floor_out_summary(rows) if x["rule"] == "fixed")
    assert (s["designs"], s["refused"], s["scored"]) == (4, 1, 5)  # seeds 0-3; seed 2 refused
    assert s["refused_why"] == {"tail still moving": 1}
    assert pr._refusal("--floor-out: the runs' plateaus of x disagree with Adam's floor law") == \
        "plateaus off the floor law"
    assert s["median_abs_error_2x"] == pytest.approx(0.045)   # |-0.05|, |0.04|
    assert s["median_abs_error_8x"] == pytest.approx(0.10)    # 0.10, 0.10, 0.20
    assert s["coverage_95"] == pytest.approx(4 / 5)
    assert s["median_width"] == pytest.approx(1.5)            # 1.5, 2, 1.5, 3, 1.5
    # the 8x pairs: 0.10 - 0.20, 0.10 - 0.30, 0.20 - 0.40 = -0.1, -0.2, -0.2
    d = np.array([-0.1, -0.2, -0.2])
    half = 4.302653 * d.std(ddof=1) / math.sqrt(3)  # Student t, 2 degrees of freedom (tables)
    c = s["contrast_8x"]
    assert c["pairs"] == 3 and c["mean"] == pytest.approx(d.mean())
    assert c["ci"] == pytest.approx([d.mean() - half, d.mean() + half])


def test_the_flag_needs_the_practitioner_design_and_the_adam_form():
    from twoclock.studies.plan_calibration import Config, table
    assert Config(design="practitioner", progress_form="adam", floor_out=True).floor_out
    with pytest.raises(ValueError, match="--floor-out must be given with --design practitioner "
                                         "--progress-form adam"):
        Config(design="practitioner", floor_out=True)
    out = {"design": "practitioner", "eval_items": 1000, "eval_every_updates": 25, "seeds": 2,
           "heldout_seeds": 2, "summary": pr.summary([]), "simulations": {}, "rows": [],
           "floor_out": pr.floor_out_summary([_row(0, 8, 0.2, 0.1), _row(1, 8, 0.3, 0.1)])}
    assert "m, fixed, --floor-out: 0 of 2 designs refused, 2 predictions scored" in table(out)
