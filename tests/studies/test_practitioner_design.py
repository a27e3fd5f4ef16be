"""The practitioner design of the planner's calibration (issue 50 item 6): the evaluation's
binomial noise, the logs it writes (every 25 updates, none at step 0), the scores and the
summary, on hand-made inputs (no simulation)."""
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from twoclock.pilot import bands
from twoclock.studies.planner import practitioner as pr


def test_accuracy_noise_is_binomial_on_n_items():
    """Mean and variance of 20 000 draws at acc 0.3: within 4 standard errors of 0.3 and
    0.3 x 0.7 / 1000 (the variance's SE from its fourth moment, ~ var sqrt(2 / draws))."""
    n = 20_000
    ck = {"heldout_acc": np.full((1, 1, n), 0.3)}
    v = pr.noisy(ck, "heldout_acc", 0, np.random.default_rng(1))
    var = 0.3 * 0.7 / pr.EVAL_ITEMS
    assert abs(v.mean() - 0.3) < 4 * math.sqrt(var / n)
    assert abs(v.var() - var) < 4 * var * math.sqrt(2 / n)
    assert np.allclose(v * pr.EVAL_ITEMS, np.round(v * pr.EVAL_ITEMS))  # k / n


def test_the_bandits_progress_frac_is_its_noisy_accuracy_rescaled():
    """progress_frac = (1 - acc) / err0 (err0 = 0.8 here): recomputed from the drawn acc it is
    (1 - acc') / 0.8 exactly, draw by draw."""
    acc = np.array([[[0.2, 0.5, 0.9]]])
    ck = {"heldout_acc": acc, "progress_frac": (1 - acc) / 0.8}
    got = pr.noisy(ck, "progress_frac", 0, np.random.default_rng(7))
    drawn = np.random.default_rng(7).binomial(pr.EVAL_ITEMS, acc[0, 0]) / pr.EVAL_ITEMS
    np.testing.assert_allclose(got, (1 - drawn) / 0.8, rtol=1e-12)


def test_the_log_has_an_evaluation_every_25_updates_and_none_at_step_0(tmp_path):
    b = 16
    upd = np.array([25, 50, 75, 81])  # the last: the run's end, between evaluations
    res = SimpleNamespace(ckpt=[{"samples": (upd * b)[None, None, :].astype(float),
                                 "heldout_acc": np.array([[[0.1, 0.2, 0.3, 0.31]]])}],
                          lrs_BxL=np.array([[1e-3]]))
    path = str(tmp_path / "d.csv")
    pr.write_design(path, {b: res}, (b,), 0, "heldout_acc", np.random.default_rng(0))
    with open(path) as f:
        rows = [ln.split(",") for ln in f.read().splitlines()[1:]]
    assert [int(r[3]) for r in rows] == [400, 800, 1200]


def test_the_shipped_sweep_example_is_a_practitioners_sweep():
    """twoclock/data/example_sweep_logs.csv (the README's second plan command) as its README
    says: one run at each of the policy model's three pilot batches, one lr for all (a fixed
    lr), an evaluation every 25 updates from update 25 on (none at step 0), each an accuracy
    on 1000 items (a whole number of items)."""
    import csv
    import os
    from twoclock.models import get
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), "twoclock", "data", "example_sweep_logs.csv")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["run", "batch", "lr", "samples", "heldout_acc"]
    pilots = pr.batches(get("policy"))[0]
    assert sorted({int(r["batch"]) for r in rows}) == list(pilots)
    assert {r["run"] for r in rows} == {f"B{b}" for b in pilots}  # one run a batch
    assert {float(r["lr"]) for r in rows} == {1e-4}
    for b in pilots:
        smp = [int(r["samples"]) for r in rows if int(r["batch"]) == b]
        assert smp == [pr.EVAL_EVERY * b * (i + 1) for i in range(len(smp))], b
        assert len(smp) >= 5, b
    k = np.array([float(r["heldout_acc"]) for r in rows]) * pr.EVAL_ITEMS
    assert np.allclose(k, np.round(k)) and (k >= 0).all() and (k <= pr.EVAL_ITEMS).all()


