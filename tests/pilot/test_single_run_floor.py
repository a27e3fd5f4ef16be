"""tools/single_run_floor.py: the seed-to-seed scatter of a real sweep's clocks and the error
that scatter alone leaves a plan from one-run pilots.

Oracles: hand arithmetic on two cells of log clocks; crossings read with numpy's own
interpolation from the stored curves.csv; the sample median of |exp(sigma Z) - 1| over 400 000
normal draws; a noise-free Adam-form sweep, which the planner's form must recover exactly.
"""
import csv
import math
import os

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from tests.helpers import load_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
srf = load_script("tools/single_run_floor.py")
SEEDED = "invpend_pg_stablegradients_lr0p01"  # four seeds a batch (its README)


def test_scatter_of_two_cells_by_hand():
    # cell 1: clocks 100, 200 (log devs +-ln2/2, SS ln2^2 / 2); cell 2: 100, 100, 400 (devs
    # -ln4/3, -ln4/3, 2 ln4/3, SS 6 ln4^2 / 9 = 8 ln2^2 / 3); dof 1 + 2
    cs = [np.log([100.0, 200.0]), np.log([100.0, 100.0, 400.0])]
    got = srf.scatter_of(cs)
    assert got["cells"] == 2 and got["dof"] == 3
    assert got["sigma"] == pytest.approx(math.log(2) * math.sqrt((1 / 2 + 8 / 3) / 3), rel=1e-12)
    # one run against the median of the others: 100/200, 200/100, 100/250, 100/250, 400/100
    assert got["loo"] == pytest.approx(0.6, rel=1e-12)  # median of 0.5, 1, 0.6, 0.6, 3


def test_scatter_of_nothing_says_none():
    assert srf.scatter_of([]) == {"cells": 0, "dof": 0, "sigma": None, "loo": None}


def _first_crossing(s, v, level):
    """numpy's own reading: the first point at or above level, linear in samples back to the
    point before it."""
    i = int(np.argmax(v >= level))
    assert v[i] >= level and i > 0
    return float(np.interp(level, v[i - 1:i + 1], s[i - 1:i + 1]))


