"""The shapes study's estimators and theory (twoclock.studies.shapes.curves, .path) against
hand values, a NumPy reference written here and synthetic clocks with a known exponent."""
import importlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from twoclock.analysis.clocks import bootstrap_indices
from twoclock.cli import run_study
from twoclock.config import OptimConfig
from twoclock.models.quadratic import QuadraticConfig
from twoclock.studies import STUDIES
from twoclock.studies.shapes import curves, path

POS = st.floats(1.0, 1e5)


def test_simple_noise_scale_matches_a_hand_value():
    # h = (1, 1/2), c = (1, 1/2), E[x^2] = (1, 4): tr(Sigma) = 1.5, E|G|^2 = 1 + 1/4 * 4 = 2
    assert curves.simple_noise_scale([1.0, 0.5], [1.0, 0.5], [1.0, 4.0]) == pytest.approx(0.75)


def test_quadratic_path_at_the_start_is_the_noise_scale_of_the_start():
    """At a level the start already meets (loss / L0 <= 1) the path's point is update 0, where
    x = x0 = 1 exactly: B_simple = sum(c) / sum(h^2), c = sigma^2 h^gamma, h_i = i^-alpha
    (NumPy here, from the config's definition)."""
    cfg = QuadraticConfig(dim=16, alpha=1.0, sigma=2.0, gamma=1.0)
    h = np.arange(1, 17, dtype=float) ** -1.0
    c = 4.0 * h
    got, pieces = path.quadratic_path(cfg, OptimConfig(), 0.01, 8, 50, [1.0, 0.9])
    assert got[0]["update"] == 0
    assert got[0]["b_noise"] == pytest.approx(c.sum() / (h * h).sum(), rel=1e-12)
    # the path's first piece starts there too, and the noise scale grows as the loss falls
    assert pieces["b_noise"][0] == pytest.approx(c.sum() / (h * h).sum(), rel=1e-12)
    assert got[1]["update"] > 0 and got[1]["b_noise"] > got[0]["b_noise"]


def test_crossings_interpolate_between_checkpoints_from_the_start():
    s = np.array([[10.0, 20.0, 30.0], [10.0, 20.0, 30.0]])
    x = np.array([[0.9, 0.5, 0.2], [0.95, 0.9, 0.8]])
    got = curves.crossings(s, x, 0.7, 1.0)
    # seed 0: from 0.9 at 10 to 0.5 at 20, 0.7 is halfway: 15; seed 1 never: NEVER (0)
    assert got.tolist() == [15.0, 0.0]
    # between the start (1.0 at 0) and the first checkpoint (0.5 at 10): 0.8 at 4
    assert curves.crossings(s[:1], np.array([[0.5, 0.4, 0.3]]), 0.8, 1.0)[0] == pytest.approx(4)


@given(st.floats(0.1, 1.5), st.floats(1.0, 1e4))
@example(0.5, 1.0)
@example(1.0, 100.0)
def test_local_exponent_recovers_a_known_power_law(k, a):
    """N = a B^k at every seed: the exponent between every pair is k, its CI a point."""
    b = [8, 16, 32, 64]
    n = np.array([[a * bb ** k] * 6 for bb in b])
    for e in curves.local_exponents(b, n, bootstrap_indices(6)):
        assert e["median"] == pytest.approx(k, rel=1e-9)
        assert e["ci"][0] == pytest.approx(k, rel=1e-9) and e["ci"][1] == pytest.approx(k, rel=1e-9)


def test_local_exponent_ci_covers_a_noisy_power_law():
    """N = 100 B^0.6 x lognormal(0.05) noise over 64 seeds: each adjacent exponent's 95% CI
    holds 0.6 (the log-ratio of medians has sd about 1.25 x 0.05 sqrt(2 / 64) / log 2 = 0.016,
    so the CI is a few hundredths wide; a slope of 0.5 or 0.7 would fall outside it)."""
    rng = np.random.default_rng(3)
    b = [64, 128, 256, 512]
    n = np.array([100.0 * bb ** 0.6 * np.exp(0.05 * rng.standard_normal(64)) for bb in b])
    for e in curves.local_exponents(b, n, bootstrap_indices(64)):
        assert e["ci"][0] <= 0.6 <= e["ci"][1], e
        assert e["ci"][1] - e["ci"][0] < 0.1


