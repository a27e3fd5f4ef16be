"""Model 1: the noisy quadratic model with a drift block.

Progress block: L = 1/2 (x)^T Q diag(h) Q^T x with x = theta - theta*, h_i = h_max i^-alpha.
Minibatch gradient: Q diag(h) Q^T x + Q diag(sqrt(c / B)) z, c = sigma^2 h^gamma, so the
batch B is a scalar (traced, vmappable) rather than a shape. Drift block: gradient
-b + sqrt(c_d / B) z, no curvature, not in the loss.
"""
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.config import OptimConfig, QuadraticConfig
from twoclock.scaling import make_optimizer
from twoclock.sweep import ModelSpec, register
from twoclock.trace import Trace, checkpoint_every


def spectrum(cfg: QuadraticConfig) -> np.ndarray:
    """h_D: curvatures h_max * i^-alpha, i = 1..dim."""
    i = np.arange(1, cfg.dim + 1, dtype=np.float64)
    return cfg.h_max * i ** (-cfg.alpha)


def noise_variances(cfg: QuadraticConfig) -> np.ndarray:
    """c_D: per-sample gradient-noise variances in the eigenbasis, sigma^2 h^gamma."""
    return cfg.sigma**2 * spectrum(cfg) ** cfg.gamma


def rotation(cfg: QuadraticConfig) -> np.ndarray | None:
    """Q_DxD, a Haar-random orthogonal matrix (fixed by init_seed), or None if not rotated."""
    if not cfg.rotate:
        return None
    rng = np.random.default_rng(cfg.init_seed)
    q, r = np.linalg.qr(rng.standard_normal((cfg.dim, cfg.dim)))
    return q * np.sign(np.diag(r))


def initial_offset(cfg: QuadraticConfig) -> np.ndarray:
    """x0_D = theta0 - theta* in the parameter basis: all ones, or N(0, 1) if random_start."""
    if cfg.random_start:
        return np.random.default_rng(cfg.init_seed + 1).standard_normal(cfg.dim)
    return np.ones(cfg.dim)


def initial_loss(cfg: QuadraticConfig) -> float:
    """L0 = 1/2 sum_i h_i (Q^T x0)_i^2 (= sum(h)/2 for the default start)."""
    x0 = initial_offset(cfg)
    q = rotation(cfg)
    e0 = x0 if q is None else q.T @ x0
    return float(0.5 * np.sum(spectrum(cfg) * e0**2))


class QuadState(NamedTuple):
    theta: jax.Array  # [D + Dd]: progress offsets then drift coordinates
    opt_state: optax.OptState
    prog_t: jax.Array
    fail_t: jax.Array
    div_t: jax.Array


def make_update(cfg: QuadraticConfig, opt: OptimConfig, n_steps: int):
    """The per-update step shared by make_run and the batch schedules (twoclock.schedule).

    Returns step_for(batch, lr, key) -> (tx, update) with update(state, t) -> (state,
    (loss, drift)); t is the 1-based global update index (its noise is fold_in(key, t)) and
    updates past n_steps never set a clock. Batch and lr may be traced scalars. update also
    takes (t, z) with z = noise(key, t) drawn beforehand: make_run draws a chunk of updates'
    noise in one vectorised call, the same numbers, faster.
    """
    dtype = jnp.result_type(float)
    h = jnp.asarray(spectrum(cfg), dtype)
    c = jnp.asarray(noise_variances(cfg), dtype)
    q = rotation(cfg)
    q = None if q is None else jnp.asarray(q, dtype)
    D, Dd = cfg.dim, cfg.drift_dim
    target_loss = cfg.target * initial_loss(cfg)

    def to_eig(v):
        return v if q is None else q.T @ v

    def from_eig(v):
        return v if q is None else q @ v

    def loss_of(x):
        e = to_eig(x)
        return 0.5 * jnp.sum(h * e * e)

    def drift_of(d):
        if Dd == 0:
            return jnp.zeros((), dtype)
        return jnp.mean(d) if cfg.drift_stat == "mean" else jnp.linalg.norm(d)

    def step_for(batch, lr, key):
        batch = jnp.asarray(batch, dtype)
        tx = make_optimizer(opt, lr, batch)
        noise_sd = jnp.sqrt(jnp.concatenate([c, jnp.full((Dd,), cfg.drift_noise, dtype)]) / batch)

        def update(state: QuadState, xs):
            t, z = xs if isinstance(xs, tuple) else (xs, noise(key, xs))
            z = z * noise_sd
            x = state.theta[:D]
            g_x = from_eig(h * to_eig(x) + z[:D])
            g_d = -cfg.drift_bias + z[D:]
            grad = jnp.concatenate([g_x, g_d])
            upd, opt_state = tx.update(grad, state.opt_state, state.theta)
            theta = optax.apply_updates(state.theta, upd)
            loss, drift = loss_of(theta[:D]), drift_of(theta[D:])
            live = t <= n_steps  # steps past n_steps only pad the last chunk
            first = lambda prev, hit: jnp.where((prev == 0) & hit & live, t, prev)
            state = QuadState(
                theta, opt_state,
                first(state.prog_t, loss <= target_loss),
                first(state.fail_t, drift >= cfg.drift_threshold),
                first(state.div_t, ~(jnp.isfinite(loss) & jnp.isfinite(drift))),
            )
            return state, (loss, drift)

        return tx, update

    def noise(key, t):
        """Standard normals of update t: one fold_in(key, t) stream per update."""
        return jax.random.normal(jax.random.fold_in(key, t), (D + Dd,), dtype)

    step_for.noise = noise
    return step_for


