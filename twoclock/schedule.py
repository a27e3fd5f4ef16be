"""Batch schedules: B1 until a switch point, then B2, simulated for every lr0 x seed at once.

A schedule runs B1 for n1 = switch // B1 updates, then B2 until the sample budget, with the
learning rate re-scaled by the rule at the switch (lr_k = lr_for_batch(lr0, B_k, b0, rule))
and the optimizer state carried across (by default with Adam's second moment re-scaled by
B1 / B2 to the new noise level; see `twoclock.stages.carry_state`). Update t draws the same
noise as update t of a constant run, so a schedule with B1 = B2 is the constant run (tested
bit for bit). Which switch to choose is `twoclock.planner`'s business.
"""
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from twoclock import safety
from twoclock.config import OptimConfig, require, require_int, require_positive
from twoclock.keys import seed_keys
from twoclock.models import get as get_model
from twoclock.scaling import lr_for_batch
from twoclock.stages import CARRY_MODES, make_run


def switch_updates(switch: int, b1: int) -> int:
    """n1: whole updates at batch b1 before the switch (rounded down to a multiple of b1)."""
    return int(switch) // int(b1)


def stage_steps(b1: int, b2: int, switch: int, budget: int) -> tuple:
    """(n1, n2): updates at batch b1 and at batch b2 within the sample budget."""
    require_int("batch1", b1)
    require_int("batch2", b2)
    require(isinstance(switch, (int, np.integer)) and 0 <= switch <= budget, "switch",
            f"an integer number of samples in [0, budget={budget}]", switch)
    n1 = switch_updates(switch, b1)
    n2 = (budget - n1 * b1) // b2
    require(n1 + n2 >= 1, "budget", f">= one update (b1={b1}, b2={b2})", budget)
    return n1, n2


@dataclass(frozen=True)
class Schedule:
    """Batch1 for the first `switch` samples (rounded down to whole updates), then batch2."""
    batch1: int
    batch2: int
    switch: int

    def __post_init__(self):
        require_int("batch1", self.batch1)
        require_int("batch2", self.batch2)
        require_int("switch", self.switch, lo=0)



def run_schedule(model: str, model_cfg, opt: OptimConfig, sched: Schedule, lr0s, seeds: int,
                 budget: int, seed: int = 0, n_ckpt: int = 128, carry: str = "rescale") -> dict:
    """Simulate a schedule for every lr0 x seed as one vmapped program.

    Returns numpy arrays prog_n / fail_n / div_n / prog_t / fail_t [L, S] (0 = never) and
    ckpt {name: [L, S, C]}, plus n1, n2 and the lrs of both stages [L].
    """
    spec = get_model(model)
    for lr0 in lr0s:
        require_positive("lr0", lr0)
    require_int("seeds", seeds)
    require(carry in CARRY_MODES, "carry", "one of " + ", ".join(CARRY_MODES), carry)
    bs = (sched.batch1, sched.batch2)
    n1, n2 = stage_steps(*bs, sched.switch, budget)
    run = make_run(spec, model_cfg, opt, (n1, n2), n_ckpt, batches=bs, carry=carry)
    L = len(lr0s)
    lr_2xL = np.array([[lr_for_batch(l, b, opt.b0, opt.lr_rule) for l in lr0s] for b in bs])
    keys = jnp.tile(seed_keys(seed, seeds), (L, 1))
    f32 = lambda v: np.repeat(np.asarray(v, np.float32), seeds)
    tr = jax.jit(jax.vmap(lambda b1, b2, l1, l2, k: run((b1, b2), (l1, l2), k)))(
        f32([bs[0]] * L), f32([bs[1]] * L), f32(lr_2xL[0]), f32(lr_2xL[1]), keys)
    tr = jax.device_get(tr)
    out = {k: np.asarray(getattr(tr, k)).astype(np.int64).reshape(L, seeds)
           for k in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t")}
    out["extra"] = {k: np.asarray(v).astype(np.int64).reshape(L, seeds)
                    for k, v in tr.extra.items()}
    out["ckpt"] = {k: np.asarray(v).reshape(L, seeds, -1) for k, v in tr.ckpt.items()}
    out.update(n1=n1, n2=n2, lr1=lr_2xL[0], lr2=lr_2xL[1])
    safety.keep(f"run_schedule {model}", {k: v for k, v in out.items() if k != "ckpt"},
                {"model": model, "model_cfg": model_cfg, "optimizer": opt, "schedule": sched,
                 "lr0s": lr0s, "seeds": seeds, "budget": budget, "seed": seed, "carry": carry})
    return out


__all__ = ["Schedule", "stage_steps", "switch_updates", "run_schedule"]
