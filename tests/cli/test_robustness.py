"""Never lose a result: bad input exits 2 in one line before simulating (paths, derived values,
distributed flags, huge grids); a failure after simulating saves the clocks; every non-finite
number is written as null with a reason; the Python API names its bad arguments. The headline
command is fuzzed with generated argument lists, valid and invalid."""
from contextlib import redirect_stderr, redirect_stdout
import io
import json
import math
import os
from unittest import mock

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from twoclock import BanditConfig, OptimConfig, QuadraticConfig, SweepConfig
from twoclock import atomic
from twoclock.cli import engine_flags, rescue as rescue_mod, run_study
from twoclock.studies import STUDIES
from twoclock.analysis import results
from twoclock import run_sweep
from twoclock.engine.layout import _duration
from twoclock.models import get as get_model
from twoclock.engine.sweep import check_fits
from twoclock.models import MODELS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--batches", "4", "8", "--lr0", "1e-2", "--seeds", "3", "--budget", "320", "--dim", "4",
        "--drift-dim", "2", "--drift-bias", "0.1", "--target", "0.3", "--n-ckpt", "4",
        "--quiet"]


def run_main(argv):
    """The headline's main in this process: (exit code, stdout, stderr). Without runtime.setup, whose
    device count and compilation cache would outlive the call."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), mock.patch("twoclock.cli.run_study.setup"):
        try:
            code = run_study.main(STUDIES.headline, list(argv), "critical_batch.py")
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def never_simulated():
    return mock.patch("twoclock.studies.headline.run_sweep", side_effect=AssertionError("simulated"))


def strict_load(text: str):
    def refuse(c):
        raise AssertionError(f"non-strict JSON constant {c}")
    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------ refused before simulating

BAD = [
    (["--delta", "inf"], "delta"), (["--delta", "nan"], "delta"), (["--delta", "0"], "delta"),
    (["--json", "/proc/x.json"], "--json"), (["--json", "{file}/x.json"], "--json"),
    (["--json", "{dir}"], "--json"), (["--out", "/proc/d"], "--out"),
    (["--out", "{file}"], "--out"), (["--store", "/proc/s"], "--store"),
    (["--seed", str(2**64)], "seed"), (["--seed", str(2**32)], "seed"),
    (["--seeds", str(10**21)], "seeds"), (["--lr0", "0.01", "0.01"], "lr0"),
    (["--max-lanes", "0"], "--max-lanes"), (["--resume", "--no-store"], "--resume"),
    (["--store", "s", "--no-store"], "--store"),
    (["--coordinator", "127.0.0.1:1234"], "--coordinator"),
    (["--num-processes", "2"], "--num-processes"), (["--process-id", "0"], "--process-id"),
    (["--distributed", "--num-processes", "2", "--process-id", "0"], "--coordinator"),
    (["--distributed", "--coordinator", "h:1", "--num-processes", "0", "--process-id", "0"],
     "--num-processes"),
    (["--distributed", "--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
     "--process-id"),
    (["--distributed", "--coordinator", "h", "--num-processes", "2", "--process-id", "0"],
     "--coordinator"),
    (["--model", "bandit", "--clip-low", "abc"], "--clip-low"),
    (["--model", "bandit", "--batches", "60", "128"], "batch"),
]


@pytest.mark.parametrize("args, name", BAD)
def test_bad_input_is_one_line_exit_2_before_simulating(tmp_path, monkeypatch, args, name):
    for v in engine_flags.CLUSTER_ENV:
        monkeypatch.delenv(v, raising=False)
    (tmp_path / "file").write_text("a file, not a folder")
    (tmp_path / "dir").mkdir()
    args = [a.format(file=tmp_path / "file", dir=tmp_path / "dir") for a in args]
    with never_simulated():
        code, out, err = run_main([*TINY, "--out", str(tmp_path / "out"), *args])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and name in lines[0] and not out, (code, out, err)


def test_a_grid_that_cannot_fit_is_refused_with_its_estimate(tmp_path, monkeypatch):
    spec, cfg = get_model("quadratic"), QuadraticConfig(dim=4, drift_dim=2)
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2,), seeds=100_000, budget=320, n_ckpt=4)
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", "1P")  # a limit counts the process's memory
    est = check_fits(spec, cfg, OptimConfig(), sweep, 16384, 1)
    own = est.process_bytes
    # room for the results, the compile and a tenth of one default chunk: refused, with a
    # max_lanes that fits
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT",
                       str(own + est.result_bytes + est.compile_bytes + est.chunk_bytes // 10))
    with pytest.raises(atomic.Refused, match=r"cannot fit.*max_lanes \(--max-lanes\) (\d+)") as e:
        check_fits(spec, cfg, OptimConfig(), sweep, 16384, 1)
    lanes = int(e.value.args[0].rsplit("--max-lanes) ", 1)[1].split()[0])
    assert 1 <= lanes < 16384
    assert check_fits(spec, cfg, OptimConfig(), sweep, lanes, 1).fits()
    # no room for the results themselves: no max_lanes helps
    monkeypatch.setenv("TWOCLOCK_MEMORY_LIMIT", str(own + est.result_bytes // 2))
    with pytest.raises(atomic.Refused, match="fewer seeds"):
        check_fits(spec, cfg, OptimConfig(), sweep, 1, 1)
    # the command line: one line with the estimate, nothing compiled
    with mock.patch("twoclock.engine.sweep._run", side_effect=AssertionError("simulated")):
        code, _, err = run_main([*TINY, "--seeds", "100000", "--no-store", "--no-figure",
                                 "--out", str(tmp_path)])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot fit in memory" in err, err


def test_the_estimate_is_shown_before_the_sweep(capsys):
    run_sweep(MODELS["quadratic"], QuadraticConfig(dim=4, drift_dim=2), OptimConfig(),
              SweepConfig(batches=(4,), lr0s=(1e-2,), seeds=2, budget=40, n_ckpt=2))
    err = capsys.readouterr().err
    assert "2 runs in 1 chunk," in err and "memory ~" in err and "available" in err


# ------------------------------------------------------------------ failures after simulating

@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store for the tests below: one simulation, then every run reuses its chunks."""
    return str(tmp_path_factory.mktemp("store"))


