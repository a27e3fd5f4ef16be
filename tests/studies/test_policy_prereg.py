"""The pre-registered test of the per-coordinate theory (policy_study.prereg): its numbers from
per-seed clocks built by hand (no sweep runs), against hand computations and np.polyfit, and
the command's refusals before any work."""
import dataclasses
import json
import os
import statistics

import numpy as np
import pytest

from twoclock.cli import run_study
from twoclock.models.policy import PolicyConfig
from twoclock.studies import STUDIES
from twoclock.studies import policy_study as ps
from twoclock.studies.policy_study import prereg
from twoclock.studies.protocol import overridden

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLOCKS = ("progress", "null", "kl", "entropy")


def per_seed(table):
    """{batch: {clock: [S]}} from {batch: [S]} per clock (0: never), every clock the same."""
    return {str(b): {c: list(map(float, v)) for c in CLOCKS} for b, v in table.items()}


def test_calibrate_is_raw_times_the_seen_cells_measured_over_raw_by_hand():
    raw = {"progress": {"64": 1000.0, "256": 2000.0, "1024": None}}
    seen_raw = {"progress": {"64": 500.0, "256": 800.0, "1024": 900.0}}
    seen_meas = {"progress": {"64": 700.0, "256": None, "1024": 1800.0}}
    got = prereg.calibrate(raw, seen_raw, seen_meas)
    # 1000 x 700 / 500; the seen cell censored at 256; no raw clock at 1024
    assert got == {"progress": {"64": pytest.approx(1400.0), "256": None, "1024": None}}


def test_the_unseen_cells_change_one_thing_each():
    base = PolicyConfig()
    st = overridden(ps.Config(), ps.PREREG_OVERRIDES)
    assert prereg.cell_config(base, "seen") == base
    w = prereg.cell_config(base, "warmup_seed1")
    assert w.warmup == dataclasses.replace(base.warmup, seed=1)
    assert dataclasses.replace(w, warmup=base.warmup) == base
    assert prereg.cell_config(base, "group4") == dataclasses.replace(base, group=4)
    assert prereg.cell_config(base, "group16") == dataclasses.replace(base, group=16)
    assert prereg.cell_config(base, "lr_half") == base
    lr = {n: c[3].lr0s[0] for n, c in zip(
        ("seen", *prereg.UNSEEN), prereg.cells(st, base, ("seen", *prereg.UNSEEN)))}
    assert lr == {"seen": 1e-4, "lr_half": 5e-5, "lr_double": 2e-4, "group4": 1e-4,
                  "group16": 1e-4, "warmup_seed1": 1e-4}
    for name, cfg, opt, sweep in prereg.cells(st, base, prereg.UNSEEN):
        assert opt.lr_rule == "sqrt" and sweep.batches == (64, 256, 1024)
        assert (sweep.seeds, sweep.budget) == (8, 16_384)


def test_predictions_take_the_seen_medians_from_its_seeds_and_fit_the_exponent_like_polyfit():
    st = overridden(ps.Config(), ps.PREREG_OVERRIDES)
    # the seen cell: 4 seeds, one never crossing (a censored seed counts as beyond every other)
    seen = per_seed({64: [300, 100, 200, 0], 256: [400, 0, 0, 500], 1024: [0, 0, 0, 900]})
    raw_seen = {c: {"64": 100.0, "256": 200.0, "1024": 400.0} for c in CLOCKS}
    raw_cell = {c: {"64": 50.0, "256": 150.0, "1024": 600.0} for c in CLOCKS}
    out = prereg.predictions(st, seen, {"seen": raw_seen, "lr_half": raw_cell})
    assert out["written_before_the_runs"] and out["design"] == prereg.design(st)
    med = out["seen"]["measured_median"]["progress"]
    assert med["64"] == statistics.median([300, 100, 200, float("inf")]) == 250.0
    assert med["256"] is None  # two of four never cross: the median is inf
    assert med["1024"] is None
    c = out["cells"]["lr_half"]["clocks"]["kl"]
    assert c["calibrated"] == {"64": pytest.approx(50 * 250 / 100), "256": None, "1024": None}
    slope = np.polyfit(np.log([64, 256, 1024]), np.log([50.0, 150.0, 600.0]), 1)[0]
    assert c["raw_exponent"] == pytest.approx(slope, rel=1e-12)
    assert c["calibrated_exponent"] is None  # one batch only


