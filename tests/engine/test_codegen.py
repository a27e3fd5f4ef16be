"""XLA's CPU code generators: the quick one gives the quadratic model's numbers bit for bit, and
"auto" picks it only for a short sweep on the CPU of a model where that was checked."""
from unittest import mock

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.helpers import examples
from tests.cli.test_robustness import TINY, run_main
from twoclock.engine import codegen
from twoclock.config import OptimConfig, SweepConfig
from twoclock.engine.estimate import Estimate
from twoclock.models import get as get_model
from twoclock.models.quadratic import QuadraticConfig
from twoclock.engine import programs as programs_mod
from twoclock.engine.sweep import run_sweep
from twoclock.models import MODELS

SWEEP = SweepConfig(batches=(4, 16), lr0s=(1e-2, 3e-2), seeds=4, budget=1600, n_ckpt=8)


def _numbers(res) -> dict:
    """Every number a sweep hands back, by name."""
    out = {k: getattr(res, k) for k in ("prog_n", "fail_n", "div_n", "prog_t")}
    out.update({f"extra/{k}": v for k, v in res.extra.items()})
    out.update({f"ckpt/{i}/{k}": v for i, c in enumerate(res.ckpt) for k, v in c.items()})
    return out


# what the model takes in float32: 0, or a value whose square is nonzero there (a 1e-132 is
# refused by engine.dtypes, as it would run as 0); the same values in both dtypes
EXPONENT = st.floats(0.0, 2.0).filter(lambda v: v == 0 or np.float32(v * v) != 0)


@settings(max_examples=examples(6))  # each example compiles two programs
@given(optimizer=st.sampled_from(("adam", "momentum", "sgd")), rotate=st.booleans(),
       norm=st.booleans(), random_start=st.booleans(),
       alpha=EXPONENT, gamma=EXPONENT, x64=st.booleans())
def test_quick_codegen_gives_the_quadratic_models_numbers_bit_for_bit(
        optimizer, rotate, norm, random_start, alpha, gamma, x64):
    assert get_model("quadratic").quick_codegen_exact  # the claim this test checks
    cfg = QuadraticConfig(dim=6, drift_dim=3, alpha=alpha, gamma=gamma, rotate=rotate,
                          drift_stat="norm" if norm else "mean", random_start=random_start,
                          drift_bias=0.1, target=0.3)
    opt = OptimConfig(name=optimizer)
    with jax.enable_x64(x64):
        res = {c: run_sweep(MODELS["quadratic"], cfg, opt, SWEEP, quiet=True, codegen=c)
               for c in ("quick", "fused")}
    assert (res["quick"].codegen, res["fused"].codegen) == ("quick", "fused")
    quick, fused = _numbers(res["quick"]), _numbers(res["fused"])
    assert quick.keys() == fused.keys()
    for k in fused:
        assert quick[k].dtype == fused[k].dtype and np.array_equal(quick[k], fused[k]), k


def _estimate(seconds, programs=1) -> Estimate:
    return Estimate(runs=1, chunks=1, run_updates=1, chunk_bytes=1, result_bytes=1,
                    seconds=seconds, limit_bytes=2**40, device_bytes=None, programs=programs)


def test_auto_picks_quick_only_below_the_threshold_per_program():
    quad, bandit = get_model("quadratic"), get_model("bandit")
    below, above = 0.99 * codegen.QUICK_BELOW_S, 1.01 * codegen.QUICK_BELOW_S
    assert codegen.choose("auto", quad, _estimate(below)) == "quick"
    assert codegen.choose("auto", quad, _estimate(above)) == "fused"
    assert codegen.choose("auto", quad, _estimate(codegen.QUICK_BELOW_S)) == "fused"
    # the threshold is per program: two programs compile twice
    assert codegen.choose("auto", quad, _estimate(2 * below, programs=2)) == "quick"
    assert codegen.choose("auto", quad, _estimate(2 * above, programs=2)) == "fused"
    # no rate (another backend): no estimate, fused
    assert codegen.choose("auto", quad, _estimate(None)) == "fused"
    # a model whose numbers quick changes never gets it from auto
    assert not bandit.quick_codegen_exact
    assert codegen.choose("auto", bandit, _estimate(0.0)) == "fused"
    # a choice is a choice
    for c in ("quick", "fused"):
        assert codegen.choose(c, bandit, _estimate(1e9)) == c


def test_auto_never_picks_quick_off_the_cpu():
    with mock.patch("twoclock.engine.codegen.jax.default_backend", return_value="gpu"):
        assert codegen.choose("auto", get_model("quadratic"), _estimate(0.0)) == "fused"
        assert codegen.compiler_options("quick") is None
    assert codegen.compiler_options("quick") == {"xla_cpu_use_fusion_emitters": False}
    assert codegen.compiler_options("fused") is None


def test_the_programs_are_compiled_with_the_chosen_options(monkeypatch):
    seen = []
    jit = jax.jit

    def spy(fun, **kw):
        seen.append(kw.get("compiler_options"))
        return jit(fun, **kw)
    monkeypatch.setattr(jax, "jit", spy)
    cfg = QuadraticConfig(dim=4, drift_dim=2)
    for choice, options in (("quick", {"xla_cpu_use_fusion_emitters": False}),
                            ("fused", None), ("auto", {"xla_cpu_use_fusion_emitters": False})):
        seen.clear()
        # none kept from before: the choice builds its program
        monkeypatch.setattr(programs_mod, "PROGRAMS", programs_mod.Kept(16))
        res = run_sweep(MODELS["quadratic"], cfg, OptimConfig(), SWEEP, quiet=True, codegen=choice)
        assert res.codegen == ("quick" if choice == "auto" else choice)  # a short sweep
        assert seen == [options], (choice, seen)  # one program, with the choice's options


def test_a_bad_codegen_is_refused_before_anything_runs():
    with mock.patch("twoclock.engine.sweep._fitted", side_effect=AssertionError("estimated")), \
            pytest.raises(ValueError, match=r"codegen must be one of auto, quick, fused "
                                            r"\(got 'fast'\)"):
        run_sweep(MODELS["quadratic"], QuadraticConfig(), OptimConfig(), SWEEP, codegen="fast")
    with pytest.raises(ValueError, match="codegen must be one of quick, fused"):
        codegen.compiler_options("auto")


def test_the_command_line_takes_codegen_and_a_forced_choice_has_its_own_store(tmp_path):
    code, _, err = run_main([*TINY, "--codegen", "fast", "--out", str(tmp_path)])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--codegen" in err, err
    keys = {}
    for choice in ("auto", "quick", "fused"):
        out = tmp_path / choice
        code, _, err = run_main([*TINY, "--codegen", choice, "--out", str(out), "--no-figure"])
        assert code == 0, err
        keys[choice] = [p.name for p in (out / "store").iterdir()]
    assert len({k for v in keys.values() for k in v}) == 3, keys
