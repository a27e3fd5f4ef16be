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
           "plan_check")
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
