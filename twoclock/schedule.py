"""Batch schedules (B1 until a switch point, then B2) and a planner that picks the switch.

A schedule runs B1 for n1 = switch // B1 updates, then B2 until the sample budget, with the
learning rate re-scaled by the rule at the switch (lr_k = lr_for_batch(lr0, B_k, b0, rule))
and the optimizer state carried across (by default with Adam's second moment re-scaled by
B1 / B2 to the new noise level; see `carry_state`). Update t draws the same noise as update t of a
constant run, so a schedule with B1 = B2 is the constant run (tested bit for bit).

The planner uses the measured clocks of the two constant runs. S samples at B1 spend
S / N_fail(B1) of the failure clock (drift accumulates linearly in samples); the rest of the
run at B2 needs rest(S) samples, which spend rest(S) / N_fail(B2). rest(S) comes from the
*clock-fraction* model, (1 - S / N_prog(B1)) N_prog(B2), or, better, from the measured
progress curves (`curve_remaining`: B2 picks up at the point of its own curve where the loss
equals the B1 loss at the switch). A plan is *safe* when the failure fraction spent at the
target is <= 1 - margin. The planner returns the fastest safe plan (wall-clock: samples /
throughput at each batch) among constant B1, constant B2 and the schedules on a grid of
switch points. In the clock-fraction model time and safety are linear in S, so the chosen
switch sits on the safety boundary: when B2 is faster in wall-clock time but fails first it
is the *earliest* switch that keeps the failure clock ahead of the target (by the margin);
when B1 fails first and B2 buys time (the seed-002 picture with clipping) it is the *latest*
such switch. No switch is planned when B2 alone reaches the target safely and is faster, or
when B1 alone is faster.
"""
from dataclasses import dataclass, asdict
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.config import OptimConfig, require, require_int, require_positive
from twoclock.scaling import lr_for_batch
from twoclock.sweep import seed_keys
from twoclock.trace import Trace


# ---------------------------------------------------------------------------- runs

def switch_updates(switch: int, b1: int) -> int:
    """n1: whole updates at B1 before the switch (the switch is rounded down to a multiple of B1)."""
    return int(switch) // int(b1)


def stage_steps(b1: int, b2: int, switch: int, budget: int) -> tuple:
    """(n1, n2): updates at B1 and at B2 within the sample budget."""
    require_int("b1", b1)
    require_int("b2", b2)
    require(isinstance(switch, (int, np.integer)) and 0 <= switch <= budget, "switch",
            f"an integer number of samples in [0, budget={budget}]", switch)
    n1 = switch_updates(switch, b1)
    n2 = (budget - n1 * b1) // b2
    require(n1 + n2 >= 1, "budget", f">= one update (b1={b1}, b2={b2})", budget)
    return n1, n2


def stage_chunks(n1: int, n2: int, every: int) -> tuple:
    """(k1, r1, k2, t_C): full checkpoint chunks of stage 1 and its remainder (stage 1 ends on a
    checkpoint, so stage 2 starts a fresh chunk), chunks of stage 2, and the 1-based update
    index of every checkpoint."""
    k1, r1 = n1 // every, n1 % every
    k2 = math.ceil(n2 / every)
    t_C = np.concatenate([(np.arange(k1) + 1) * every, [n1] if r1 else [],
                          n1 + np.minimum((np.arange(k2) + 1) * every, n2)]).astype(np.int32)
    return k1, r1, k2, t_C


CARRY_MODES = ("rescale", "carry", "reset")


def carry_state(opt_state, fresh_state, b1, b2, carry: str, b1_adam: float, b2_adam: float):
    """The optimizer state stage 2 starts from.

    carry: the state as is. Adam's second moment nu then stays at the B1 noise level for
    ~1 / (1 - beta2) updates and shrinks B2's steps by up to sqrt(b2 / b1).
    rescale (default): as is, except the noise part of Adam's second moment is scaled by
    b1 / b2 (the change in minibatch gradient-noise variance): with bias-corrected moments,
    nu' = mu^2 + max(nu - mu^2, 0) * b1 / b2 (mu, the gradient mean, estimates the signal).
    reset: a fresh optimizer state (step count included).
    """
    if carry == "reset":
        return fresh_state
    if carry == "carry":
        return opt_state
    k = b1 / b2

    def walk(s):
        if isinstance(s, optax.ScaleByAdamState):
            t = s.count.astype(jnp.result_type(float))
            c1, c2 = 1 - b1_adam**t, 1 - b2_adam**t
            safe = lambda c: jnp.where(c > 0, c, 1.0)

            def new_nu(m, v):
                m_hat, v_hat = m / safe(c1), v / safe(c2)
                sig = m_hat * m_hat
                return (sig + jnp.maximum(v_hat - sig, 0.0) * k) * c2
            return s._replace(nu=jax.tree.map(new_nu, s.mu, s.nu))
        if isinstance(s, tuple) and not hasattr(s, "_fields"):
            return tuple(walk(x) for x in s)
        return s
    return walk(opt_state)