def test_an_evaluation_every_5_updates_keeps_those_rows_and_not_the_runs_end(tmp_path):
    # the same run checkpointed every 5 updates (--eval-every 5): by hand, updates 5, 10, 15
    # at B 16 are 80, 160, 240 samples; the run's end at 17 updates lies between evaluations
    b = 16
    upd = np.array([5, 10, 15, 17])
    res = SimpleNamespace(ckpt=[{"samples": (upd * b)[None, None, :].astype(float),
                                 "heldout_acc": np.array([[[0.1, 0.2, 0.3, 0.31]]])}],
                          lrs_BxL=np.array([[1e-3]]))
    path = str(tmp_path / "d.csv")
    pr.write_design(path, {b: res}, (b,), 0, "heldout_acc", np.random.default_rng(0), every=5)
    with open(path) as f:
        rows = [ln.split(",") for ln in f.read().splitlines()[1:]]
    assert [int(r[3]) for r in rows] == [80, 160, 240]
    # at the design's 25 the same checkpoints give nothing: none is a multiple of 25 updates
    pr.write_design(path, {b: res}, (b,), 0, "heldout_acc", np.random.default_rng(0))
    with open(path) as f:
        assert f.read().splitlines()[1:] == []


def test_the_evaluation_grid_is_the_practitioner_designs_knob():
    from twoclock.studies.plan_calibration import Config
    assert Config(design="practitioner", eval_every=5).eval_every == 5
    assert Config().eval_every == pr.EVAL_EVERY == 25
    with pytest.raises(ValueError, match="--eval-every must be an integer >= 1"):
        Config(design="practitioner", eval_every=0)
    with pytest.raises(ValueError, match="--eval-every must be given with --design "
                                         "practitioner"):
        Config(eval_every=5)
    # a run of 1000 samples at B 64 (15 updates) evaluated every 5: 15 updates, 3 evaluations
    assert pr.evaluation_grid(1000, 64, 5) == (15 * 64, 3)


