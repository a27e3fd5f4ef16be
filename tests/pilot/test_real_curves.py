"""tools/real_curves.py and the sweep it scores (twoclock/data/real/invpend_pg_b100_10000/).

Oracles: the event file the run's own logger wrote (tests/data/real_tensorboard/), spot values
an independent decoder (a protobuf reader written apart from this project) read from the
sweep's files, the launch script's batches, and hand-computed crossings on curves made linear
in samples, where the first logged crossing is exact.
"""
import csv
import importlib.util
import json
import os

import numpy as np
import pytest

from tests.helpers import load_script, preregistered

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = "invpend_pg_b100_10000"
FOLDER = os.path.join(ROOT, "twoclock", "data", "real", SWEEP)
REAL_TB = os.path.join(ROOT, "tests", "data", "real_tensorboard")
rc = load_script("tools/real_curves.py")


def _curves():
    with open(os.path.join(FOLDER, "curves.csv"), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                    reason="reading TensorBoard files needs the tensorboard extra")
def test_the_stored_curves_are_what_the_runs_own_event_file_holds(tmp_path):
    out = tmp_path / "curves.csv"
    n = rc.extract(REAL_TB, str(out), r"q2_b_(\d+)_", 5e-3, "Train_EnvstepsSoFar",
                   ("Eval_AverageReturn", "Train_AverageReturn"), "tb_8938091")
    with open(out, newline="", encoding="utf-8") as f:
        got = list(csv.DictReader(f))
    stored = [r for r in _curves() if r["batch"] == "100"]
    assert n == 100 and got == stored


@pytest.mark.parametrize("batch,step,samples,eval_return", [
    (100, 50, 7488, 73.33333587646484), (100, 99, 16373, 66.42857360839844),
    (500, 99, 60610, 1000.0), (1000, 50, 53444, 150.8000030517578),
    (5000, 50, 258591, 478.0), (10000, 99, 1015863, 430.0)])
def test_spot_values_as_an_independent_decoder_reads_them(batch, step, samples, eval_return):
    row = next(r for r in _curves() if int(r["batch"]) == batch and int(r["step"]) == step)
    assert int(row["samples"]) == samples
    assert float(row["Eval_AverageReturn"]) == pytest.approx(eval_return, rel=1e-8)


def test_nineteen_runs_of_one_launch_in_the_scripts_order():
    rows = _curves()
    runs = {}
    for r in rows:
        runs.setdefault(int(r["batch"]), set()).add(r["run"])
    # hw2/q2.sh: -b 100 to 1000 by 100, then 2000 to 10000 by 1000, one run each
    assert sorted(runs) == list(range(100, 1001, 100)) + list(range(2000, 10001, 1000))
    assert all(len(v) == 1 for v in runs.values())
    names = [next(iter(runs[b])) for b in sorted(runs)]
    times = [n.rsplit("_", 1)[1] for n in names]  # HH-MM-SS of the launch, one day
    assert times == sorted(times) and times[0] == "20-00-22" and times[-1] == "21-05-11"
    assert all(n.startswith(f"q2_b_{b}_r_5e-3_") for b, n in zip(sorted(runs), names))


def test_each_update_takes_whole_episodes_of_at_most_1000_steps():
    # an iteration collects whole episodes (up to ep_len 1000 steps) until it has B steps:
    # B to B + 999 new samples each, 100 iterations, evaluated after every update
    meta, runs = rc.read_curves(SWEEP)
    for b, (r,) in runs.items():  # one run a batch
        new = np.diff(np.concatenate([[0.0], r["samples"]]))
        assert r["samples"].size == 100
        assert new.min() >= b and new.max() <= b + 999, b
        assert (r["metric"] > 0).all() and r["metric"].max() <= 1000


def test_the_committed_predictions_follow_the_stored_design():
    with open(os.path.join(FOLDER, "design.json"), encoding="utf-8") as f:
        design = json.load(f)
    pre = preregistered("real_invpend_pg_predictions.json")
    assert [(d["pilots"], d["held_out"]) for d in pre["designs"]] == \
        [([float(b) for b in d["pilots"]], [float(b) for b in d["held_out"]])
         for d in design["designs"]]
    for d in pre["designs"]:
        for t in d["targets"]:
            assert set(t["predictions"]) == {str(b) for b in d["held_out"]}


