"""The bandit's dynamics: one update = one rollout batch consumed in M x E optimizer steps.

The clocks need the exact held-out accuracy after every update; `advance` computes it for a
whole chunk of updates in one batched product after the chunk's scan.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.config import OptimConfig
from twoclock.model import Dynamics, RunState, initial_clocks, initial_margins
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.bandit.problem import (Pool, accuracy, logp_of, make_problem,
                                            policy_metrics)
from twoclock.models.bandit.rollout import epoch_order, make_rollout
from twoclock.models.bandit.surrogate import group_grads, noise_stats
from twoclock.models.grpo import inner_scan, optimizer_step
from twoclock.scaling import make_optimizer


def pools(cfg: BanditConfig) -> tuple:
    """(train, held-out) pools as arrays of the default float type."""
    dtype = jnp.result_type(float)
    # cast by NumPy (the same rounding): a float64 -> float32 cast by JAX compiles a program
    return tuple(Pool(*(jnp.asarray(np.asarray(v, dtype)) for v in p))
                 for p in make_problem(cfg))


def drift_statistic(w_d, stat: str):
    """The failure statistic over the last axis: mean(w_d) (signed) or RMS(w_d)."""
    return jnp.mean(w_d, axis=-1) if stat == "mean" else jnp.sqrt(jnp.mean(w_d * w_d, axis=-1))


def adam_nu(opt_state):
    """Adam's (uncorrected) second moment nu from an optax state, None for SGD/momentum."""
    for s in jax.tree_util.tree_leaves(opt_state, is_leaf=lambda x: isinstance(
            x, optax.ScaleByAdamState)):
        if isinstance(s, optax.ScaleByAdamState):
            return s.nu
    return None


def trust_region_stats(w0, w, ro, clip_S, out_S, active_S, Ds: int) -> dict:
    """What one rollout batch's M x E steps did to the trust region.

    clip_frac: clipped samples over all samples, pooled over the inner steps (equal-sized
    minibatches); clip_frac_active: over samples with a nonzero advantage (only those can be
    clipped); move_{skill,drift}: |w - w0| of each block over the rollout batch;
    logratio_{skill,drift}: RMS over the batch's sampled responses of log pi_{w0 + dw_block}(a)
    - log pi_{w0}(a), the log-ratio each block's movement alone would give them.
    """
    dw = w - w0
    out = {"clip_frac": jnp.mean(clip_S), "outside_frac": jnp.mean(out_S),
           "clip_frac_active": jnp.sum(clip_S) / jnp.maximum(jnp.sum(active_S), 1e-12),
           "move_skill": jnp.linalg.norm(dw[:Ds]), "move_drift": jnp.linalg.norm(dw[Ds:])}
    for name, mask in (("skill", jnp.arange(w.shape[0]) < Ds),
                       ("drift", jnp.arange(w.shape[0]) >= Ds)):
        logp = jnp.take_along_axis(logp_of(w0 + jnp.where(mask, dw, 0.0), ro.z0, ro.phi),
                                   ro.a, axis=-1)
        out[f"logratio_{name}"] = jnp.sqrt(jnp.mean((logp - ro.logp_old) ** 2))
    return out