def initial_state(cfg: QuadraticConfig, tx) -> QuadState:
    """Start of a run: offsets x0, drift block at 0, fresh optimizer state, no crossings."""
    dtype = jnp.result_type(float)
    theta0 = jnp.concatenate([jnp.asarray(initial_offset(cfg), dtype),
                              jnp.zeros((cfg.drift_dim,), dtype)])
    zero = jnp.zeros((), jnp.int32)
    return QuadState(theta0, tx.init(theta0), zero, zero, zero)


def make_run(cfg: QuadraticConfig, opt: OptimConfig, n_steps: int, n_ckpt: int = 128,
             batch=None):
    """A pure run(batch, lr, key) -> Trace of n_steps updates (clocks ignore padded steps).

    The batch is a traced argument of run; make_run's `batch` exists only so every model
    shares the engine's signature.
    """
    dtype = jnp.result_type(float)
    step_for = make_update(cfg, opt, n_steps)
    every = checkpoint_every(n_steps, n_ckpt)
    n_chunks = math.ceil(n_steps / every)

    def run(batch, lr, key) -> Trace:
        batch = jnp.asarray(batch, dtype)
        tx, update = step_for(batch, lr, key)

        def chunk(state, k):
            ts = k * every + 1 + jnp.arange(every, dtype=jnp.int32)
            z = jax.vmap(step_for.noise, in_axes=(None, 0))(key, ts)  # one draw per chunk
            state, (loss, drift) = jax.lax.scan(update, state, (ts, z))
            return state, (loss[-1], drift[-1])

        state = initial_state(cfg, tx)
        state, (loss_C, drift_C) = jax.lax.scan(chunk, state, jnp.arange(n_chunks, dtype=jnp.int32))
        t_C = jnp.minimum((jnp.arange(n_chunks, dtype=jnp.int32) + 1) * every, n_steps)
        per_update = batch.astype(jnp.int32)
        return Trace(
            prog_t=state.prog_t, fail_t=state.fail_t, div_t=state.div_t,
            prog_n=state.prog_t * per_update, fail_n=state.fail_t * per_update,
            div_n=state.div_t * per_update, extra={},
            ckpt={"samples": t_C * per_update, "loss_frac": loss_C / initial_loss(cfg),
                  "drift": drift_C},
        )

    return run


def add_args(group) -> None:
    """The quadratic model's command-line flags (defaults from QuadraticConfig)."""
    d = QuadraticConfig()
    group.add_argument("--dim", type=int, default=d.dim, help="progress-block dimension")
    group.add_argument("--alpha", type=float, default=d.alpha, help="spectrum h_i = h_max i^-alpha")
    group.add_argument("--h-max", type=float, default=d.h_max, help="largest curvature")
    group.add_argument("--sigma", type=float, default=d.sigma, help="noise scale: C = sigma^2 H^gamma")
    group.add_argument("--gamma", type=float, default=d.gamma, help="noise exponent gamma")
    group.add_argument("--drift-dim", type=int, default=d.drift_dim, help="drift-block size")
    group.add_argument("--drift-bias", type=float, default=d.drift_bias, help="drift pull b")
    group.add_argument("--drift-noise", type=float, default=d.drift_noise,
                       help="per-sample drift-gradient variance c_d")
    group.add_argument("--drift-stat", choices=("mean", "norm"), default=d.drift_stat)
    group.add_argument("--rotate", action="store_true", help="random rotation of H and C")
    group.add_argument("--random-start", action="store_true", help="start at N(0, 1) offsets")
    group.add_argument("--init-seed", type=int, default=d.init_seed)
    group.add_argument("--target", type=float, default=d.target,
                       help="progress target as a fraction of the initial loss, in (0, 1)")
    group.add_argument("--drift-threshold", type=float, default=d.drift_threshold)


def config_from_args(ns) -> QuadraticConfig:
    return QuadraticConfig(
        dim=ns.dim, alpha=ns.alpha, h_max=ns.h_max, sigma=ns.sigma, gamma=ns.gamma,
        drift_dim=ns.drift_dim, drift_bias=ns.drift_bias, drift_noise=ns.drift_noise,
        drift_stat=ns.drift_stat, rotate=ns.rotate, random_start=ns.random_start,
        init_seed=ns.init_seed, target=ns.target, drift_threshold=ns.drift_threshold)


def annotate(cfg, opt, sweep, res, runs, crit) -> None:
    """Attach the theory's predictions to each run and critical batch (in place)."""
    from twoclock import theory  # theory imports this module
    drifts = cfg.drift_dim >= 1 and cfg.drift_bias > 0
    for r in runs:
        th = {}
        if opt.name == "adam":
            if drifts:
                pred = theory.adam_failure_samples(cfg, opt, r["lr0"], r["batch"])
                th["failure_samples"], th["failure_regime"] = pred["samples"], pred["regime"]
            if not cfg.rotate:  # the mean-field Adam recursion is per eigen-coordinate
                th["progress_samples"] = theory.adam_progress_samples(
                    cfg, opt, r["lr0"], r["batch"], budget=sweep.budget)
        else:
            t = theory.steps_to_target(cfg, opt, r["batch"], r["lr"], sweep.budget // r["batch"])
            th["progress_samples"] = t * r["batch"] if t else None
            if drifts and cfg.drift_stat == "mean":
                th["failure_samples"] = theory.linear_failure_samples(cfg, opt, r["lr0"],
                                                                      r["batch"])
        r["theory"] = th
    if opt.name == "adam" and not cfg.rotate:
        for cb in crit:
            cb["theory"] = theory.critical_batch_mechanism(cfg, opt, cb["lr0"])


register(ModelSpec("quadratic", make_run, static_batch=False, unit="samples",
                   add_args=add_args, config_from_args=config_from_args, annotate=annotate))