def test_local_exponent_of_a_censored_median_is_none():
    n = np.array([[10.0] * 4, [0.0] * 4])  # every run at the second batch never crossed
    e = curves.local_exponents([8, 16], n, bootstrap_indices(4))[0]
    assert e["median"] is None


@given(POS)
def test_fixed_exponent_limits(bn):
    """1/2 where B << B_n (noise-dominated), 1 where B >> B_n (sign-like), 3/4 at B = B_n."""
    assert curves.fixed_exponent(bn * 1e-9, bn) == pytest.approx(0.5, abs=1e-8)
    assert curves.fixed_exponent(bn * 1e9, bn) == pytest.approx(1.0, abs=1e-8)
    assert curves.fixed_exponent(bn, bn) == pytest.approx(0.75)


@given(POS, POS)
@example(1.0, 1.0)
def test_the_secant_exponent_is_the_log_ratio_of_the_theory_and_tends_to_the_local(b, bn):
    n = lambda x: math.sqrt(x * (x + bn))  # N ∝ sqrt(B (B + B_n)), written out here
    assert curves.fixed_exponent_between(b, 2 * b, bn) == pytest.approx(
        math.log(n(2 * b) / n(b)) / math.log(2), rel=1e-9)
    assert curves.fixed_exponent_between(b, b * (1 + 1e-7), bn) == pytest.approx(
        curves.fixed_exponent(b, bn), rel=1e-5)


@given(st.floats(1.0, 1e3), st.floats(0.0, 1e4), st.floats(0.05, 1.0))
@example(8.0, 0.0, 0.2)
def test_sqrt_rule_critical_batch_slows_by_one_plus_delta(b_min, bn, delta):
    """N ∝ sqrt(B + B_n): at the critical batch N / N(B_min) = 1 + delta; with B_n = 0
    (sign-like everywhere) it is (1 + delta)^2 B_min."""
    bc = curves.sqrt_rule_critical(b_min, bn, delta)
    assert math.sqrt((bc + bn) / (b_min + bn)) == pytest.approx(1 + delta, rel=1e-9)
    if bn == 0.0:
        assert bc == pytest.approx((1 + delta) ** 2 * b_min)


@given(st.floats(1.0, 1e3), st.floats(1.0, 1e4))
def test_a_path_of_one_piece_is_the_point_theory(b_min, bn):
    """One piece (and any split of it into pieces of the same noise scale) gives the closed
    forms; an infinite noise scale (no signal) never slows under the sqrt rule."""
    for w, b in (([5.0], [bn]), ([1.0, 3.0], [bn, bn])):
        assert curves.path_critical(b_min, w, b) == pytest.approx(
            curves.sqrt_rule_critical(b_min, bn), rel=1e-6)
        assert curves.path_exponent(2 * b_min, 4 * b_min, b_min, w, b) == pytest.approx(
            curves.fixed_exponent_between(2 * b_min, 4 * b_min, bn), rel=1e-9)
    assert curves.path_slowdown(1e6, b_min, [1.0], [math.inf]) == pytest.approx(1.0)


def test_a_path_mixes_its_pieces_by_their_samples():
    """Two pieces of 1 and 3 samples at B_min = 1 with B_n = 0 and 8: at B = 3, the slowdowns
    sqrt(3 / 1) and sqrt(11 / 9), weighted 1 : 3 (hand computation)."""
    want = (1 * math.sqrt(3.0) + 3 * math.sqrt(11.0 / 9.0)) / 4
    assert curves.path_slowdown(3.0, 1.0, [1.0, 3.0], [0.0, 8.0]) == pytest.approx(want)