# ------------------------------------------------------------------ a sweep made by hand

def _linear_sweep(tmp_path, monkeypatch, slopes: dict, updates: dict, levels, designs):
    """Runs whose metric is samples / k_B, logged after every update of B samples (none
    before the first): the first logged crossing of level L is exactly L k_B."""
    folder = tmp_path / "hand"
    folder.mkdir()
    with open(folder / "curves.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["run", "batch", "lr", "step", "samples", "ret", "source"])
        for b, k in slopes.items():
            for i in range(updates[b]):
                s = b * (i + 1)
                w.writerow([f"b{b}", b, 0.01, i, s, s / k, "hand"])
    (folder / "design.json").write_text(json.dumps(
        {"metric": "ret", "levels": levels, "designs": designs}))
    monkeypatch.setattr(rc, "DATA", str(tmp_path))
    return "hand"


def test_predict_reads_only_crossings_after_the_first_point_and_scales_the_obvious_rule(
        tmp_path, monkeypatch):
    # k_B: 10, 14, 20 at the pilots 10, 20, 40 (100 updates each): first points 1, 1.43, 2.
    # Level 1 is met at every pilot's first point, 1.5 at the largest pilot's alone, 1000
    # never (at most 1000 / 10 = 100)
    sweep = _linear_sweep(tmp_path, monkeypatch, {10: 10.0, 20: 14.0, 40: 20.0, 80: 25.0},
                          {10: 100, 20: 100, 40: 100, 80: 100}, [1, 1.5, 5, 50, 1000],
                          [{"name": "d", "pilots": [10, 20, 40], "held_out": [80]}])
    doc = rc.predict(sweep, str(tmp_path / "pre.json"))
    d = doc["designs"][0]
    assert [t["target"] for t in d["targets"]] == ["ret>=5", "ret>=50"]
    assert "first point" in d["skipped_targets"]["ret>=1"]
    assert d["skipped_targets"]["ret>=1.5"] == "pilot B 40 meets it at its first point"
    assert d["skipped_targets"]["ret>=1000"] == "not reached by pilot B 10, 20, 40"
    assert d["lr_exponent_p"] == 0.0
    t5 = d["targets"][0]
    # by hand: L k_B = 50, 70, 100 samples; the obvious rule at 80: 100 x 80 / 40 = 200
    assert t5["pilot_samples"] == pytest.approx({"10.0": 50.0, "20.0": 70.0, "40.0": 100.0})
    pr = t5["predictions"]["80.0"]
    assert pr["obvious_rule"] == pytest.approx(200.0)
    for m in ("adam", "default", "joint"):
        lo, hi = pr[m]["band"]
        assert lo <= pr[m]["median"] <= hi, m
    with pytest.raises(SystemExit, match="written once"):
        rc.predict(sweep, str(tmp_path / "pre.json"))


def test_score_reads_the_truth_as_the_pilots_and_counts_a_never_as_a_miss(
        tmp_path, monkeypatch):
    # held out: B 80 (k 25: level 5 at 125 samples, exactly) and B 160 for 5 updates (k 25:
    # at most 800 / 25 = 32, never 50)
    sweep = _linear_sweep(tmp_path, monkeypatch, {80: 25.0, 160: 25.0}, {80: 100, 160: 5},
                          [5, 50], [{"name": "d", "pilots": [10, 20, 40],
                                     "held_out": [80, 160]}])
    band = lambda med, lo, hi: {"median": med, "band": [lo, hi]}
    preds = {"80.0": {"adam": band(150.0, 100.0, 200.0), "default": band(100.0, 80.0, 110.0),
                      "joint": "refused: a line", "mccandlish": 100.0,
                      "obvious_rule": 250.0},
             "160.0": {"adam": band(3000.0, 1000.0, 9000.0), "default": band(1.0, 0.5, 2.0),
                       "joint": band(1.0, 0.5, 2.0), "mccandlish": 1.0,
                       "obvious_rule": 1.0}}
    pre = {"sweep": sweep, "designs": [{"name": "d", "pilots": [10.0, 20.0, 40.0],
                                        "targets": [{"target": "ret>=5", "predictions":
                                                     {"80.0": preds["80.0"]}},
                                                    {"target": "ret>=50", "predictions":
                                                     {"160.0": preds["160.0"]}}]}]}
    (tmp_path / "pre.json").write_text(json.dumps(pre))
    doc = rc.score(str(tmp_path / "pre.json"), str(tmp_path / "out.json"))
    r80, r160 = doc["rows"]
    assert r80["truth"] == pytest.approx(125.0) and r80["x_largest_pilot"] == 2.0
    assert r80["adam"]["error"] == pytest.approx(150 / 125 - 1) and r80["adam"]["covered"]
    assert not r80["default"]["covered"]  # 110 < 125
    assert r80["mccandlish"]["error"] == pytest.approx(100 / 125 - 1)
    assert r80["joint"] == {"refused": "refused: a line"}
    assert r160["truth"] is None and r160["adam"]["error"] is None
    assert r160["adam"]["covered"] is False  # a band cannot hold a clock that never comes
    s160 = next(s for s in doc["summary"] if s["batch"] == 160.0)
    assert s160["never"] == 1 and s160["adam"]["coverage_95"] == 0.0
    assert s160["adam"]["median_abs_error"] is None
    assert not os.path.exists(str(tmp_path / "out.json") + ".partial")


def test_the_growth_exponent_by_hand(tmp_path, monkeypatch):
    # metric = samples / k_B with k_B = B^0.75: level 5 crossed at exactly 5 B^0.75 samples;
    # left out: B 8 (below b_from), B 2048 (one update: 2048^0.25 = 6.7, met at its first
    # point) and B 4096 (k 4096, one update: 1, never)
    slopes = {b: b ** 0.75 for b in (8, 64, 128, 256, 512, 2048)}
    slopes[4096] = 4096.0
    updates = {8: 200, 64: 200, 128: 200, 256: 200, 512: 200, 2048: 1, 4096: 1}
    _linear_sweep(tmp_path, monkeypatch, slopes, updates, [5], [])
    _, runs = rc.read_curves("hand")
    e = rc.exponent(runs, "ret>=5", 64)
    assert e["batches"] == [64.0, 128.0, 256.0, 512.0]
    assert e["slope"] == pytest.approx(0.75, abs=1e-9)
    assert e["ci"] == pytest.approx([0.75, 0.75], abs=1e-6)  # no scatter about the line
    # one run off the line by x2 at B 128: slope and t CI by hand (x = log B, 4 points)
    runs[128.0][0]["samples"] = runs[128.0][0]["samples"] * 2.0
    e = rc.exponent(runs, "ret>=5", 64)
    x = np.log([64.0, 128.0, 256.0, 512.0])
    y = np.log([5 * b ** 0.75 for b in (64.0, 128.0, 256.0, 512.0)]) + np.log([1, 2, 1, 1])
    xc = x - x.mean()
    slope = float(xc @ (y - y.mean()) / (xc @ xc))
    resid = y - y.mean() - slope * xc
    half = 4.302652729911275 * np.sqrt(resid @ resid / 2 / (xc @ xc))  # t(0.975, 2 dof)
    assert e["slope"] == pytest.approx(slope) and e["ci"] == pytest.approx(
        [slope - half, slope + half])
    with pytest.raises(SystemExit, match="need 3"):
        rc.exponent(runs, "ret>=5", 256)



# ------------------------------------------------------------- the homework sweeps, ingested

def test_a_sweep_is_an_lr_with_five_batches_the_last_launch_of_each():
    pat = r"^q2_b(\d+)_r([\d.]+)_Pend_\S+$"
    t = lambda day, hour: f"{day:02d}-09-2022_{hour:02d}-00-00"
    listing = [(f"q2_b{b}_r0.01_Pend_{t(1, 1)}", 5000) for b in (100, 200, 300, 400, 500)]
    # lr 0.02: B 500 launched four times; the latest (day 2 at 02 h) has an empty file, so the
    # last non-empty launch (day 2 at 01 h) is kept, the others after it, latest first
    listing += [(f"q2_b{b}_r0.02_Pend_{t(1, 1)}", 5000) for b in (100, 200, 300, 400, 500)]
    listing += [(f"q2_b500_r0.02_Pend_{t(1, 23)}", 5000), (f"q2_b500_r0.02_Pend_{t(2, 1)}", 5000),
                (f"q2_b500_r0.02_Pend_{t(2, 2)}", 40)]
    listing += [(f"q2_b{b}_r0.03_Pend_{t(1, 1)}", 5000) for b in (100, 200, 300, 400)]  # 4
    listing += [(f"q2_b{b}_r0.04_Pend_{t(1, 1)}", 5000 if b != 300 else 40)  # empty: 4 left
                for b in (100, 200, 300, 400, 500)]
    listing += [("q3_b100_r0.01_Pend_x", 5000), ("q2_b600_r0.01_Other_x", 5000)]  # not runs
    got = rc.sweeps_in(listing, pat)
    assert set(got) == {"0.01", "0.02"}
    assert got["0.01"] == {b: {None: [f"q2_b{b}_r0.01_Pend_{t(1, 1)}"]}
                           for b in (100, 200, 300, 400, 500)}
    assert got["0.02"][500] == {None: [f"q2_b500_r0.02_Pend_{t(2, 1)}",
                                       f"q2_b500_r0.02_Pend_{t(1, 23)}",
                                       f"q2_b500_r0.02_Pend_{t(1, 1)}"]}
    # dd-mm-yyyy_HH-MM-SS read as (year, month, day, ...): 02-10 is after 30-09
    assert rc.launched("a_02-10-2022_00-00-00") > rc.launched("a_30-09-2022_23-59-59")
    assert rc.launched("no time") == ()


def test_the_designs_follow_from_the_batches_alone():
    d = rc.designs_for([700, 100, 500, 200, 1000, 300])
    assert d == [{"name": "smallest three", "pilots": [100.0, 200.0, 300.0],
                  "held_out": [500.0, 700.0, 1000.0]}]
    d = rc.designs_for([500, 1000, 2500, 5000, 7500])
    assert d[1] == {"name": "smallest three from 1000", "pilots": [1000.0, 2500.0, 5000.0],
                    "held_out": [7500.0]}
    # every batch >= 1000: the second design would repeat the first, so there is none
    assert len(rc.designs_for([2000, 4000, 5000, 8000, 20000])) == 1
    assert rc.sweep_name("saudag-28/16831-F24-HW", "0.01") == "invpend_pg_saudag_28_lr0p01"
    assert rc.sweep_name("ZihanWang314/homework_fall2022", "2e-2") == \
        "invpend_pg_zihanwang314_lr2em2"


@pytest.mark.parametrize("sweep,batch,step,samples,eval_return", [
    # an independent decoder's reading of the committed event files
    ("invpend_pg_zackli0001_lr0p02", 600, 1, 1207, 25.75),
    ("invpend_pg_zackli0001_lr0p02", 1000, 99, 104864, 1000.0),
    ("invpend_pg_karesto_lr0p01", 100, 99, 16683, 67.17),
    ("invpend_pg_leslietrue_lr0p01", 500, 99, 60688, 189.33),
    ("invpend_pg_saudag_28_lr0p01", 2000, 99, 211154, 53.25),
    ("invpend_pg_saudag_28_lr0p01", 20000, 99, 2019450, 1000.0),
    ("invpend_pg_zihanwang314_lr2em2", 1000, 72, 76530, 1000.0)])
def test_ingested_spot_values(sweep, batch, step, samples, eval_return):
    _, runs = rc.read_curves(sweep)
    with open(os.path.join(ROOT, "twoclock", "data", "real", sweep, "curves.csv"),
              newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if int(r["batch"]) == batch
                   and int(r["step"]) == step)
    assert int(row["samples"]) == samples
    assert float(row["Eval_AverageReturn"]) == pytest.approx(eval_return, abs=0.005)
    assert runs[float(batch)][0]["samples"][step] == samples


def test_the_committed_set_predictions_follow_each_sweeps_design():
    # three files: the first twelve sweeps, the eleven the last-launch rule added, the four of
    # several seeds a batch; each sweep pre-registered once
    files = [preregistered(f"real_invpend_set{k}_predictions.json") for k in ("", "2", "3")]
    names = [s["sweep"] for pre in files for s in pre["sweeps"]]
    assert sorted(names) == rc.ingested() and len(set(names)) == len(names)
    for s in (s for pre in files for s in pre["sweeps"]):
        with open(os.path.join(ROOT, "twoclock", "data", "real", s["sweep"], "design.json"),
                  encoding="utf-8") as f:
            design = json.load(f)
        assert design["designs"] == rc.designs_for(
            [b for d in design["designs"][:1] for b in d["pilots"] + d["held_out"]])
        assert [(d["pilots"], d["held_out"]) for d in s["designs"]] == \
            [(d["pilots"], d["held_out"]) for d in design["designs"]]


def test_the_set_is_pooled_by_distance_beyond_the_largest_pilot(tmp_path, monkeypatch):
    assert [rc.bucket(x) for x in (1.5, 2.0, 2.01, 4.0, 7.5)] == \
        ["(1, 2]x", "(1, 2]x", "(2, 4]x", "(2, 4]x", "(4, inf]x"]
    # one sweep, held out at 2x (B 80, k 25: truth 125 exactly) and 8x (B 320, k 100: its
    # first point 3.2, truth 500)
    sweep = _linear_sweep(tmp_path, monkeypatch, {80: 25.0, 320: 100.0}, {80: 100, 320: 100},
                          [5], [])
    band = lambda med, lo, hi: {"median": med, "band": [lo, hi]}
    pr = lambda med: {"adam": band(med, med / 2, med * 2), "default": band(med, med, med),
                      "joint": band(med, med, med), "mccandlish": med, "obvious_rule": med}
    pre = {"sweeps": [{"sweep": sweep, "designs": [
        {"name": "d", "pilots": [10.0, 20.0, 40.0], "targets": [
            {"target": "ret>=5", "predictions": {"80.0": pr(150.0), "320.0": pr(400.0)}}]}]}]}
    (tmp_path / "pre.json").write_text(json.dumps(pre))
    doc = rc.score_set(str(tmp_path / "pre.json"), str(tmp_path / "out.json"))
    by = {s["design"]: s for s in doc["by_bucket"]}
    assert set(by) == {"(1, 2]x", "(4, inf]x"}
    assert by["(1, 2]x"]["adam"]["median_abs_error"] == pytest.approx(150 / 125 - 1)
    assert by["(4, inf]x"]["adam"]["median_abs_error"] == pytest.approx(1 - 400 / 500)
    assert by["(1, 2]x"]["default"]["coverage_95"] == 0.0  # a point band at 150, truth 125
    assert all(r["sweep"] == sweep for r in doc["rows"])
    assert not os.path.exists(str(tmp_path / "out.json") + ".partial")


def test_pooled_files_must_not_score_a_sweep_twice(tmp_path):
    row = lambda sweep, x, err: {"sweep": sweep, "design": "d", "target": "t", "batch": 1.0,
                                 "x_largest_pilot": x, "truth": 100.0, **{
                                     m: {"median": 100.0 * (1 + err), "error": err,
                                         "covered": True, "width": 1.5}
                                     for m in rc.METHODS}}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"rows": [row("s1", 1.5, 0.1), row("s1", 3.0, -0.3)]}))
    b.write_text(json.dumps({"rows": [row("s2", 1.5, 0.5)]}))
    doc = rc.pooled([str(a), str(b)])
    by = {s["design"]: s for s in doc["by_bucket"]}
    assert by["(1, 2]x"]["targets"] == 2  # one from each file
    assert by["(1, 2]x"]["adam"]["median_abs_error"] == pytest.approx(0.3)  # of 0.1 and 0.5
    with pytest.raises(SystemExit, match="again: s1"):
        rc.pooled([str(a), str(a)])