def dynamics(cfg: BanditConfig, opt: OptimConfig, batch: int):
    """dyn(batch, key) -> Dynamics for rollout batches of `batch` responses (a Python int: it
    sets the shapes P x G); dyn's own batch only feeds the learning-rate companions."""
    B = int(batch)
    G, M, S = cfg.group, cfg.n_minibatches(B), cfg.inner_steps(B)
    cfg.prompts(B)  # B = P G with M dividing P, else ValueError
    Ds = cfg.skill_dim
    dtype = jnp.result_type(float)
    train, test = pools(cfg)
    rollout, rollout_bits = make_rollout(cfg, B, train)
    with jax.ensure_compile_time_eval():  # a constant, also when built inside a traced run
        err0 = 1.0 - float(accuracy(jnp.zeros((Ds + cfg.drift_dim,), dtype), test))

    def dyn(batch_, key) -> Dynamics:
        batch_ = jnp.asarray(batch_, dtype)

        def draw(ts_T):
            """The raw bits [T, n] of updates ts_T, update t's from fold_in(key, t)."""
            return jax.vmap(lambda t: rollout_bits(jax.random.fold_in(key, t)))(ts_T)

        def update(tx, carry, bits):
            w0, opt_state = carry
            ro, logp_PxK, zero_adv = rollout(w0, bits)
            # per-group gradients at the behaviour policy: the noise scale, and with
            # M = E = 1 the only step's gradient (their mean)
            g_PxD, clip_P, out_P = group_grads(w0, ro, cfg, logp_PxK)
            stats = noise_stats(g_PxD, G, Ds)
            g_D = jnp.mean(g_PxD, axis=0)
            stats["grad_norm"] = jnp.linalg.norm(g_D)
            stats["zero_adv_frac"] = zero_adv
            # the verifier's restoring force: the loss gradient's component along w_d (> 0:
            # it pulls the drift back towards the reference policy)
            wd = w0[Ds:]
            stats["restoring_drift"] = jnp.sum(g_D[Ds:] * wd) / jnp.maximum(
                jnp.linalg.norm(wd), 1e-12)
            active = jnp.mean((ro.adv != 0).astype(dtype))
            if S == 1:
                w, opt_state = optimizer_step(tx, w0, opt_state, g_D)
                clip_S, out_S, active_S = jnp.mean(clip_P)[None], jnp.mean(out_P)[None], \
                    active[None]
            else:
                def grad(w, mb):
                    g_mb, clip_mb, out_mb = group_grads(w, mb, cfg)
                    active_mb = jnp.mean((mb.adv != 0).astype(dtype))
                    return jnp.mean(g_mb, axis=0), (jnp.mean(clip_mb), jnp.mean(out_mb), active_mb)

                w, opt_state, (clip_S, out_S, active_S) = inner_scan(
                    tx, w0, opt_state, ro, M, S, grad, epoch_order(cfg, B, bits))
            stats.update(trust_region_stats(w0, w, ro, clip_S, out_S, active_S, Ds))
            return (w, opt_state), (w, stats)

        def advance(tx, state: RunState, ts_T, bits_T):
            (w, opt_state), (w_TxD, stats) = jax.lax.scan(
                lambda c, bits: update(tx, c, bits), (state.params, state.opt_state), bits_T)
            logits_TxNxK = test.z0[None] + jnp.einsum("nkd,td->tnk", test.phi, w_TxD)
            acc_T = jnp.mean(jnp.sum(jax.nn.softmax(logits_TxNxK, axis=-1) * test.R[None],
                                     axis=-1), axis=-1)
            drift_T = drift_statistic(w_TxD[:, Ds:], cfg.drift_stat)
            peak_T = jnp.maximum(state.aux, jax.lax.cummax(acc_T))
            hits = {"prog": acc_T - cfg.target, "fail": drift_T - cfg.drift_threshold,
                    "div": ~(jnp.isfinite(acc_T) & jnp.all(jnp.isfinite(w_TxD), axis=-1)),
                    "collapse": peak_T - cfg.collapse_drop - acc_T}
            m_tr = policy_metrics(w, train)
            nu = adam_nu(opt_state)
            if nu is not None:  # Adam's normaliser of the drift block, sqrt(mean nu_d)
                stats = {**stats, "adam_rms_drift": jnp.sqrt(jnp.mean(nu[Ds:]))[None]}
            metrics = {name: jnp.mean(v) for name, v in stats.items()}
            metrics.update(heldout_acc=acc_T[-1], progress_frac=(1.0 - acc_T[-1]) / err0,
                           train_acc=m_tr["acc"], kl=m_tr["kl"], entropy=m_tr["entropy"],
                           drift=drift_statistic(w[Ds:], cfg.drift_stat),
                           drift_rms=jnp.sqrt(jnp.mean(w[Ds:] ** 2)), skill=jnp.mean(w[:Ds]))
            return state._replace(params=w, opt_state=opt_state, aux=peak_T[-1]), hits, metrics

        def init(tx) -> RunState:
            w0 = jnp.zeros((Ds + cfg.drift_dim,), dtype)
            acc0 = accuracy(w0, test)
            margin0 = {"prog": acc0 - cfg.target,
                       "fail": drift_statistic(w0[Ds:], cfg.drift_stat) - cfg.drift_threshold,
                       "collapse": -jnp.asarray(cfg.collapse_drop, dtype)}  # the peak is acc0
            return RunState(w0, tx.init(w0), initial_clocks(("collapse",)), acc0,
                            initial_margins(margin0))

        return Dynamics(lambda lr: make_optimizer(opt, lr, batch_), init, draw, advance)

    return dyn
