"""The edge-value fuzz of test_scripts_fuzz.py extended (issue 33 item 9) to the policy model
and to `experiments/policy_study.py`, in float32 and float64, and to `plan.py --logs`, on a
log written at float64 and at float32 precision. Promise: exit 0 with strict JSON, or 2 with
one line and nothing written, or 3 with one line and the clocks kept; for the policy, a refusal comes before its warm-up or sweep."""
import contextlib
import csv
import io
import json
import os
from unittest import mock

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.cli.test_robustness import run_main
from tests.cli.test_scripts_fuzz import MODULES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

POLICY = ["--model", "policy", "--batches", "16", "--seeds", "1", "--budget", "32",
          "--n-train", "256", "--n-test", "32", "--n-ood", "32", "--d-model", "16",
          "--n-heads", "2", "--d-mlp", "32", "--warmup-steps", "4", "--warmup-eval-every", "2",
          "--warmup-batch", "32", "--no-figure", "--quiet", "--no-store"]
# valid for the configuration; some of them not in float32 (or in float64)
POLICY_EDGES = [("--warmup-lr", "1e-300"), ("--warmup-lr", "3.5e38"), ("--warmup-lr", "5e-324"),
                ("--warmup-noise", "0.99999999"), ("--warmup-end-b", "1e-320"),
                ("--adv-eps", "1e-46"), ("--adv-eps", "1e300"), ("--kl-coef", "3.5e38"),
                ("--kl-coef", "1e-320"), ("--clip-low", "1e-46"), ("--clip-high", "1e39"),
                ("--null-threshold", "1e-300"), ("--kl-threshold", "1e20"),
                ("--entropy-threshold", "1e-46"), ("--eps", "1e-320"), ("--lr0", "1e-45"),
                ("--beta2", "0.99999999"), ("--target", "1e-300")]


class Reached(Exception):
    """The run got past every check (the warm-up or the sweep would start)."""


def _policy(argv, x64: bool):
    """(exit code or 'reached', stderr) of the headline on the policy, stopped where the
    estimate would start: nothing traced, trained or simulated."""
    def stop(*a, **k):
        raise Reached()
    # stopped at the estimate (it traces the policy: seconds apiece); its own refusals are
    # tested in tests/models/test_warmup_cache.py
    with mock.patch("twoclock.models.policy.warmup.train", stop), \
            mock.patch("twoclock.engine.sweep.check_fits", stop):
        try:
            code, _, err = run_main([*argv, *(["--x64"] if x64 else [])])
        except Reached:
            return "reached", ""
        finally:
            jax.config.update("jax_enable_x64", False)
    return code, err


@settings(max_examples=24)
@given(st.sampled_from(POLICY_EDGES), st.booleans())
def test_policy_edge_values_are_refused_in_one_line_before_any_work_or_pass(tmp_path_factory,
                                                                            edge, x64):
    tmp = tmp_path_factory.mktemp("pedge")
    code, err = _policy([*POLICY, *edge, "--out", str(tmp)], x64)
    if code == "reached":
        return
    assert code == 2, (edge, x64, code, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not list(tmp.glob("*.json"))


def test_float32_refuses_what_float64_holds_for_the_policy(tmp_path):
    """An oracle for the fuzz above: 1e-300 is 0 in float32 and itself in float64."""
    code, err = _policy([*POLICY, "--warmup-lr", "1e-300", "--out", str(tmp_path)], False)
    assert code == 2 and "warmup_lr must be finite, and nonzero unless given as 0, in " \
        "float32" in err, err
    assert _policy([*POLICY, "--warmup-lr", "1e-300", "--out", str(tmp_path)], True)[0] \
        == "reached"


@pytest.mark.slow
@settings(max_examples=3)
@given(st.sampled_from([("--kl-coef", "1e-320"), ("--adv-eps", "1e300"),
                        ("--clip-high", "1e39")]), st.booleans())
def test_policy_edge_values_that_pass_run_to_strict_json(tmp_path_factory, edge, x64):
    tmp = tmp_path_factory.mktemp("prun")
    try:
        code, _, err = run_main([*POLICY, *edge, "--out", str(tmp),
                                 *(["--x64"] if x64 else [])])
    finally:
        jax.config.update("jax_enable_x64", False)
    assert code in (0, None, 2, 3), err
    if code in (0, None):
        (path,) = tmp.glob("critical_batch_policy.json")
        json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(f"token {t}"))
    else:
        assert len(err.strip().splitlines()) == 1, err


# ------------------------------------------------------------------- policy_study.py

# early held-out accuracy read within the budget (the default, 2048, is refused here)
STUDY = ["--seeds", "2", "--budget", "256", "--batches", "64", "128", "--early-samples", "128",
         "--no-figure", "--quiet"]
# valid for the study's own ranges; some of them not for its cells (an lr that is 0 or inf in
# the simulation's type, a checkpoint grid finer than the updates, more seeds than fit)
STUDY_EDGES = [("--lr0", "1e-300"), ("--lr0", "5e-324"), ("--lr0", "3.5e38"),
               ("--lr0", "1e300"), ("--unstable-factor", "1e300"),
               ("--unstable-factor", "1e-320"), ("--clip-lr-factor", "1e-46"),
               ("--clip-lr-factor", "1e39"), ("--early-samples", str(2**62)),
               ("--early-samples", "1"), ("--n-ckpt", str(10**9)), ("--budget", str(2**62)),
               ("--budget", "1"), ("--seeds", str(10**8)), ("--batches", "64", str(2**53)),
               ("--batches", "1", "2"), ("--batches", "64", "63"), ("--seed", str(2**64)),
               ("--seed", "-1"), ("--max-lanes", str(10**9))]
