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
        assert [p["batch"] for p in row["predictions"]] == [512.0, 2048.0]
        for p in row["predictions"]:  # the formula at 8x and 32x the largest pilot
            want = by_hand(p["batch"], 0.01, A_L[l], bn)
            got = p["progress_samples"]
            assert abs(got["median"] / want - 1) < 0.01, (l, p["batch"])
            assert got["ci"][0] < want < got["ci"][1]


def test_the_joint_critical_batch_band_holds_each_levels_own_and_is_pinned_by_its_pilots():
    """Clocks by the formula (B_n 24.26, 40, 65.95 by hand) at pilots 8 to 64, which straddle
    every knee: each level's band of 0.44 B_n holds 0.44 x its own B_n (another level's is
    outside: 0.44 x 24.26 = 10.7 against 0.44 x 65.95 = 29.0), with both ends finite."""
    out = levels.joint_plan(["acc>=0.45", "acc>=0.5", "acc>=0.55"], _plans(),
                            predict=[128.0])
    for l, row in enumerate(out["targets"]):
        lo, hi = row["critical_batch_ci"]
        want = 0.44 * math.exp(C0 + C1 * X[l])
        assert lo is not None and hi is not None and lo < want < hi, (l, lo, want, hi)
        assert hi / lo < 1.5, (l, lo, hi)


def test_a_knee_beyond_every_pilot_leaves_the_critical_batch_open_and_the_wide_band_says_so():
    """B_n = 1e5 at every level (by hand, far above pilots 8 to 64: their clocks grow as
    sqrt(B), where under a 5% scatter no upper end of B_n can be read): the band's high end is
    open, and at 64x the largest pilot the joint band is wider than x2 either side and its
    line says why, with the width as computed here from the band; at 2x, where the band is
    narrower, no line."""
    plans = _plans()
    for l, p in enumerate(plans):
        for i, r in enumerate(p["runs"]):
            r["progress_samples"] = float(by_hand(r["batch"], r["lr"], A_L[l], 1e5)
                                          * math.exp(0.05 * (-1) ** i))
    texts = ["acc>=0.45", "acc>=0.5", "acc>=0.55"]
    out = levels.joint_plan(texts, plans, predict=[128.0, 4096.0])
    for row in out["targets"]:
        assert row["critical_batch_ci"][1] is None
        near, far = row["predictions"]
        for p in (near, far):
            med, (lo, hi) = p["progress_samples"]["median"], p["progress_samples"]["ci"]
            w = math.inf if lo is None or hi is None else max(med / lo, hi / med)
            assert p["band_width"] == (None if math.isinf(w) else pytest.approx(w, rel=1e-12))
            assert (p["band_why"] is None) == (w <= 2.0), (p["batch"], w)
        assert far["band_why"].startswith(f"band at B 4096 for {row['condition']} is ")
        assert "critical batch is not pinned" in far["band_why"]
    text = levels.table(out)
    assert all(("  " + r["predictions"][1]["band_why"]) in text.splitlines()
               for r in out["targets"])


def test_the_joint_rows_pilots_are_read_against_the_joint_fits_curve():
    """The pilots' per-batch clocks that `bands.why` reads are given the joint fit's clock
    (the formula at the batch's first run's lr) as their fitted one, not the target's own
    plan's (here a wrong 1.0). _plans gives every third run from the first 3x the lr: runs 0,
    3 and 6, so the first runs of B 8, 16, 32, 64 (runs 0, 2, 4, 6) run at 0.03, 0.01, 0.01,
    0.03."""
    plans = _plans()
    for p in plans:
        p["estimates"] = [{"batch": float(b), "progress": 1.0, "progress_fit": 1.0}
                          for b in BATCHES]
    texts = ["acc>=0.45", "acc>=0.5", "acc>=0.55"]
    conds = [levels.parse_condition(t, "--progress") for t in texts]
    vals = np.array([c.threshold for c in conds])
    for l, p in enumerate(plans):
        m = np.array([r["batch"] for r in p["runs"]])
        fit = levels.JointFit(m, np.array([r["lr"] for r in p["runs"]]),
                              np.log([r["progress_samples"] for r in p["runs"]]),
                              np.zeros(m.size, int), np.array([vals[l] - vals.mean()]))
        est, pilots = levels._joint_estimates(fit, 0, p, 0.95)
        assert pilots == set(BATCHES.tolist())
        want = by_hand(BATCHES, np.array([0.03, 0.01, 0.01, 0.03]), A_L[l],
                       math.exp(C0 + C1 * X[l]))
        got = np.array([e["progress_fit"] for e in est])
        np.testing.assert_allclose(got, want, rtol=0.01)


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


