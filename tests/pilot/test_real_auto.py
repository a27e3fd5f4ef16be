"""tools/real_auto.py: the claims scored as written (each flips at its own bound, and only it),
auto's pick by the erosion test, the test's sign on a rising return, and the committed
predictions file (auto is the default forms' band exactly on the designs that turn back)."""
import copy
import json

import numpy as np

from tests.helpers import assert_claims_flip_alone, load_script

tool = load_script("tools/real_auto.py")


def _doc():
    m = lambda e, c: {"median_abs_error": e, "coverage_95": c}
    return {"all": {"auto": m(0.30, 0.8), "joint_knee": m(0.28, 0.8)},
            "by_bucket": [{"design": "(1, 2]x", "auto": m(0.1, 1)},
                          {"design": "(4, inf]x", "auto": m(0.2001, 0.9)}],
            "turning_back": {"contrasts": {"joint_knee": {"ci_groups": [-0.1, 0.0]}}}}


def test_the_auto_claims_are_scored_as_written():
    doc = _doc()
    flips = {1: lambda d: d["turning_back"]["contrasts"]["joint_knee"].update(
                 ci_groups=[-0.1, -1e-6]),
             2: lambda d: d["all"]["auto"].update(median_abs_error=0.3001),
             3: lambda d: d["all"]["auto"].update(coverage_95=0.7999),
             4: lambda d: d["by_bucket"][1]["auto"].update(median_abs_error=0.2)}
    assert_claims_flip_alone(tool.claims, doc, flips)  # every bound inclusive


def test_a_return_that_falls_after_its_best_turns_back_and_a_rising_one_does_not():
    s = np.arange(1.0, 41.0)
    wiggle = 0.01 * (-1) ** np.arange(40)
    falls = {"run": "a", "samples": s, "metric": np.minimum(s, 80 - 2 * s) + wiggle}
    rises = {"run": "b", "samples": s, "metric": s + wiggle}
    assert tool.turns_back({8.0: [falls]}, [8])["turns_back"]
    assert not tool.turns_back({8.0: [rises]}, [8])["turns_back"]


def test_auto_is_the_default_band_where_the_design_turns_back_else_the_knee():
    pr = lambda: {"default": {"median": 1.0}, "joint_knee": {"median": 2.0}}
    d = {"name": "x", "targets": [{"predictions": {"8": pr(), "16": pr()}}]}
    back = tool.with_auto(copy.deepcopy(d), {"turns_back": True})
    on = tool.with_auto(copy.deepcopy(d), {"turns_back": False})
    assert {p["auto"]["median"] for p in back["targets"][0]["predictions"].values()} == {1.0}
    assert {p["auto"]["median"] for p in on["targets"][0]["predictions"].values()} == {2.0}
    assert back["erosion"] == {"turns_back": True}


def test_the_committed_predictions_pick_by_each_designs_own_test():
    with open(tool.PREDICTIONS, encoding="utf-8") as f:
        doc = json.load(f)
    designs = [d for sw in doc["sweeps"] for d in sw["designs"]]
    assert len(designs) == 36 and sum(d["erosion"]["turns_back"] for d in designs) == 5
    n = 0
    for d in designs:
        pick = "default" if d["erosion"]["z"] is not None and d["erosion"]["z"] > 3 else \
            "joint_knee"
        for t in d["targets"]:
            for p in t["predictions"].values():
                assert p["auto"] == p[pick], d["name"]
                n += 1
    assert n == 284