def test_cells_read_the_stored_curves_as_numpy_does():
    with open(os.path.join(ROOT, "twoclock", "data", "real", SEEDED, "curves.csv"),
              newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    meta, runs = srf.rc.read_curves(SEEDED)
    cs = srf.cells(meta, runs)
    assert cs and all(c.size == 4 for c in cs)  # every batch holds four seeds
    # the first cell: the smallest batch and level that all four runs cross between points
    b = min(float(r["batch"]) for r in rows)
    by_run = {}
    for r in rows:
        by_run.setdefault(float(r["batch"]), {}).setdefault(r["run"], []).append(r)
    for batch in sorted(by_run):
        curves = [(np.array([float(x["samples"]) for x in rs]),
                   np.array([float(x[meta["metric"]]) for x in rs]))
                  for rs in by_run[batch].values()]
        for level in meta["levels"]:
            ok = all((v >= level).any() and not v[0] >= level for _, v in curves)
            if ok:
                want = np.log([_first_crossing(s, v, level) for s, v in curves])
                np.testing.assert_allclose(np.sort(cs[0]), np.sort(want), rtol=1e-12)
                return
    pytest.fail(f"no batch from {b:g} has a level every run crosses")


@settings(max_examples=20, deadline=None)
@given(st.floats(0.01, 1.5))
@example(0.228)
@example(1.5)
def test_known_median_error_is_the_sample_median(sigma):
    # 400 000 draws: the sample median's SE is under 0.0015 sigma-scaled; 4 SE stated as 0.006
    z = np.random.default_rng(7).standard_normal(400_000)
    want = float(np.median(np.abs(np.expm1(sigma * z))))
    assert srf.known_median_error(sigma) == pytest.approx(want, abs=0.006 * max(sigma, want))


def test_known_median_error_small_sigma_and_zero():
    assert srf.known_median_error(0.0) == 0.0
    # for small sigma |exp(sigma Z) - 1| ~ sigma |Z|, whose median is 0.67449 sigma
    assert srf.known_median_error(1e-4) == pytest.approx(0.67449e-4, rel=1e-3)


@pytest.mark.parametrize("knee", srf.KNEES)
def test_noise_free_pilots_predict_exactly(knee):
    # the true clocks are the Adam form itself, so the planner's fit must recover them at 2x
    # and 8x (a form that misread the knee, the lr or the batch would not)
    for p in (0.0, 0.5):
        got = srf.floor(0.0, knee, seeds=1, p=p, draws=3)
        assert max(got.values()) < 1e-9, (knee, p, got)


def test_the_lr_rule_drops_out_when_each_run_is_fitted_at_its_own_lr():
    # the form divides each run's clock by its own lr, so with the same draws a fixed lr and
    # the sqrt rule leave the same relative errors (a fit that ignored the lr would not)
    a = srf.floor(0.228, 1.0, seeds=1, p=0.0, draws=30, seed=3)
    b = srf.floor(0.228, 1.0, seeds=1, p=0.5, draws=30, seed=3)
    assert a == pytest.approx(b, rel=1e-6)


def test_more_runs_per_pilot_leave_less_error_against_the_median():
    one = srf.floor(0.228, 1.0, seeds=1, draws=200, seed=5)
    four = srf.floor(0.228, 1.0, seeds=4, draws=200, seed=5)
    # four runs a pilot halve the pilots' noise (1 / sqrt(4)); measured 21.6% -> 11.5% at 2x
    assert four[(2.0, "median")] < 0.75 * one[(2.0, "median")]
    # against one run the floor stays: at least what the exact median errs, and more than
    # against the median, the held-out run's own scatter added (measured 22.1% against 14.5%)
    assert four[(2.0, "run")] > 0.9 * srf.known_median_error(0.228)
    assert four[(2.0, "run")] > 1.2 * four[(2.0, "median")]


def test_cli_refuses_a_bad_sigma(capsys):
    with pytest.raises(SystemExit, match="--sigma: must be in"):
        srf.main(["floor", "--sigma", "-1"])


@pytest.mark.parametrize("pilots", [["0", "1", "2"], ["0.5", "1"], ["0.25", "0.5", "0.9"]])
def test_cli_refuses_pilots_that_are_not_three_batches_ending_at_the_largest(pilots):
    with pytest.raises(SystemExit, match="--pilots: three or more distinct batches"):
        srf.main(["floor", "--sigma", "0.1", "--pilots", *pilots])


def test_closer_pilots_leave_more_error_at_8x():
    # less leverage: pilots a doubling apart against pilots at 5/7, 6/7 and 1 of the largest,
    # the same draws (measured 36.8% against 42.9% against one run at the knee 1)
    wide = srf.floor(0.228, 1.0, seeds=1, draws=200, seed=11)
    close = srf.floor(0.228, 1.0, seeds=1, draws=200, seed=11, pilots=(5 / 7, 6 / 7, 1.0))
    assert close[(8.0, "median")] > wide[(8.0, "median")]


def _clocks_by_numpy(batch: float, level: float) -> list:
    """Each run's first crossing of level at batch in the seeded sweep, read with numpy."""
    meta, runs = srf.rc.read_curves(SEEDED)
    out = []
    for r in runs[batch]:
        s, v = r["samples"], r["metric"]
        out.append(_first_crossing(s, v, level) if (v >= level).any() else None)
    return out


def test_score_runs_counts_each_held_out_run_against_both_bands(tmp_path):
    # a hand-made prediction at the seeded sweep's batch 20000, target 500: the bands' ends
    # put between the runs' own clocks (read by numpy), so each band's coverage is known
    got = _clocks_by_numpy(20000.0, 500.0)
    assert None not in got and len(got) == 4
    c = sorted(got)
    pred = {"sweeps": [{"sweep": SEEDED, "designs": [{
        "name": "hand", "pilots": [10.0, 100.0, 1000.0], "held_out": [20000.0],
        "targets": [{"target": "Eval_AverageReturn>=500", "predictions": {"20000.0": {
            "median": (c[1] + c[2]) / 2, "band": [c[1], c[2]],  # holds the middle two
            "run_band": [c[0], c[3]], "scatter": 0.2, "dof": 9}}}]}]}]}  # holds all four
    path = tmp_path / "p.json"
    path.write_text(__import__("json").dumps(pred))
    doc = srf.score_runs(str(path), str(tmp_path / "m.json"))
    s = doc["summary"]["all"]
    assert s["runs"] == 4 and s["never"] == 0
    assert s["run_band_coverage"] == 1.0 and s["band_coverage"] == 0.5
    assert doc["summary"]["pilots' seeds"]["runs"] == 4 and doc["summary"]["given"]["runs"] == 0
    assert doc["summary"]["(4, inf]x"]["runs"] == 4  # 20000 / 1000 = 20x
    want = sorted(abs(((c[1] + c[2]) / 2) / n - 1) for n in got)
    assert sorted(abs(r["error"]) for r in doc["rows"]) == pytest.approx(want, rel=1e-12)


def test_predict_runs_refuses_an_existing_file(tmp_path):
    out = tmp_path / "p.json"
    out.write_text("{}")
    with pytest.raises(SystemExit):
        srf.predict_runs(str(out), [])


def test_coverage_contrast_by_hand():
    rows = [{"sweep": "a", "run_band_covers": True, "band_covers": False},
            {"sweep": "a", "run_band_covers": True, "band_covers": True},
            {"sweep": "b", "run_band_covers": False, "band_covers": False},
            {"sweep": "b", "run_band_covers": True, "band_covers": False}]
    got = srf.coverage_contrast(rows, resamples=500)
    # differences 1, 0 | 0, 1: mean 0.5; every resample of whole sweeps has mean 0.5 too
    assert got["difference"] == 0.5 and got["ci"] == [0.5, 0.5] and got["sweeps"] == 2
    assert srf.coverage_contrast([])["difference"] is None