def make_quadratic_schedule_run(cfg, opt: OptimConfig, n1: int, n2: int, n_ckpt: int = 128,
                                carry: str = "rescale"):
    """A pure run(b1, b2, lr1, lr2, key) -> Trace: n1 updates at b1, then n2 at b2."""
    from twoclock import quadratic as quad

    n_steps = n1 + n2
    step_for = quad.make_update(cfg, opt, n_steps)
    every = quad.checkpoint_every(n_steps, n_ckpt)
    k1, r1, k2, t_C = stage_chunks(n1, n2, every)
    L0 = quad.initial_loss(cfg)
    dtype = jnp.result_type(float)

    def scan_stage(update, state, t_start, k, r, outs):
        def chunk(state, j):
            ts = t_start + j * every + 1 + jnp.arange(every, dtype=jnp.int32)
            state, (loss, drift) = jax.lax.scan(update, state, ts)
            return state, (loss[-1], drift[-1])
        if k:
            state, o = jax.lax.scan(chunk, state, jnp.arange(k, dtype=jnp.int32))
            outs.append(o)
        if r:
            ts = t_start + k * every + 1 + jnp.arange(r, dtype=jnp.int32)
            state, (loss, drift) = jax.lax.scan(update, state, ts)
            outs.append((loss[-1:], drift[-1:]))
        return state

    def run(b1, b2, lr1, lr2, key) -> Trace:
        b1, b2 = jnp.asarray(b1, dtype), jnp.asarray(b2, dtype)
        tx1, update1 = step_for(b1, lr1, key)
        tx2, update2 = step_for(b2, lr2, key)
        outs: list = []
        state = quad.initial_state(cfg, tx1)
        state = scan_stage(update1, state, 0, k1, r1, outs)
        # carry the optimizer state (moments, step count) into stage 2; only lr and B change
        fresh = quad.initial_state(cfg, tx2).opt_state
        state = state._replace(opt_state=carry_state(state.opt_state, fresh, b1, b2, carry,
                                                     opt.b1, opt.b2))
        state = scan_stage(update2, state, n1, k2, 0, outs)
        loss_C = jnp.concatenate([o[0] for o in outs])
        drift_C = jnp.concatenate([o[1] for o in outs])
        samples = lambda t: samples_at(t, n1, b1.astype(jnp.int32), b2.astype(jnp.int32))
        return Trace(
            prog_t=state.prog_t, fail_t=state.fail_t, div_t=state.div_t,
            prog_n=samples(state.prog_t), fail_n=samples(state.fail_t),
            div_n=samples(state.div_t), extra={},
            ckpt={"samples": samples(jnp.asarray(t_C)), "loss_frac": loss_C / L0,
                  "drift": drift_C})

    return run


def samples_at(t, n1: int, b1, b2):
    """Samples consumed after update t (1-based; 0 stays 0) of a schedule."""
    return jnp.where(t <= n1, t * b1, n1 * b1 + (t - n1) * b2)


SCHEDULE_RUNS = {"quadratic": make_quadratic_schedule_run}


STATIC_BATCH_SCHEDULES: set = set()  # models whose batches set array shapes (the bandit)


def register_schedule(model: str, factory, static_batch: bool = False) -> None:
    """factory(model_cfg, opt, n1, n2, n_ckpt, carry) -> run(b1, b2, lr1, lr2, key) -> Trace.

    static_batch: the factory also takes batches=(b1, b2) as Python ints (the bandit's batch
    sets its array shapes; twoclock.bandit registers itself this way).
    """
    SCHEDULE_RUNS[model] = factory
    if static_batch:
        STATIC_BATCH_SCHEDULES.add(model)
    else:
        STATIC_BATCH_SCHEDULES.discard(model)


@dataclass(frozen=True)
class Schedule:
    """B1 for the first `switch` samples (rounded down to whole updates), then B2."""
    b1: int
    b2: int
    switch: int

    def __post_init__(self):
        require_int("b1", self.b1)
        require_int("b2", self.b2)
        require_int("switch", self.switch, lo=0)


