"""Several targets at once (twoclock.pilot.levels): the conditions' list, the joint fit against
clocks made by the formula written out here (log B_n linear in the level), the document's rows,
and the command on the example logs (each target's plan inside is the one-target plan)."""
import json
import math

import numpy as np
import pytest

from twoclock.pilot import levels
from twoclock.pilot.plan import PilotError
from twoclock.pilot.result import PLAN_SCHEMA

DATA = "twoclock/data/example_pilot_logs.csv"


def by_hand(B, lr, A, b_n):
    """N = A sqrt(B (B + B_n)) / lr, one update a batch."""
    return A * np.sqrt(B * (B + b_n)) / lr


def test_targets_are_split_and_must_share_a_metric_and_a_direction():
    assert levels.split_targets("acc>=0.5") == ["acc>=0.5"]
    assert levels.split_targets(" acc>=0.45  acc>=0.5 ") == ["acc>=0.45", "acc>=0.5"]
    for bad, why in (("acc>=0.45 kl>=0.5", "share one metric"),
                     ("acc>=0.45 acc<=0.5", "share one metric"),
                     ("acc>=0.5 acc>=0.50", "appears twice"), ("acc>=0.5 acc>>0.6", "--progress")):
        with pytest.raises(PilotError, match=why):
            levels.split_targets(bad)


# three levels, B_n = 40 e^(10 x): 24.26, 40, 65.95 at x = -0.05, 0, 0.05 (by hand)
X, C0, C1 = np.array([-0.05, 0.0, 0.05]), math.log(40.0), 10.0
A_L = np.array([30.0, 50.0, 90.0])
BATCHES = np.array([8.0, 16.0, 32.0, 64.0])


def _plans(wiggle=1e-3, seeds=2):
    """Three one-target plans' JSON as joint_plan reads them: the runs' clocks from the formula
    (off by +-wiggle in log, alternating), the rule, the form error and the predictions."""
    plans = []
    for l in range(3):
        b = np.repeat(BATCHES, seeds)
        lr = np.where(np.arange(b.size) % 3 == 0, 0.03, 0.01)  # a third of the runs at 3x
        n = by_hand(b, lr, A_L[l], math.exp(C0 + C1 * X[l]))
        n = n * np.exp(wiggle * (-1.0) ** np.arange(b.size))
        plans.append({"runs": [{"batch": float(x), "lr": float(r), "progress_samples": float(v)}
                               for x, r, v in zip(b, lr, n)],
                      "fit": {"rule": {"p": 0.0, "lr0": 0.01, "b0": 8.0, "off_rule_runs": 0},
                              "progress_form_error": {"curvature": 0.0}},
                      "predictions": [], "source": "made here"})
    return plans


def test_the_joint_fit_recovers_a_noise_scale_linear_in_the_level():
    texts = ["acc>=0.45", "acc>=0.5", "acc>=0.55"]  # levels 0.45, 0.5, 0.55: x as above
    out = levels.joint_plan(texts, _plans(), predict=[512.0, 2048.0])
    assert out["schema"] == PLAN_SCHEMA + 1 and len(out["targets"]) == 3
    s = out["joint"]["log_noise_scale_slope"]
    assert abs(s["value"] - C1) < 0.2 and s["ci"][0] <= C1 <= s["ci"][1]
    assert s["reading"] == "the noise scale grows with the level"
    for l, row in enumerate(out["targets"]):
        bn = math.exp(C0 + C1 * X[l])
        assert row["condition"] == texts[l] and abs(row["noise_scale"] / bn - 1) < 0.02
        assert abs(row["critical_batch"] / (0.44 * row["noise_scale"]) - 1) < 1e-12
        for p in row["predictions"]:  # the formula at 8x and 32x the largest pilot
            want = by_hand(p["batch"], 0.01, A_L[l], bn)
            got = p["progress_samples"]
            assert abs(got["median"] / want - 1) < 0.01, (l, p["batch"])
            assert got["ci"][0] < want < got["ci"][1]


def test_a_flat_noise_scale_is_not_called_a_trend():
    plans = _plans(wiggle=0.05)
    for p in plans:  # one B_n = 40 at every level (by hand: c1 = 0)
        for r in p["runs"]:
            r["progress_samples"] *= math.sqrt((r["batch"] + 40.0) / (r["batch"] + math.exp(
                C0 + C1 * X[plans.index(p)])))
    out = levels.joint_plan(["acc>=0.45", "acc>=0.5", "acc>=0.55"], plans)
    lo, hi = out["joint"]["log_noise_scale_slope"]["ci"]
    assert (lo is None or lo <= 0) and (hi is None or hi >= 0)
    assert "not established" in out["joint"]["log_noise_scale_slope"]["reading"]


def test_too_few_clocks_for_the_joint_fit_are_refused():
    plans = _plans(seeds=1)
    for p in plans:
        p["runs"] = p["runs"][:1]  # 3 clocks, 3 levels + 2 parameters
    with pytest.raises(PilotError, match="degrees of freedom"):
        levels.joint_plan(["acc>=0.45", "acc>=0.5", "acc>=0.55"], plans)


def test_several_targets_from_the_example_logs_keep_each_targets_own_plan(tmp_path):
    from twoclock.cli.plan import main
    args = ["--logs", DATA, "--failure", "kl>=1.5", "--predict", "512", "--no-figure"]
    assert main(args + ["--progress", "heldout_acc>=0.7 heldout_acc>=0.8",
                        "--out", str(tmp_path / "two")]) == 0
    assert main(args + ["--progress", "heldout_acc>=0.8", "--out", str(tmp_path / "one")]) == 0
    two = json.loads((tmp_path / "two" / "plan.json").read_text())
    one = json.loads((tmp_path / "one" / "plan.json").read_text())
    assert two["schema"] == PLAN_SCHEMA + 1 and one["schema"] == PLAN_SCHEMA
    assert [t["condition"] for t in two["targets"]] == ["heldout_acc>=0.7", "heldout_acc>=0.8"]
    assert two["targets"][1]["plan"] == one  # the one-target plan, unchanged inside


def test_every_key_of_the_several_target_document_is_documented(tmp_path):
    """docs/results.md's section for it names every key written (a target's `plan` is the
    one-target plan, whose keys test_plan_schema checks) and no key that is not written."""
    import re
    from tests.pilot.test_plan_schema import DOC, _paths
    from twoclock.cli.plan import main
    assert main(["--logs", DATA, "--progress", "heldout_acc>=0.7 heldout_acc>=0.75",
                 "--predict", "512", "--no-figure", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "plan.json").read_text())
    for t in out["targets"]:
        t.pop("plan")
    written = set(_paths(out, set())) | {"targets[]", "targets[].plan"}
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("\n## plan.json with several targets\n"):]
    doc = {k for line in section.splitlines() if line.startswith("| `")
           for k in re.findall(r"`([^`]+)`", line.split("|")[1])}
    assert written == doc, (sorted(written - doc), sorted(doc - written))
    assert f"version, {out['schema']} " in section