def test_scores_and_summary_by_hand():
    s = bands.score({"median": 120.0, "ci": [60.0, 300.0]}, 100.0)
    assert s["rel_error"] == pytest.approx(0.2) and s["covered"]
    assert s["width"] == pytest.approx(2.5)  # max(120 / 60, 300 / 120)
    assert not bands.score({"median": 120.0, "ci": [110.0, 130.0]}, 100.0)["covered"]
    rows = [{"model": "m", "rule": r, "times_largest_pilot": t, "measured": 1.0,
             "refused": None, "rel_error": e, "covered": c, "width": w}
            for r, t, e, c, w in (("fixed", 2, 0.1, True, 1.5), ("fixed", 8, -0.3, True, 3.0),
                                  ("sqrt", 2, 0.2, False, 2.5), ("sqrt", 8, 0.5, True, 4.0))]
    rows.append({"model": "m", "rule": "sqrt", "times_largest_pilot": 8, "measured": 1.0,
                 "refused": "--progress: ...", "seed": 3})
    both = next(x for x in pr.summary(rows) if x["rule"] == "both" and x["model"] == "m")
    assert (both["predictions"], both["scored"], both["refused"]) == (5, 4, 1)
    assert both["median_abs_error_2x"] == pytest.approx(0.15)  # of 0.1, 0.2
    assert both["median_abs_error_8x"] == pytest.approx(0.4)  # of 0.3, 0.5
    assert both["coverage_95"] == pytest.approx(0.75)
    assert both["median_width"] == pytest.approx(2.75)  # of 1.5, 2.5, 3, 4
    assert both["wider_than_2x"] == pytest.approx(0.75)
    # a held-out batch whose runs never reached the target, planned (rel_error None): not
    # scored, and a miss when counted: 3 covered of 4 scored + 1 = 0.6; a refused one is not
    assert both["coverage_95_never_as_miss"] == pytest.approx(0.75)  # none yet: as coverage_95
    never = {"model": "m", "rule": "fixed", "times_largest_pilot": 8, "measured": None,
             "refused": None, "rel_error": None, "covered": None, "width": None,
             "ci": [50.0, 400.0]}
    both = next(x for x in pr.summary(rows + [never])
                if x["rule"] == "both" and x["model"] == "m")
    assert (both["scored"], both["unanswered"]) == (4, 1)
    assert both["coverage_95"] == pytest.approx(0.75)
    assert both["coverage_95_never_as_miss"] == pytest.approx(0.6)
    # a band open above holds an infinite clock: 4 of 6
    opened = dict(never, ci=[50.0, None])
    both = next(x for x in pr.summary(rows + [never, opened])
                if x["rule"] == "both" and x["model"] == "m")
    assert both["coverage_95_never_as_miss"] == pytest.approx(4 / 6)
    # the printout says it under the table, per row that has such predictions, and only there
    out = {"design": "practitioner", "eval_items": 1000, "eval_every_updates": 25, "seeds": 2,
           "heldout_seeds": 2, "summary": pr.summary(rows + [never]), "simulations": {},
           "rows": rows + [never]}
    said = [line for line in pr.table(out).splitlines() if "never reached" in line]
    # by hand: fixed 2 covered of 2 scored + 1 = 66.7%; both and all 3 of 4 + 1 = 60.0%
    assert said == [f"{m}, {r}: 1 prediction at held-out batches whose runs never reached the "
                    f"target; counted as misses, 95% coverage {c}" for m, r, c in
                    (("m", "fixed", "66.7%"), ("m", "both", "60.0%"), ("all", "both", "60.0%"))]


def test_the_goal_per_model_by_hand():
    """Issue 50's goal on a summary row: each criterion alone fails it, in words; a row that
    meets every one is 'met' in the printout."""
    ok = {"model": "m", "rule": "both", "median_abs_error_2x": 0.10, "median_abs_error_8x":
          0.15, "coverage_95": 0.90, "coverage_95_never_as_miss": 0.90, "scored": 40,
          "median_width": 2.0}  # every criterion at its boundary: met
    assert pr.missed(ok) == []
    for change, said, key in (
            (dict(median_abs_error_8x=0.217), "|err| 8x 21.7% > 15%", "8x"),
            (dict(median_abs_error_2x=0.151), "|err| 2x 15.1% > 15%", "2x"),
            (dict(coverage_95=0.899, coverage_95_never_as_miss=0.899), "coverage 89.9% < 90%",
             "coverage"),
            (dict(coverage_95_never_as_miss=0.87),
             "coverage counting never-reached as misses 87.0% < 90%", "never"),
            (dict(scored=39), "39 scored < 40", "scored"),
            (dict(median_width=2.01), "median width x2.01 > x2", "width")):
        assert pr.missed({**ok, **change}) == [said], change
        assert pr.misses({**ok, **change}) == [(key, said)], change
    assert pr.missed({**ok, "median_abs_error_8x": None}) == []  # nothing at 8x: not judged
    out = {"design": "practitioner", "eval_items": 1000, "eval_every_updates": 25, "seeds": 2,
           "heldout_seeds": 2, "simulations": {}, "rows": [],
           "summary": [{**ok, "predictions": 40, "refused": 0, "unanswered": 0,
                        "wider_than_2x": 0.5, "goal_missed": []},
                       {**ok, "model": "b", "predictions": 40, "refused": 0, "unanswered": 0,
                        "wider_than_2x": 0.5, "goal_missed": ["|err| 8x 21.7% > 15%"]}]}
    assert [line for line in pr.table(out).splitlines() if line.startswith("goal")] == [
        "goal, m: met", "goal, b: |err| 8x 21.7% > 15%"]