def run_schedule(model: str, model_cfg, opt: OptimConfig, sched: Schedule, lr0s, seeds: int,
                 budget: int, seed: int = 0, n_ckpt: int = 128, carry: str = "rescale") -> dict:
    """Simulate a schedule for every lr0 x seed as one vmapped program.

    Returns numpy arrays prog_n / fail_n / div_n / prog_t / fail_t [L, S] (0 = never) and
    ckpt {name: [L, S, C]}, plus n1, n2 and the lrs of both stages [L].
    """
    require(model in SCHEDULE_RUNS, "model", "one of " + ", ".join(SCHEDULE_RUNS), model)
    for lr0 in lr0s:
        require_positive("lr0", lr0)
    require_int("seeds", seeds)
    require(carry in CARRY_MODES, "carry", "one of " + ", ".join(CARRY_MODES), carry)
    n1, n2 = stage_steps(sched.b1, sched.b2, sched.switch, budget)
    static = {"batches": (sched.b1, sched.b2)} if model in STATIC_BATCH_SCHEDULES else {}
    run = SCHEDULE_RUNS[model](model_cfg, opt, n1, n2, n_ckpt, carry, **static)
    L = len(lr0s)
    lr1 = np.array([lr_for_batch(l, sched.b1, opt.b0, opt.lr_rule) for l in lr0s])
    lr2 = np.array([lr_for_batch(l, sched.b2, opt.b0, opt.lr_rule) for l in lr0s])
    keys = jnp.tile(seed_keys(seed, seeds), (L, 1))
    f32 = lambda v: np.repeat(np.asarray(v, np.float32), seeds)
    tr = jax.jit(jax.vmap(run))(f32([sched.b1] * L), f32([sched.b2] * L), f32(lr1), f32(lr2),
                                keys)
    tr = jax.device_get(tr)
    out = {k: np.asarray(getattr(tr, k)).astype(np.int64).reshape(L, seeds)
           for k in ("prog_n", "fail_n", "div_n", "prog_t", "fail_t")}
    out["ckpt"] = {k: np.asarray(v).reshape(L, seeds, -1) for k, v in tr.ckpt.items()}
    out.update(n1=n1, n2=n2, lr1=lr1, lr2=lr2)
    return out


def seconds_to(samples_S, sched: Schedule, seconds_per_sample) -> np.ndarray:
    """Wall-clock seconds of per-seed sample counts under a schedule (0 stays 0 = censored).

    seconds_per_sample(B) -> seconds per sample at constant batch B (1 / throughput).
    """
    n = np.asarray(samples_S, np.float64)
    s1 = switch_updates(sched.switch, sched.b1) * sched.b1
    t = np.minimum(n, s1) * seconds_per_sample(sched.b1) + \
        np.maximum(n - s1, 0) * seconds_per_sample(sched.b2)
    return np.where(n > 0, t, 0.0)


def reached_first(prog_S, fail_S) -> np.ndarray:
    """Per seed: the target was reached and strictly before the failure clock fired."""
    p, f = np.asarray(prog_S), np.asarray(fail_S)
    return (p > 0) & ((f == 0) | (p < f))


# ---------------------------------------------------------------------------- planner

@dataclass(frozen=True)
class Clocks:
    """Measured clocks of one constant batch, in samples (math.inf = censored)."""
    batch: float
    n_prog: float
    n_fail: float

    def __post_init__(self):
        require_positive("batch", self.batch)
        for name in ("n_prog", "n_fail"):
            v = getattr(self, name)
            require(isinstance(v, (int, float)) and v > 0 and not math.isnan(v), name,
                    "> 0 samples (math.inf when censored)", v)


@dataclass(frozen=True)
class Option:
    """One way to reach the target, as predicted by the clock-fraction model."""
    kind: str              # constant_small | constant_large | schedule
    switch: float          # samples at B1 before switching (0 = B2 from the start)
    samples: float         # samples to target (inf = never)
    seconds: float         # wall-clock seconds to target (inf = never)
    failure_fraction: float  # failure clock spent when the target is reached (> 1: fails first)
    safe: bool


@dataclass(frozen=True)
class Plan:
    best: Option
    options: tuple         # constant_small, constant_large, schedule (if any)
    safe_switches: tuple   # (lo, hi): safe interval of the switch in samples, or None
    margin: float

    def to_dict(self) -> dict:
        return {"best": asdict(self.best), "options": [asdict(o) for o in self.options],
                "safe_switches": None if self.safe_switches is None else list(self.safe_switches),
                "margin": self.margin}


def _option(kind, S, rest, small: Clocks, large: Clocks, spp1, spp2, margin) -> Option:
    samples = S + rest
    if not math.isfinite(samples):
        return Option(kind, float(S), math.inf, math.inf, math.inf, False)
    g = S / small.n_fail + (0.0 if rest == 0 else rest / large.n_fail)
    seconds = S * spp1 + rest * spp2
    return Option(kind, float(S), float(samples), float(seconds), float(g),
                  g <= 1 - margin + 1e-9)