@given(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3), st.floats(1.0, 100.0))
def test_adam_coordinate_critical_of_one_coordinate_is_the_sqrt_rule_form(h, ex2, c):
    """One coordinate: its B_i = c / (h^2 E[x^2]) is the noise scale of the closed form."""
    bi = c / (h * h * ex2)
    assert curves.adam_coordinate_critical([h], [c], [ex2], 8.0) == pytest.approx(
        curves.sqrt_rule_critical(8.0, bi), rel=1e-6)


def test_levels_and_rise():
    assert curves.levels(1.0, 0.2, 4) == pytest.approx([0.8, 0.6, 0.4, 0.2])
    # B_crit = 100 e^(3 t): the rise per unit of target is 3; None with fewer than two values
    t = [0.1, 0.2, 0.4]
    assert curves.log_rise([100 * math.exp(3 * v) for v in t], t) == pytest.approx(3.0)
    assert curves.log_rise([None, 5.0, None], t) is None
    with pytest.raises(ValueError, match="levels"):
        curves.levels(1.0, 0.2, 0)


def _row(samples_at_b_min, reached, batch=None):
    return {"progress_frac": 0.5, "accuracy": None, "samples_at_b_min": samples_at_b_min,
            "critical_batch": batch, "critical_ci": [None, None], "critical_found": 0.0,
            "noise": {"b_noise": None, "b_adam_critical": None}, "theory_batch": None,
            "theory_path_batch": None, "reached_batches": reached}


def test_a_target_no_batch_reached_has_no_critical_batch_not_one_past_the_largest():
    """'B_crit > 32' claimed every batch up to 32 was no slower than B_min: where B_min itself
    never reached the target there is no critical batch at all."""
    report = importlib.import_module("twoclock.studies.shapes.report")  # (the module)
    p = {"start_accuracy": None, "batches": [8, 16, 32], "critical_rise_per_unit": None,
         "critical": [_row(None, []), _row(None, [16]), _row(120.0, [8, 16, 32])]}
    cells = [line[22:46].strip() for line in report.critical_table(p)[1:4]]
    assert cells == ["no batch reached", "B_min not reached", "> 32"]


@pytest.mark.slow
def test_a_budget_no_batch_reaches_says_so_end_to_end(tmp_path, capsys):
    """64 samples: the quadratic needs 339 at B 8 to reach loss/L0 0.525 (docs/shapes.md), so
    no batch reaches either target, and the printout says that (it said 'B_crit > 32')."""
    code = run_study.main(STUDIES.shapes, ["--models", "quadratic", "--seeds", "2",
                                           "--batches", "8", "16", "32", "--budget", "64",
                                           "--levels", "2", "--no-store", "--quiet",
                                           "--no-figure", "--out", str(tmp_path)], "shapes.py")
    assert code == 0
    rows = json.loads((tmp_path / "shapes.json").read_text())["panels"][0]["critical"]
    assert [r["reached_batches"] for r in rows] == [[], []]
    text = capsys.readouterr().out
    assert text.count("no batch reached") == 2 and "> 32" not in text


def test_the_report_names_no_internal_issue():
    from twoclock.studies.shapes import real_exponent
    report = importlib.import_module("twoclock.studies.shapes.report")
    out = {"panels": [], "real": {"critical_batch": {"0.4": 325},
                                  "fixed_exponent": real_exponent()}}
    text = report.report(out)
    assert "issue" not in text and text.startswith("real sweep (OLMo-2 1B, GRPO on math): "
                                                   "critical batch 40%: 325; "), text


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("args, name", [(["--levels", "1"], "levels"),
                                        (["--models", "quadratic", "--batches", "8", "16"],
                                         "batches"),
                                        (["--delta", "0"], "delta")])