def test_a_target_the_pilots_cannot_plan_is_left_out_and_named_where_two_others_plan(
        tmp_path, capsys):
    """On the example logs (highest accuracy 0.843): with 0.99 among three targets the other
    two are planned jointly, each exactly as without it, and 0.99 is named with the one line
    it alone is refused with; with two of three out of reach the command is refused, in one
    line naming both."""
    from twoclock.cli.plan import main
    base = ["--logs", DATA, "--predict", "512", "--no-figure"]
    assert main(base + ["--progress", "heldout_acc>=0.7 heldout_acc>=0.99 heldout_acc>=0.75",
                        "--out", str(tmp_path / "three")]) == 0
    printed = capsys.readouterr().out
    assert main(base + ["--progress", "heldout_acc>=0.7 heldout_acc>=0.75",
                        "--out", str(tmp_path / "two")]) == 0
    three = json.loads((tmp_path / "three" / "plan.json").read_text())
    two = json.loads((tmp_path / "two" / "plan.json").read_text())
    assert [t["condition"] for t in three["targets"]] == ["heldout_acc>=0.7", "heldout_acc>=0.75"]
    assert three["targets"] == two["targets"] and three["joint"] == two["joint"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:  # a refusal: one line, exit status 2
        main(base + ["--progress", "heldout_acc>=0.99", "--out", str(tmp_path / "x")])
    assert e.value.code == 2
    alone = capsys.readouterr().err.strip().split("error: ", 1)[1]
    assert three["left_out"] == [{"condition": "heldout_acc>=0.99", "why": alone}]
    assert two["left_out"] == []
    assert f"  left out: {alone}" in printed.splitlines()
    with pytest.raises(SystemExit) as e:
        main(base + ["--progress", "heldout_acc>=0.7 heldout_acc>=0.98 heldout_acc>=0.99",
                     "--out", str(tmp_path / "one")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'heldout_acc>=0.98'" in err[0] and "'heldout_acc>=0.99'" in err[0]
    assert "of the 3 targets given, 1 can be planned" in err[0]


def test_every_key_of_the_several_target_document_is_documented(tmp_path):
    """docs/results.md's section for it names every key written (a target's `plan` is the
    one-target plan, whose keys test_plan_schema checks) and no key that is not written."""
    import re
    from tests.pilot.test_plan_schema import DOC, _paths
    from twoclock.cli.plan import main
    # 0.99: no run reaches it (the example's highest is 0.843), so it is left out
    assert main(["--logs", DATA, "--progress", "heldout_acc>=0.7 heldout_acc>=0.75 "
                 "heldout_acc>=0.99", "--predict", "512", "--no-figure", "--out",
                 str(tmp_path)]) == 0
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


# ---------------------------------------------------------------------------- the quadratic model

LEVELS, SIM_BATCHES, SIM_SEEDS = (0.2, 0.1, 0.05), (8, 16, 32, 64, 128, 256), 16


def _crossing(s, v, x) -> float:
    """The first crossing of v <= x, interpolated between checkpoints (inf: never)."""
    i = np.flatnonzero(v <= x)
    if i.size == 0:
        return math.inf
    i = int(i[0])
    return float(s[0]) if i == 0 else float(s[i - 1] + (s[i] - s[i - 1]) * (v[i - 1] - x)
                                            / (v[i - 1] - v[i]))


def quadratic_levels(rule: str) -> dict:
    """The quadratic model (Adam, lr0 0.01 at b0 8) under `rule`, its progress fraction crossing
    LEVELS of the initial loss: single-seed pilots at B 8, 16, 32 (each of 16 seeds a pilot
    set), predictions at 64 (2x) and 256 (8x) per level alone (forms.adam_clock) and jointly
    (levels.joint_plan), against the 16 seeds' median. {way: {2x|8x: (errors, covered)}} and
    the paired contrast of mean |error| (joint - alone) with its bootstrap CI over pilot sets."""
    from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
    from twoclock.models import MODELS
    from twoclock.pilot import forms
    from twoclock.pilot.result import Rule
    res = run_sweep(MODELS["quadratic"], QuadraticConfig(target=0.01),
                    OptimConfig(name="adam", lr_rule=rule),
                    SweepConfig(batches=SIM_BATCHES, lr0s=(0.01,), seeds=SIM_SEEDS,
                                budget=40_000, n_ckpt=400), quiet=True)
    lr = res.lrs_BxL[:, 0]
    C = np.array([[[_crossing(res.ckpt[b]["samples"][0, k], res.ckpt[b]["progress_frac"][0, k],
                              x) for x in LEVELS] for k in range(SIM_SEEDS)]
                  for b in range(len(SIM_BATCHES))])  # [B, S, L]
    truth = np.median(C, axis=1)
    p = {"fixed": 0.0, "sqrt": 0.5}[rule]
    R, Bp, at = Rule(p, 0.01, 8.0, 0), np.array(SIM_BATCHES[:3], float), (3, 5)
    out = {w: {h: ([], []) for h in ("2x", "8x")} for w in ("alone", "joint")}
    for s in range(SIM_SEEDS):
        clk = C[:3, s, :]
        alone = [forms.adam_clock(Bp, clk[:, l], lr[:3], np.ones(3), R)
                 for l in range(len(LEVELS))]
        plans = [{"runs": [{"batch": float(b), "lr": float(lr[i]),
                            "progress_samples": float(clk[i, l])} for i, b in enumerate(Bp)],
                  "fit": {"rule": {"p": p, "lr0": 0.01, "b0": 8.0, "off_rule_runs": 0},
                          "progress_form_error": {"curvature": alone[l].rate["rate"]}},
                  "source": "quadratic"} for l in range(len(LEVELS))]
        joint = levels.joint_plan([f"progress_frac<={x}" for x in LEVELS], plans,
                                  [float(SIM_BATCHES[i]) for i in at])
        for l in range(len(LEVELS)):
            bands = {"alone": alone[l].band([SIM_BATCHES[i] for i in at], 0.95),
                     "joint": [x["progress_samples"] for x in joint["targets"][l]["predictions"]]}
            for w, band in bands.items():
                for h, i, b in zip(("2x", "8x"), at, band):
                    t, (lo, hi) = truth[i, l], b["ci"]
                    out[w][h][0].append(b["median"] / t - 1)
                    out[w][h][1].append((lo or 0) <= t <= (hi or math.inf))
    rng = np.random.default_rng(0)
    for h in ("2x", "8x"):  # per pilot set, the mean over levels of |joint| - |alone|
        d = (np.abs(out["joint"][h][0]) - np.abs(out["alone"][h][0])).reshape(-1, len(LEVELS))
        d = d.mean(axis=1)
        bs = [d[rng.integers(0, d.size, d.size)].mean() for _ in range(4000)]
        out[f"contrast {h}"] = (d.mean(), *np.percentile(bs, [2.5, 97.5]))
    return out


@pytest.mark.parametrize("rule", ["fixed", "sqrt"])
def test_the_joint_bands_cover_the_quadratic_model_at_2x_and_8x(rule):
    # the calibration goal: >= 90% of 95% bands cover (48 predictions a horizon)
    q = quadratic_levels(rule)
    for h in ("2x", "8x"):
        assert np.mean(q["joint"][h][1]) >= 0.9, (rule, h, np.mean(q["joint"][h][1]))


if __name__ == "__main__":  # the table in docs/history/plan.md ("Several targets at once")
    for r in ("fixed", "sqrt"):
        q = quadratic_levels(r)
        for w in ("alone", "joint"):
            for h in ("2x", "8x"):
                e, c = q[w][h]
                print(f"{r} {w} {h}: median |error| {np.median(np.abs(e)):.3f}, coverage "
                      f"{np.mean(c):.3f} of {len(c)}")
        for h in ("2x", "8x"):
            m, lo, hi = q[f"contrast {h}"]
            print(f"{r} joint - alone, mean |error| at {h}: {m:+.4f} [{lo:+.4f}, {hi:+.4f}]")


def by_hand_sharp(B, lr, A, b_n, s):
    """N = A sqrt(B) (1 + c (B / (0.44 B_n))^s)^(1 / (2 s)) / lr, c = 1.2^(2 s) - 1: the
    saturation form of fit.py with a = 1/2 brought back from the sqrt rule, its knee of
    sharpness s (s = 1: A sqrt(B (B + B_n)) / (sqrt(B_n) lr), Adam's form)."""
    c = 1.2 ** (2 * s) - 1.0
    return A * np.sqrt(B) * (1.0 + c * (B / (0.44 * b_n)) ** s) ** (0.5 / s) / lr


def _sharp_plans(s):
    plans = _plans(wiggle=0.0)
    for l, p in enumerate(plans):
        for r in p["runs"]:
            r["progress_samples"] = float(by_hand_sharp(r["batch"], r["lr"], A_L[l],
                                                        math.exp(C0 + C1 * X[l]), s))
    return plans


@pytest.mark.parametrize("s", [0.5, 1.0])
def test_the_joint_fit_with_the_knees_sharpness_recovers_it_and_the_clock_at_64x(s):
    """Clocks made by the formula above at three levels and four batches with a knee of
    sharpness s: the joint fit with `sharp` finds s on fit.SHARPNESS's grid and the clock at
    64x the smallest pilot within 1%; the fit with the form's own knee (s = 1) misses a knee
    of 0.5 there by more than 5%, and matches the sharp fit where s is 1."""
    texts = ["acc>=0.45", "acc>=0.5", "acc>=0.55"]
    want = by_hand_sharp(np.array([512.0]), 0.01, A_L[1], math.exp(C0), s)[0]
    got = {sharp: levels.joint_plan(texts, _sharp_plans(s), predict=[512.0], sharp=sharp)
           for sharp in (True, False)}
    assert got[True]["joint"]["knee_sharpness"] == pytest.approx(s)
    assert got[False]["joint"]["knee_sharpness"] == 1.0
    med = {k: v["targets"][1]["predictions"][0]["progress_samples"]["median"]
           for k, v in got.items()}
    assert med[True] == pytest.approx(want, rel=0.01)
    # the knee's place: B_n of the middle level, 40, whatever the sharpness (the curve alone
    # would let a wrong c_s move B_n and keep every clock)
    assert got[True]["targets"][1]["noise_scale"] == pytest.approx(40.0, rel=0.02)
    if s == 1.0:
        assert med[False] == pytest.approx(med[True], rel=0.01)
    else:
        assert abs(med[False] / want - 1) > 0.05, med[False] / want
    # one more parameter: one fewer degree of freedom
    assert got[True]["joint"]["dof"] == got[False]["joint"]["dof"] - 1


def test_fit_knee_reaches_the_joint_fit_and_needs_several_targets(tmp_path, capsys):
    """--fit-knee: the several-target document's joint fit with the sharpness fitted (one
    fewer degree of freedom, the form says so, the printout gives the value); refused in one
    line with one target."""
    from twoclock.cli.plan import main
    args = ["--logs", DATA, "--predict", "512", "--no-figure",
            "--progress", "heldout_acc>=0.7 heldout_acc>=0.8"]
    assert main(args + ["--out", str(tmp_path / "s1")]) == 0
    assert main(args + ["--fit-knee", "--out", str(tmp_path / "fit")]) == 0
    s1, fit = (json.loads((tmp_path / d / "plan.json").read_text())["joint"]
               for d in ("s1", "fit"))
    assert fit["dof"] == s1["dof"] - 1 and fit["form"].endswith("the knee's sharpness fitted")
    assert s1["knee_sharpness"] == 1.0 and 0.25 <= fit["knee_sharpness"] <= 1.0
    assert (s1["knee_sharpness_fitted"], fit["knee_sharpness_fitted"]) == (False, True)
    out = capsys.readouterr().out
    assert f"sharpness fitted {fit['knee_sharpness']:.3g};" in out
    assert "(adam: log B_n linear in the level; " in out  # no sharpness where none was fitted
    with pytest.raises(SystemExit) as ex:
        main(["--logs", DATA, "--progress", "heldout_acc>=0.7", "--fit-knee", "--no-figure",
              "--out", str(tmp_path / "one")])
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("--fit-knee must be given with several --progress targets (e.g. "
                            "'acc>=0.45 acc>=0.5 acc>=0.55') (got 'heldout_acc>=0.7')")


def test_the_crossing_floor_is_the_clocks_mean_variance_weighted_by_runs():
    # by hand: 2 runs at sd 0.1 and 4 runs at sd 0.2, a plan without --eval-items left out:
    # (2 x 0.01 + 4 x 0.04) / 6 = 0.03 (an unweighted mean of the variances would give 0.025)
    noisy = lambda k, sd: {"runs": [{}] * k, "logs": {"eval_noise": {"crossing_sd": sd}}}
    got = levels.crossing_floor([noisy(2, 0.1), noisy(4, 0.2), {"runs": [{}] * 3, "logs": {}}])
    assert math.isclose(got, 0.03, rel_tol=1e-12)
    assert levels.crossing_floor(_plans()) == 0.0


def test_the_joint_band_takes_the_crossing_floor_where_it_exceeds_the_residuals():
    """Three levels x 8 clocks (dof 24 - 3 - 2 = 19; t(0.975, 19) = 2.093024 from a table):
    the region's threshold is SSE_min (1 + t^2 / dof) without a floor, SSE_min + t^2 v with a
    floor v above SSE_min / dof, and the residuals' where v is below it; the band widens."""
    plans = _plans()
    m, lr, y, li = [], [], [], []
    for l, p in enumerate(plans):
        for r in p["runs"]:
            m.append(r["batch"]), lr.append(r["lr"]), li.append(l)
            y.append(math.log(r["progress_samples"]))
    args = (np.array(m), np.array(lr), np.array(y), np.array(li), X)
    t = 2.093024
    plain = levels.JointFit(*args)
    best = plain.sse[plain.best]
    assert plain.dof == 19
    assert math.isclose(plain.region(0.95)[1], best * (1 + t * t / 19), rel_tol=1e-5)
    v = 100 * best / 19
    floored = levels.JointFit(*args, floor=v)
    assert math.isclose(floored.region(0.95)[1], best + t * t * v, rel_tol=1e-5)
    low = levels.JointFit(*args, floor=0.5 * best / 19)
    assert low.region(0.95)[1] == plain.region(0.95)[1]
    for l in range(3):
        _, lo0, hi0 = plain.log_band(l, np.array([256.0]), np.array([0.01]), 0.95)
        _, lo1, hi1 = floored.log_band(l, np.array([256.0]), np.array([0.01]), 0.95)
        assert lo1[0] < lo0[0] and hi1[0] > hi0[0]


def test_eval_items_reaches_the_joint_fit_from_the_command(tmp_path):
    """plan.py with several targets and --eval-items: the joint block's crossing_sd is the
    targets' own crossing sds pooled over their runs (crossing_floor worked from the plans
    printed in the same document), and each joint band is at least as wide as without."""
    from twoclock.cli.plan import main
    args = ["--logs", DATA, "--progress", "heldout_acc>=0.7 heldout_acc>=0.75", "--predict",
            "512", "--no-figure", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert main(args + ["--eval-items", "200", "--out", str(tmp_path / "b")]) == 0
    a = json.loads((tmp_path / "a" / "plan.json").read_text())
    b = json.loads((tmp_path / "b" / "plan.json").read_text())
    assert a["joint"]["crossing_sd"] is None
    runs = [len(t["plan"]["runs"]) for t in b["targets"]]
    sds = [t["plan"]["logs"]["eval_noise"]["crossing_sd"] for t in b["targets"]]
    want = math.sqrt(sum(k * s * s for k, s in zip(runs, sds)) / sum(runs))
    assert math.isclose(b["joint"]["crossing_sd"], want, rel_tol=1e-12)
    for ta, tb in zip(a["targets"], b["targets"]):
        for pa, pb in zip(ta["predictions"], tb["predictions"]):
            ca, cb = pa["progress_samples"]["ci"], pb["progress_samples"]["ci"]
            assert cb[0] <= ca[0] and cb[1] >= ca[1]


def test_several_targets_print_each_plans_notes_once_and_each_recommendation(tmp_path, capsys):
    """The README's sweep command (one seed a batch, no --failure): the printout keeps what a
    one-target plan says of the logs (progress-only, one run a batch: each once, however many
    targets share it), and a recommendation line per target, its own plan's constant batch."""
    import json
    from tests.helpers import plan_main
    args = ["--logs", "twoclock/data/example_sweep_logs.csv", "--out", str(tmp_path),
            "--progress", "heldout_acc>=0.6 heldout_acc>=0.57 heldout_acc>=0.54",
            "--progress-form", "auto", "--fit-knee", "--predict", "256", "1024", "--no-figure"]
    assert plan_main("plan_levels_notes")(args) == 0
    text = capsys.readouterr().out.splitlines()
    assert sum(ln.startswith("  progress-only plan: no --failure condition") for ln in text) == 1
    assert sum(ln.startswith("  one run a batch: each band is for the median") for ln in text) \
        == 1
    out = json.loads((tmp_path / "plan.json").read_text())
    for row in out["targets"]:
        c = row["plan"]["recommendation"]["constant"]
        assert (f"  {row['condition']}: constant batch {c['batch']:g}, "
                f"{c['progress_samples']:.4g} samples (from the {c['source']})") in text
