"""The experiment commands: each one call of the study runner, whose flags come from the
configs; one-line errors with exit code 2 before any work; a small run writes its files."""
import json
import os
import subprocess
import sys

import pytest

from twoclock.cli import run_study
from twoclock.models import MODELS
from twoclock.studies import STUDIES, schedule_study

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "experiments", "critical_batch.py")


def cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("args, name", [
    (["--batches", "0", "8"], "batch"), (["--lr0", "-1"], "lr0"), (["--target", "1.5"], "target"),
    (["--drift-threshold", "0"], "--drift-threshold"),
    (["--budget", "4", "--batches", "8"], "budget"), (["--optimizer", "lion"], "optimizer"),
    (["--lr-rule", "cube"], "--lr-rule"), (["--dim", "0"], "dim"),
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


EXPERIMENTS = ["critical_batch", "schedule", "time_to_target", "phase_diagram", "clipping",
               "bandit_regimes", "policy_study", "damage_study", "plan_check", "plan_calibration"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_scripts_are_one_call_of_the_study_runner(name):
    with open(os.path.join(ROOT, "experiments", f"{name}.py")) as f:
        text = f.read()
    code = [line for line in text.split('"""')[-1].splitlines()
            if line.strip() and not line.startswith(("import", "from"))]
    assert len(code) == 3 and "sys.path" not in text and "add_argument" not in text, code
    assert code[0].startswith("main = study_main("), code
    assert code[2].strip() == "sys.exit(main())", code


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_scripts_load_without_jax(name):
    """A script's heavy imports wait until main runs (twoclock/cli/launch.py): loading it in a
    fresh interpreter must not import JAX or the studies, or a Ctrl-C there is a traceback."""
    code = (f"import runpy, sys; runpy.run_path({os.path.join(ROOT, 'experiments', name + '.py')!r}"
            "); print(sorted(m for m in ('jax', 'twoclock.studies', 'twoclock.engine') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out


def parse(study: str, argv):
    """(model, model_cfg, opt, cfg, ns) as the study's command parses argv."""
    return run_study.parse(STUDIES[study], argv, f"{study}.py")


@pytest.mark.parametrize("model", ["quadratic", "bandit"])
def test_schedule_flags_take_the_models_defaults_and_given_flags_win(model):
    d = schedule_study.defaults(MODELS[model])
    _, mcfg, opt, cfg, _ = parse("schedule", ["--model", model])
    sweep = cfg.sweep
    assert mcfg.drift_threshold == d.model["drift_threshold"]
    assert sweep.batches == d.sweep["batches"] and len(sweep.batches) == 2
    assert sweep.lr0s == d.sweep["lr0s"] and sweep.budget == d.sweep["budget"]
    assert cfg.responses_per_sample == d.study["responses_per_sample"]
    _, mcfg, opt, cfg, _ = parse("schedule", ["--model", model, "--drift-threshold", "0.3",
                                              "--budget", "50000", "--knee", "2"])
    assert (mcfg.drift_threshold, cfg.sweep.budget, cfg.throughput.knee) == (0.3, 50000, 2.0)
    # each batch's flag sets its item of the sweep's batches, the other at its default
    b1, b2 = d.sweep["batches"]
    _, _, _, cfg, _ = parse("schedule", ["--model", model, "--batch-large", str(2 * b2),
                                         "--lr0", "0.005"])
    assert cfg.sweep.batches == (b1, 2 * b2) and cfg.sweep.lr0s == (0.005,)
    _, _, _, cfg, _ = parse("schedule", ["--model", model, "--batch-small", str(b1 // 2)])
    assert cfg.sweep.batches == (b1 // 2, b2)


@pytest.mark.parametrize("study, argv, head, got", [
    ("headline", ["--lr-rule", "cube"], "--lr-rule must be one of fixed, sqrt, linear", "'cube'"),
    ("headline", ["--batches", "8", "0"], "--batches must be an integer >= 1", "0"),
    ("headline", ["--drift-threshold", "0"], "--drift-threshold must be", "0.0"),
    ("headline", ["--seed", "-1"], "--seed must be an integer >= 0", "-1"),  # not --seeds
    ("schedule", ["--fail-quantile", "0.9"], "--fail-quantile must be in (0, 0.5]", "0.9"),
    # two flags fill the sweep's batches: the one whose value is refused
    ("schedule", ["--batch-large", "0"], "--batch-large must be an integer >= 1", "0"),
    ("schedule", ["--batch-small", "0"], "--batch-small must be an integer >= 1", "0"),
    ("damage_study", ["--quick", "--fixed-responses", "99999"], "--fixed-responses must be",
     "(99999,)"),
    ("clipping", ["--early-samples", "1"], "--early-samples must be in [64,", "1"),
], ids=["lr-rule", "batches", "drift-threshold", "seed", "fail-quantile", "batch-large",
        "batch-small", "fixed-responses", "early-samples"])
def test_a_refusal_names_the_flag_the_user_typed_not_the_config_field(study, argv, head, got):
    """The configs refuse by field (lr_rule, batch, fail_quantile); the command line's user
    typed a flag, and reads that flag in the refusal."""
    with pytest.raises(ValueError) as e:
        parse(study, argv)
    assert str(e.value).startswith(head) and str(e.value).endswith(f"(got {got})"), str(e.value)


def test_a_refusal_keeps_a_name_no_one_flag_answers_to():
    """flagged: a field's flag first (seed -> --seed beside --seeds), a list flag's item next
    (batch -> --batches), and the message as it is where no flag, or two, answer."""
    import argparse
    from twoclock.cli.flags import flagged
    p = argparse.ArgumentParser()
    for flag, dest in (("--seed", "SweepConfig.seed"), ("--seeds", "SweepConfig.seeds"),
                       ("--batches", "SweepConfig.batches"), ("--lr-rule", "OptimConfig.lr_rule"),
                       ("--clip-low", "BanditConfig.clip"), ("--clip-high", "Other.clip")):
        p.add_argument(flag, dest=dest)
    assert flagged("seed must be >= 0 (got -1)", p) == "--seed must be >= 0 (got -1)"
    assert flagged("seeds must be >= 1 (got 0)", p) == "--seeds must be >= 1 (got 0)"
    assert flagged("batch must be >= 1 (got 0)", p) == "--batches must be >= 1 (got 0)"
    assert flagged("lr_rule must be one of x (got 'y')", p) == "--lr-rule must be one of x " \
                                                                "(got 'y')"
    for message in ("clip must be > 0 (got 0)", "dim must be >= 1 (got 0)",
                    "--seeds and --seed contradict", "the seeds must be fewer"):
        assert flagged(message, p) == message
    ns = argparse.Namespace(**{"BanditConfig.clip": 0.5, "Other.clip": 0.0})
    assert flagged("clip must be > 0 (got 0.0)", p, ns) == "--clip-high must be > 0 (got 0.0)"
    # a field the allowed range names, by its flag too; the value quoted stays as it is
    p.add_argument("--batch-small", dest="S.batches[0]")
    p.add_argument("--batch-large", dest="S.batches[1]")
    assert flagged("batch_large must be > batch_small (512) (got 'batch_small')", p) == \
        "--batch-large must be > --batch-small (512) (got 'batch_small')"


@pytest.mark.parametrize("study, argv, says", [
    ("headline", ["--seeds", "2.5"], "--seeds must be an integer >= 1 (got 2.5)"),
    ("headline", ["--seeds", "eight"], "--seeds must be an integer >= 1 (got 'eight')"),
    ("headline", ["--seed", "0.5"], "--seed must be an integer >= 0 (got 0.5)"),
    ("headline", ["--batches", "8", "16.5"], "--batches must be an integer >= 1 (got 16.5)"),
    ("headline", ["--max-lanes", "2.5"], "--max-lanes must be an integer >= 1 (got 2.5)"),
    ("bandit_regimes", ["--seeds", "2.5"], "--seeds must be an integer >= 1 (got 2.5)"),
    ("clipping", ["--early-samples", "100.5"],
     "--early-samples must be an integer >= 1 (got 100.5)"),
    ("plan_check", ["--pilot-seeds", "2.5"], "--pilot-seeds must be an integer >= 1 (got 2.5)"),
], ids=["seeds", "seeds-text", "seed", "batches", "max-lanes", "bandit-seeds", "early-samples",
        "pilot-seeds"])
def test_an_integer_flag_names_itself_and_its_range(study, argv, says):
    """argparse's own refusal ("argument --seeds: invalid int value: '2.5'") named no range:
    the value reaches the config's check, which names it (and the flag, not the field)."""
    with pytest.raises(ValueError) as e:
        parse(study, argv)
    assert str(e.value) == says


def test_an_integer_flag_takes_a_whole_number_in_any_spelling():
    _, _, _, cfg, _ = parse("headline", ["--budget", "1e5", "--seeds", "4.0"])
    assert (cfg.sweep.budget, cfg.sweep.seeds) == (100_000, 4)
    assert type(cfg.sweep.budget) is int


def test_a_config_that_does_not_check_an_integer_still_gets_a_whole_number():
    """config_from_flags refuses a non-integer for an int field its config takes unchecked
    (2.5 kept, 'x' compared with a number), by its flag."""
    import argparse
    from dataclasses import dataclass
    from twoclock.cli.flags import add_config_flags, config_from_flags

    @dataclass(frozen=True)
    class Loose:
        n: int = 3
        m: int = 4

        def __post_init__(self):  # a range that reads m as a number ('x' > 100: TypeError)
            if self.m > 100:
                raise ValueError(f"m must be <= 100 (got {self.m!r})")

    p = argparse.ArgumentParser()
    add_config_flags(p, Loose)
    for argv, says in ((["--n", "2.5"], "--n must be a whole number (got 2.5)"),
                       (["--m", "x"], "--m must be a whole number (got 'x')")):
        with pytest.raises(ValueError) as e:
            config_from_flags(p.parse_args(argv), Loose)
        assert str(e.value) == says
    assert config_from_flags(p.parse_args(["--n", "7"]), Loose) == Loose(n=7)


@pytest.mark.parametrize("name", ["headline", "schedule", "time_to_target", "phase", "clipping",
                                  "plan_check"])
def test_adams_flags_have_one_spelling(name):
    _, _, opt, _, _ = parse(name, ["--beta1", "0.8", "--beta2", "0.99"])
    assert (opt.beta1, opt.beta2) == (0.8, 0.99)


@pytest.mark.parametrize("script, args, name", [
    ("time_to_target", ["--model", "bandit"], "model"),  # no time-to-target defaults
    ("clipping", ["--model", "quadratic"], "model"),  # the clipping study is the bandit's
    ("bandit_regimes", ["--cases", "9"], "cases"), ("bandit_regimes", ["--seeds", "0"], "seeds"),
    ("plan_check", ["--n-ckpt", "1"], "--n-ckpt"), ("clipping", ["--clips", "0.2"], "clips"),
    ("phase_diagram", ["--batches", "8", "16"], "--batches"),  # two models: one grid each
    ("policy_study", ["--seeds", "1"], "seeds"), ("policy_study", ["--parts", "x"], "parts"),
    # a cell's batch the model cannot split, or one the budget cannot hold (issue 33, 5)
    ("policy_study", ["--quick", "--batches", "60", "100", "--parts", "collapse"], "batch"),
    ("policy_study", ["--quick", "--budget", "32", "--parts", "collapse"], "budget"),
    # more seeds than the paired bootstrap can hold: refused at once (issue 33, 6)
    ("policy_study", ["--quick", "--seeds", "100000000", "--parts", "collapse"], "seeds"),
    ("damage_study", ["--seeds", "1"], "seeds"),
    ("damage_study", ["--quick", "--fixed-responses", "99999"], "--fixed-responses"),
    # appended, so that the cases above keep their ids (tests/slow_in_ci.txt names them)
    ("plan_check", ["--pilots", "16", "32", "64"], "--pilots"),  # the CSV check has its own
    ("plan_check", ["--logs", "--pilots", "16", "16", "32"], "--pilots"),
    ("plan_check", ["--logs", "--pilots", "16", "32", "1000000"], "--pilots"),  # past budget
    # no eps beside 'none' (it had simulated, then failed reading its claims), a repeat, 0
    ("clipping", ["--clips", "none", "none"], "clips"),
    ("clipping", ["--clips", "0.2", "0.2", "none"], "clips"),
    ("clipping", ["--clips", "0", "none"], "clips"),
    ("updates_cost", ["--lr0s", "0.05", "0.05"], "lr0s"),
    ("updates_cost", ["--updates", "1", "1", "2"], "updates"),
    ("shapes", ["--models", "quadratic", "--lr0", "0.01", "0.02"], "lr0"),  # one lr0 is used
])
def test_a_study_refuses_bad_input_in_one_line_before_any_work(script, args, name):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", f"{script}.py"),
                        *args, "--no-figure", "--out", os.devnull + "_never"],
                       capture_output=True, text=True, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert name in lines[0] and "Traceback" not in p.stderr and not p.stdout
