"""The damage study's numbers, worked out from per-seed values (numpy only: no sweep is run).
Expected values come from hand computations, np.polyfit and a plain-Python bootstrap loop,
never from the study's code."""
import dataclasses
import json
import math
import os
import statistics

import numpy as np
import pytest

from twoclock.config import OptimConfig
from twoclock.models.policy import PolicyConfig
from twoclock.studies import damage_study as ds
from twoclock.studies.protocol import CELL_LANES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N_BOOT = 2000  # the analysis' bootstrap: [2000, S] rows of rng(0).integers(0, S)


def boot_rows(S):
    return np.random.default_rng(0).integers(0, S, size=(N_BOOT, S))


def lower_quantiles(values):
    """The 2.5% and 97.5% 'lower' quantiles of a list, by sorting (NumPy's method='lower')."""
    v = sorted(values)
    n = len(v)
    return v[math.floor(0.025 * (n - 1))], v[math.floor(0.975 * (n - 1))]


def test_at_responses_interpolates_between_the_checkpoints_around_it_from_zero():
    # two seeds, checkpoints every 64 responses, a shift that goes up and down
    s = np.array([[64, 128, 192, 256]] * 2, float)
    x = np.array([[0.1, -0.2, 0.3, 0.25], [1.0, 2.0, 4.0, 8.0]])
    got = ds.at_responses(s, x, np.array([96.0, 32.0]))
    # seed 0: half way from 0.1 (64) to -0.2 (128); seed 1: half way from 0 (at 0) to 1.0 (64)
    assert got == pytest.approx([-0.05, 0.5], abs=1e-15)
    assert ds.at_responses(s, x, np.array([256.0, 160.0])) == pytest.approx([0.25, 3.0])
    nan = ds.at_responses(s, x, np.array([np.nan, 192.0]))
    assert np.isnan(nan[0]) and nan[1] == 4.0


def test_first_crossing_interpolates_from_the_start_and_takes_the_first_of_several():
    s = np.array([[64, 128, 192, 256]] * 3, float)
    x = np.array([[0.01, 0.05, 0.01, 0.2],   # up, down, up again: the first crossing counts
                  [0.06, 0.0, 0.0, 0.0],     # crossed inside the first update, from 0 at 0
                  [0.01, 0.02, 0.029, -0.5]])  # never
    got = ds.first_crossing(s, x, 0.03)
    # seed 0: between 64 (0.01) and 128 (0.05): 64 + (0.02 / 0.04) 64 = 96
    assert got == pytest.approx([96.0, 32.0, 0.0], abs=1e-12)


def test_deficit_is_the_deploy_accuracy_lost_against_the_reference_share():
    # the reference accepts 0.27 of 0.3 (END_A share 0.9); later the digits are right 0.8 of
    # the time and the deployment grader accepts 0.6: 0.8 * 0.9 - 0.6 = 0.12 lost to END_B
    d = ds.deficit([[0.3, 0.8]], [[0.27, 0.6]], {"acc": 0.3, "deploy": 0.27})
    assert d.shape == (1, 2) and d[0] == pytest.approx([0.0, 0.12], abs=1e-15)
    # progress alone (the share kept) loses nothing, however far accuracy rises
    assert ds.deficit([[0.95]], [[0.855]], {"acc": 0.3, "deploy": 0.27})[0] == pytest.approx([0.0])


def _per(S=9):
    """Three batches, listed out of order; clocks with censored seeds; shifts with nan where
    the seed was not damaged."""
    rng = np.random.default_rng(3)
    per = {}
    for b, scale in (("1024", 1.3), ("64", 1.0), ("256", 1.1)):
        dmg = (rng.uniform(5000, 20000, S) * scale).round()
        dmg[rng.permutation(S)[:3]] = 0  # three seeds never damaged
        shift = np.where(dmg > 0, rng.uniform(0.2, 0.8, S) * scale, np.nan)
        per[b] = {"progress": (rng.uniform(2000, 3000, S) * scale).round().tolist(),
                  "damage": dmg.tolist(), "null": rng.uniform(1000, 5000, S).round().tolist(),
                  "shift_at_damage": shift.tolist(), "deficit": (dmg / 2).tolist(),
                  "shift_at_deficit": (shift / 2).tolist(),
                  "shift_at_4096": (rng.normal(0, 0.3, S) * scale).tolist(),
                  "active_at_4096": rng.uniform(3000, 4096, S).tolist()}
    return per