def test_the_study_takes_the_design():
    from twoclock.studies.plan_calibration import Config, table
    assert Config(design="practitioner").design == "practitioner"
    out = {"design": "practitioner", "eval_items": 1000, "eval_every_updates": 25, "seeds": 2,
           "heldout_seeds": 2, "summary": pr.summary([]), "simulations": {}, "rows": []}
    assert table(out).startswith("planner calibration, practitioner design")


@pytest.mark.parametrize("flag", ["designs", "answer_seeds"])
def test_design_counts_are_refused_below_one(flag):
    from twoclock.studies.plan_calibration import Config
    with pytest.raises(ValueError, match=f"--{flag.replace('_', '-')}"):
        Config(design="practitioner", **{flag: 0})


def test_the_progress_form_is_for_the_practitioner_design_only():
    from twoclock.studies.plan_calibration import Config, table
    assert Config(design="practitioner", progress_form="adam").progress_form == "adam"
    with pytest.raises(ValueError, match="--progress-form must be given with --design "
                                         "practitioner"):
        Config(progress_form="adam")
    out = {"design": "practitioner", "eval_items": 1000, "eval_every_updates": 25, "seeds": 2,
           "heldout_seeds": 2, "summary": pr.summary([]), "simulations": {}, "rows": [],
           "progress_form": "adam"}
    assert table(out).splitlines()[0].endswith("; progress form adam")


def _row(seed, times, err, model="m", rule="sqrt"):
    return {"model": model, "rule": rule, "seed": seed, "times_largest_pilot": times,
            "rel_error": err}


def test_the_paired_contrast_by_hand():
    """Two designs, each at 2x and 8x. Base errors +10%, -20% (seed 0), +50%, 0 (seed 1);
    other: 0, -20%, +10%, -10% . By hand, d = |log(1 + other)| - |log(1 + base)|:
    seed 0: 0 - log 1.1 = -0.09531, 0; seed 1: log 1.1 - log 1.5 = -0.31015, |log 0.9| = 0.10536.
    A design scored in only one run (seed 2) is left out; a refused row (None) too."""
    base = [_row(0, 2, 0.1), _row(0, 8, -0.2), _row(1, 2, 0.5), _row(1, 8, 0.0),
            _row(2, 2, 0.3), _row(3, 2, None)]
    other = [_row(0, 2, 0.0), _row(0, 8, -0.2), _row(1, 2, 0.1), _row(1, 8, -0.1),
             _row(3, 2, 0.2)]
    got = {(r["model"], r["times_largest_pilot"]): r for r in pr.contrast(base, other)}
    d = [-math.log(1.1), 0.0, math.log(1.1) - math.log(1.5), -math.log(0.9)]
    assert got[("m", 2)]["mean_diff"] == pytest.approx((d[0] + d[2]) / 2, abs=1e-12)
    assert got[("m", 8)]["mean_diff"] == pytest.approx((d[1] + d[3]) / 2, abs=1e-12)
    every = got[("all", None)]
    assert every["mean_diff"] == pytest.approx(sum(d) / 4, abs=1e-12)
    assert (every["designs"], every["pairs"]) == (2, 4)
    # the bootstrap resamples whole designs: its CI spans the two designs' own means
    lo, hi = every["ci"]
    assert lo == pytest.approx((d[2] + d[3]) / 2, abs=1e-12) and \
        hi == pytest.approx((d[0] + d[1]) / 2, abs=1e-12)
    assert "adam - default" in pr.contrast_table(pr.contrast(base, other), "default", "adam")


