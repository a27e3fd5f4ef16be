"""The vmapped sweep is a loop of single runs with the same keys, and is deterministic."""
import jax
import numpy as np

from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.engine.keys import seed_keys
from twoclock.models.quadratic import MODEL
from twoclock.engine.stages import constant_run
from twoclock.models import MODELS

CFG = QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.2, target=0.2)
OPT = OptimConfig()
SWEEP = SweepConfig(batches=(4, 8, 16), lr0s=(1e-2, 3e-2), seeds=3, budget=4000, n_ckpt=16)


def test_vmapped_sweep_equals_loop_of_single_runs():
    res = run_sweep(MODELS["quadratic"], CFG, OPT, SWEEP, quiet=True)
    keys = seed_keys(SWEEP.seed, SWEEP.seeds)
    for i, b in enumerate(SWEEP.batches):
        run = jax.jit(constant_run(MODEL, CFG, OPT, SWEEP.budget // b, SWEEP.n_ckpt))
        for j, lr0 in enumerate(SWEEP.lr0s):
            lr = np.float32(OPT.lr(lr0, b))
            for s in range(SWEEP.seeds):
                tr = run(np.float32(b), lr, keys[s])
                # to float32 rounding: a fractional clock shows the loss's last bit
                np.testing.assert_allclose(res.prog_n[i, j, s], tr.prog_n, rtol=1e-5)
                np.testing.assert_allclose(res.fail_n[i, j, s], tr.fail_n, rtol=1e-5)
                np.testing.assert_allclose(np.asarray(tr.ckpt["progress_frac"]),
                                           res.ckpt[i]["progress_frac"][j, s], rtol=1e-6, atol=0)


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = run_sweep(MODELS["quadratic"], CFG, OPT, SWEEP, quiet=True)
    b = run_sweep(MODELS["quadratic"], CFG, OPT, SWEEP, quiet=True)
    c = run_sweep(MODELS["quadratic"], CFG, OPT, SweepConfig(**{**SWEEP.__dict__, "seed": 1}), quiet=True)
    np.testing.assert_array_equal(a.prog_n, b.prog_n)
    np.testing.assert_array_equal(a.fail_n, b.fail_n)
    assert not np.array_equal(a.ckpt[0]["drift"], c.ckpt[0]["drift"])


def test_padding_is_small_and_clocks_in_samples_are_batch_times_updates():
    res = run_sweep(MODELS["quadratic"], CFG, OPT, SWEEP, quiet=True)
    assert 0 <= res.padded_fraction < 1.0  # the bound: at most 2x work
    b_B = np.array(SWEEP.batches)[:, None, None]
    np.testing.assert_allclose(res.prog_n, res.prog_t * b_B, rtol=1e-6)
    assert (res.prog_t % 1 > 0).any()  # between updates
    assert (res.prog_n <= SWEEP.budget).all() and (res.fail_n <= SWEEP.budget).all()


def test_kept_programs_serve_another_rule_and_never_another_config(monkeypatch):
    from dataclasses import replace
    from twoclock.engine import programs
    built, real = [], programs.program
    monkeypatch.setattr(programs, "program", lambda *a, **k: built.append(a[1]) or real(*a, **k))
    monkeypatch.setattr(programs, "PROGRAMS", programs.Kept(16))
    quad, other = MODELS["quadratic"], replace(CFG, target=0.3)
    sqrt_rule = run_sweep(quad, CFG, OPT, SWEEP, quiet=True)
    n = len(built)
    fixed = run_sweep(quad, CFG, replace(OPT, lr_rule="fixed"), SWEEP, quiet=True)
    assert n >= 1 and len(built) == n  # the lrs are arguments: the other rule builds nothing
    assert not np.array_equal(sqrt_rule.ckpt[0]["progress_frac"], fixed.ckpt[0]["progress_frac"])
    moved = run_sweep(quad, other, OPT, SWEEP, quiet=True)
    assert len(built) == 2 * n and built[n:] == [other] * n  # another config: its own programs
    monkeypatch.setattr(programs, "PROGRAMS", programs.Kept(16))  # built afresh: same numbers
    for kept, cfg, opt in ((fixed, CFG, replace(OPT, lr_rule="fixed")), (moved, other, OPT)):
        fresh = run_sweep(quad, cfg, opt, SWEEP, quiet=True)
        for name in ("prog_n", "fail_n", "div_n"):
            np.testing.assert_array_equal(getattr(kept, name), getattr(fresh, name))
        for i in range(len(SWEEP.batches)):
            for k, v in fresh.ckpt[i].items():
                np.testing.assert_array_equal(kept.ckpt[i][k], v)


def test_merged_results_take_each_batch_from_the_first_that_has_it_and_refuse_a_mismatch():
    import pytest
    from twoclock.engine.result import merge_batches
    a = run_sweep(MODELS["quadratic"], CFG, OPT, SweepConfig(**{**SWEEP.__dict__,
                                                                "batches": (16, 4)}), quiet=True)
    b = run_sweep(MODELS["quadratic"], CFG, OPT, SWEEP, quiet=True)
    m = merge_batches([a, b], (4, 8, 16))
    np.testing.assert_array_equal(m.prog_n, np.stack([a.prog_n[1], b.prog_n[1], a.prog_n[0]]))
    assert m.ckpt[1] is b.ckpt[1] and m.n_steps_B.tolist() == [1000, 500, 250]
    for k in a.extra:
        np.testing.assert_array_equal(m.extra[k][2], a.extra[k][0])
    with pytest.raises(ValueError, match="^batches must be batches of the parts' results"):
        merge_batches([a], (4, 8))
    fewer = run_sweep(MODELS["quadratic"], CFG, OPT, SweepConfig(**{**SWEEP.__dict__,
                                                                    "seeds": 2}), quiet=True)
    with pytest.raises(ValueError, match="^parts must be results with 2 lr0s and 3 seeds"):
        merge_batches([a, fewer], (4, 8))