def test_the_answers_against_hand_computations_and_a_plain_bootstrap():
    S = 9
    per = _per(S)
    st = {"seeds": S, "batches": [1024, 64, 256], "fixed_responses": [4096]}
    a = ds.answers(st, {"sqrt": {"per_seed": per}})["sqrt"]
    rows = boot_rows(S)
    finite = lambda v: [x for x in v if not math.isnan(x)]
    # 1: seeds reached, counted by hand
    for b in per:
        assert a.reached[b]["damage"] == sum(x > 0 for x in per[b]["damage"]) == 6
    # 3: the drift at damage is the median of the damaged seeds' shifts
    for b in per:
        assert a.drift_at["damage"][b]["median"] == pytest.approx(
            statistics.median(finite(per[b]["shift_at_damage"])), rel=1e-12)
    # 3: its ratio to B 64, paired: each resample takes the same seed rows at both batches
    x, y = per["1024"]["shift_at_damage"], per["64"]["shift_at_damage"]
    boot = []
    for r in rows:
        fx, fy = finite([x[i] for i in r]), finite([y[i] for i in r])
        boot.append(statistics.median(fx) / statistics.median(fy) if fx and fy else math.nan)
    assert not any(math.isnan(v) for v in boot)  # 6 of 9 damaged: no all-nan resample here
    got = a.drift_ratio["damage"]["1024"]
    assert got["median"] == pytest.approx(statistics.median(finite(x)) /
                                          statistics.median(finite(y)), rel=1e-12)
    assert got["ci"] == pytest.approx(list(lower_quantiles(boot)), rel=1e-12)
    # 4: the RMS slope on log B is np.polyfit's over the three batches, sorted or not
    bs = [64, 256, 1024]
    rms = lambda v: math.sqrt(sum(t * t for t in v) / len(v))
    slope = np.polyfit(np.log(bs), np.log([rms(per[str(b)]["shift_at_4096"]) for b in bs]), 1)[0]
    assert a.rms_slope["4096"]["median"] == pytest.approx(slope, rel=1e-10)
    boot = [np.polyfit(np.log(bs), np.log([rms([per[str(b)]["shift_at_4096"][i] for i in r])
                                           for b in bs]), 1)[0] for r in rows[:400]]
    lo, hi = a.rms_slope["4096"]["ci"]
    # the CI of 2000 resamples against 400 of the same rows: the same 2.5%..97.5% band
    assert lo <= np.quantile(boot, 0.10) and hi >= np.quantile(boot, 0.90)
    # 5: the margin is the ratio of the two medians in one cell, censored seeds as never
    m = a.margin["damage"]["256"]["median"]
    dm = statistics.median([v if v > 0 else math.inf for v in per["256"]["damage"]])
    assert m == pytest.approx(dm / statistics.median(per["256"]["progress"]), rel=1e-12)
    # 2: the share of seeds damaged, minus B 64's, is 0 here (6 of 9 at each batch)
    assert a.damaged_share_difference["damage"]["1024"]["median"] == 0.0
    # the deficit clock is half the damage clock here: its ratios are the damage clock's
    assert a.ratio["deficit"]["1024"] == a.ratio["damage"]["1024"]
    assert a.drift_ratio["deficit"]["256"]["median"] == pytest.approx(
        a.drift_ratio["damage"]["256"]["median"], rel=1e-12)


def test_a_batch_with_no_damaged_seed_has_no_drift_not_a_number():
    per = _per()
    per["1024"]["damage"] = [0.0] * 9
    per["1024"]["shift_at_damage"] = [math.nan] * 9
    per["1024"]["deficit"] = [0.0] * 9
    per["1024"]["shift_at_deficit"] = [math.nan] * 9
    a = ds.answers({"seeds": 9, "batches": [64, 256, 1024], "fixed_responses": [4096]},
                   {"sqrt": {"per_seed": per}})["sqrt"]
    assert a.drift_at["damage"]["1024"] == {"median": None, "ci": [None, None]}
    assert a.drift_ratio["damage"]["1024"]["median"] is None
    assert a.median["1024"]["damage"]["median"] is None  # censored, never NaN
    assert a.damaged_share_difference["damage"]["1024"]["median"] == pytest.approx(-6 / 9)
    json.dumps(a.json(), allow_nan=False)  # no NaN reaches the JSON


