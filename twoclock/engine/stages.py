"""One run of any model as a sequence of stages: a constant batch is one stage, a schedule two.

Stage k runs n_k updates at batch B_k with learning rate lr_k. Updates are numbered globally
(1-based), and update t draws fold_in(key, t) whatever the stage, so a schedule with equal
stages is the constant run bit for bit. Between stages the optimizer state is carried by a
rule (`carry_state`). Checkpoints fall every `checkpoint_every(n_total, n_ckpt)` updates; a
stage that is not the last ends on a checkpoint, the last is padded to a whole chunk (padded
updates never set a clock). A clock is the first crossing of its condition, interpolated
linearly between updates where the model gives a margin (`crossed`), so it is a fractional
update index, and its samples are counted at the stage's batch inside that update.
"""
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.clock import NEVER, Clock, between
from twoclock.config import require, require_carry
from twoclock.model import Model, RunState
from twoclock.trace import Trace, checkpoint_every

# every margin clock of a model: its margin >= 0 where its condition holds (twoclock.model)
MARGIN = Clock("margin", ">=", 0.0)


def stage_layout(n_K, every: int) -> tuple:
    """([(t_start, full chunks, remainder)] per stage, t_C): the chunks of each stage and the
    1-based update index of every checkpoint."""
    layout, t_C, t0 = [], [], 0
    for k, n in enumerate(n_K):
        last = k == len(n_K) - 1
        full, rem = (math.ceil(n / every), 0) if last else (n // every, n % every)
        layout.append((t0, full, rem))
        ends = t0 + (np.arange(full) + 1) * every
        t_C += [np.minimum(ends, t0 + n)] + ([[t0 + n]] if rem else [])
        t0 += n
    return layout, np.concatenate(t_C).astype(np.int32)


def _whole_samples(t, n_K, batch_K):
    out, t0 = 0, 0
    for k, (n, b) in enumerate(zip(n_K, batch_K)):
        done = t - t0 if k == len(n_K) - 1 else jnp.clip(t - t0, 0, n)
        out = out + jnp.maximum(done, 0) * b
        t0 += n
    return out


def samples_at(t, n_K, batch_K):
    """Samples consumed after update t (1-based; 0 stays 0): stage k's updates cost B_k each.

    A fractional t (a clock) inside update i = ceil(t) is samples_at(i - 1) + (t - i + 1) B_k,
    B_k the batch of the stage holding update i: linear inside each stage. The whole updates
    are counted in integers and only the fraction is scaled, so equal stages give the one-stage
    number bit for bit."""
    if jnp.issubdtype(jnp.result_type(t), jnp.integer):
        return _whole_samples(t, n_K, batch_K)
    i = jnp.ceil(t)
    frac = t - (i - 1)  # exact: i - 1 <= t <= i
    whole = (i - 1).astype(jnp.int32)
    b_i, t0 = 0, 0
    for k, (n, b) in enumerate(zip(n_K, batch_K)):
        inside = (whole >= t0) if k == len(n_K) - 1 else (whole >= t0) & (whole < t0 + n)
        b_i = b_i + jnp.where(inside, b, 0)
        t0 += n
    return _whole_samples(whole, n_K, batch_K).astype(t.dtype) + frac * b_i


def carry_state(opt_state, fresh_state, b_from, b_to, carry: str, beta1: float, beta2: float):
    """The optimizer state the next stage starts from.

    carry: the state as is. Adam's second moment nu then stays at the old noise level for
    ~1 / (1 - beta2) updates and shrinks the new steps by up to sqrt(b_to / b_from).
    rescale: as is, except the noise part of Adam's second moment is scaled by b_from / b_to
    (the change in minibatch gradient-noise variance): with bias-corrected moments,
    nu' = mu^2 + max(nu - mu^2, 0) * b_from / b_to (mu, the gradient mean, estimates the signal).
    reset: a fresh optimizer state (step count included).
    """
    require_carry(carry)
    if carry == "reset":
        return fresh_state
    if carry == "carry":
        return opt_state
    k = b_from / b_to

    def walk(s):
        if isinstance(s, optax.ScaleByAdamState):
            t = s.count.astype(jnp.result_type(float))
            c1, c2 = 1 - beta1**t, 1 - beta2**t
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


def crossed(state: RunState, hits: dict, ts, n_total) -> RunState:
    """state with each clock set to the first crossing in ts, if not set yet (NEVER: not yet).

    A bool hit crosses at its update t; a margin (float, >= 0: the condition holds, `MARGIN`)
    at t - 1 + f, f = MARGIN.fraction(m_{t-1}, m_t) = (0 - m_{t-1}) / (m_t - m_{t-1}) in
    [tiny, 1] (`twoclock.clock`), the zero of the line through the margins after updates t - 1
    and t (f = 1 where m_{t-1} is unknown, NaN, or >= 0: the start state already met the
    condition). Updates past n_total (padding of the last chunk) never set a clock; each
    margin clock's last margin is carried in state.margins."""
    live = ts <= n_total
    dtype = jnp.result_type(float)
    clocks, margins = {}, dict(state.margins or {})
    for name, prev in state.clocks.items():
        h_T = hits[name]
        if h_T.dtype == jnp.bool_:
            hit_T, f_T = h_T & live, jnp.ones(h_T.shape, dtype)
        else:
            if name not in margins:
                raise KeyError(f"clock {name!r} gives a margin: the model's init must give "
                               "its start margin in RunState.margins (NaN: unknown)")
            m_T = h_T.astype(dtype)
            before_T = jnp.concatenate([margins[name][None].astype(dtype), m_T[:-1]])
            hit_T = MARGIN.holds(m_T) & live
            # (0 - m0) / (m1 - m0) is m0 / (m0 - m1) bit for bit wherever it is read (m1 >= 0 >
            # m0): IEEE negation and a nonzero difference are exactly antisymmetric
            f_T = MARGIN.fraction(before_T, m_T, where=jnp.where)
            margins[name] = m_T[-1]
        i = jnp.argmax(hit_T)
        t = ts[i].astype(dtype)
        at = between(t - 1, t, f_T[i])
        clocks[name] = jnp.where((prev == NEVER) & jnp.any(hit_T), at, prev)
    return state._replace(clocks=clocks, margins=margins or state.margins)


def trace(model: Model, clocks: dict, samples, t_C, ckpt_LxC: dict) -> Trace:
    """The Trace of L runs: clocks [L] (fractional update indices) and checkpoints [L, C] at
    updates t_C."""
    L = clocks["prog"].shape[0]
    return Trace(
        prog_t=clocks["prog"], fail_t=clocks["fail"], div_t=clocks["div"],
        prog_n=samples(clocks["prog"]), fail_n=samples(clocks["fail"]),
        div_n=samples(clocks["div"]),
        extra={f"{name}_n": samples(clocks[name]) for name in model.extra_clocks},
        ckpt={"samples": jnp.broadcast_to(samples(t_C), (L, t_C.shape[0])), **ckpt_LxC})


def make_run(model: Model, cfg, opt, n_K: tuple, n_ckpt: int = 128, batches=None,
             carry: str = "rescale"):
    """A pure run(batch_K, lr_K, key, knob=None) -> Trace of len(n_K) stages of n_K[k] updates
    (knob: the model's knobs, `Model.knobs`, where a program takes them).

    batches: the stages' batches as Python ints where the model's batch sets array shapes
    (static_batch), else None; run's batch_K may then be traced. Each lr_K[k] is a scalar, or a
    vector [L] of learning rates that share the key's noise stream: the noise is drawn once per
    chunk for all L, and every field of the Trace gains a leading axis L.
    """
    K = len(n_K)
    require(K >= 1 and all(int(n) >= 0 for n in n_K) and sum(n_K) >= 1, "n_steps",
            "stage lengths >= 0 with at least one update", n_K)
    static = tuple(batches) if model.static_batch else (None,) * K
    require(len(static) == K and (not model.static_batch or None not in static), "batches",
            f"{K} Python ints (the {model.name} model's batch sets array shapes)", batches)
    n_total = int(sum(n_K))
    every = checkpoint_every(n_total, n_ckpt)
    layout, t_C = stage_layout(n_K, every)
    makers = {}
    for b in static:  # one set of dynamics per distinct static batch
        makers.setdefault(b, model.dynamics(cfg, opt, b))
    dtype = jnp.result_type(float)

    def run(batch_K, lr_K, key, knob=None) -> Trace:
        batch_K = [jnp.asarray(b, dtype) for b in batch_K]
        shared = jnp.ndim(lr_K[0]) == 1
        lr_KxL = [jnp.reshape(jnp.asarray(lr, dtype), (-1,)) for lr in lr_K]
        knobs = () if knob is None else (knob,)
        dyn = [makers[static[k]](batch_K[k], key, *knobs) for k in range(K)]

        def chunk_fn(d):
            def one(state: RunState, lr, ts, noise):
                state, hits, metrics = d.advance(d.optimizer(lr), state, ts, noise)
                return crossed(state, hits, ts, n_total), metrics

            def chunk(state_L, lr_L, ts):
                noise = d.draw(ts)  # once for every learning rate of the stream
                return jax.vmap(one, in_axes=(0, 0, None, None))(state_L, lr_L, ts, noise)
            return chunk

        state = varying(jax.vmap(lambda lr: dyn[0].init(dyn[0].optimizer(lr)))(lr_KxL[0]), key)
        outs = []
        for k, (t0, full, rem) in enumerate(layout):
            if k > 0:
                def carried(s, lr, d=dyn[k], k=k):
                    fresh = d.optimizer(lr).init(s.params)
                    return s._replace(opt_state=carry_state(
                        s.opt_state, fresh, batch_K[k - 1], batch_K[k], carry, opt.beta1,
                        opt.beta2))
                state = jax.vmap(carried)(state, lr_KxL[k])
            chunk, lr_L = chunk_fn(dyn[k]), lr_KxL[k]
            if full:
                starts = t0 + jnp.arange(full, dtype=jnp.int32) * every
                state, m = jax.lax.scan(
                    lambda s, t: chunk(s, lr_L, t + 1 + jnp.arange(every, dtype=jnp.int32)),
                    state, starts)
                outs.append(m)
            if rem:
                ts = t0 + full * every + 1 + jnp.arange(rem, dtype=jnp.int32)
                state, m = chunk(state, lr_L, ts)
                outs.append(jax.tree_util.tree_map(lambda v: v[None], m))
        ckpt_LxC = {name: jnp.concatenate([o[name] for o in outs]).T for name in outs[0]}
        per_update = [b.astype(jnp.int32) for b in batch_K]
        samples = lambda t: samples_at(t, n_K, per_update)
        tr = trace(model, state.clocks, samples, jnp.asarray(t_C), ckpt_LxC)
        return tr if shared else jax.tree_util.tree_map(lambda v: v[0], tr)

    return run


# A traced run draws the noise of this many updates in one call: one update's 72 normals are
# too few to keep the vectorised generator busy.
DRAW_BLOCK = 16


def varying(tree, key):
    """tree, its values bit for bit, marked as varying with key (a run's own argument). A run's
    first state is the same for every run of a vmapped sweep, so vmap's rule for lax.scan
    would first batch a loop body over an unbatched carry, find the carry batched after one
    update, and batch the body again, once per level of nested loops; marked, it batches each
    body once."""
    on = jnp.all(key == key)  # True, but it varies with each run's key
    return jax.tree_util.tree_map(lambda v: jnp.where(on, v, v), tree)


def make_traced_run(model: Model, cfg, opt, n_ckpt: int = 128):
    """A pure run(batch, lr, key, n_steps, every, knob=None) -> Trace whose length is a traced
    argument (knob: as `make_run`'s).

    One compiled program serves every run length (and batch): updates run in n_ckpt chunks of
    `every` (a traced trip count; chunks past ceil(n_steps / every) run nothing), drawing the
    noise of DRAW_BLOCK updates at a time (update t's noise is fold_in(key, t)'s however it is
    drawn, so the block size does not change a number). The checkpoints have n_ckpt entries,
    of which the first ceil(n_steps / every) are real: `checkpoints(n_steps, every)` says how
    many. The numbers are those of `constant_run` with the same n_steps and every =
    checkpoint_every(n_steps, n_ckpt), bit for bit. Only for models whose batch is traced (not
    static_batch).
    """
    require(not model.static_batch, "model", "a model whose batch is traced", model.name)
    dyn_of = model.dynamics(cfg, opt, None)

    def run(batch, lr, key, n_steps, every, knob=None) -> Trace:
        d = dyn_of(batch, key) if knob is None else dyn_of(batch, key, knob)
        shared = jnp.ndim(lr) == 1
        lr_L = jnp.reshape(jnp.asarray(lr, jnp.result_type(float)), (-1,))

        def one(state, lr, ts, noise):
            state, hits, metrics = d.advance(d.optimizer(lr), state, ts, noise)
            return crossed(state, hits, ts, n_steps), metrics

        def update(t, state_L, z_1xN):
            ts = jnp.reshape(t, (1,)).astype(jnp.int32)
            return jax.vmap(one, in_axes=(0, 0, None, None))(state_L, lr_L, ts, z_1xN)

        state = varying(jax.vmap(lambda lr: d.init(d.optimizer(lr)))(lr_L), key)
        m0 = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype),
                                    jax.eval_shape(lambda s: update(
                                        1, s, d.draw(jnp.ones((1,), jnp.int32))), state)[1])
        n_live = (n_steps + every - 1) // every

        def chunk(carry, k):
            trip = jnp.where(k < n_live, every, 0)
            t0 = k * every

            def block(j, c):
                # the block's last draws may lie past the chunk: drawn, never used
                ts = t0 + j * DRAW_BLOCK + 1 + jnp.arange(DRAW_BLOCK, dtype=jnp.int32)
                z_BxN = d.draw(ts)
                n = jnp.minimum(DRAW_BLOCK, trip - j * DRAW_BLOCK)
                return jax.lax.fori_loop(0, n, lambda i, c: update(
                    ts[i], c[0], jax.lax.dynamic_slice_in_dim(z_BxN, i, 1)), c)
            carry = jax.lax.fori_loop(0, (trip + DRAW_BLOCK - 1) // DRAW_BLOCK, block, carry)
            return carry, carry[1]

        (state, _), m_CxL = jax.lax.scan(chunk, (state, m0), jnp.arange(n_ckpt, dtype=jnp.int32))
        t_C = jnp.minimum((jnp.arange(n_ckpt, dtype=jnp.int32) + 1) * every, n_steps)
        per_update = jnp.asarray(batch).astype(jnp.int32)
        # as one stage: constant_run's samples, bit for bit
        samples = lambda t: samples_at(t, (n_steps,), (per_update,))
        tr = trace(model, state.clocks, samples, t_C, {k: v.T for k, v in m_CxL.items()})
        return tr if shared else jax.tree_util.tree_map(lambda v: v[0], tr)

    return run


def program_opt(opt):
    """opt as a compiled run sees it: the lr rule only sets the lr grid, which a run takes as
    an argument, so runs under two rules share their programs."""
    return dataclasses.replace(opt, lr_rule=type(opt).lr_rule)


def checkpoints(n_steps: int, every: int) -> int:
    """How many of a traced run's checkpoints are real."""
    return math.ceil(n_steps / every)


def constant_run(model: Model, cfg, opt, n_steps: int, n_ckpt: int = 128, batch=None):
    """A pure run(batch, lr, key, knob=None) -> Trace of n_steps updates at one batch (a
    one-stage run).

    batch: the run's batch as a Python int where the model's batch sets array shapes."""
    run = make_run(model, cfg, opt, (n_steps,), n_ckpt,
                   batches=(batch,) if model.static_batch else None)
    return lambda b, lr, key, knob=None: run((b,), (lr,), key, knob)
