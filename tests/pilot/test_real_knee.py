"""tools/real_knee.py: the claims scored as written (each flips at its own bound, and only it),
and the committed predictions file: every prediction carries the knee fit beside the methods it
repeats."""
import json

from tests.helpers import assert_claims_flip_alone, load_script

tool = load_script("tools/real_knee.py")


def _doc():
    m = lambda e, c, w: {"median_abs_error": e, "coverage_95": c, "median_width": w}
    ci = lambda lo, hi: {"ci_groups": [lo, hi]}
    return {"all": {"joint_knee": m(0.3, 0.8, 2.0), "joint": m(0.3, 0.8, 2.0)},
            "by_bucket": [{"design": "(1, 2]x", "joint_knee": m(0.1, 1, 1)},
                          {"design": "(4, inf]x", "joint_knee": m(0.2001, 0.9, 3.0)}],
            "contrasts": {"joint": ci(-0.1, 0.0), "mccandlish": ci(0.0, 0.2)}}


def test_the_knee_claims_are_scored_as_written():
    doc = _doc()
    flips = {1: lambda d: d["contrasts"]["joint"].update(ci_groups=[-0.1, -1e-6]),
             2: lambda d: d["all"]["joint_knee"].update(coverage_95=0.7999),
             3: lambda d: d["all"]["joint_knee"].update(median_width=1.9999),
             4: lambda d: d["by_bucket"][1]["joint_knee"].update(median_abs_error=0.2),
             5: lambda d: d["contrasts"]["mccandlish"].update(ci_groups=[1e-6, 0.2])}
    assert_claims_flip_alone(tool.claims, doc, flips)  # every bound inclusive


def test_the_committed_predictions_carry_the_knee_beside_every_method():
    with open(tool.PREDICTIONS, encoding="utf-8") as f:
        doc = json.load(f)
    preds = [pr for sw in doc["sweeps"] for d in sw["designs"] for t in d["targets"]
             for pr in t["predictions"].values()]
    assert len(preds) == 284
    assert all(set(tool.METHODS) <= set(pr) for pr in preds)
    # where the knee fit answers, its band holds its median, as every band does
    for pr in preds:
        k = pr["joint_knee"]
        if isinstance(k, dict):
            lo, hi = k["band"]
            assert (lo is None or lo <= k["median"]) and (hi is None or k["median"] <= hi)