def test_seeds_are_kept_apart_and_runs_that_stopped_early_left_out():
    pat = r"^q2_b(\d+)_r([\d.]+)_seed(?P<seed>\d+)_Pend_\S+$"
    t = lambda hour: f"01-09-2022_{hour:02d}-00-00"
    listing = [(f"q2_b{b}_r0.01_seed{k}_Pend_{t(1)}", 5000) for b in (10, 20, 30, 40, 50)
               for k in (0, 1)]
    listing += [(f"q2_b10_r0.01_seed1_Pend_{t(3)}", 5000)]  # seed 1 at B 10 launched again
    got = rc.sweeps_in(listing, pat)["0.01"]
    assert set(got[20]) == {"0", "1"} and got[20]["0"] == [f"q2_b20_r0.01_seed0_Pend_{t(1)}"]
    assert got[10]["1"] == [f"q2_b10_r0.01_seed1_Pend_{t(3)}", f"q2_b10_r0.01_seed1_Pend_{t(1)}"]
    # half the longest run's steps is kept, fewer is not
    assert rc.stopped_early({"a": 100, "b": 50, "c": 49, "d": 2}) == {"c", "d"}


def test_a_batch_of_several_seeds_is_read_as_their_median(tmp_path, monkeypatch):
    folder = tmp_path / "seeds"
    folder.mkdir()
    with open(folder / "curves.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["run", "batch", "lr", "step", "samples", "ret", "source"])
        # B 10: seeds with k 10, 20, 40 (level 5 at 50, 100, 200: median 100); B 20: one seed
        # that never reaches 5 in 3 updates, two at k 4 (crossing at 20: its first point)
        for name, b, k, n in (("s0", 10, 10.0, 100), ("s1", 10, 20.0, 100), ("s2", 10, 40.0, 100),
                              ("t0", 20, 100.0, 3), ("t1", 20, 4.0, 3), ("t2", 20, 4.0, 3)):
            for i in range(n):
                smp = b * (i + 1)
                w.writerow([name, b, 0.01, i, smp, smp / k, "hand"])
    (folder / "design.json").write_text(json.dumps({"metric": "ret", "levels": [5],
                                                    "designs": []}))
    monkeypatch.setattr(rc, "DATA", str(tmp_path))
    _, runs = rc.read_curves("seeds")
    assert [len(runs[b]) for b in (10.0, 20.0)] == [3, 3]
    assert rc.batch_clock(runs[10.0], "ret>=5") == (pytest.approx(100.0), True, False)
    # B 20: never (inf), 20 and 20 at their first point: median 20, not all between points
    n, between, first = rc.batch_clock(runs[20.0], "ret>=5")
    assert n == pytest.approx(20.0) and not between and first



def test_one_sweep_gives_no_contrast_over_sweeps():
    rows = [{"sweep": "only", "design": "d", "target": f"t{i}", "truth": 100.0,
             **{m: {"median": 100.0 + i + (5 if m == "mccandlish" else 0)} for m in rc.METHODS}}
            for i in range(4)]
    c = rc.contrasts(rows, group="sweep")
    assert c["reading"].startswith("one group (only)") and "mccandlish" not in c
    assert "mccandlish" in rc.contrasts(rows)  # over design-targets there are four groups


def test_the_score_printout_of_one_target_says_why_it_has_no_contrast(tmp_path, monkeypatch,
                                                                      capsys):
    sweep = _linear_sweep(tmp_path, monkeypatch, {80: 25.0}, {80: 100}, [5], [])
    band = {"median": 150.0, "band": [100.0, 200.0]}
    pre = {"sweep": sweep, "designs": [{"name": "d", "pilots": [10.0, 20.0, 40.0], "targets": [
        {"target": "ret>=5", "predictions": {"80.0": {
            "adam": band, "default": band, "joint": band, "mccandlish": 150.0,
            "obvious_rule": 150.0}}}]}]}
    (tmp_path / "pre.json").write_text(json.dumps(pre))
    rc.main(["score", str(tmp_path / "pre.json"), str(tmp_path / "out.json")])
    assert "contrasts: too few predictions answered by every method" in capsys.readouterr().out
