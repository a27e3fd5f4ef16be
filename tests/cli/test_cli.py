"""The experiment commands: thin scripts whose flags come from the configs; the headline's
one-line errors with exit code 2; a small run writes its files."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from twoclock.models import MODELS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "experiments", "critical_batch.py")


def cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("args, name", [
    (["--batches", "0", "8"], "batch"), (["--lr0", "-1"], "lr0"), (["--target", "1.5"], "target"),
    (["--drift-threshold", "0"], "drift_threshold"), (["--budget", "4", "--batches", "8"], "budget"),
    (["--optimizer", "lion"], "optimizer"), (["--lr-rule", "cube"], "lr_rule"), (["--dim", "0"], "dim"),
    (["--model", "nope"], "model"), (["--batches", "eight"], "--batches"),
])
def test_bad_input_is_one_line_and_exit_2(args, name):
    p = cli(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "Traceback" not in p.stderr


def test_small_run_writes_schema_json_and_figure(tmp_path):
    out = tmp_path / "out"
    p = cli("--batches", "8", "32", "--lr0", "1e-2", "2e-2", "--seeds", "4", "--budget", "6000",
            "--dim", "8", "--drift-bias", "0.1", "--target", "0.2", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "critical batch" in p.stdout and "N_prog" in p.stdout
    res = json.loads((out / "critical_batch_quadratic.json").read_text())
    assert {"runs", "critical_batch", "config", "versions"} <= set(res)
    assert len(res["runs"]) == 4
    for r in res["runs"]:
        assert {"batch", "lr", "lr0", "lr_rule", "optimizer"} <= set(r)
        for k in ("progress_samples", "failure_samples", "progress_updates"):
            assert set(r[k]) == {"median", "ci", "reached", "seeds"} and r[k]["seeds"] == 4
        assert r["lr"] == pytest.approx(r["lr0"] * (r["batch"] / 8) ** 0.5, rel=1e-12)
    assert [c["lr0"] for c in res["critical_batch"]] == [1e-2, 2e-2]
    assert res["config"]["model"]["dim"] == 8 and res["config"]["sweep"]["budget"] == 6000
    for ext in ("png", "pdf"):
        assert (out / f"critical_batch_quadratic.{ext}").stat().st_size > 1000


def test_float32_and_float64_clocks_agree(tmp_path):
    args = ["--batches", "8", "64", "--lr0", "1e-2", "--seeds", "24", "--budget", "20000",
            "--dim", "16", "--drift-bias", "0.05", "--target", "0.1", "--no-figure", "--quiet",
            "--no-store"]
    res = {}
    for name, extra in (("f32", []), ("f64", ["--x64"])):
        p = cli(*args, *extra, "--json", str(tmp_path / f"{name}.json"))
        assert p.returncode == 0, p.stderr
        res[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert res["f64"]["config"]["x64"] and not res["f32"]["config"]["x64"]
    for r32, r64 in zip(res["f32"]["runs"], res["f64"]["runs"]):
        for k in ("progress_samples", "failure_samples"):
            # different precision draws different noise, so compare as two samples: the
            # medians may differ by at most the sum of their 95% CI half-widths.
            a, b = r32[k], r64[k]
            half = sum((s["ci"][1] - s["ci"][0]) / 2 for s in (a, b))
            assert abs(a["median"] - b["median"]) <= half, (k, a, b)


def test_bandit_run_has_the_quadratic_schema_plus_its_extras(tmp_path):
    p = cli("--model", "bandit", "--batches", "64", "128", "--seeds", "3", "--budget", "4096",
            "--no-figure", "--quiet", "--no-store", "--json", str(tmp_path / "b.json"))
    assert p.returncode == 0, p.stderr
    res = json.loads((tmp_path / "b.json").read_text())
    assert res["unit"] == "responses" and len(res["critical_batch"]) == 1
    for r in res["runs"]:
        for k in ("progress_samples", "failure_samples", "progress_updates", "collapse_samples"):
            assert set(r[k]) == {"median", "ci", "reached", "seeds"} and r[k]["seeds"] == 3
        assert r["prompts"] * r["group"] == r["batch"]
        assert r["theory"]["failure_samples"] > 0
        assert set(r["noise_scale"]) == set(r["regime"]) == {"skill", "drift"}


def script(name: str):
    """An experiment script as a module (importing it runs nothing)."""
    spec = importlib.util.spec_from_file_location(f"exp_{name}",
                                                  os.path.join(ROOT, "experiments", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["critical_batch", "schedule", "time_to_target",
                                  "phase_diagram"])
def test_experiment_scripts_are_thin(name):
    with open(os.path.join(ROOT, "experiments", f"{name}.py")) as f:
        text = f.read()
    assert len(text.splitlines()) < 100 and "sys.path" not in text


@pytest.mark.parametrize("model", ["quadratic", "bandit"])
def test_schedule_flags_take_the_models_defaults_and_given_flags_win(model):
    parse = script("schedule").parse
    d = MODELS[model].studies["schedule"]
    _, mcfg, opt, sweep, cfg, thr, _ = parse(["--model", model])
    assert mcfg.drift_threshold == d["model"]["drift_threshold"]
    assert sweep.batches == (d["study"]["batch_small"], d["study"]["batch_large"])
    assert sweep.lr0s == (d["study"]["lr0"],) and sweep.budget == d["sweep"]["budget"]
    assert thr.responses_per_sample == d["study"]["responses_per_sample"]
    _, mcfg, opt, sweep, cfg, thr, _ = parse(["--model", model, "--drift-threshold", "0.3",
                                              "--budget", "50000", "--knee", "2"])
    assert (mcfg.drift_threshold, sweep.budget, thr.model.knee) == (0.3, 50000, 2.0)


@pytest.mark.parametrize("name", ["schedule", "time_to_target", "phase_diagram"])
def test_adams_flags_have_one_spelling(name):
    opt = next(v for v in script(name).parse(["--beta1", "0.8", "--beta2", "0.99"])
               if type(v).__name__ == "OptimConfig")
    assert (opt.beta1, opt.beta2) == (0.8, 0.99)