STUDY_PARTS = [("rules",), ("clip",), ("collapse",), ("adam",), ("variants",),
               ("rules", "clip", "collapse", "adam")]


def _study(argv, x64: bool):
    """(exit code or 'reached', stderr) of policy_study.py's main in this process, stopped
    where its first warm-up, sweep or Adam measurement would start."""
    from twoclock.cli import run_study
    from twoclock.studies import STUDIES

    def stop(*a, **k):
        raise Reached()
    err = io.StringIO()
    jax.config.update("jax_enable_x64", x64)
    with mock.patch("twoclock.models.policy.warmup.train", stop), \
            mock.patch("twoclock.engine.sweep.check_fits", stop), \
            mock.patch("twoclock.models.policy.adam_noise.measure", stop), \
            mock.patch("twoclock.cli.run_study.setup"), \
            contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = run_study.main(STUDIES.policy_study, list(argv), "policy_study.py")
        except Reached:
            return "reached", ""
        except SystemExit as e:
            code = e.code
        finally:
            jax.config.update("jax_enable_x64", False)
    return code, err.getvalue()


@settings(max_examples=40)
@given(st.sampled_from(STUDY_EDGES), st.sampled_from(STUDY_PARTS), st.booleans())
def test_policy_study_edge_values_are_refused_in_one_line_before_any_work_or_pass(
        tmp_path_factory, edge, parts, x64):
    tmp = tmp_path_factory.mktemp("sedge")
    code, err = _study([*STUDY, *edge, "--parts", *parts, "--out", str(tmp)], x64)
    if code == "reached":
        return
    assert code == 2, (edge, parts, x64, code, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not list(tmp.rglob("*.json"))


@pytest.mark.parametrize("x64", [False, True])
def test_the_study_refuses_an_lr_its_cells_would_run_as_zero(tmp_path, x64):
    """An oracle for the fuzz above, by hand: lr0 1e-300 x (64 / 8)^0.5 is 0 in float32, the
    type learning rates are passed in with x64 too; unstable_factor 1e-320 x lr0 1e-4 is 1e-324,
    0 even in float64, and only the collapse cells use it."""
    argv = [*STUDY, "--out", str(tmp_path)]
    code, err = _study([*argv, "--lr0", "1e-300", "--parts", "rules"], x64)
    assert code == 2 and "lr0 1e-300 x (64 / b0 8)^0.5" in err and "in float32" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert _study([*argv, "--unstable-factor", "1e-320", "--parts", "rules"], x64)[0] == \
        "reached"
    code, err = _study([*argv, "--unstable-factor", "1e-320", "--parts", "collapse"], x64)
    assert code == 2 and len(err.strip().splitlines()) == 1, err


# ------------------------------------------------------------------------- plan.py --logs

EXAMPLE = os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv")
PLAN = ["--progress", "heldout_acc>=0.75", "--failure", "drift>=2", "--failure", "kl>=1.5"]
PLAN_EDGES = [["--predict", "1e-300"], ["--predict", "1e300"],
              ["--predict", str(2**53 + 1)], ["--predict", "-64"], ["--margin", "0"],
              ["--margin", "1e-300"], ["--margin", "0.99999999"], ["--level", "1e-300"],
              ["--level", "0.9999999999999999"], ["--smooth", "ema:1e-300"],
              ["--smooth", "window:1e300"],
              ["--failure", "kl>=1e-320"], ["--failure", "kl>=3.5e38"],
              ["--failure", "entropy<=-1e308"], ["--progress", "heldout_acc>=1e-300"]]


@pytest.fixture(scope="module")
def float32_log(tmp_path_factory):
    """The example log with every number rounded to float32 and written as such."""
    path = tmp_path_factory.mktemp("log32") / "logs32.csv"
    with open(EXAMPLE) as f:
        rows = list(csv.reader(f))
    out = [rows[0]] + [r[:1] + [r[1]] + [repr(float(np.float32(v))) for v in r[2:]]
                       for r in rows[1:]]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(out)
    return str(path)


def _plan(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = MODULES["plan"].main(argv)
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


@settings(max_examples=34)
@given(st.sampled_from(PLAN_EDGES), st.booleans())
def test_plan_logs_edge_values_exit_0_or_2_in_one_line(tmp_path_factory, float32_log, edge,
                                                       f32):
    tmp = tmp_path_factory.mktemp("plan")
    # a second --progress replaces the first; a --failure adds a clock
    code, err = _plan(["--logs", float32_log if f32 else EXAMPLE, *PLAN, *edge,
                       "--out", str(tmp), "--no-figure", "--quiet"])
    assert code in (0, None, 2), (edge, code, err)
    if code in (0, None):
        (path,) = tmp.glob("*.json")
        json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(f"token {t}"))
        return
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (edge, err)
    assert not list(tmp.glob("*.json"))


# found by this fuzz: a subnormal batch or smoothing scale used to pass the parse-time checks
# and then warn over several lines (B / b_ref underflowed to 0 before its log; T overflowed a
# division); both are refused at parse time now (--predict >= 1, --smooth T, W >= 1)
GAPS = [["--predict", "5e-324"], ["--smooth", "ema:5e-324"]]


@pytest.mark.parametrize("edge", GAPS)
def test_plan_logs_subnormal_values_are_one_line(tmp_path, edge):
    code, err = _plan(["--logs", EXAMPLE, *PLAN, *edge, "--out", str(tmp_path), "--no-figure",
                       "--quiet"])
    assert code in (0, None, 2) and len(err.strip().splitlines()) <= 1, err
