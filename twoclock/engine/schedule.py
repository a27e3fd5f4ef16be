"""Batch schedules: B1 until a switch point, then B2, simulated for every lr0 x seed at once.

A schedule runs B1 for n1 = switch // B1 updates, then B2 until the sample budget, with the
learning rate re-scaled by the rule at the switch (lr_k = opt.lr(lr0, B_k))
and the optimizer state carried across (by default with Adam's second moment re-scaled by
B1 / B2 to the new noise level; see `twoclock.engine.stages.carry_state`). Update t draws the same
noise as update t of a constant run, so a schedule with B1 = B2 is the constant run (tested
bit for bit). Which switch to choose is `twoclock.analysis.switch`'s business.
"""
import jax
import jax.numpy as jnp
import numpy as np

from twoclock.config import (CARRY_MODES, OptimConfig, Schedule, require, require_carry,
                             require_int, require_positive, stage_steps)
from twoclock.engine import dtypes
from twoclock.engine.keys import seed_keys
from twoclock.engine.runtime import check_devices, fast_rng
from twoclock.model import Model
from twoclock.engine.stages import make_run


def run_schedule(model: Model, model_cfg, opt: OptimConfig, sched: Schedule, lr0s, seeds: int,
                 budget: int, seed: int = 0, n_ckpt: int = 128, carry: str = "rescale",
                 keep=None) -> dict:
    """Simulate a schedule for every lr0 x seed as one vmapped program.

    Returns float64 arrays prog_n / fail_n / div_n / prog_t / fail_t [L, S] (0 = never) and
    ckpt {name: [L, S, C]}, plus n1, n2 and the lrs of both stages [L]. keep(label, clocks,
    config) receives the clocks once simulated (`twoclock.cli.rescue.Rescue.keep`).
    """
    require(isinstance(model, Model), "model", "a Model (twoclock.models.MODELS[name])",
            type(model).__name__)
    spec = model
    check_devices()
    fast_rng()
    for lr0 in lr0s:  # a caller's raw list (twoclock.run_schedule is public; no SweepConfig)
        require_positive("lr0", lr0)
    require_int("seeds", seeds)
    require_carry(carry)
    dtypes.check(model_cfg, opt, (sched.batch1, sched.batch2), tuple(lr0s))
    bs = (sched.batch1, sched.batch2)
    n1, n2 = stage_steps(*bs, sched.switch, budget)
    run = make_run(spec, model_cfg, opt, (n1, n2), n_ckpt, batches=bs, carry=carry)
    L = len(lr0s)
    lr_2xL = np.array(opt.lr_grid(bs, lr0s))
    keys = jnp.tile(seed_keys(seed, seeds), (L, 1))
    f32 = lambda v: np.repeat(np.asarray(v, np.float32), seeds)
    tr = jax.jit(jax.vmap(lambda b1, b2, l1, l2, k: run((b1, b2), (l1, l2), k)))(
        f32([bs[0]] * L), f32([bs[1]] * L), f32(lr_2xL[0]), f32(lr_2xL[1]), keys)
    tr = jax.device_get(tr)
    out = {k: np.asarray(getattr(tr, k)).astype(np.float64).reshape(L, seeds)
           for k in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t")}
    out["extra"] = {k: np.asarray(v).astype(np.float64).reshape(L, seeds)
                    for k, v in tr.extra.items()}
    out["ckpt"] = {k: np.asarray(v).reshape(L, seeds, -1) for k, v in tr.ckpt.items()}
    out.update(n1=n1, n2=n2, lr1=lr_2xL[0], lr2=lr_2xL[1])
    if keep is not None:
        keep(f"run_schedule {spec.name}", {k: v for k, v in out.items() if k != "ckpt"},
             {"model": spec.name, "model_cfg": model_cfg, "optimizer": opt, "schedule": sched,
              "lr0s": lr0s, "seeds": seeds, "budget": budget, "seed": seed, "carry": carry})
    return out


__all__ = ["run_schedule"]
