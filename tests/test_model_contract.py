"""The contract every model in MODELS keeps, checked the same way for each.

A new model must add a small configuration here (the first test fails otherwise).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twoclock import BanditConfig, OptimConfig, QuadraticConfig
from twoclock.model import CLOCKS, Model
from twoclock.models import MODELS, get
from twoclock.models.policy import PolicyConfig, WarmupConfig
from twoclock.engine.stages import checkpoints, constant_run, make_run
from twoclock.engine.programs import program
from twoclock.trace import checkpoint_every

SMALL = {  # configurations whose clocks fire within a few dozen updates
    "quadratic": (QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.5, target=0.3,
                                  drift_threshold=0.05), 16, 0.05),
    "bandit": (BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_bias=0.5, drift_noise=4.0,
                            drift_threshold=0.3, target=0.5), 32, 0.05),
    "policy": (PolicyConfig(n_train=2048, n_test=64, n_ood=64, d_model=32, n_layers=2,
                            n_heads=2, d_mlp=64, target=0.35, null_threshold=0.1, noise_every=256,
                            warmup=WarmupConfig(noise=0.3, steps=1500, acc=0.25, eval_every=50,
                                                lr=5e-3)), 32, 5e-4),
}
N_STEPS, N_CKPT, LANES = 60, 12, 3
# vmapped against looped, checkpoint values: 1e-6 (about 8 float32 ulps) unless a model's
# batched program rounds differently. The policy's, with a group's prompt run once, does: at
# most 1.33e-6 over a lane's 12 checkpoints, already at the first (5 updates), so the difference
# does not grow with the run; 2e-6 is within 2x of what was measured.
ROUNDING_RTOL = {"policy": 2e-6}
# Two programs that compute the same run round the network's float32 sums differently, and
# Adam carries the last bits on (the policy's drift checkpoints differ by up to 1.8e-5 relative
# after 60 updates). An interpolated crossing m_{t-1} / (m_{t-1} - m_t) turns such a margin
# difference into a shift of delta m / |margin change per update|: measured 3.5e-4 updates on
# the policy's drift clock. A lane mix-up or a lost key moves a clock by whole updates.
CLOCK_TOL_UPDATES = 1e-3


def _assert_same_clock(got, want, batch, what):
    np.testing.assert_allclose(got, want, rtol=0, atol=CLOCK_TOL_UPDATES * batch, err_msg=what)


def test_every_model_has_a_contract_case_and_a_complete_interface():
    assert set(SMALL) == set(MODELS)
    for name, m in MODELS.items():
        assert isinstance(m, Model) and m.name == name and get(name) is m
        assert m.unit in ("samples", "responses") and m.progress_label
        assert set(m.default_sweep) == {"batches", "lr0s", "seeds", "budget"}
        cfg, batch, _ = SMALL[name]
        assert isinstance(cfg, m.config) and isinstance(m.describe_batch(cfg, batch), dict)
    with pytest.raises(ValueError, match="^model must be one of"):
        get("nonesuch")


@functools.cache
def _program(name, n_K):
    m, (cfg, batch, _) = MODELS[name], SMALL[name]
    run = make_run(m, cfg, OptimConfig(), n_K, N_CKPT,
                   batches=(batch,) * len(n_K) if m.static_batch else None)
    return jax.jit(jax.vmap(run))


def _run(name, keys, stages=(N_STEPS,)):
    _, batch, lr = SMALL[name]
    K, n = len(stages), len(keys)
    b_K, lr_K = (jnp.full(n, float(batch)),) * K, (jnp.full(n, lr),) * K
    return jax.device_get(_program(name, stages)(b_K, lr_K, keys)), batch


@pytest.mark.parametrize("name", sorted(SMALL))
def test_trace_is_finite_and_shaped_and_clocks_fire(name):
    keys = jax.random.split(jax.random.PRNGKey(0), LANES)
    tr, batch = _run(name, keys)
    C = N_STEPS // -(-N_STEPS // N_CKPT)  # checkpoints: one per ceil(n / n_ckpt) updates
    for field in ("prog_t", "fail_t", "div_t", "prog_n", "fail_n", "div_n"):
        v = np.asarray(getattr(tr, field))
        assert v.shape == (LANES,) and v.dtype == jnp.result_type(float), field
        assert ((v >= 0) & (v <= N_STEPS * batch)).all(), field
    np.testing.assert_allclose(tr.prog_n, tr.prog_t * batch, rtol=1e-6)
    # a margin clock sits between updates, divergence (a bool) on them
    assert (tr.prog_t % 1 != 0).any() and (tr.fail_t % 1 != 0).any()
    assert (tr.prog_t > 0).all() and (tr.fail_t > 0).all() and (tr.div_t == 0).all()
    assert set(tr.extra) == {f"{c}_n" for c in MODELS[name].extra_clocks}
    assert {"samples", "progress_frac", "drift"} <= set(tr.ckpt)
    for k, v in tr.ckpt.items():
        assert np.shape(v) == (LANES, C) and np.isfinite(v).all(), k
    np.testing.assert_array_equal(tr.ckpt["samples"][0],
                                  np.minimum(np.arange(1, C + 1) * (N_STEPS // C), N_STEPS) * batch)
    assert tr.ckpt["progress_frac"][:, -1].max() < 1.0  # progress was made


@pytest.mark.parametrize("name", sorted(SMALL))
def test_two_equal_stages_are_the_one_stage_run(name):
    keys = jax.random.split(jax.random.PRNGKey(1), LANES)
    one, batch = _run(name, keys)
    two, _ = _run(name, keys, stages=(25, N_STEPS - 25))  # the switch falls mid-chunk
    for field in ("prog_t", "fail_t", "div_t", "prog_n", "fail_n", "div_n"):
        unit = batch if field.endswith("_n") else 1   # a tolerance in updates, either unit
        _assert_same_clock(getattr(two, field), getattr(one, field), unit, field)
    for k in one.extra:
        _assert_same_clock(two.extra[k], one.extra[k], batch, k)
    np.testing.assert_array_equal(two.ckpt["progress_frac"][:, :5],
                                  one.ckpt["progress_frac"][:, :5])


@pytest.mark.parametrize("name", sorted(SMALL))
def test_vmapped_equals_looped_and_is_deterministic(name):
    m, (cfg, batch, lr) = MODELS[name], SMALL[name]
    keys = jax.random.split(jax.random.PRNGKey(2), LANES)
    vm, _ = _run(name, keys)
    again, _ = _run(name, keys)
    run = jax.jit(constant_run(m, cfg, OptimConfig(), N_STEPS, N_CKPT,
                               batch if m.static_batch else None))
    for i in range(LANES):
        tr = jax.device_get(run(np.float32(batch), np.float32(lr), keys[i]))
        for c in CLOCKS:  # to float32 rounding: a fractional clock shows the metric's last bit
            _assert_same_clock(getattr(tr, f"{c}_n"), getattr(vm, f"{c}_n")[i], batch, c)
        np.testing.assert_allclose(tr.ckpt["progress_frac"], vm.ckpt["progress_frac"][i],
                                   rtol=ROUNDING_RTOL.get(name, 1e-6), atol=0)
    for k in vm.ckpt:
        np.testing.assert_array_equal(again.ckpt[k], vm.ckpt[k], err_msg=k)
    # different keys, different runs (the keys reach the noise)
    assert not np.array_equal(vm.ckpt["drift"][0], vm.ckpt["drift"][1])


@pytest.mark.parametrize("name", sorted(n for n, m in MODELS.items() if not m.static_batch))
def test_traced_length_program_is_the_static_one(name):
    """One compiled program for every run length gives constant_run's numbers, bit for bit."""
    m, (cfg, batch, lr) = MODELS[name], SMALL[name]
    keys = jax.random.split(jax.random.PRNGKey(4), LANES)
    # the program run_sweep compiles (with its compiler options), against constant_run's
    traced = program(m, cfg, OptimConfig(), N_STEPS, N_CKPT)
    b, lr_ = jnp.full(LANES, float(batch)), jnp.full(LANES, lr)
    # 37: a padded last chunk; 5: fewer updates than N_CKPT; 449: chunks of 38 updates, each
    # drawn as whole noise blocks and a partial one (stages.DRAW_BLOCK = 16)
    for n_steps in (N_STEPS, 37, 5, 449):
        every = checkpoint_every(n_steps, N_CKPT)
        want = jax.device_get(jax.jit(jax.vmap(constant_run(m, cfg, OptimConfig(), n_steps,
                                                            N_CKPT)))(b, lr_, keys))
        got = jax.device_get(traced(b, lr_, keys, jnp.int32(n_steps), jnp.int32(every)))
        C = checkpoints(n_steps, every)
        assert want.ckpt["samples"].shape[-1] == C
        for f in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t"):
            np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f)
        for k in want.ckpt:
            np.testing.assert_array_equal(got.ckpt[k][:, :C], want.ckpt[k], err_msg=k)