@pytest.mark.parametrize("budget, batch, want", [
    (16384, 64, (275 * 64, 11)),   # 256 updates -> 275
    (16384, 32, (525 * 32, 21)),   # 512 updates -> 525
    (12800, 64, (12800, 8)),       # 200 updates: already a whole number of evaluations
    (1000, 64, (50 * 64, 2)),      # 15 updates: at least two evaluations
])
def test_a_practitioners_run_is_evaluated_every_25_updates_whatever_its_length(budget, batch,
                                                                             want):
    """By hand: budget // batch updates rounded up to a multiple of 25 (256 -> 275, 512 -> 525,
    200 stays, 15 -> 50, two evaluations at least), and the engine's own spacing for that many
    updates and checkpoints (trace.checkpoint_every) is then exactly 25. The policy model's B 64
    (256 updates) was refused before: no checkpoint count spaces 256 updates 25 apart."""
    from twoclock.trace import checkpoint_every
    got = pr.evaluation_grid(budget, batch, pr.EVAL_EVERY)
    assert got == want
    assert checkpoint_every(got[0] // batch, got[1]) == 25
    assert all(checkpoint_every(256, k) != 25 for k in range(1, 257))


@pytest.mark.parametrize("rule,batch,want", [
    # by hand: 16 384 x (1024 / 128)^1 = 131 072 (fixed), x 8^(1/2) = 46 340.95 rounded up to
    # whole updates of 1024: 46 080 is 45 updates, too few, so 46 updates = 47 104
    ("fixed", 1024, 131_072), ("sqrt", 1024, 47_104),
    # 2x: 32 768 (fixed), 16 384 x sqrt 2 = 23 170.5 -> 91 updates of 256 = 23 296 (sqrt)
    ("fixed", 256, 32_768), ("sqrt", 256, 23_296),
    ("fixed", 128, 16_384), ("sqrt", 64, 16_384)])  # at or below the largest pilot: the budget
def test_a_heldout_run_gets_the_budget_times_the_theorys_largest_growth(rule, batch, want):
    assert pr.heldout_budget(16_384, batch, 128, rule) == want


def test_compare_forms_is_refused_off_the_practitioner_design_and_with_a_form():
    from twoclock.studies.plan_calibration import Config
    assert Config(design="practitioner", compare_forms=True).compare_forms
    for bad in ({}, {"design": "practitioner", "progress_form": "adam"}):
        with pytest.raises(ValueError, match="^--compare-forms must be given with --design "
                                             "practitioner and no --progress-form"):
            Config(compare_forms=True, **bad)


def test_a_second_plan_refused_is_not_scored_with_the_first_plans_score():
    """as_rows keeps a row's design and answer and takes the score from the second plan only:
    a second plan refused where the first scored is refused, not scored with the first's
    error (which merging the two records would keep)."""
    base = {"model": "m", "rule": "sqrt", "seed": 0, "pilots": [1, 2, 4], "batch": 8,
            "times_largest_pilot": 2, "measured": 100.0, "refused": None, "predicted": 110.0,
            "ci": [90.0, 130.0], "rel_error": 0.1, "covered": True, "width": 1.2, "why": None,
            "form": "saturation"}
    ok = dict(base, seed=1, adam={"refused": None, **bands.score(
        {"median": 80.0, "ci": [40.0, 160.0]}, 100.0), "form": "adam"})
    no = dict(base, adam={"refused": "--progress ...: crossed at 2 pilot batches"})
    got = pr.as_rows([ok, no], "adam")
    assert got[0]["rel_error"] == pytest.approx(-0.2) and got[0]["width"] == pytest.approx(2.0)
    assert got[1]["refused"].startswith("--progress") and "rel_error" not in got[1]
    both = next(s for s in pr.summary(got) if s["model"] == "m" and s["rule"] == "both")
    assert (both["predictions"], both["scored"], both["refused"]) == (2, 1, 1)
    assert both["median_abs_error_2x"] == pytest.approx(0.2)  # the second plan's, not 0.1


def test_the_two_form_table_by_hand():
    """forms_table: one markdown row per summary row, each cell "default, adam" (a dash where
    a summary has no value, the scored count once where both scored the same)."""
    s = lambda **k: {"model": "m", "rule": "fixed", "scored": 4, "median_abs_error_2x": 0.05,
                     "median_abs_error_8x": None, "coverage_95": 0.75,
                     "coverage_95_never_as_miss": 0.5, "median_width": 2.5,
                     "wider_than_2x": 0.25, **k}
    got = pr.forms_table([s(), s(rule="sqrt")], [s(median_abs_error_2x=0.125, median_width=1.5),
                                                 s(rule="sqrt", scored=3)])
    lines = got.splitlines()
    assert lines[0].startswith("| model | rule | scored | abs. error 2x: default, adam | 8x: ")
    assert lines[1] == "|---" * 9 + "|"
    assert lines[2] == ("| m | fixed | 4 | 5.0%, 12.5% | -, - | 75.0%, 75.0% | 50.0%, 50.0% | "
                        "x2.50, x1.50 | 25.0%, 25.0% |")
    assert lines[3].startswith("| m | sqrt | 4, 3 | 5.0%, 5.0% |")
    # with the whole curve's knee: three values a cell, the scored count once where all agree
    three = pr.forms_table([s()], [s(scored=4)], [s(median_width=1.25)]).splitlines()
    assert three[0].startswith("| model | rule | scored | abs. error 2x: default, adam, knee |")
    assert three[2].endswith("| x2.50, x2.50, x1.25 | 25.0%, 25.0%, 25.0% |")
    assert three[2].startswith("| m | fixed | 4 | 5.0%, 5.0%, 5.0% |")


def test_compare_forms_scores_the_adam_plan_of_the_very_log_the_study_wrote(tmp_path):
    """The quadratic model, two designs: each row's "adam" record is the score of the Adam
    form's plan of the CSV the study wrote (planned here again, apart from the study), against
    the same answer; the row's own score is the default form's plan of it."""
    from twoclock import OptimConfig, QuadraticConfig
    from twoclock.models import MODELS
    from twoclock.pilot import logs as pl
    from twoclock.studies.planner import logs_check
    model, cfg = MODELS["quadratic"], QuadraticConfig()
    rows, _, _ = pr.model_rows(model, cfg, OptimConfig(name="adam"), str(tmp_path), seeds=2,
                               heldout_seeds=2, compare=True)
    progress = logs_check.conditions(model, cfg)[0]
    assert len(rows) == 2 * 2 * 2  # rules x designs x held-out batches
    for r in rows:
        path = tmp_path / f"plan_calibration_practitioner_quadratic_{r['rule']}_s{r['seed']}.csv"
        for form, got in ((None, r), ("adam", r["adam"])):
            plan = pl.plan_logs(str(path), progress, [], predict=[r["batch"]],
                                progress_form=form)
            band = plan["predictions"][0]["progress_samples"]
            assert got["predicted"] == pytest.approx(band["median"], rel=1e-12), (r, form)
            assert got["rel_error"] == pytest.approx(band["median"] / r["measured"] - 1)
        assert r["adam"]["form"] == "adam" and r["form"] != "adam"
    # the whole curve's knee: the plan.py command a user would type on the same CSV, the
    # levels 0.15 and 0.3 of the way back to the runs' median first value, --fit-knee
    import csv
    from twoclock.cli.plan import main
    target = progress.split("<=")
    for r in rows:
        path = tmp_path / f"plan_calibration_practitioner_quadratic_{r['rule']}_s{r['seed']}.csv"
        with open(path, newline="") as f:
            first = {}
            for row in csv.DictReader(f):
                first.setdefault(row["run"], float(row["progress_frac"]))
        v0, t = float(np.median(list(first.values()))), float(target[1])
        texts = " ".join([progress] + [f"progress_frac<={t + k * (v0 - t):.6g}"
                                       for k in (0.15, 0.3)])
        out = tmp_path / f"knee_{r['rule']}_{r['seed']}_{r['batch']}"
        assert main(["--logs", str(path), "--progress", texts, "--fit-knee", "--progress-form",
                     "adam", "--predict", str(r["batch"]), "--no-figure", "--quiet",
                     "--out", str(out)]) == 0
        doc = json.loads((out / "plan.json").read_text())
        band = doc["targets"][0]["predictions"][0]["progress_samples"]
        assert r["knee"]["predicted"] == pytest.approx(band["median"], rel=1e-12), r
        assert r["knee"]["ci"] == pytest.approx(band["ci"], rel=1e-12), r


@pytest.mark.parametrize("study,reading,flags", [
    ({"smoothing": "quad:5"}, {"smoothing": "quad:5"}, ["--smooth", "quad:5"]),
    ({"eval_noise": True}, {"eval_items": pr.EVAL_ITEMS}, ["--eval-items", str(pr.EVAL_ITEMS)])],
    ids=["smooth", "eval_noise"])
def test_with_a_reading_option_every_plan_of_the_study_is_the_commands_with_it(
        tmp_path, study, reading, flags):
    """The quadratic model, two designs, `--smooth quad:5` or `--eval-noise`: each row's
    default, Adam and knee records are what plan.py with the same option makes of the CSV the
    study wrote (planned here again, apart from the study), and the option moves at least one
    of them (else this would pass a study that dropped it)."""
    import csv
    from twoclock import OptimConfig, QuadraticConfig
    from twoclock.cli.plan import main
    from twoclock.models import MODELS
    from twoclock.pilot import logs as pl
    from twoclock.studies.planner import logs_check
    model, cfg = MODELS["quadratic"], QuadraticConfig()
    rows, _, _ = pr.model_rows(model, cfg, OptimConfig(name="adam"), str(tmp_path), seeds=2,
                               heldout_seeds=2, compare=True, **study)
    progress = logs_check.conditions(model, cfg)[0]
    t = float(progress.split("<=")[1])
    moved = 0
    band = lambda x: [x["predicted"], *x["ci"]]
    for r in rows:
        path = tmp_path / f"plan_calibration_practitioner_quadratic_{r['rule']}_s{r['seed']}.csv"
        for form, got in ((None, r), ("adam", r["adam"])):
            want = {}
            for key, how in (("with", reading), ("without", {})):
                plan = pl.plan_logs(str(path), progress, [], predict=[r["batch"]],
                                    progress_form=form, **how)
                ps = plan["predictions"][0]["progress_samples"]
                want[key] = [ps["median"], *ps["ci"]]
            assert band(got) == pytest.approx(want["with"], rel=1e-12), (r, form)
            moved += want["with"] != pytest.approx(want["without"], rel=1e-6)
        with open(path, newline="") as f:
            first = {}
            for row in csv.DictReader(f):
                first.setdefault(row["run"], float(row["progress_frac"]))
        v0 = float(np.median(list(first.values())))
        texts = " ".join([progress] + [f"progress_frac<={t + k * (v0 - t):.6g}"
                                       for k in (0.15, 0.3)])
        out = tmp_path / f"knee_{r['rule']}_{r['seed']}_{r['batch']}"
        assert main(["--logs", str(path), "--progress", texts, "--fit-knee", "--progress-form",
                     "adam", *flags, "--predict", str(r["batch"]), "--no-figure",
                     "--quiet", "--out", str(out)]) == 0
        doc = json.loads((out / "plan.json").read_text())
        ps = doc["targets"][0]["predictions"][0]["progress_samples"]
        assert band(r["knee"]) == pytest.approx([ps["median"], *ps["ci"]], rel=1e-12), r
    assert moved > 0


def test_eval_noise_is_for_the_practitioner_design():
    from twoclock.studies.plan_calibration import Config
    assert Config(design="practitioner", eval_noise=True).eval_noise
    with pytest.raises(ValueError, match="--eval-noise must be given with --design "
                                         "practitioner"):
        Config(eval_noise=True)


def test_auto_is_the_default_forms_plan_where_the_log_turns_back_and_else_the_knee(tmp_path):
    """The bandit model, two designs a rule: each row's "auto" record is the row's own
    (default forms) score where the design's CSV turns back by the erosion test run here on
    the file, and its knee record otherwise; both branches are met (measured: the bandit's
    sqrt-rule pilots turn back, z 7.2 to 14.4 over 32 designs, its fixed-lr ones do not)."""
    from twoclock import BanditConfig, OptimConfig
    from twoclock.models import MODELS
    from twoclock.pilot import erosion
    from twoclock.pilot.reader import read_logs
    model = MODELS["bandit"]
    rows, _, _ = pr.model_rows(model, BanditConfig(), OptimConfig(name="adam"), str(tmp_path),
                               seeds=2, heldout_seeds=2, compare=True)
    keys = ("predicted", "ci", "rel_error", "covered", "width", "refused")
    back = set()
    for r in rows:
        path = tmp_path / f"plan_calibration_practitioner_bandit_{r['rule']}_s{r['seed']}.csv"
        logs = read_logs(str(path), ("progress_frac",), None)
        turns = erosion.test(logs.runs, "progress_frac", "<=").turns_back
        assert r["turns_back"] is turns
        want = r if turns else r["knee"]
        assert {k: r["auto"].get(k) for k in keys} == {k: want.get(k) for k in keys}, r
        back.add((r["rule"], turns))
    assert back == {("fixed", False), ("sqrt", True)}


def test_the_design_seed_is_for_the_practitioner_design_and_at_least_zero():
    from twoclock.studies.plan_calibration import Config
    assert Config(design="practitioner", design_seed=2).design_seed == 2
    with pytest.raises(ValueError, match="^--design-seed must be an integer >= 0"):
        Config(design="practitioner", design_seed=-1)
    with pytest.raises(ValueError, match="^--design-seed must be given with --design "
                                         "practitioner"):
        Config(design_seed=2)


def test_another_design_seed_draws_other_runs_and_the_same_seed_the_same():
    from twoclock import OptimConfig, QuadraticConfig
    from twoclock.models import MODELS
    run = lambda seed: np.asarray(pr.simulate(
        MODELS["quadratic"], QuadraticConfig(), OptimConfig(name="adam"), 8, 0.01, 2, 2000,
        every=25, seed=seed).ckpt[0]["progress_frac"], np.float64)
    a, b, c = run(0), run(0), run(1)
    assert np.array_equal(a, b) and not np.any(np.isclose(a, c, rtol=0, atol=1e-12))


def test_the_median_errors_ci_by_exact_enumeration():
    """Two designs at 8x with |errors| 0.1 and 0.3: a bootstrap draw of two is (0.1, 0.1),
    (0.3, 0.3) each with probability 1/4, else a median of 0.2, so the 2.5th and 97.5th
    percentiles of 2000 draws are 0.1 and 0.3 (each end has about 500 draws, far above 50),
    and of the signed errors 0.1 and -0.3, -0.3 and 0.1; one design has no CI; the goal's line
    carries the CI where the summary has one."""
    rows = [{"model": "m", "rule": "sqrt", "seed": i, "times_largest_pilot": t,
             "measured": 1.0, "refused": None, "rel_error": e, "covered": True, "width": 1.5}
            for i, (t, e) in enumerate(((8, 0.1), (8, -0.3), (2, 0.05)))]
    assert pr.median_ci(rows, 8) == pytest.approx([0.1, 0.3])
    # signed, the same draws of (0.1, -0.3): the ends are -0.3 and 0.1
    assert pr.median_ci(rows, 8, signed=True) == pytest.approx([-0.3, 0.1])
    assert pr.median_ci(rows, 2) is None
    both = next(s for s in pr.summary(rows) if s["rule"] == "both" and s["model"] == "m")
    assert both["median_abs_error_8x_ci"] == pytest.approx([0.1, 0.3])
    assert "|err| 8x 20.0% [95% CI 10.0%, 30.0%] > 15%" in both["goal_missed"]