def test_a_failure_after_simulating_saves_the_clocks(tmp_path, store, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("derived quantity exploded")
    monkeypatch.setattr(results, "critical_batches", boom)
    code, _, err = run_main([*TINY, "--store", store, "--out", str(tmp_path)])
    partial = tmp_path / "critical_batch_quadratic.partial.json"
    assert code == rescue_mod.EXIT_AFTER_SIMULATION and err.count("\n") == 1, err
    assert "RuntimeError: derived quantity exploded after simulating" in err
    assert str(partial) in err and store in err  # where the clocks and the chunks are
    saved = strict_load(partial.read_text())
    res = run_sweep(MODELS["quadratic"], QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.1, target=0.3),
                    OptimConfig(), SweepConfig(batches=(4, 8), lr0s=(1e-2,), seeds=3, budget=320,
                                               n_ckpt=4), quiet=True)
    (sim,) = saved["simulations"]
    assert sim["clocks"]["prog_n"] == res.prog_n.tolist()
    assert sim["clocks"]["fail_n"] == res.fail_n.tolist()
    assert "derived quantity exploded" in saved["error"]


@pytest.mark.parametrize("broken", ["figure", "table"])
def test_a_failing_figure_or_table_keeps_the_json(tmp_path, store, monkeypatch, broken):
    def boom(*a, **k):
        raise ValueError(f"{broken} broke")
    target = ("twoclock.figures.critical_batch.clocks_vs_batch_figure" if broken == "figure"
              else "twoclock.analysis.report.clock_table")
    monkeypatch.setattr(target, boom)
    code, out, err = run_main([*TINY, "--store", store, "--out", str(tmp_path)])
    path = tmp_path / "critical_batch_quadratic.json"
    assert code == rescue_mod.EXIT_AFTER_SIMULATION and err.count("\n") == 1, err
    assert f"ValueError: {broken} broke after writing {path}" in err
    assert len(strict_load(path.read_text())["runs"]) == 2
    if broken == "figure":  # the table came first
        assert out.index("N_prog") < out.index("wrote")
    assert not (tmp_path / "critical_batch_quadratic.partial.json").exists()


def test_a_non_finite_number_anywhere_is_written_as_null_with_a_reason(tmp_path, store,
                                                                         monkeypatch):
    real = results.critical_batches

    def with_inf(*a, **k):
        return [{**c, "found": math.inf, "ci": [-math.inf, math.nan]} for c in real(*a, **k)]
    monkeypatch.setattr(results, "critical_batches", with_inf)
    code, _, err = run_main([*TINY, "--store", store, "--out", str(tmp_path), "--no-figure"])
    assert code == 0, err
    res = strict_load((tmp_path / "critical_batch_quadratic.json").read_text())
    assert res["critical_batch"][0]["found"] is None and res["critical_batch"][0]["ci"] == [None,
                                                                                         None]
    assert res["non_finite"] == {"/critical_batch/0/found": "inf",
                                 "/critical_batch/0/ci/0": "-inf", "/critical_batch/0/ci/1": "nan"}


def _leaves(x, where=()):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, where + (k,))
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            yield from _leaves(v, where + (i,))
    else:
        yield where, x


numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                    st.floats(width=32).map(np.float32), st.none(), st.booleans(), st.text(max_size=3))
json_like = st.recursive(numbers, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text("ab/~", max_size=3), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=200)
@given(st.dictionaries(st.text("xyz", max_size=2), json_like, max_size=4))
def test_the_writer_nulls_exactly_the_non_finite_numbers(obj):
    out = strict_load(atomic.dumps(obj))
    bad = {where: v for where, v in _leaves(obj)
           if isinstance(v, (float, np.floating)) and not math.isfinite(v)}
    assert set(out.pop("non_finite", {})) == {atomic._pointer(w) for w in bad}
    for where, v in _leaves(obj):
        got = out
        for k in where:
            got = got[k]
        if where in bad:
            assert got is None
        elif isinstance(v, (float, np.floating)):
            assert got == float(v)
        else:
            assert got == v


# ---------------------------------------------------------------------------- the Python API

@pytest.mark.parametrize("args, name", [
    (("foo", QuadraticConfig(), OptimConfig(), SweepConfig()), "model"),
    ((MODELS["quadratic"], {"dim": 8}, OptimConfig(), SweepConfig()), "model_cfg"),
    ((MODELS["quadratic"], BanditConfig(), OptimConfig(), SweepConfig()), "model_cfg"),
    ((MODELS["quadratic"], QuadraticConfig(), "adam", SweepConfig()), "opt"),
    ((MODELS["quadratic"], QuadraticConfig(), OptimConfig(), {"seeds": 2}), "sweep"),
])
def test_run_sweep_names_a_bad_argument(args, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        run_sweep(*args, quiet=True)


def test_numpy_numbers_make_the_same_configuration():
    a = SweepConfig(batches=np.array([8, 16]), lr0s=(np.float64(0.01),), seeds=np.int32(4),
                    budget=np.int64(1000), seed=np.uint32(3))
    b = SweepConfig(batches=(8, 16), lr0s=(0.01,), seeds=4, budget=1000, seed=3)
    assert a == b and type(a.batches[0]) is int and type(a.seeds) is int
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        SweepConfig(batches=(np.float64(8.0),))


# ------------------------------------------------------------------------------------ the fuzz

def _flag(name, values):
    return st.tuples(st.just(name), values)


QUAD_VALID = [
    _flag("--batches", st.lists(st.sampled_from([2, 4, 8, 16]), min_size=1, max_size=3,
                                unique=True)),
    _flag("--lr0", st.lists(st.sampled_from([1e-3, 1e-2, 5e-2]), min_size=1, max_size=2,
                            unique=True)),
    _flag("--seeds", st.integers(1, 3)), _flag("--dim", st.integers(1, 6)),
    _flag("--drift-dim", st.integers(0, 3)), _flag("--target", st.sampled_from([0.1, 0.5, 0.9])),
    _flag("--drift-bias", st.sampled_from([0.0, 0.1, 1.0])), _flag("--n-ckpt", st.integers(1, 8)),
    _flag("--optimizer", st.sampled_from(["sgd", "momentum", "adam"])),
    _flag("--lr-rule", st.sampled_from(["fixed", "sqrt", "linear"])),
    _flag("--delta", st.sampled_from([0.05, 0.2, 3.0])), _flag("--max-lanes", st.integers(1, 9)),
    _flag("--seed", st.sampled_from([0, 7, 2**32 - 1])), _flag("--alpha", st.sampled_from([0, 2])),
    _flag("--gamma", st.sampled_from([0, 2])), _flag("--drift-stat", st.just("norm")),
    st.sampled_from([("--rotate", []), ("--random-start", []), ("--malladi", [])]),
    _flag("--sigma", st.sampled_from([1e-3, 10.0])), _flag("--h-max", st.sampled_from([0.1, 50.0])),
]
# each is invalid whatever the rest of a valid command line says
INVALID = st.sampled_from([
    ["--seeds", "0"], ["--seeds", "-2"], ["--seeds", "1.5"], ["--seeds", str(10**21)],
    ["--seed", "-1"], ["--seed", str(2**64)], ["--budget", "1"], ["--budget", str(2**31)],
    ["--lr0", "nan"], ["--lr0", "inf"], ["--lr0", "0"], ["--lr0", "1e-2", "1e-2"],
    ["--batches", "0"], ["--batches", "4", "4"], ["--batches", "x"], ["--batches"],
    ["--dim", "0"], ["--target", "1"], ["--target", "nan"], ["--delta", "inf"],
    ["--delta", "-1"], ["--max-lanes", "0"], ["--n-ckpt", "0"], ["--optimizer", "lion"],
    ["--lr-rule", "foo"], ["--model", "nope"], ["--json", "/proc/x.json"], ["--out", "/proc/d"],
    ["--resume", "--no-store"], ["--coordinator", "h:1"], ["--process-id", "1"],
    ["--beta1", "1"], ["--eps", "-1"], ["--b0", "0"], ["--b0", "inf"], ["--drift-stat", "x"],
    ["--init-seed", "-1"], ["--no-such-flag"], ["--sigma", "nan"], ["--momentum", "1"],
])


def _argv(pairs):
    argv = []
    for flag, v in pairs:
        argv += [flag, *map(str, v if isinstance(v, list) else [v])]
    return argv


@settings(max_examples=60)
@given(st.lists(st.one_of(QUAD_VALID), max_size=6), INVALID, st.booleans())
def test_fuzz_invalid_input_exits_2_in_one_line_before_simulating(tmp_path_factory, valid, bad,
                                                                   bandit):
    head = ["--model", "bandit", "--budget", "4096"] if bandit else ["--budget", "320"]
    rest = [p for p in valid if not bandit or p[0] in ("--seeds", "--n-ckpt", "--seed")]
    json_path = str(tmp_path_factory.getbasetemp() / "fuzz" / "x.json")
    with never_simulated():
        code, out, err = run_main([*head, *_argv(rest), "--no-store", "--no-figure", "--quiet",
                                   "--json", json_path, *bad])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err and not out, (bad, err)


def _fuzz_valid(argv, tmp):
    path = os.path.join(tmp, "r.json")
    code, out, err = run_main([*argv, "--no-store", "--no-figure", "--quiet", "--json", path])
    if code == 2:  # a combination the model refuses: one line, nothing written
        assert len(err.strip().splitlines()) == 1 and not os.path.exists(path), err
        return
    assert code == 0, err
    with open(path) as f:
        res = strict_load(f.read())
    os.remove(path)
    assert len(res["runs"]) == len(res["config"]["sweep"]["batches"]) * len(
        res["config"]["sweep"]["lr0s"])


@settings(max_examples=4)  # each compiles a program: a few seconds apiece
@given(st.lists(st.one_of(QUAD_VALID), max_size=6))
def test_fuzz_valid_quadratic_input_gives_strict_json_or_exit_2(tmp_path_factory, valid):
    _fuzz_valid(["--budget", "64", "--batches", "4", "16", *_argv(valid)],
                str(tmp_path_factory.mktemp("fuzz")))


@settings(max_examples=2)
@given(st.sampled_from([["--batches", "16"], ["--batches", "24"], ["--batches", "64"]]),
       st.integers(1, 2), st.sampled_from(["grpo", "drgrpo", "rloo"]),
       st.sampled_from(["0.2", "none"]))
def test_fuzz_valid_bandit_input_gives_strict_json_or_exit_2(tmp_path_factory, batches, seeds,
                                                              adv, clip):
    _fuzz_valid(["--model", "bandit", *batches, "--seeds", str(seeds), "--budget", "256",
                 "--n-ckpt", "4", "--advantage", adv, "--clip-low", clip, "--n-train", "16",
                 "--n-test", "16"], str(tmp_path_factory.mktemp("fuzz")))


def test_paper_figures_checks_its_folders_before_running_anything(tmp_path):
    import subprocess
    import sys
    (tmp_path / "file").write_text("not a folder")
    for flag in ("--out", "--results"):
        p = subprocess.run([sys.executable, "-m", "paper_figures", flag, str(tmp_path / "file")],
                           cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and flag in lines[0] and not p.stdout, p


def test_every_simulation_is_kept_inside_a_rescue(tmp_path):
    from twoclock.config import Schedule
    from twoclock.engine.schedule import run_schedule
    cfg = QuadraticConfig(dim=4, drift_dim=2)
    with pytest.raises(SystemExit) as e, redirect_stderr(io.StringIO()):
        with rescue_mod.Rescue("t", str(tmp_path / "r.json")) as r:
            res = run_sweep(MODELS["quadratic"], cfg, OptimConfig(), SweepConfig(
                batches=(4,), lr0s=(1e-2,), seeds=2, budget=40, n_ckpt=2), quiet=True,
                keep=r.keep)
            sch = run_schedule(MODELS["quadratic"], cfg, OptimConfig(), Schedule(4, 8, 16),
                               (1e-2,), seeds=2, budget=40, n_ckpt=2, keep=r.keep)
            raise RuntimeError("after both")
    assert e.value.code == rescue_mod.EXIT_AFTER_SIMULATION
    saved = strict_load((tmp_path / "r.partial.json").read_text())["simulations"]
    assert [s["what"] for s in saved] == ["run_sweep quadratic", "run_schedule quadratic"]
    assert saved[0]["clocks"]["prog_n"] == res.prog_n.tolist()
    assert saved[1]["clocks"]["fail_n"] == sch["fail_n"].tolist()


def test_the_estimates_duration_keeps_two_figures_below_ten_seconds():
    assert [_duration(s) for s in (0.0375, 0.375, 3.75, 37.5, 375.0, 37500.0)] == [
        "0.037 s", "0.38 s", "3.8 s", "38 s", "6 min", "10.4 h"]