def test_compare_against_hand_medians_and_the_exponent_inside_or_outside_its_ci():
    # 8 seeds whose clocks grow as B^0.5 times per-seed, per-batch factors in [0.8, 1.2]
    rng = np.random.default_rng(3)
    f = {b: rng.uniform(0.8, 1.2, 8) for b in (64, 256, 1024)}
    per = {str(b): {c: (1000.0 * np.sqrt(b / 64) * f[b]).tolist() for c in CLOCKS}
           for b in (64, 256, 1024)}
    half = {str(b): 1000.0 * np.sqrt(b / 64) for b in (64, 256, 1024)}
    steep = {str(b): 1000.0 * (b / 64) ** 1.0 for b in (64, 256, 1024)}
    pred = {"within": 0.2, "cells": {"x": {"clocks": {
        c: {"raw": steep, "calibrated": {k: 1.3 * v for k, v in half.items()}} for c in CLOCKS}}}}
    got = prereg.compare(pred, {"x": per})
    v = got["cells"]["x"]["progress"]
    meds = {b: 1000.0 * np.sqrt(b / 64) * statistics.median(f[b].tolist()) for b in f}
    for b in f:
        m = v["by_batch"][str(b)]
        assert m["median"] == pytest.approx(meds[b], rel=1e-12) and m["reached"] == 8
        assert m["over_calibrated"]["median"] == pytest.approx(
            meds[b] / (1.3 * 1000.0 * np.sqrt(b / 64)), rel=1e-12)
        assert m["over_raw"]["median"] == pytest.approx(meds[b] / (1000.0 * b / 64), rel=1e-12)
    slope = np.polyfit(np.log(list(meds)), np.log(list(meds.values())), 1)[0]
    assert v["exponent"]["median"] == pytest.approx(slope, rel=1e-9)
    lo, hi = v["exponent"]["ci"]
    assert lo < slope < hi and hi < 1.0  # factors within +-20% cannot make a slope of 1
    assert v["calibrated_exponent"] == pytest.approx(0.5, abs=1e-12)
    assert v["raw_exponent"] == pytest.approx(1.0, abs=1e-12)
    assert v["calibrated_exponent_inside_ci"] is (lo <= 0.5 <= hi)
    assert v["raw_exponent_inside_ci"] is False
    g = got["goals"]
    within_cal = sum(abs(meds[b] / (1300.0 * np.sqrt(b / 64)) - 1) <= 0.2 for b in f)
    within_raw = sum(abs(meds[b] / (1000.0 * b / 64) - 1) <= 0.2 for b in f)
    assert g["calibrated_clocks_within"] == [4 * within_cal, 12]
    assert g["raw_clocks_within"] == [4 * within_raw, 12]
    assert g["raw_exponents_inside_ci"] == [0, 4]
    assert g["calibrated_exponents_inside_ci"] == [4 * (lo <= 0.5 <= hi), 4]


def test_compare_leaves_censored_batches_out_of_the_exponent_and_opens_a_censored_bound():
    per = {"64": {c: [100.0, 110.0, 120.0, 130.0] for c in CLOCKS},
           "256": {c: [200.0, 0.0, 240.0, 0.0] for c in CLOCKS},  # median inf: left out
           "1024": {c: [400.0, 440.0, 480.0, 520.0] for c in CLOCKS}}
    p = {"64": 100.0, "256": 1.0, "1024": 400.0}  # a wild prediction at the censored batch
    pred = {"within": 0.2, "cells": {"x": {"clocks": {c: {"raw": p, "calibrated": p}
                                                       for c in CLOCKS}}}}
    v = prereg.compare(pred, {"x": per})["cells"]["x"]["kl"]
    assert v["exponent"]["batches"] == [64, 1024]
    assert v["raw_exponent"] == pytest.approx(np.log(4) / np.log(16))  # 64 and 1024 only
    assert v["by_batch"]["256"]["median"] is None and v["by_batch"]["256"]["reached"] == 2
    assert v["by_batch"]["256"]["over_raw"]["median"] is None


