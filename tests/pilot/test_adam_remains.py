"""The pre-registered check of what remains of the Adam form's exponent gap (tools/adam_remains.py):
the head start by hand, the gaps on a synthetic family they hold exactly, and the committed
files' bookkeeping."""
import math

import numpy as np
import pytest

from tests.helpers import preregistered, load_script

tool = load_script("tools/adam_remains.py")


def test_the_head_start_by_hand():
    # beta1 / (1 - beta1) x (1/2) ln(1 / target): 9 x 1.49787 = 13.4808 at 0.9 and 0.05
    # (tests/pilot/test_adam_momentum.py prints the same 13.48); none without momentum
    assert tool.head(0.9, 0.05) == pytest.approx(9 * 0.5 * math.log(20), rel=1e-12)
    assert tool.head(0.9, 0.05) == pytest.approx(13.4808, abs=1e-4)
    assert tool.head(0.5, 0.07) == pytest.approx(0.5 * math.log(1 / 0.07), rel=1e-12)
    assert tool.head(0.0, 0.05) == 0.0


class _Clocks(dict):
    """Every (batch, level) key: seeds' clocks of one exact family, whatever the level."""

    def __init__(self, clock, seeds):
        super().__init__()
        self.clock, self.seeds = clock, seeds

    def __missing__(self, key):
        return np.full(self.seeds, self.clock(key[0]))


def test_the_gaps_are_each_methods_exponent_less_the_simulated_on_an_exact_family():
    # runs that save H updates at every batch (the head start), N(b) = b (A sqrt(1 + B_n / b)
    # - H), 32 identical seeds, plateaus of 1e-12 (no floor): the head start out, both forms
    # predict B 128 and 256 exactly, so their gaps are 0; the plain forms grow too slowly
    # (the default cell's sign). The simulated exponent is log2(N(256) / N(128)) by hand.
    A, b_n, beta1, target, lr0, S = 100.0, 30.0, 0.9, 0.05, 0.01, 32
    H = tool.head(beta1, target)
    clock = lambda b: b * (A * math.sqrt(1 + b_n / b) - H)
    sim = {"clocks": _Clocks(clock, S), "floors": np.full(3, 1e-12),
           "truth": np.array([[clock(128)] * S, [clock(256)] * S])}
    cell = {"target": target, "lr0": lr0}
    got = tool._gaps(sim, cell, beta1, np.arange(S))
    assert got["simulated"] == pytest.approx(math.log2(clock(256) / clock(128)), rel=1e-12)
    assert abs(got["plain_head"]) < 1e-5 and abs(got["aware_head"]) < 1e-4
    assert got["plain"] < -0.002 and got["aware"] < -0.002
    # without momentum there is no head start: the head variants are the plain ones
    got0 = tool._gaps(sim, cell, 0.0, np.arange(S))
    assert got0["plain_head"] == got0["plain"] and got0["aware_head"] == got0["aware"]


def test_the_claims_are_the_readings():
    # one curvature (alpha 0) and no momentum: the floor-aware form holds 0; every other
    # claimed gap lies below 0; one claim per cell at each beta1
    c = tool.claims()
    assert len(c) == 2 * len(tool.CELLS)
    for x in c:
        cell = next(k for k in tool.CELLS if k["name"] == x["cell"])
        iso = cell["model"].get("alpha") == 0.0
        if x["beta1"] == 0.0:
            assert x["method"] == "aware"
            assert x["where"] == ("holds 0" if iso else "below 0")
        else:
            assert (x["beta1"], x["method"], x["where"]) == (0.9, "aware_head", "below 0")


def test_the_committed_predictions_are_the_tools_cells_and_claims():
    pred = preregistered("adam_remains_predictions.json")
    assert pred["rule"] == tool.RULE and pred["claims"] == tool.claims()
    assert [({k: r[k] for k in ("name", "target", "lr0", "model")}, r["beta1"])
            for r in pred["rows"]] == [(c, b) for c in tool.CELLS for b in tool.BETA1]
    for r in pred["rows"]:  # without momentum the head start is 0: the head variants agree
        g = r["meanfield"]["gap"]
        assert set(g) == set(tool.METHODS)
        if r["beta1"] == 0.0:
            assert g["plain_head"] == g["plain"] and g["aware_head"] == g["aware"]


def test_the_scores_bookkeeping_by_hand():
    pred = preregistered("adam_remains_predictions.json")
    got = preregistered("adam_remains_measured.json")
    assert got["n_rows"] == len(got["rows"]) == len(pred["rows"]) == 6
    for r, p in zip(got["rows"], pred["rows"]):
        assert (r["name"], r["beta1"]) == (p["name"], p["beta1"])
        for k in tool.METHODS:
            lo, hi = r["ci"][k]
            assert lo < hi
            assert r["meanfield_holds"][k] == (lo <= p["meanfield"]["gap"][k] <= hi)
    held = 0
    for v in got["claims"]:
        row = next(r for r in got["rows"] if r["name"] == v["cell"] and r["beta1"] == v["beta1"])
        lo, hi = row["ci"][v["method"]]
        assert v["ci"] == [lo, hi] and v["gap"] == row["measured"][v["method"]]
        assert v["holds"] == ((lo <= 0 <= hi) if v["where"] == "holds 0" else hi < 0)
        held += v["holds"]
    assert got["claims_held"] == held and got["n_claims"] == len(pred["claims"])
    assert got["baseline_held"] == sum(r["ci"]["plain"][0] <= 0 <= r["ci"]["plain"][1]
                                       for r in got["rows"])


def test_one_coordinates_saving_tends_to_the_first_order_head_start_on_long_runs():
    # by hand (tests/pilot/test_adam_momentum.py): to first order in the per-update contraction
    # momentum saves beta1 / (1 - beta1) x C updates, C the e-folds to the target, 13.48 at 0.9
    # and 0.05; the exact recursion tends to it as runs lengthen (r -> 0) and saves less on
    # short runs (Adam's bias correction shortens the first moment's early lag); no momentum
    # saves nothing
    long = tool.one_coordinate_saving(5000)
    assert abs(long - tool.head(0.9, 0.05)) < 0.02
    assert tool.one_coordinate_saving(117) < tool.one_coordinate_saving(229) < long
    # without momentum the saving is the closed form's count less the iterated recursion's:
    # 0 to rounding (an off-by-one step in the closed form would give about 1)
    for u in (3, 117, 229, 5000):
        assert abs(tool.one_coordinate_saving(u, beta1=0.0)) < 1e-9
    # beta1 0.5 on a long run: 1 x C = 1.50 (a formula in beta1 alone, or in 1 / (1 - beta1),
    # would give 0.5 or 2 x C)
    assert abs(tool.one_coordinate_saving(5000, beta1=0.5) - tool.head(0.5, 0.05)) < 0.01