def test_the_answers_keep_their_json_keys_and_the_report_reads_them_back():
    """The typed answers write the keys the result files have always had, in their order, and
    the report reads a result as written to (and read back from) JSON."""
    S = 9
    st = {"seeds": S, "batches": [64, 256, 1024], "fixed_responses": [4096], "budget": 32768,
          "end_b": 0.5, "damage_drop": 0.03}
    a = ds.answers(st, {"sqrt": {"per_seed": _per(S)}})["sqrt"]
    assert list(a.json()) == [
        "1_reached", "1_median", "2_ratio", "2_exponent", "2_damaged_share_difference",
        "3_drift_at", "3_drift_ratio", "3_towards_end_b", "4_rms_slope", "4_rms",
        "4_mean_shift", "4_active_responses", "5_margin"]
    assert a.json()["2_ratio"] is a.ratio and ds.Answers.from_json(a.json()) == a
    out = json.loads(json.dumps({"study": st, "predictions": ds.PREDICTIONS, "seconds": 1.0,
                                 "answers": {"sqrt": a.json()}}))
    text = ds.report(out)
    # 6 of 9 seeds damaged at every batch (_per), and the deficit likewise
    assert "damage 6 " in text and "deficit 6 " in text and text.count("B ") >= 3
    assert f"1024: {a.ratio['damage']['1024']['median']:.3g} [" in text


def test_the_preregistered_file_is_what_the_study_reports_and_runs():
    """docs/preregistered/damage_predictions.json was committed before the study's runs: the
    predictions the report prints, and the default cells, must still be those."""
    with open(os.path.join(ROOT, "docs", "preregistered", "damage_predictions.json")) as f:
        pre = json.load(f)
    assert pre["predictions"] == json.loads(json.dumps(ds.PREDICTIONS))
    assert pre["config"] == json.loads(json.dumps(ds.Config().as_dict(CELL_LANES)))


def test_the_cells_are_the_deployment_regime_with_every_update_a_checkpoint():
    st = ds.Config(sweep=dataclasses.replace(ds.SWEEP, batches=(64, 1024), seeds=2, budget=4096),
                   fixed_responses=(4096,))
    base = PolicyConfig()
    (r1, cfg, opt, sweep), (r2, cfg2, opt2, sweep2) = ds.cells(st, base)
    assert (r1, r2) == ("sqrt", "fixed") and cfg == cfg2
    assert cfg.fail_stat == "damage" and cfg.damage_drop == st.damage_drop
    assert cfg.warmup.end_b == st.end_b and cfg.warmup.noise == base.warmup.noise
    assert sweep.n_ckpt == 4096 // 64  # one checkpoint per update of the longest run
    # the fixed rule starts where the sqrt rule does: lr0 sqrt(64 / b0) at every batch
    sqrt_lr = OptimConfig(lr_rule="sqrt").lr(st.lr0, 64)
    assert opt2.lr_rule == "fixed" and opt2.lr(sweep2.lr0s[0], 1024) == pytest.approx(sqrt_lr)
    assert opt.lr_rule == "sqrt" and sweep.lr0s == (st.lr0,)


def test_a_fixed_response_count_past_the_shortest_runs_end_is_refused_before_any_cell():
    """By hand: budget 8000 at batch 768 is 10 updates, 7680 responses (at 64: 125, 8000), so
    the shift read at 7681 would be the last checkpoint's (np.interp holds its end), read as
    later: refused, as the policy study refuses such an --early-samples (issue 55)."""
    from twoclock.models import MODELS
    sweep = dataclasses.replace(ds.SWEEP, batches=(64, 768), seeds=2, budget=8000)
    st = lambda r: ds.Config(sweep=sweep, fixed_responses=(64, r))
    st(7680).check(MODELS["policy"], PolicyConfig(), None)
    with pytest.raises(ValueError, match=r"^fixed_responses must be <= 7680, .*\(got \(64, "
                                         r"7681\)\)$"):
        st(7681).check(MODELS["policy"], PolicyConfig(), None)


@pytest.mark.parametrize("kw, name", [({"end_b": 1.0}, "end_b"), ({"rules": ("x",)}, "rules"),
                                      ({"fixed_responses": (99_999,)}, "fixed_responses"),
                                      ({"batches": (64,)}, "batches"), ({"seeds": 1}, "seeds"),
                                      ({"batches": (64, 0)}, "batch"), ({"lr0s": (0.0,)}, "lr0"),
                                      ({"damage_drop": 0.0}, "damage_drop")])
def test_bad_config_names_the_field(kw, name):
    kw = dict(kw)  # the sweep's values go to the nested SweepConfig, which checks them
    sweep = {k: kw.pop(k) for k in list(kw) if k in ("batches", "seeds", "lr0s")}
    with pytest.raises(ValueError, match=f"^{name} must be"):
        ds.Config(**kw, sweep=dataclasses.replace(ds.SWEEP, **sweep))


