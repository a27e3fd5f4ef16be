"""Reliability, third round (issue 33 items 7, 8): negative numbers reach the range check,
one rule for values that round to zero, JAX_PLATFORMS=cuda without a GPU refused in one line,
identity.json checked when a finished store is reused."""
import json
import os
import subprocess
import sys

import pytest

from tests.cli.test_reliability import ROOT, _same, _store, _sweep
from tests.cli.test_robustness import TINY, run_main
from twoclock import OptimConfig, QuadraticConfig
from twoclock.atomic import Refused
from twoclock.engine import dtypes
from twoclock.models.policy import PolicyConfig, WarmupConfig


def _refused(tmp_path, monkeypatch, args) -> str:
    monkeypatch.setattr("twoclock.engine.sweep._run", lambda *a, **k: pytest.fail("simulated"))
    code, out, err = run_main([*TINY, *args, "--no-store", "--out", str(tmp_path)])
    assert code == 2 and err.count("\n") == 1 and not out, (code, err)
    return err.strip()


@pytest.mark.parametrize("args, line", [
    (["--lr0", "-1e-4"], "lr0 must be a finite number > 0 (got -0.0001)"),
    (["--lr0", "1e-2", "-2.5E-3"], "lr0 must be a finite number > 0 (got -0.0025)"),
    (["--batches", "-4", "8"], "--batches must be an integer >= 1 (got -4)"),
    (["--eps", "-1e-9"], "eps must be a finite number >= 0 (got -1e-09)"),
    (["--lr0", "-inf"], "lr0 must be a finite number > 0 (got -inf)"),
])
def test_a_negative_number_is_a_value_and_gets_its_range_error(tmp_path, monkeypatch, args,
                                                               line):
    """Before issue 33 `--lr0 -1e-4` got argparse's "expected at least one argument"."""
    err = _refused(tmp_path, monkeypatch, args)
    assert "expected at least" not in err and line in err, err


def test_zero_is_taken_as_given_and_a_value_that_rounds_to_zero_is_refused(tmp_path,
                                                                          monkeypatch):
    """The rule (twoclock.engine.dtypes): 0 is exact in every type, 1e-300 is not 1e-300 in
    float32 but 0. Both messages say so."""
    dtypes.check(QuadraticConfig(dim=4), OptimConfig(eps=0.0), (4,), (1e-2,))  # accepted
    err = _refused(tmp_path, monkeypatch, ["--eps", "1e-300"])
    assert "eps must be finite, and nonzero unless given as 0, in float32" in err
    assert "(got 1e-300, which is 0.0 in float32)" in err


def test_a_nested_configs_floats_are_checked_in_the_simulations_type():
    cfg = PolicyConfig(warmup=WarmupConfig(lr=1e-300))
    with pytest.raises(Refused, match=r"^warmup_lr must be finite, and nonzero unless given "
                                      r"as 0, in float32"):
        dtypes.check(cfg, OptimConfig(), (64,), (1e-4,))


def test_jax_platforms_cuda_without_a_gpu_is_one_line_exit_2(tmp_path):
    """Before issue 33: JAX's AssertionError traceback, exit 1 (only gpu was handled)."""
    import jax
    if jax.default_backend() != "cpu":
        pytest.skip("this machine has an accelerator")
    env = {**os.environ, "JAX_PLATFORMS": "cuda", "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "critical_batch.py"),
                           *TINY, "--no-figure", "--out", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("critical_batch.py: error: JAX_PLATFORMS='cuda' cannot be "
                                   "used on this machine (no backend of that name could be "
                                   "started)"), done.stderr


@pytest.mark.parametrize("spoil", ["deleted", "edited"])
def test_identity_json_is_checked_when_every_chunk_is_reused(tmp_path, capsys, spoil):
    """Before issue 33 identity.json was checked only when a chunk was saved: a finished store
    reused outright kept a deleted or edited one for good."""
    reference = _sweep(store=_store(tmp_path))
    st = _store(tmp_path)
    ident = os.path.join(st.path, "identity.json")
    if spoil == "deleted":
        os.remove(ident)
    else:
        with open(ident, "w") as f:
            json.dump({"config": {"test": "another"}, "code": {}}, f)
    capsys.readouterr()
    res = _sweep(store=st)
    _same(res, reference)
    assert res.reused_chunks == len(st.finished())  # nothing recomputed
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"store: {ident} is missing or not this store's identity; rewritten"]
    with open(ident) as f:
        assert json.load(f) == json.loads(json.dumps(st.identity))
    _sweep(store=_store(tmp_path))
    assert capsys.readouterr().err.strip() == ""  # whole again: nothing said