def parse(argv):
    return run_study.parse(STUDIES["policy_study"], argv, "policy_study.py")


def test_predict_never_writes_over_a_pre_registration(tmp_path):
    path = tmp_path / "pred.json"
    path.write_text("{}")
    with pytest.raises(ValueError, match="^--predictions-file must be"):
        parse(["--predict", "--predictions-file", str(path)])
    _, _, _, cfg, _ = parse(["--predict", "--predictions-file", str(tmp_path / "new.json")])
    assert cfg.parts == ("predict",) and (cfg.seeds, cfg.budget) == (8, 16_384)


def test_prereg_needs_predictions_made_for_its_design(tmp_path):
    with pytest.raises(ValueError, match="^--predictions-file must be"):
        parse(["--prereg", "--predictions-file", str(tmp_path / "missing.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(ValueError, match="not a predictions file"):
        parse(["--prereg", "--predictions-file", str(bad)])
    made = tmp_path / "pred.json"
    made.write_text(json.dumps(committed()))
    out = ["--measured-file", str(tmp_path / "m.json")]
    parse(["--prereg", "--predictions-file", str(made), *out])  # the same design: accepted
    with pytest.raises(ValueError, match="design"):
        parse(["--prereg", "--predictions-file", str(made), "--seeds", "4", *out])


PREDICTIONS = os.path.join(ROOT, "docs", "preregistered", "policy_predictions.json")


def committed() -> dict:
    with open(PREDICTIONS) as f:
        return json.load(f)


def spoiled(how):
    """The committed predictions with one edit (how(pred) changes pred in place)."""
    pred = committed()
    how(pred)
    return pred


def _set(*path, value):
    def how(pred):
        for k in path[:-1]:
            pred = pred[k]
        pred[path[-1]] = value
    return how


def _del(*path):
    def how(pred):
        for k in path[:-1]:
            pred = pred[k]
        del pred[path[-1]]
    return how


# hand-edited predictions files whose design is intact (issue 55): each refused before any cell
# runs, in one line naming the key (by hand: the path from the file's top to the bad value)
SPOILED = [
    (_del("cells"), "cells must be present"),
    (_del("cells", "group4"), "cells/group4 must be an object (an unseen cell of the design) "
                              "(got nothing)"),
    (_del("cells", "lr_half", "clocks", "kl"), "cells/lr_half/clocks/kl must be an object"),
    (_del("cells", "lr_half", "clocks", "kl", "calibrated", "256"),
     "cells/lr_half/clocks/kl/calibrated/256 must be a number > 0 or null (got nothing)"),
    (_set("cells", "group4", "clocks", value={}), "cells/group4/clocks/progress must be"),
    (_set("cells", "group16", "clocks", "progress", "raw", "64", value="123"),
     "cells/group16/clocks/progress/raw/64 must be a number > 0 or null (got '123')"),
    (_set("cells", "lr_double", "clocks", "null", "calibrated", "1024", value=-5.0),
     "cells/lr_double/clocks/null/calibrated/1024 must be a number > 0 or null (got -5.0)"),
    (_set("cells", "lr_double", "clocks", "null", "raw", "64", value=0),
     "raw/64 must be a number > 0 or null (got 0)"),
    (_set("cells", "lr_double", "clocks", "null", "raw", "64", value=True),
     "raw/64 must be a number > 0 or null (got True)"),
    (_set("cells", "warmup_seed1", "clocks", "entropy", "raw_exponent", value="0.5"),
     "entropy/raw_exponent must be a number or null (got '0.5')"),
    (_set("cells", "lr_double", "clocks", "null", "raw", "64", value=10**400),
     "raw/64 must be a number > 0 or null (got 1000"),  # past float64: refused, not raised
    (_set("within", value="0.2"), "within must be a number in (0, 1) (got '0.2')"),
    (_set("within", value=10**400), "within must be a number in (0, 1) (got 1000"),
    (_set("within", value=1.0), "within must be a number in (0, 1) (got 1.0)"),
    (_set("within", value=0), "within must be a number in (0, 1) (got 0)"),
    (_del("theory"), "theory must be present"),
    (_set("cells", value=[]), "cells must be an object"),
]


@pytest.mark.parametrize("how, says", SPOILED)
def test_a_spoiled_predictions_file_is_refused_in_one_line_naming_the_key(tmp_path, how, says):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(spoiled(how)))
    st = overridden(ps.Config(predictions_file=str(path)), ps.PRESETS["prereg"][1])
    with pytest.raises(ValueError) as e:
        st.check(None, PolicyConfig(), None)
    msg = str(e.value)
    assert says in msg and msg.startswith("predictions_file: ") and "\n" not in msg, msg


def test_the_schema_takes_the_committed_file_and_unreached_clocks():
    st = overridden(ps.Config(), ps.PRESETS["prereg"][1])
    prereg.validate(committed(), st)  # what --predict wrote is accepted
    none = spoiled(_set("cells", "group4", "clocks", "kl", "raw", "1024", value=None))
    prereg.validate(none, st)  # a clock the theory does not reach: null
    extra = spoiled(_set("cells", "lr_half", "clocks", "kl", "raw", "128", value="x"))
    prereg.validate(extra, st)  # a batch outside the design is never read


def test_two_presets_that_set_one_field_are_refused_not_merged(tmp_path):
    """Each preset's overrides (by hand): --quick and --predict both set the sweep (quick's
    would be dropped silently), --predict and --prereg the parts."""
    new = ["--predictions-file", str(tmp_path / "new.json")]
    with pytest.raises(ValueError, match=r"^--quick and --predict cannot be given together "
                                         r"\(both set sweep\): drop one of them$"):
        parse(["--quick", "--predict", *new])
    with pytest.raises(ValueError, match=r"^--predict and --prereg .* \(both set parts\)"):
        parse(["--prereg", "--predict", *new])
    assert parse(["--predict", *new])[3].parts == ("predict",)


def test_predict_or_prereg_run_alone():
    with pytest.raises(ValueError, match="parts"):
        ps.Config(parts=("predict", "rules"))
    assert ps.Config(parts=("prereg",)).parts == ("prereg",)


def test_the_committed_predictions_are_for_the_design_prereg_runs():
    path = os.path.join(ROOT, "docs", "preregistered", "policy_predictions.json")
    with open(path) as f:
        pred = json.load(f)
    st = overridden(ps.Config(), ps.PREREG_OVERRIDES)
    assert pred["written_before_the_runs"] and pred["design"] == prereg.design(st)
    assert set(pred["cells"]) == set(prereg.UNSEEN)
    for cell in pred["cells"].values():
        assert set(cell["clocks"]) == set(CLOCKS)


def _spoiled_file(tmp_path) -> str:
    path = tmp_path / "spoiled.json"
    path.write_text(json.dumps(spoiled(_set("within", value="0.2"))))
    return str(path)


# issue 55: each of these ran cells (up to 179 s) and then exited 3 with an exception's name
REFUSED = [
    (lambda t: ["--predict", "--predictions-file", "/proc/x/p.json"],
     "the folder of --predictions-file must be a folder this process can write in"),
    (lambda t: ["--prereg", "--predictions-file", PREDICTIONS, "--measured-file",
                "/proc/x/m.json"],
     "the folder of --measured-file must be a folder this process can write in"),
    (lambda t: ["--prereg", "--predictions-file", _spoiled_file(t), "--measured-file",
                str(t / "m.json")], "within must be a number in (0, 1) (got '0.2')"),
    (lambda t: ["--predict", "--prereg"], "--predict and --prereg cannot be given together"),
    (lambda t: ["--early-samples", "4096", "--budget", "256", "--batches", "64", "128"],
     "--early-samples must be <= 256"),
]


@pytest.mark.parametrize("argv, says", REFUSED, ids=("predictions_file", "measured_file",
                                                     "within", "predict_prereg", "early"))
def test_the_issues_cases_exit_2_in_one_line_before_any_cell(tmp_path, argv, says):
    import subprocess
    import sys
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "policy_study.py"),
                        *argv(tmp_path), "--out", str(out), "--no-figure"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and says in lines[0], p.stderr
    assert "Traceback" not in p.stderr
    # no cell started (each prints its start) and nothing was written
    assert not p.stdout and not out.exists() and not (tmp_path / "m.json").exists()
