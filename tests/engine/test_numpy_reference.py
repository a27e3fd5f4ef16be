"""The NumPy reference the benchmark races against does the same work as the JAX model.

Two checks: with the noise switched (almost) off both follow the same deterministic
trajectory to float32 precision, for every optimizer and a rotated model; with noise, the
median clocks over seeds agree within their bootstrap CIs (the generators differ, so
agreement can only be statistical).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.helpers import assert_close, load_script
from twoclock.analysis import clocks
from twoclock import OptimConfig, QuadraticConfig, SweepConfig
from twoclock.models.quadratic import MODEL, initial_loss
from twoclock.engine.stages import constant_run
from twoclock.engine.sweep import run_sweep
from twoclock.models import MODELS

nr = load_script("benchmarks/numpy_reference.py")


@pytest.mark.parametrize("opt, rotate", [
    (OptimConfig(), False),
    (OptimConfig(), True),
    (OptimConfig(malladi=True), False),
    (OptimConfig(name="momentum"), False),
    (OptimConfig(name="sgd"), False),
])
def test_noiseless_trajectory_matches_jax(opt, rotate):
    cfg = QuadraticConfig(sigma=1e-6, drift_noise=1e-12, rotate=rotate, dim=16, drift_dim=4,
                          drift_bias=0.02, drift_threshold=0.5)
    n_steps, batch = 600, 32.0
    lr = 2e-2 if opt.name == "adam" else 0.5
    run = constant_run(MODEL, cfg, opt, n_steps, n_ckpt=n_steps)
    tr = jax.jit(run)(jnp.float32(batch), jnp.float32(lr), jax.random.PRNGKey(0))
    P = cfg.dim + cfg.drift_dim
    ref = nr.quadratic_lanes(cfg, opt, [batch], [lr], n_steps,
                             noise=lambda t: np.zeros((1, P), np.float32))
    assert_close(ref["loss"][0] / initial_loss(cfg), tr.ckpt["progress_frac"][-1], rtol=1e-3,
                 atol=1e-6, what="final loss fraction")
    assert_close(ref["drift"][0], tr.ckpt["drift"][-1], rtol=1e-3, atol=1e-6, what="drift")
    assert ref["prog_t"][0] > 0 and ref["fail_t"][0] > 0
    # both interpolate between updates: the crossings agree to well within an update (float32
    # rounding of the margins moves the fraction, not the update)
    # (the drift's crossing sits on a whole update here: its margin is linear in t)
    assert ref["prog_t"][0] % 1 > 0.01
    assert abs(ref["prog_t"][0] - float(tr.prog_t)) <= 0.005
    assert abs(ref["fail_t"][0] - float(tr.fail_t)) <= 0.005


def test_median_clocks_agree_with_jax():
    cfg, opt = QuadraticConfig(), OptimConfig()
    sweep = SweepConfig(batches=(8, 64), lr0s=(1e-2,), seeds=64, budget=24_000)
    ref = nr.quadratic_sweep(cfg, opt, sweep)
    jx = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True)
    for name in ("prog_n", "fail_n"):
        for i, b in enumerate(sweep.batches):
            a = clocks.summarize(ref[name][i, 0])
            e = clocks.summarize(getattr(jx, name)[i, 0])
            assert a["reached"] == e["reached"] == sweep.seeds, (name, b)
            # 95% bootstrap CIs overlap (no slack: neither is quantised to whole updates)
            assert a["ci"][0] <= e["ci"][1] and e["ci"][0] <= a["ci"][1], (name, b, a, e)
