"""Every experiment script refuses invalid input with one line and exit code 2, before it
compiles or simulates anything (the headline's own fuzz, valid inputs included, is in
test_robustness.py)."""
import contextlib
import json
import importlib.util
import io
from pathlib import Path
from unittest import mock

import jax
import pytest
from hypothesis import given, settings, strategies as st

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
SCRIPTS = ("schedule", "time_to_target", "phase_diagram", "clipping", "bandit_regimes", "plan",
           "plan_check", "plan_calibration")
FLAGS = ("--seeds", "--budget", "--seed", "--n-ckpt", "--lr0", "--batches", "--beta1",
         "--beta2", "--margin", "--level", "--predict")
BAD = ("abc", "-1", "nan", "inf")  # invalid for every one of FLAGS


def _load(name):
    spec = importlib.util.spec_from_file_location(f"exp_{name}", EXPERIMENTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MODULES = {name: _load(name) for name in SCRIPTS}


def run_script(name, argv, tmp):
    """(exit code, stderr) of the script's main(argv), with compiling made an error."""
    err = io.StringIO()
    with mock.patch.object(jax, "jit", side_effect=AssertionError("compiled")), \
            mock.patch("twoclock.engine.runtime.setup"), \
            contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        with pytest.raises(SystemExit) as e:
            MODULES[name].main([*argv, "--out", str(tmp), "--quiet"])
    return e.value.code, err.getvalue()


@settings(max_examples=60)
@given(st.sampled_from(SCRIPTS), st.sampled_from(FLAGS), st.sampled_from(BAD))
def test_invalid_input_exits_2_with_one_line_before_compiling(tmp_path_factory, name, flag,
                                                              bad):
    code, err = run_script(name, [flag, bad], tmp_path_factory.mktemp("fuzz"))
    assert code == 2, (name, flag, bad, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_unwritable_output_is_refused_before_compiling(tmp_path, name):
    (tmp_path / "file").write_text("a file, not a folder")
    code, err = run_script(name, ["--json", str(tmp_path / "file" / "x.json")], tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--json" in err, err


SMALL_VALID = {  # a tiny valid run of each simulating script
    "time_to_target": ["--seeds", "2", "--budget", "640", "--batches", "8", "16", "--n-ckpt", "4"],
    "phase_diagram": ["--models", "quadratic", "--seeds", "2", "--budget", "640", "--batches",
                      "8", "16", "--lr0", "0.01", "0.02", "--n-ckpt", "4", "--theory-points",
                      "2"],
    "schedule": ["--seeds", "2", "--budget", "640", "--batch-small", "8", "--batch-large", "32",
                 "--n-ckpt", "4"],
    "clipping": ["--seeds", "2", "--budget", "512", "--batches", "64", "128", "--clips", "0.2",
                 "none", "--early-samples", "128"],
}


@settings(max_examples=len(SMALL_VALID))
@given(st.sampled_from(sorted(SMALL_VALID)), st.sampled_from(["0", "7"]))
def test_a_small_valid_run_writes_strict_json_or_exits_2(tmp_path_factory, name, seed):
    """Every valid small input finishes with strict JSON (no NaN or inf tokens) or exits 2."""
    tmp = tmp_path_factory.mktemp("valid")
    err = io.StringIO()
    with mock.patch("twoclock.engine.runtime.setup"), contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        try:
            code = MODULES[name].main([*SMALL_VALID[name], "--seed", seed, "--out", str(tmp),
                                       "--quiet", "--no-figure"])
        except SystemExit as e:
            code = e.code
    if code == 2:
        assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
        return
    assert code in (0, None), err.getvalue()
    paths = list(tmp.glob("*.json"))
    assert len(paths) == 1

    def refuse(token):
        raise AssertionError(f"{name}: non-standard JSON token {token}")
    json.loads(paths[0].read_text(), parse_constant=refuse)


# values at the edges of each float parameter's range, in float32 and in float64 (issue 24):
# valid for the configuration, some of them not for the simulation's type
EDGES = [("--beta1", "0.99999999"), ("--beta2", "0.99999999"), ("--beta2", "0.9999999"),
         ("--beta2", repr(1 - 2**-53)), ("--beta1", "0"), ("--lr0", "1e-45"),
         ("--lr0", "3e38"), ("--lr0", "1e300"), ("--lr0", "5e-324"), ("--b0", "1e-300"),
         ("--b0", "1e300"), ("--eps", "1e-320"), ("--eps", "3.5e38"), ("--sigma", "1e20"),
         ("--sigma", "1e-30")]
EDGE_SCRIPTS = {  # the headline (float32, or float64 with --x64) and two studies, tiny sweeps
    "critical_batch": ["--batches", "4", "8", "--lr0", "0.01", "--seeds", "2", "--budget",
                       "160", "--dim", "4", "--drift-dim", "2", "--n-ckpt", "2", "--no-store"],
    "time_to_target": SMALL_VALID["time_to_target"],
    "schedule": SMALL_VALID["schedule"],
}


def _main(name):
    if name == "critical_batch":
        from twoclock.cli.run_study import main
        from twoclock.studies import STUDIES
        return lambda argv: main(STUDIES.headline, argv, "critical_batch.py")
    return MODULES[name].main


@settings(max_examples=8)
@given(st.sampled_from(sorted(EDGE_SCRIPTS)), st.sampled_from(EDGES), st.booleans())
def test_edge_values_exit_0_2_or_3_in_one_line_and_lose_nothing(tmp_path_factory, name, edge,
                                                                x64):
    """Exit 0 with strict JSON; 2 with one line, nothing written; or 3 with one line and the
    clocks in the partial file. Before issue 24 --beta2 0.99999999 censored every run silently
    and --b0 1e-300 failed after simulating with a traceback naming no parameter."""
    tmp = tmp_path_factory.mktemp("edge")
    argv = [*EDGE_SCRIPTS[name], *edge, "--out", str(tmp), "--quiet", "--no-figure"]
    if x64 and name == "critical_batch":
        argv.append("--x64")
    err = io.StringIO()
    try:
        with mock.patch("twoclock.cli.run_study.setup"), \
                mock.patch("twoclock.engine.runtime.setup"), contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            try:
                code = _main(name)(argv)
            except SystemExit as e:
                code = e.code
    finally:
        jax.config.update("jax_enable_x64", False)  # --x64 sets it for the process
    lines = err.getvalue().strip().splitlines()
    assert code in (0, None, 2, 3), (name, edge, code, err.getvalue())
    if code in (0, None):
        (path,) = [p for p in tmp.glob("*.json") if not p.name.endswith(".partial.json")]
        json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(f"token {t}"))
        return
    assert len(lines) == 1 and "Traceback" not in err.getvalue(), err.getvalue()
    if code == 2:
        assert not list(tmp.glob("*.json")), lines
    else:
        assert list(tmp.glob("*.partial.json")) or "after writing" in lines[0], lines
