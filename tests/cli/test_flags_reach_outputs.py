"""Every documented flag changes the number it documents (issue 34): a value recorded in the
JSON but not used for the number printed beside it passes a round-trip test and fails here.
Each experiment runs in-process through its main(argv), at tiny budgets; the planner's flags
against hand rules (the margin's safety test, the lr rule at predicted batches, a band's
level), the headline's against a base run (and hand values of the lr rule)."""
import importlib.util
import json
import math
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RUNS = os.path.join(ROOT, "twoclock", "data", "example_pilot_runs.csv")
LOGS = os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv")


def _main(script):
    spec = importlib.util.spec_from_file_location(f"flags_{script}",
                                                  os.path.join(ROOT, "experiments", script))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main


def _run(script, args, tmp_path, capsys, name):
    path = str(tmp_path / f"{name}.json")
    assert _main(script)(list(args) + ["--json", path, "--no-figure"]) == 0
    text = capsys.readouterr().out
    with open(path) as f:
        return json.load(f), text


# ---------------------------------------------------------------------------- plan.py

@pytest.fixture()
def plan(tmp_path, capsys):
    return lambda args, name: _run("plan.py", args, tmp_path, capsys, name)


def test_plan_margin_decides_the_recommendation(plan):
    """--margin m: the recommended constant batch is the cheapest estimate with progress <=
    (1 - m) failure, by hand over the written estimates, at two margins that disagree."""
    got = {}
    for m in (0.05, 0.88):  # at 0.88 no pilot batch keeps 12% of its failure clock
        out, text = plan([RUNS, "--margin", str(m)], f"m{m}")
        est = out["estimates"]
        inf = lambda v: math.inf if v is None else v
        safe = [e for e in est if e["progress"] <= (1 - m) * inf(e["failure"])]
        cost = lambda e: e["progress"] * (e["seconds_per_sample"]
                                          if out["recommendation"]["objective"] == "seconds"
                                          else 1.0)
        want = min(safe, key=cost)["batch"] if safe else None
        rec = out["recommendation"]["constant"]
        assert (rec["batch"] if rec else None) == want
        assert out["recommendation"]["margin"] == m and out["fit"]["margin"] == m
        assert sorted(out["recommendation"]["unsafe"]) == sorted(
            e["batch"] for e in est if e not in safe)
        got[m] = (want, text)
    assert got[0.05][0] == 8.0 and got[0.88][0] is None  # the margins disagree
    assert got[0.05][1] != got[0.88][1]


def test_plan_predict_batches_follow_the_fitted_rule(plan):
    """--predict: the rows are the given batches, each at lr0 (B / b0)^p of the fitted rule."""
    out, text = plan([RUNS, "--predict", "300", "100"], "pred")
    rule = out["fit"]["rule"]
    assert [p["batch"] for p in out["predictions"]] == [100.0, 300.0]
    for p in out["predictions"]:
        assert p["lr"] == pytest.approx(rule["lr0"] * (p["batch"] / rule["b0"]) ** rule["p"],
                                        rel=1e-12)
    assert "300" in text


def test_plan_level_sets_the_bands(plan):
    """--level: a 50% band lies inside the 95% band of the same fit, and is narrower."""
    o95, t95 = plan([RUNS], "l95")
    o50, t50 = plan([RUNS, "--level", "0.5"], "l50")
    assert o50["fit"]["level"] == 0.5 and o95["fit"]["level"] == 0.95
    narrower = 0
    for p95, p50 in zip(o95["predictions"], o50["predictions"]):
        a, b = p95["progress_samples"], p50["progress_samples"]
        assert a["median"] == pytest.approx(b["median"], rel=1e-9)
        if None not in a["ci"] + b["ci"]:
            assert a["ci"][0] <= b["ci"][0] <= b["ci"][1] <= a["ci"][1]
            narrower += b["ci"][1] - b["ci"][0] < a["ci"][1] - a["ci"][0]
    assert narrower >= 1 and t95 != t50
    # the drawn curves' bands too (the figure's): inside the 95% band at every grid point, and
    # narrower at most (by hand: a 50% band of the same fit is strictly inside where both ends
    # are finite)
    c95, c50 = o95["curves"]["progress_samples"], o50["curves"]["progress_samples"]
    assert o95["curves"]["batch"] == o50["curves"]["batch"] and len(c95) == len(c50) > 10
    inside = [a["ci"][0] <= b["ci"][0] <= b["ci"][1] <= a["ci"][1] for a, b in zip(c95, c50)
              if None not in a["ci"] + b["ci"]]
    assert inside and all(inside)
    assert sum(b["ci"][1] - b["ci"][0] < a["ci"][1] - a["ci"][0]
               for a, b in zip(c95, c50) if None not in a["ci"] + b["ci"]) > len(inside) // 2