def fraction_remaining(small: Clocks, large: Clocks):
    """Clock-fraction model: samples still needed at B2 after S samples at B1."""
    def rest(S):
        if math.isinf(small.n_prog):
            return large.n_prog
        f = min(S / small.n_prog, 1.0)
        return 0.0 if f >= 1 else (1 - f) * large.n_prog
    return rest


def curve_remaining(small: Clocks, large: Clocks, curve_small, curve_large, start: float = 1.0):
    """Equal-progress model from measured curves (samples_C, metric_C; metric falls to the
    target): after S samples at B1 the metric is m1(S); B2 needs N_prog(B2) - S2 more, where
    S2 is the first sample at which B2's curve is at or below m1(S). `start`: the metric
    at 0 samples (1.0 for loss / initial loss)."""
    n1, m1 = (np.asarray(v, np.float64) for v in curve_small)
    n2, m2 = (np.asarray(v, np.float64) for v in curve_large)
    run_min2 = np.minimum.accumulate(m2)

    def rest(S):
        if S >= small.n_prog:
            return 0.0
        level = np.interp(S, np.concatenate([[0.0], n1]), np.concatenate([[start], m1]))
        hit = np.nonzero(run_min2 <= level)[0]
        if hit.size == 0:
            return large.n_prog
        j = hit[0]
        # interpolate the crossing between checkpoints j-1 and j (start at 0 samples)
        n_prev, m_prev = (n2[j - 1], run_min2[j - 1]) if j > 0 else (0.0, max(start, level))
        frac = 0.0 if m_prev == run_min2[j] else (m_prev - level) / (m_prev - run_min2[j])
        s2 = n_prev + min(max(frac, 0.0), 1.0) * (n2[j] - n_prev)
        return max(large.n_prog - s2, 0.0)
    return rest


def plan_switch(small: Clocks, large: Clocks, seconds_per_sample, margin: float = 0.1,
                objective: str = "seconds", remaining=None, n_grid: int = 401) -> Plan:
    """The fastest safe way to the target: constant B1, constant B2, or B1 -> B2 at a switch.

    seconds_per_sample(B) -> seconds per sample at batch B. margin: the failure clock must
    have at least this fraction left when the target is reached. objective: "seconds"
    (wall-clock) or "samples". remaining(S) -> samples needed at B2 after S samples at B1
    (default: the clock-fraction model; `curve_remaining` uses measured progress curves).
    Switches are searched on a grid of n_grid points in (0, N_prog(B1)).
    """
    require(0 <= margin < 1, "margin", "in [0, 1)", margin)
    require(objective in ("seconds", "samples"), "objective", "seconds or samples", objective)
    require(small.batch < large.batch, "batches", "B1 < B2", (small.batch, large.batch))
    require(isinstance(n_grid, int) and n_grid >= 3, "n_grid", "an integer >= 3", n_grid)
    spp1, spp2 = float(seconds_per_sample(small.batch)), float(seconds_per_sample(large.batch))
    rest = remaining or fraction_remaining(small, large)
    opt_small = _option("constant_small", small.n_prog, 0.0, small, large, spp1, spp2, margin)
    opt_large = _option("constant_large", 0.0, large.n_prog, small, large, spp1, spp2, margin)
    key = (lambda o: o.seconds) if objective == "seconds" else (lambda o: o.samples)
    options = [opt_small, opt_large]
    safe = None
    if math.isfinite(small.n_prog):
        grid = np.linspace(0.0, small.n_prog, n_grid)[1:-1]
        cand = [_option("schedule", float(S), rest(float(S)), small, large, spp1, spp2, margin)
                for S in grid]
        ok = [o for o in cand if o.safe]
        if ok:
            safe = (min(o.switch for o in ok), max(o.switch for o in ok))
            options.append(min(ok, key=key))
    safe_opts = [o for o in options if o.safe]
    # a schedule must beat both constant runs; with no safe option report the least risky
    best = min(safe_opts, key=key) if safe_opts else min(options, key=lambda o: o.failure_fraction)
    return Plan(best, tuple(options), safe, margin)


__all__ = ["Schedule", "stage_steps", "switch_updates", "make_quadratic_schedule_run",
           "register_schedule", "run_schedule", "seconds_to", "reached_first", "samples_at",
           "Clocks", "Option", "Plan", "plan_switch", "fraction_remaining", "curve_remaining", "SCHEDULE_RUNS", "CARRY_MODES", "carry_state"]