def test_the_figure_builds_headless_from_the_json_with_labelled_axes(tmp_path):
    from twoclock.figures import style
    from twoclock.figures.damage_study import damage_figure
    st = {"seeds": 9, "batches": [64, 256, 1024], "fixed_responses": [4096]}
    cells = {r: {"per_seed": _per()} for r in ("sqrt", "fixed")}
    out = json.loads(json.dumps({"study": st, "cells": cells}))  # as read back from the file
    fig = damage_figure(out)
    assert style.axes_labelled(fig)
    assert all(ax.get_xscale() == "log" for ax in fig.axes)
    # one point per harmed seed: 6 damaged and 6 in deficit, per batch and rule
    pts = sum(len(line.get_xdata()) for line in fig.axes[1].get_lines()
              if line.get_linestyle() == "None")
    assert pts == 2 * 3 * (6 + 6)
    paths = style.save(fig, str(tmp_path / "d"))
    assert all(os.path.getsize(p) > 1000 for p in paths)


def test_per_seed_reads_each_clock_and_the_shift_at_it_from_the_checkpoints():
    """A sweep result of two batches, two seeds, every update a checkpoint, built by hand."""
    import types
    st = ds.Config(sweep=dataclasses.replace(ds.SWEEP, batches=(64, 128), seeds=2, budget=256),
                   fixed_responses=(128,))
    s64, s128 = np.arange(1, 5) * 64.0, np.arange(1, 3) * 128.0
    ck = lambda s, acc, dep, shift: {"samples": np.array([[s, s]]),
                                     "heldout_acc": np.array([acc]), "deploy_acc": np.array([dep]),
                                     "deploy_peak": np.array([dep]), "null": np.array([shift]),
                                     "zero_adv_frac": np.array([[[0.0, 0.25, 0.5, 1.0][:len(s)],
                                                                 [0.5] * len(s)]])}
    start = {"acc": 0.5, "deploy": 0.45}  # END_A share 0.9
    res = types.SimpleNamespace(
        batches=(64, 128),
        prog_n=np.array([[[100.0, 0.0]], [[200.0, 150.0]]]),
        extra={"damage_n": np.array([[[96.0, 0.0]], [[0.0, 0.0]]]),
               "null_n": np.array([[[10.0, 20.0]], [[30.0, 40.0]]])},
        ckpt=[ck(s64, [[0.5, 0.6, 0.7, 0.8]] * 2, [[0.45, 0.52, 0.6, 0.72]] * 2,
                 [[0.1, 0.3, 0.5, 0.2], [0.0, 0.0, 0.0, 0.0]]),
              ck(s128, [[0.5, 0.9]] * 2, [[0.45, 0.81]] * 2, [[0.2, -0.4], [0.4, 0.8]])])
    per = ds.per_seed(st, res, start)
    # deficit at B 64: 0.9 acc - deploy = 0, 0.02, 0.03, 0 -> crosses 0.03 at the third update
    # (from 0.02 at 128 to 0.03 at 192: exactly at 192); at B 128 it stays 0
    assert per["64"]["deficit"] == pytest.approx([192.0, 192.0], rel=1e-12)
    assert per["128"]["deficit"] == [0.0, 0.0]
    assert per["64"]["shift_at_deficit"] == pytest.approx([0.5, 0.0])
    # the damage clock is the engine's; the shift at it read between 64 (0.1) and 128 (0.3)
    assert per["64"]["damage"] == [96.0, 0.0]
    assert per["64"]["shift_at_damage"][0] == pytest.approx(0.2)
    assert math.isnan(per["64"]["shift_at_damage"][1])
    assert per["128"]["shift_at_128"] == pytest.approx([0.2, 0.4])  # the first update's
    assert per["64"]["shift_at_128"] == pytest.approx([0.3, 0.0])
    assert per["128"]["progress"] == [200.0, 150.0] and per["64"]["null"] == [10.0, 20.0]
    assert per["64"]["final_deficit"] == pytest.approx([0.0, 0.0], abs=1e-12)
    # responses in groups with a nonzero advantage by 128: 64 + 0.75 * 64 (seed 0), 0.5 * 128
    assert per["64"]["active_at_128"] == pytest.approx([112.0, 64.0])
    assert per["128"]["active_at_128"] == pytest.approx([128.0, 64.0])