def test_bad_input_is_refused_in_one_line_before_any_work(args, name):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "shapes.py"), *args,
                        "--no-figure", "--out", os.devnull + "_never"],
                       capture_output=True, text=True, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert name in lines[0] and "Traceback" not in p.stderr


@pytest.mark.parametrize("argv", [["--n-ckpt", "5"], ["--models", "quadratic", "--n-ckpt", "5"]])
def test_n_ckpt_is_refused_saying_why_and_not_offered(argv, capsys):
    """The study records a checkpoint at every update of the smallest batch (each target's
    crossing is interpolated between updates): --n-ckpt had been taken and then replaced
    unseen (with several models, refused as if it changed one model's grid)."""
    with pytest.raises(ValueError) as e:
        run_study.parse(STUDIES.shapes, argv, "shapes.py")
    assert str(e.value) == ("--n-ckpt is not offered by shapes: it records a checkpoint at "
                            "every update of the smallest batch, since each target's crossing "
                            "is read between updates; drop it")
    with pytest.raises(SystemExit):
        run_study.parse(STUDIES.shapes, argv[:-2] + ["--help"], "shapes.py")
    assert "--n-ckpt" not in capsys.readouterr().out


@pytest.mark.slow
def test_the_quadratic_panel_end_to_end(tmp_path):
    """A small quadratic run through the one command: the targets evenly spaced to the model's
    (0.05), every critical batch at least the smallest batch, the exponents in [0.3, 1.2]
    (Adam's two regimes, 1/2 and 1, with room for 4 seeds' noise), the theory inside its
    limits."""
    code = run_study.main(STUDIES.shapes, ["--models", "quadratic", "--seeds", "4",
                                           "--batches", "8", "16", "32", "--budget", "6000",
                                           "--levels", "3", "--no-store", "--quiet",
                                           "--no-figure", "--out", str(tmp_path)], "shapes.py")
    assert code == 0
    out = json.loads((tmp_path / "shapes.json").read_text())
    (p,) = out["panels"]
    assert [round(r["progress_frac"], 6) for r in p["critical"]] == [0.683333, 0.366667, 0.05]
    for r in p["critical"]:
        assert r["critical_batch"] is None or r["critical_batch"] >= 8
        assert 0.5 <= curves.fixed_exponent(8, r["noise"]["b_noise"]) <= 1.0
    for e in p["fixed"]["exponents"]:
        assert 0.3 <= e["median"] <= 1.2, e
        assert 0.5 <= e["theory_path"] <= 1.0 and 0.5 <= e["theory_at_target"] <= 1.0


def test_the_real_sweeps_exponent_is_read_from_the_stored_table(tmp_path):
    """The real sweep's fixed-lr exponent comes from its stored steps-to-target table: one-update
    runs only, crossings at the third evaluation or later only. Hand-made rows: at 0.5 the two
    runs cross at 40 and 20 evaluations' worth of steps (exponent log(8 * 500 / 1000) / log 8 =
    2/3); 0.6 has a 4-update run (left out) and a crossing at the second evaluation (left out)."""
    from twoclock.studies import shapes
    p = tmp_path / "steps.csv"
    p.write_text("run,batch,updates_per_batch,target,steps,source\n"
                 "a,1024,1,0.50,1000,x\nb,8192,1,0.50,500,x\n"
                 "c,8192,4,0.60,100,x\na,1024,1,0.60,50,x\nb,8192,1,0.60,400,x\n"
                 "a,1024,1,0.70,2000,x\nb,8192,1,0.70,,x\n")
    got = shapes.real_exponent(str(p))
    assert got["targets"] == {"0.50": round(math.log(4) / math.log(8), 3)}
    assert got["exponent"] == [0.667, 0.667] and got["range"] == [1024, 8192]
    # the stored sweep at 55%: 1 433 600 / 537 600 samples (steps_to_target.csv), by hand
    real = shapes.real_exponent()
    assert real["targets"]["0.55"] == round(math.log(1433600 / 537600) / math.log(8), 3) == 0.472
