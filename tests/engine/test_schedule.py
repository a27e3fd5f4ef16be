"""Batch schedules: B1 = B2 is the constant run; the planner switches before failure, never after."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.helpers import assert_close
from twoclock.analysis import switch as pl
from twoclock.engine import schedule as sc
from twoclock.engine.keys import seed_keys
from twoclock.config import Schedule, stage_steps
from twoclock.config import OptimConfig
from twoclock.models import bandit, quadratic
from twoclock.models.bandit import BanditConfig
from twoclock.models.quadratic import QuadraticConfig
from twoclock.engine.stages import constant_run, make_run, samples_at
from twoclock.models import MODELS

CFG = QuadraticConfig(dim=16, drift_dim=4, drift_threshold=0.05, target=0.2)


@pytest.mark.parametrize("opt, carry", [(OptimConfig(), "rescale"),
                                        (OptimConfig(name="momentum"), "rescale"),
                                        (OptimConfig(malladi=True), "carry")],
                         ids=["adam-rescale", "momentum", "malladi-carry"])
def test_equal_batches_are_the_constant_run(opt, carry):
    n_steps, n1, B = 304, 117, 16.0  # 16 checkpoints of 19; stage 1 ends mid-chunk
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    const = jax.vmap(constant_run(quadratic.MODEL, CFG, opt, n_steps, 16))(
        jnp.full(3, B), jnp.full(3, 0.02), keys)
    run = make_run(quadratic.MODEL, CFG, opt, (n1, n_steps - n1), 16, carry=carry)
    sched = jax.vmap(lambda b1, b2, l1, l2, k: run((b1, b2), (l1, l2), k))(
        jnp.full(3, B), jnp.full(3, B), jnp.full(3, 0.02), jnp.full(3, 0.02), keys)
    for name in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t"):
        np.testing.assert_array_equal(getattr(sched, name), getattr(const, name), err_msg=name)
    assert int(np.min(const.prog_n)) > 0 and int(np.min(const.fail_n)) > 0  # clocks did fire
    # checkpoints before the switch coincide (after it the two runs chunk differently)
    np.testing.assert_array_equal(sched.ckpt["samples"][:, :6], const.ckpt["samples"][:, :6])
    assert_close(sched.ckpt["progress_frac"][:, :6], const.ckpt["progress_frac"][:, :6], rtol=0, atol=0,
                 what="checkpointed loss")
    assert int(sched.ckpt["samples"][0, -1]) >= n_steps * B


def test_switch_changes_batch_and_counts_samples():
    n1, n2 = 40, 30
    run = make_run(quadratic.MODEL, CFG, OptimConfig(), (n1, n2), 8)
    tr = run((8.0, 64.0), (0.01, 0.01 * math.sqrt(8)), jax.random.PRNGKey(0))
    assert int(tr.ckpt["samples"][-1]) == n1 * 8 + n2 * 64
    t = np.array([0, 1, n1, n1 + 1, n1 + n2])
    assert np.asarray(samples_at(t, (n1, n2), (8, 64))).tolist() == [0, 8, 320, 384, 320 + 30 * 64]
    assert stage_steps(8, 64, 100, 1000) == (12, (1000 - 96) // 64)


def test_run_schedule_and_bad_input():
    out = sc.run_schedule(MODELS["quadratic"], CFG, OptimConfig(), Schedule(8, 32, 400), [1e-2, 2e-2],
                          seeds=2, budget=2000)
    assert out["prog_n"].shape == (2, 2) and out["n1"] == 50
    assert_close(out["lr2"] / out["lr1"], [2.0, 2.0], rtol=1e-12, atol=0, what="sqrt rule")
    with pytest.raises(ValueError, match="switch"):
        sc.run_schedule(MODELS["quadratic"], CFG, OptimConfig(), Schedule(8, 32, 5000), [1e-2], 2, 2000)
    with pytest.raises(ValueError, match="carry"):
        sc.run_schedule(MODELS["quadratic"], CFG, OptimConfig(), Schedule(8, 32, 0), [1e-2], 2, 2000,
                        carry="keep")
    with pytest.raises(ValueError, match="batch1"):
        Schedule(0, 32, 0)


SPP = {8: 1.0, 256: 0.4}  # seconds per sample: B2 is 2.5x faster per sample


@given(np_small=st.floats(500, 5000), slow=st.floats(1.05, 2.4), fail_ratio=st.floats(0.3, 0.95),
       fail_small=st.floats(1.3, 5.0), margin=st.floats(0.0, 0.2))
def test_planner_switches_before_failure_never_after(np_small, slow, fail_ratio, fail_small, margin):
    # B2 needs `slow` x the samples and fails first (N_fail(B2) < N_prog(B2)); B1 is safe
    small = pl.Clocks(8, np_small, fail_small * np_small / (1 - margin))
    large = pl.Clocks(256, slow * np_small, fail_ratio * slow * np_small)
    plan = pl.plan_switch(small, large, SPP.get, margin=margin)
    assert plan.best.safe and plan.best.failure_fraction <= 1 - margin + 1e-9
    assert plan.best.kind in ("schedule", "constant_small")
    opts = {o.kind: o for o in plan.options}
    assert not opts["constant_large"].safe
    if plan.best.kind == "schedule":
        S = plan.best.switch
        assert 0 < S < small.n_fail * (1 - margin)          # switch before failure at B1
        assert S / small.n_fail < 1 - margin                 # never after
        assert plan.best.seconds < opts["constant_small"].seconds
        # the switch sits at the safety boundary (earliest safe switch), up to the grid step
        assert S - plan.safe_switches[0] <= small.n_prog / 400 + 1e-9
    # every safe schedule keeps the failure clock ahead; one grid step earlier is unsafe
    if plan.safe_switches and plan.safe_switches[0] > small.n_prog / 400 * 1.5:
        earlier = plan.safe_switches[0] - small.n_prog / 400
        rest = pl.fraction_remaining(small, large)(earlier)
        assert earlier / small.n_fail + rest / large.n_fail > 1 - margin


@given(np_small=st.floats(500, 5000), slow=st.floats(1.05, 2.4),
       fail_large=st.one_of(st.just(math.inf), st.floats(2.5, 10.0)))
def test_no_switch_when_the_large_batch_never_fails(np_small, slow, fail_large):
    small = pl.Clocks(8, np_small, math.inf)
    large = pl.Clocks(256, slow * np_small, fail_large * slow * np_small)
    plan = pl.plan_switch(small, large, SPP.get)
    assert plan.best.kind == "constant_large" and plan.best.switch == 0
    # and if B2 is slower in wall-clock time, stay at B1
    plan = pl.plan_switch(small, large, {8: 1.0, 256: 1.0}.get)
    assert plan.best.kind == "constant_small"


def test_no_plan_is_safe_reports_least_risky():
    small = pl.Clocks(8, 1000, 900)     # both fail first
    large = pl.Clocks(256, 2000, 1000)
    plan = pl.plan_switch(small, large, SPP.get)
    assert not plan.best.safe and plan.safe_switches is None


def test_curve_planner_matches_fraction_model_on_proportional_curves():
    # exponential loss curves with rate 1/N: B2 is a stretched copy of B1, so equal-loss
    # hand-over is exactly the clock-fraction model
    n = np.linspace(10, 20000, 2000)
    small, large = pl.Clocks(8, 1000.0, 3000.0), pl.Clocks(256, 2500.0, 2000.0)
    c1 = (n, np.exp(-3 * n / small.n_prog))
    c2 = (n, np.exp(-3 * n / large.n_prog))
    rest = pl.curve_remaining(small, large, c1, c2)
    frac = pl.fraction_remaining(small, large)
    for S in (0.0, 200.0, 500.0, 900.0):
        assert_close(rest(S), frac(S), rtol=0.01, atol=5.0, what=f"remaining after {S}")
    assert rest(small.n_prog) == 0.0


def test_planner_bad_input():
    with pytest.raises(ValueError, match="margin"):
        pl.plan_switch(pl.Clocks(8, 1, 2), pl.Clocks(16, 1, 2), SPP.get, margin=1.0)
    with pytest.raises(ValueError, match="n_fail"):
        pl.Clocks(8, 100, 0)



def _bandit_cfg():
    return BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_bias=0.5, drift_noise=4.0,
                        drift_threshold=0.3, target=0.5)


@pytest.mark.parametrize("n1", [60, 57], ids=["switch-at-checkpoint", "switch-mid-chunk"])
def test_bandit_equal_batches_are_the_constant_run(n1):
    """b1 = b2: the schedule's clocks are make_run's, bit for bit; checkpoints before the
    switch coincide exactly (after it the two runs chunk differently when n1 is mid-chunk)."""
    cfg, opt, n_steps, B = _bandit_cfg(), OptimConfig(), 120, 32
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    const = jax.vmap(constant_run(bandit.MODEL, cfg, opt, n_steps, 20, batch=B))(
        jnp.full(3, float(B)), jnp.full(3, 0.05), keys)
    run = make_run(bandit.MODEL, cfg, opt, (n1, n_steps - n1), 20, batches=(B, B))
    sched = jax.vmap(lambda b1, b2, l1, l2, k: run((b1, b2), (l1, l2), k))(jnp.full(3, float(B)), jnp.full(3, float(B)), jnp.full(3, 0.05),
                          jnp.full(3, 0.05), keys)
    for name in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t"):
        np.testing.assert_array_equal(getattr(sched, name), getattr(const, name), err_msg=name)
    np.testing.assert_array_equal(sched.extra["collapse_n"], const.extra["collapse_n"])
    assert int(np.min(const.prog_n)) > 0 and int(np.min(const.fail_n)) > 0  # clocks did fire
    pre = n1 // 6  # checkpoints every 6 updates
    for k in ("samples", "heldout_acc", "drift", "noise_drift"):
        np.testing.assert_array_equal(sched.ckpt[k][:, :pre], const.ckpt[k][:, :pre], err_msg=k)
    if n1 % 6 == 0:
        for k in ("samples", "heldout_acc", "drift"):
            assert_close(sched.ckpt[k], const.ckpt[k], rtol=1e-6, atol=1e-7, what=k)


def test_bandit_schedule_switches_batch_through_run_schedule():
    cfg = _bandit_cfg()
    out = sc.run_schedule(MODELS["bandit"], cfg, OptimConfig(), Schedule(16, 64, 320), [0.05],
                          seeds=2, budget=1600)
    assert out["n1"] == 20 and out["n2"] == (1600 - 320) // 64
    samples = out["ckpt"]["samples"][0, 0]
    assert int(samples[-1]) == 320 + out["n2"] * 64 and np.all(np.diff(samples) > 0)
    with pytest.raises(ValueError, match="^batch must be"):
        sc.run_schedule(MODELS["bandit"], cfg, OptimConfig(), Schedule(12, 64, 120), [0.05], 2, 1600)


def test_rescale_carry_of_adams_second_moment_by_hand():
    """nu' = (m_hat^2 + max(v_hat - m_hat^2, 0) B1 / B2) c2 with c_i = 1 - beta_i^t: B1 = 8 to
    B2 = 32 quarters the noise part; beta1 != beta2 and t = 5 keep both corrections visible."""
    from twoclock.engine.stages import carry_state
    import optax
    b1, b2, t = 0.8, 0.95, 5
    m = np.array([0.3, -0.2, 0.05])
    v = np.array([0.02, 0.05, 0.0001])  # the last: v_hat below m_hat^2 (no noise part)
    state = (optax.ScaleByAdamState(count=jnp.int32(t), mu=jnp.asarray(m), nu=jnp.asarray(v)),
             optax.EmptyState())
    got = carry_state(state, None, 8.0, 32.0, "rescale", b1, b2)[0].nu
    c1, c2 = 1 - b1**t, 1 - b2**t
    sig = (m / c1) ** 2
    want = (sig + np.maximum(v / c2 - sig, 0) * 8 / 32) * c2
    assert_close(got, want, rtol=1e-6, atol=0, what="carried nu")
    assert carry_state(state, "fresh", 8.0, 32.0, "reset", b1, b2) == "fresh"
    assert carry_state(state, "fresh", 8.0, 32.0, "carry", b1, b2) is state


def test_the_carry_gets_the_stages_batches_and_the_optimizers_betas(monkeypatch):
    """make_run hands carry_state the batch before and the batch after the switch (the very
    traced inputs) and (beta1, beta2) as configured; traced only, nothing is compiled."""
    from twoclock.engine import stages
    seen, ins = [], []
    real = stages.carry_state

    def spy(opt_state, fresh, b_from, b_to, carry, beta1, beta2):
        seen.append((b_from, b_to, carry, beta1, beta2))
        return real(opt_state, fresh, b_from, b_to, carry, beta1, beta2)
    monkeypatch.setattr(stages, "carry_state", spy)
    run = make_run(quadratic.MODEL, CFG, OptimConfig(beta1=0.8, beta2=0.95), (10, 5), 4)

    def f(b1, b2, key):
        ins.extend([b1, b2])
        return run((b1, b2), (0.01, 0.02), key)
    jax.make_jaxpr(f)(np.float32(8), np.float32(32), jax.random.PRNGKey(0))
    assert len(seen) == 1 and seen[0][0] is ins[0] and seen[0][1] is ins[1]
    assert seen[0][2:] == ("rescale", 0.8, 0.95)


def test_run_schedule_is_each_lr0_and_seed_alone():
    """Every (lr0, seed) of run_schedule equals one make_run with B1 -> B2, the rule's lr at
    each batch and that seed's key."""
    sched, lr0s, seeds, budget = Schedule(8, 32, 400), [1e-2, 3e-2], 2, 2000
    out = sc.run_schedule(MODELS["quadratic"], CFG, OptimConfig(), sched, lr0s, seeds=seeds,
                          budget=budget, n_ckpt=8)
    n1, n2 = stage_steps(8, 32, 400, budget)
    run = jax.jit(make_run(quadratic.MODEL, CFG, OptimConfig(), (n1, n2), 8))
    keys = seed_keys(0, seeds)
    for l, lr0 in enumerate(lr0s):
        lr = [np.float32(lr0 * math.sqrt(b / 8)) for b in (8, 32)]  # the sqrt rule, b0 = 8
        assert_close([out["lr1"][l], out["lr2"][l]], lr, rtol=1e-6, atol=0, what="lrs")
        for s in range(seeds):
            tr = jax.device_get(run((np.float32(8), np.float32(32)), tuple(lr), keys[s]))
            for k in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t"):
                # to float32 rounding (vmapped, the loss's last bit moves a fractional clock)
                assert_close(out[k][l, s], getattr(tr, k), rtol=1e-5, atol=0,
                             what=f"{k} {lr0} {s}")
            for k in ("samples", "progress_frac", "drift"):
                assert_close(out["ckpt"][k][l, s], tr.ckpt[k], rtol=1e-6, atol=0,
                             what=f"{k} {lr0} {s}")
    assert out["ckpt"]["samples"][0, 0, -1] == n1 * 8 + n2 * 32
    frac = out["ckpt"]["progress_frac"]
    assert not np.array_equal(frac[0, 0], frac[0, 1])  # the seeds' noise differs
