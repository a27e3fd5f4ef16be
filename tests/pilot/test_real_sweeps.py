"""The public sweeps under twoclock/data/real/ and tools/score_real.py.

Oracles: the numbers the sources print (spot values, and the authors' McCandlish fits, refitted
here exactly as their notebook fits them), first-passage logic (a higher target is never reached
earlier) and hand-computed baselines. Provenance: every stored file is named in its folder's
README, and every row's source key is defined there.
"""
import csv
import json
import math
import os
import re

import numpy as np
import pytest
from scipy.optimize import curve_fit

from tests.helpers import load_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = os.path.join(ROOT, "twoclock", "data", "real")
sr = load_script("tools/score_real.py")
SWEEPS = sorted(d for d in os.listdir(REAL) if os.path.isdir(os.path.join(REAL, d)))
OLMO = "cbs_rlvr_olmo2_1b"


def _rows(sweep, name):
    with open(os.path.join(REAL, sweep, name), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _readme(sweep):
    with open(os.path.join(REAL, sweep, "README.md"), encoding="utf-8") as f:
        return f.read()


def _design():
    with open(os.path.join(REAL, OLMO, "design.json"), encoding="utf-8") as f:
        return json.load(f)


def test_every_sweep_is_listed():
    with open(os.path.join(REAL, "README.md"), encoding="utf-8") as f:
        top = f.read()
    assert SWEEPS, "no sweep stored"
    for s in SWEEPS:
        assert f"`{s}/`" in top, f"{s} missing from twoclock/data/real/README.md"


@pytest.mark.parametrize("sweep", SWEEPS)
def test_provenance_names_every_file_and_every_source_key(sweep):
    text = _readme(sweep)
    assert re.search(r"## Source\b", text) and re.search(r"Repository `[\w.-]+/[\w.-]+`", text)
    commits = set(re.findall(r"\b[0-9a-f]{40}\b", text))
    assert commits, "the provenance names no commit"
    keys = set(re.findall(r"^\| `(\w+)` \|", text, flags=re.M))
    for name in sorted(os.listdir(os.path.join(REAL, sweep))):
        if name == "README.md":
            continue
        assert f"`{name}`" in text, f"{sweep}/{name} is not described in its README"
        if name.endswith(".csv"):
            rows = _rows(sweep, name)
            assert rows and "source" in rows[0], f"{name}: no per-row source column"
            for r in rows:
                assert r["source"] in keys, f"{name}: source {r['source']!r} not in the README"


def test_runs_parse_and_agree_with_their_settings():
    design = _design()
    runs = _rows(OLMO, "runs.csv")
    assert len(runs) == 8
    for r in runs:
        prompts, g, b = int(r["prompts"]), int(r["responses_per_prompt"]), int(r["batch"])
        assert b == prompts * g and g == design["responses_per_prompt"]
        assert int(r["updates_per_batch"]) * int(r["mini_batch_prompts"]) == prompts
        assert float(r["lr"]) == design["lr"]
        assert 0 < float(r["best_val_gsm8k"]) < 1 and int(r["last_step"]) > 0


def test_steps_parse_and_are_first_passages():
    every = _design()["eval_every_steps"]
    runs = {r["run"]: r for r in _rows(OLMO, "runs.csv")}
    by_run = {}
    for r in _rows(OLMO, "steps_to_target.csv"):
        run = runs[r["run"]]
        assert int(r["batch"]) == int(run["batch"])
        assert r["updates_per_batch"] == run["updates_per_batch"]
        t, best = float(r["target"]), float(run["best_val_gsm8k"])
        if r["steps"] == "":  # not reached: the run's best stays below the target
            assert best < t
            s = math.inf
        else:
            s = int(r["steps"])
            assert s % every == 0 and every <= s <= int(run["last_step"]) and best >= t
        by_run.setdefault(r["run"], []).append((t, s))
    for run, ts in by_run.items():
        steps = [s for _, s in sorted(ts)]
        assert steps == sorted(steps), f"{run}: a higher target reached earlier"


def _steps(run, target):
    for r in _rows(OLMO, "steps_to_target.csv"):
        if r["run"] == run and r["target"] == target:
            return int(r["steps"]) if r["steps"] else None
    raise KeyError((run, target))


def test_spot_values_as_the_source_prints_them():
    # cbs_analysis.ipynb (commit a42b8d7), cell 20: 'S(B) for GSM8K', row 0.60, column 1024
    assert _steps("cbs_p1_np128_nr8_lr1e-6", "0.60") == 975
    # same table, row 0.55, column 2048; row 0.65, column 256 is NaN
    assert _steps("cbs_p1_np256_nr8_lr1e-6", "0.55") == 200
    assert _steps("cbs_p1_np32_nr8_lr1e-6", "0.65") is None
    # cell 27: S(B)_gsm60 of the mbs=1024 run (325) and of the mbs=256 run (225)
    assert _steps("cbs_p1_np1024_nr8_lr1e-6_mbs1024", "0.60") == 325
    assert _steps("cbs_p1_np1024_nr8_lr1e-6", "0.60") == 225
    # cell 20 prints 37.5 at (0.45, 8192): the mean of the two B = 8192 runs
    assert (_steps("cbs_p1_np1024_nr8_lr1e-6", "0.45")
            + _steps("cbs_p1_np1024_nr8_lr1e-6_mbs1024", "0.45")) / 2 == 37.5


# cbs_analysis.ipynb (commit 2e357d8), cell 19: the authors' fits on the one-update runs
PUBLISHED_FITS = {"0.40": (325, 20.2, 0.795), "0.45": (1096, 32.3, 0.960),
                  "0.50": (914, 69.9, 0.981), "0.55": (836, 196.0, 0.867),
                  "0.60": (1364, 404.2, 0.949), "0.65": (3541, 512.5, 0.937)}
NOTEBOOK_ORDER = ["cbs_p1_np256_nr8_lr1e-6", "cbs_p1_np32_nr8_lr1e-6", "cbs_p1_np64_nr8_lr1e-6",
                  "cbs_p1_np128_nr8_lr1e-6", "cbs_p1_np1024_nr8_lr1e-6_mbs1024"]


@pytest.mark.parametrize("target", sorted(PUBLISHED_FITS))
def test_stored_steps_reproduce_the_authors_fits(target):
    """The notebook's own fit (curve_fit of S = S_min (1 + B*/B), its start point and run
    order) on the stored steps gives the printed B*, S_min and R^2 at every target."""
    runs = {r["run"]: r for r in _rows(OLMO, "runs.csv")}
    pts = [(float(runs[r]["batch"]), _steps(r, target)) for r in NOTEBOOK_ORDER]
    B, S = map(np.array, zip(*[(b, float(s)) for b, s in pts if s is not None]))
    f = lambda b, s_min, b_noise: s_min * (1 + b_noise / b)
    popt, _ = curve_fit(f, B, S, p0=[S.min(), float(B[len(B) // 2])],
                        bounds=([0, 0], [np.inf, np.inf]), maxfev=10000)
    r2 = 1 - np.sum((S - f(B, *popt)) ** 2) / np.sum((S - S.mean()) ** 2)
    b_star, s_min, r2_pub = PUBLISHED_FITS[target]
    assert (round(popt[1]), round(popt[0], 1), round(r2, 3)) == (b_star, s_min, r2_pub)


def test_design_pilots_are_the_three_smallest_one_update_batches():
    pilots, held, multi = sr.design(sr.read_sweep(OLMO))
    assert pilots == ["cbs_p1_np32_nr8_lr1e-6", "cbs_p1_np64_nr8_lr1e-6",
                      "cbs_p1_np128_nr8_lr1e-6"]
    assert held == ["cbs_p1_np256_nr8_lr1e-6", "cbs_p1_np1024_nr8_lr1e-6_mbs1024"]
    assert multi == ["cbs_p1_np512_nr8_lr1e-6", "cbs_p1_np1024_nr8_lr1e-6",
                     "cbs_p1_np8192_nr8_lr1e-6"]


def test_mccandlish_fit_recovers_an_exact_curve():
    B = np.array([64.0, 128.0, 256.0, 512.0])
    N = 1000.0 * (1 + B / 300.0)  # N_min = 1000, B_noise = 300
    fit = sr.mccandlish_fit(B, N)
    grid_step = (math.log(512 / 64) + 12) / (sr.GRID - 1)  # the grid's log spacing
    assert abs(math.log(fit["b_noise"] / 300.0)) <= grid_step
    assert sr.mccandlish_predict(fit, 4096.0) == pytest.approx(1000 * (1 + 4096 / 300), rel=0.01)
    assert not fit["at_grid_edge"]


def test_obvious_rule_by_hand():
    assert sr.obvious_rule(1024, 1000.0, 8192, p=0.0) == pytest.approx(8000.0)
    assert sr.obvious_rule(1024, 1000.0, 8192, p=0.5) == pytest.approx(1000 * 8 ** 0.5)
    assert sr.obvious_rule(1024, 1000.0, 8192, p=1.0) == pytest.approx(1000.0)


def test_predict_refuses_to_overwrite(tmp_path):
    out = tmp_path / "p.json"
    out.write_text("{}")
    with pytest.raises(SystemExit, match="exists"):
        sr.predict(OLMO, str(out))
    assert out.read_text() == "{}"


def test_predict_then_score_round_trip(tmp_path):
    """Predictions use the pilots only; the score's error is prediction / truth - 1 with the
    truth steps x batch read from the stored table (2048 at 0.50: 100 steps)."""
    pre = sr.predict(OLMO, str(tmp_path / "p.json"))
    assert sorted(pre["skipped_targets"]) == ["0.40", "0.65"]
    t50 = next(t for t in pre["targets"] if t["target"] == "0.50")
    assert t50["pilot_samples"] == {"cbs_p1_np32_nr8_lr1e-6": 325 * 256,
                                    "cbs_p1_np64_nr8_lr1e-6": 175 * 512,
                                    "cbs_p1_np128_nr8_lr1e-6": 150 * 1024}
    got = sr.score(str(tmp_path / "p.json"), str(tmp_path / "m.json"))
    row = next(r for r in got["rows"]
               if r["target"] == "0.50" and r["run"] == "cbs_p1_np256_nr8_lr1e-6")
    pred = next(p for p in t50["predictions"] if p["run"] == "cbs_p1_np256_nr8_lr1e-6")
    assert row["truth"] == 100 * 2048 and row["truth_interval"] == [75 * 2048, 100 * 2048]
    assert row["planner_error"] == pytest.approx(pred["planner"]["median"] / 204800 - 1)
    assert row["obvious_rule_error"] == pytest.approx(150 * 1024 * 2 / 204800 - 1)


def test_the_doc_states_the_measured_scores():
    """docs/real_runs.md's tables against the committed measured JSON; the summary's medians and
    coverage recomputed here from the JSON's rows."""
    with open(os.path.join(ROOT, "docs", "real_runs.md"), encoding="utf-8") as f:
        doc = f.read()
    with open(os.path.join(ROOT, "docs", "preregistered",
                           f"real_{OLMO}_measured.json"), encoding="utf-8") as f:
        got = json.load(f)
    with open(os.path.join(ROOT, "docs", "preregistered",
                           f"real_{OLMO}_predictions.json"), encoding="utf-8") as f:
        pre = json.load(f)
    band = {(t["target"], p["run"]): p["planner"]["band"] for t in pre["targets"]
            for p in t["predictions"]}
    rows = [r for r in got["rows"] if r["truth"] is not None and not r["off_design"]]
    assert len(rows) == 8
    for r in rows:
        errs = " | ".join(f"{r[k]:+.1%}" for k in ("planner_error", "mccandlish_error",
                                                 "obvious_rule_error"))
        line = f"| {float(r['target']):.0%} | {int(r['batch'])} ({r['x_largest_pilot']:g}x) |"
        assert any(ln.startswith(line) and ln.endswith(f"| {errs} |")
                   for ln in doc.splitlines()), (line, errs)
    for x in (2, 8):
        at = [r for r in rows if r["x_largest_pilot"] == x]
        med = [float(np.median([abs(r[f"{k}_error"]) for r in at]))
               for k in ("planner", "mccandlish", "obvious_rule")]
        lo_hi = [band[(r["target"], r["run"])] for r in at]
        cover = sum(lo <= r["truth"] <= hi for r, (lo, hi) in zip(at, lo_hi))
        line = (f"| {x}x ({len(at)} predictions) | " + " | ".join(f"{m:.1%}" for m in med) +
                f" | {cover}/{len(at)} |")
        assert line in doc, line


# ---- Second round: the Adam form (tools/score_real.py predict-adam / score-adam) ----
FIRST = os.path.join(ROOT, "docs", "preregistered", f"real_{OLMO}_predictions.json")


def test_plan_pilots_adam_predicts_a_several_update_run_at_m_by_hand():
    """Pilots on N = A sqrt(m (m + B_n)) / lr exactly (A = 3, B_n = 600, lr 1e-6, one update
    each); the run at B = 8192 with K = 4 is asked at m = 2048: the formula there, by hand."""
    A, b_n, lr = 3.0, 600.0, 1e-6
    b_p = [256.0, 512.0, 1024.0]
    n_p = [A * math.sqrt(b * (b + b_n)) / lr for b in b_p]
    _, by_m = sr.plan_pilots(b_p, [lr] * 3, n_p, {8192 / 4}, "exact", "adam")
    want = A * math.sqrt(2048 * (2048 + 600)) / lr  # 6.9841e9
    assert by_m[2048.0]["median"] == pytest.approx(want, rel=0.005)
    lo, hi = by_m[2048.0]["ci"]
    assert lo <= want <= hi


def test_a_later_round_reads_the_earlier_file_once_and_only_on_the_sweeps_design(tmp_path):
    """The pilots' batches and lrs as runs.csv has them (np32, np64, np128 prompts x 8
    responses, lr 1e-6); an existing output and a file with its pilots reordered are refused,
    each in one line."""
    pre, sw, b_p, lr = sr.earlier_round(FIRST, str(tmp_path / "new.json"))
    assert (pre["sweep"], b_p, lr) == (OLMO, [256.0, 512.0, 1024.0], [1e-6] * 3)
    assert not (tmp_path / "new.json").exists()
    (tmp_path / "old.json").write_text("{}")
    with pytest.raises(SystemExit, match="old.json: exists; predictions are written once"):
        sr.earlier_round(FIRST, str(tmp_path / "old.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**pre, "pilots": pre["pilots"][::-1]}))
    with pytest.raises(SystemExit, match="bad.json: its design is not the sweep's"):
        sr.earlier_round(str(bad), str(tmp_path / "new.json"))


def test_paired_cis_by_hand():
    """|log a| - |log b| = d = [-1, -1, 0, 0] in two groups (targets x, y): over the pairs mean
    -0.5, sd 1/sqrt(3), t_0.975(3) = 3.182446 (published tables); over the groups' means
    [-1, 0]: mean -0.5, sd 1/sqrt(2), t_0.975(1) = 12.7062."""
    e = math.e
    got = sr.paired_cis([1, 1, 1, 1], [e, 1 / e, 1, 1], ["x", "x", "y", "y"])
    assert got["mean"] == pytest.approx(-0.5)
    half = 3.182446 * (1 / math.sqrt(3)) / 2
    assert got["ci_pairs"] == pytest.approx([-0.5 - half, -0.5 + half], rel=1e-5)
    half = 12.7062 * (1 / math.sqrt(2)) / math.sqrt(2)
    assert got["ci_groups"] == pytest.approx([-0.5 - half, -0.5 + half], rel=1e-5)
    assert (got["n"], got["groups"], got["reading"]) == (4, 2, "not established")
    # d = [-1, -1, -1.1, -1.1]: groups [-1, -1.1], half 12.7062 x 0.0707 / sqrt(2) = 0.635,
    # both CIs below 0: Adam closer
    closer = sr.paired_cis([1] * 4, [e, e, e ** 1.1, e ** 1.1], list("xxyy"))
    assert closer["ci_groups"][1] == pytest.approx(-1.05 + 12.7062 * 0.05, rel=1e-4)
    assert closer["reading"] == "Adam closer"
    assert sr.paired_cis([e, e, e ** 1.1, e ** 1.1], [1] * 4, list("xxyy"))["reading"] == \
        "the other closer"
    # d = [-1, -1, -1, -0.8, -0.8, -0.8]: the pairs' CI (t_0.975(5) = 2.570582) lies below 0,
    # the groups' [-1, -0.8] CI (half 12.7062 x 0.1) spans it: not established
    split = sr.paired_cis([1] * 6, [e] * 3 + [e ** 0.8] * 3, list("xxxyyy"))
    sd = math.sqrt(6 * 0.01 / 5)
    assert split["ci_pairs"][1] == pytest.approx(-0.9 + 2.570582 * sd / math.sqrt(6), rel=1e-5)
    assert split["ci_pairs"][1] < 0 < split["ci_groups"][1]
    assert split["reading"] == "not established"


def test_predict_adam_then_score_round_trip(tmp_path):
    """The first round's design and baselines carried over unchanged; every several-update
    run here has m = B / K = 2048, so the form gives it the 2048 one-update run's samples; the
    errors are prediction / (steps x B) - 1 with steps read from the stored table."""
    with open(FIRST, encoding="utf-8") as f:
        first = json.load(f)
    pre = sr.predict_adam(FIRST, str(tmp_path / "a.json"))
    with pytest.raises(SystemExit, match="exists"):
        sr.predict_adam(FIRST, str(tmp_path / "a.json"))
    assert set(pre["options"]) >= {"form", "updates", "joint", "contrasts", "aims"}
    assert [t["target"] for t in pre["targets"]] == ["0.45", "0.50", "0.55", "0.60"]
    for t, t1 in zip(pre["targets"], first["targets"]):
        by = {p["run"]: p for p in t["predictions"]}
        for p1 in t1["predictions"]:
            p = by[p1["run"]]
            assert p["per_update_batch"] == p1["batch"] / p1["updates_per_batch"]
            assert (p["first_round_planner"], p["mccandlish"], p["obvious_rule"]) == \
                (p1["planner"], p1["mccandlish"], p1["obvious_rule"])
        for run in ("cbs_p1_np512_nr8_lr1e-6", "cbs_p1_np1024_nr8_lr1e-6",
                    "cbs_p1_np8192_nr8_lr1e-6"):
            for k in ("adam", "adam_joint"):
                assert by[run][k] == by["cbs_p1_np256_nr8_lr1e-6"][k]
    got = sr.score_adam(str(tmp_path / "a.json"), str(tmp_path / "m.json"))
    t50 = {p["run"]: p for p in pre["targets"][1]["predictions"]}
    rows = {r["run"]: r for r in got["rows"] if r["target"] == "0.50"}
    # 65 536 x 25 steps and 2048 x 100 steps (steps_to_target.csv, target 0.50)
    assert rows["cbs_p1_np8192_nr8_lr1e-6"]["truth"] == 1638400
    assert rows["cbs_p1_np8192_nr8_lr1e-6"]["adam_error"] == pytest.approx(
        t50["cbs_p1_np8192_nr8_lr1e-6"]["adam"]["median"] / 1638400 - 1)
    assert rows["cbs_p1_np256_nr8_lr1e-6"]["obvious_rule_error"] == pytest.approx(0.5)
    assert got["summary"]["8x"]["n"] == got["summary"]["2x"]["n"] == 4


def _k(v):
    return f"{v / 1e3:.1f}k" if v < 1e5 else f"{v / 1e3:.0f}k"


def test_the_doc_states_the_adam_scores():
    """docs/real_runs.md's second-round tables against the committed Adam JSONs: each row's
    bands and errors, the summary's medians, coverage and band widths recomputed from the rows
    and the predicted bands, the contrasts, and the several-update runs' errors."""
    with open(os.path.join(ROOT, "docs", "real_runs.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    path = os.path.join(ROOT, "docs", "preregistered", f"real_{OLMO}_adam_")
    with open(path + "measured.json", encoding="utf-8") as f:
        got = json.load(f)
    with open(path + "predictions.json", encoding="utf-8") as f:
        pre = json.load(f)
    pr = {(t["target"], p["run"]): p for t in pre["targets"] for p in t["predictions"]}
    band = lambda b: f"{_k(b['median'])} [{_k(b['band'][0])}, {_k(b['band'][1])}]"
    cells = lambda head: [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines
                          if ln.startswith(head)]
    rows = [r for r in got["rows"] if r["truth"] is not None and not r["off_design"]]
    assert len(rows) == 8
    for r in rows:
        p = pr[(r["target"], r["run"])]
        want = [f"{float(r['target']):.0%}", f"{int(r['batch'])} ({r['x_largest_pilot']:g}x)",
                f"{_k(r['truth'])} ({round(r['truth'] / r['batch'])})", band(p["adam"]),
                f"{r['adam_error']:+.1%}", band(p["adam_joint"]), f"{r['adam_joint_error']:+.1%}",
                *(f"{r[k + '_error']:+.1%}" for k in ("first_round_planner", "mccandlish",
                                                      "obvious_rule"))]
        assert want in cells(f"| {want[0]} | {want[1]} |"), want
    for x in (2, 8):
        at = [r for r in rows if r["x_largest_pilot"] == x]
        med = [float(np.median([abs(r[f"{k}_error"]) for r in at])) for k in
               ("adam", "adam_joint", "first_round_planner", "mccandlish", "obvious_rule")]
        cover, width = [], []
        for k in ("adam", "adam_joint"):
            bs = [pr[(r["target"], r["run"])][k] for r in at]
            cover.append(sum(b["band"][0] <= r["truth"] <= b["band"][1] for r, b in zip(at, bs)))
            width.append(float(np.median([max(b["band"][1] / b["median"],
                                               b["median"] / b["band"][0]) for b in bs])))
        want = [f"{x}x ({len(at)} predictions)", *(f"{m:.1%}" for m in med),
                f"{cover[0]}/{len(at)}, {cover[1]}/{len(at)}", f"{width[0]:.1f}, {width[1]:.1f}"]
        assert want in cells(f"| {x}x ("), want
    names = {"first_round_planner": "round one", "mccandlish": "McCandlish",
             "obvious_rule": "obvious rule", "adam": "Adam alone"}
    ci = lambda v: f"[{v[0]:+.3f}, {v[1]:+.3f}]"
    for key, c in got["contrast_abs_log_error"].items():
        a, b = key.split("_vs_")
        want = [f"{'joint' if a == 'adam_joint' else 'Adam'} vs {names[b]}", f"{c['mean']:+.3f}",
                ci(c["ci_pairs"]), ci(c["ci_groups"]), c["reading"]]
        assert want in cells(f"| {want[0]} |"), want
    for t in ("0.45", "0.50", "0.55", "0.60"):
        off = sorted((r for r in got["rows"] if r["off_design"] and r["target"] == t),
                     key=lambda r: r["batch"])
        want = [f"{float(t):.0%}", *(f"{_k(r['truth'])}: {r['adam_error']:+.0%} / "
                                     f"{r['adam_joint_error']:+.0%} / "
                                     f"{r['first_round_planner_error']:+.0%}" for r in off)]
        assert want in cells(f"| {want[0]} | "), want