def test_plan_logs_smoothing_moves_the_clocks(plan):
    """--smooth on the example logs: the clocks of the plan differ from the unsmoothed ones
    (an EMA lags a rising curve: later progress crossings), and the JSON says which."""
    args = [LOGS, "--progress", "heldout_acc>=0.7", "--failure", "kl>=0.5"]
    raw, traw = plan(["--logs"] + args[:1] + args[1:], "raw")
    sm, tsm = plan(["--logs"] + args[:1] + args[1:] + ["--smooth", "ema:2000"], "ema")
    assert raw["logs"]["smoothing"] is None
    assert sm["logs"]["smoothing"] == {"kind": "ema", "samples": 2000.0, "points": None}
    pr = {r["run"]: r["progress_samples"] for r in raw["runs"]}
    ps = {r["run"]: r["progress_samples"] for r in sm["runs"]}
    common = set(pr) & set(ps)
    assert common and all(ps[k] > pr[k] for k in common)
    assert traw != tsm


# ---------------------------------------------------------------------------- critical_batch.py

BASE = ["--batches", "8", "32", "--lr0", "0.01", "--seeds", "4", "--budget", "6000",
        "--n-ckpt", "16", "--no-store", "--dim", "8", "--drift-dim", "2", "--quiet",
        "--drift-threshold", "0.3"]


def _numbers(out, key):
    """The per-run values of key (a dotted path into each run entry)."""
    vals = []
    for r in out["runs"]:
        v = r
        for k in key.split("."):
            v = v[k]
        vals.append(v)
    return vals


@pytest.fixture(scope="module")
def headline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flags")
    cache = {}

    def run(extra):
        key = tuple(extra)
        if key not in cache:
            path = str(tmp / f"r{len(cache)}.json")
            assert _main("critical_batch.py")(BASE + list(extra) + ["--json", path,
                                                                    "--no-figure"]) == 0
            with open(path) as f:
                cache[key] = json.load(f)
        return cache[key]
    return run


# flag, value, the run entries' numbers it documents
FLAGS = [
    ("--lr0", "0.02", ("lr", "progress_samples.median", "theory.progress_samples")),
    ("--b0", "4", ("lr", "progress_samples.median", "theory.progress_samples")),
    ("--lr-rule", "linear", ("lr", "theory.progress_samples")),
    ("--target", "0.2", ("progress_samples.median", "theory.progress_samples")),
    ("--drift-threshold", "0.5", ("failure_samples.median", "theory.failure_samples")),
    ("--drift-bias", "0.1", ("theory.failure_samples",)),
    ("--drift-noise", "3.0", ("failure_samples.median", "theory.failure_samples")),
    ("--sigma", "2.0", ("progress_samples.median", "theory.progress_samples")),
    ("--alpha", "0.5", ("progress_samples.median", "theory.progress_samples")),
    ("--h-max", "2.0", ("progress_samples.median", "theory.progress_samples")),
    ("--gamma", "0.5", ("progress_samples.median", "theory.progress_samples")),
    ("--beta2", "0.99", ("progress_samples.median",)),
    ("--eps", "0.01", ("progress_samples.median",)),
    ("--optimizer", "sgd", ("progress_samples.median", "theory.progress_samples")),
    ("--seed", "5", ("progress_samples.median",)),
    ("--seeds", "3", ("progress_samples.seeds",)),
    ("--drift-stat", "norm", ("failure_samples.median",)),
]


@pytest.mark.slow  # 18 small sweeps, each compiled: ~2-3 min on 2 cores
@pytest.mark.parametrize("flag,value,keys", FLAGS, ids=[f[0] for f in FLAGS])
def test_headline_flags_change_the_numbers_they_document(headline, flag, value, keys):
    base, got = headline(()), headline((flag, value))
    for key in keys:
        assert _numbers(got, key) != _numbers(base, key), (flag, key)
    if flag in ("--lr0", "--b0", "--lr-rule"):  # the lr column by hand
        lr0 = 0.02 if flag == "--lr0" else 0.01
        b0 = 4.0 if flag == "--b0" else 8.0
        p = 1.0 if flag == "--lr-rule" else 0.5
        for r in got["runs"]:
            assert r["lr"] == pytest.approx(lr0 * (r["batch"] / b0) ** p, rel=1e-6)


@pytest.mark.slow
def test_headline_delta_moves_the_critical_batch(headline):
    """--delta: the critical batch is where N_prog(B) / N_prog(B_min) reaches 1 + delta, the
    ratio interpolated linearly on log B: by hand from the written medians at two deltas."""
    for delta in ("0.1", "0.3"):
        out = headline(("--delta", delta))
        meds = {r["batch"]: r["progress_samples"]["median"] for r in out["runs"]}
        r = meds[32] / meds[8]
        d = float(delta)
        assert r >= 1 + d  # both deltas are crossed between the two batches
        want = math.exp(math.log(8) + d / (r - 1) * (math.log(32) - math.log(8)))
        assert out["critical_batch"][0]["batch"] == pytest.approx(want, rel=1e-9), delta
