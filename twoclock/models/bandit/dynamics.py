"""The bandit's dynamics: one update = one rollout batch consumed in M x E optimizer steps.

The clocks need the exact held-out accuracy after every update; `advance` computes it for a
whole chunk of updates in one batched product after the chunk's scan.
"""
import jax
import jax.numpy as jnp
import optax

from twoclock.config import OptimConfig
from twoclock.model import Dynamics, RunState
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.bandit.problem import Pool, accuracy, make_problem, policy_metrics
from twoclock.models.bandit.rollout import make_rollout
from twoclock.models.bandit.surrogate import group_grads, noise_stats
from twoclock.scaling import make_optimizer
from twoclock.stages import initial_clocks


def pools(cfg: BanditConfig) -> tuple:
    """(train, held-out) pools as arrays of the default float type."""
    dtype = jnp.result_type(float)
    return tuple(Pool(*(jnp.asarray(v, dtype) for v in p)) for p in make_problem(cfg))


def dynamics(cfg: BanditConfig, opt: OptimConfig, batch: int):
    """dyn(batch, key) -> Dynamics for rollout batches of `batch` responses (a Python int: it
    sets the shapes P x G); dyn's own batch only feeds the learning-rate companions."""
    B = int(batch)
    P, G, M, E = cfg.prompts(B), cfg.group, cfg.minibatches, cfg.epochs
    Pm = P // M
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
            w, opt_state = carry
            ro, logp_PxK, zero_adv = rollout(w, bits)
            # per-group gradients at the behaviour policy: the noise scale, and with
            # M = E = 1 the only step's gradient (their mean)
            g_PxD, clip_P, out_P = group_grads(w, ro, cfg, logp_PxK)
            stats = noise_stats(g_PxD, G, Ds)
            g_D = jnp.mean(g_PxD, axis=0)
            stats["grad_norm"] = jnp.linalg.norm(g_D)
            stats["zero_adv_frac"] = zero_adv
            if M * E == 1:
                upd, opt_state = tx.update(g_D, opt_state, w)
                w = optax.apply_updates(w, upd)
                stats["clip_frac"], stats["outside_frac"] = jnp.mean(clip_P), jnp.mean(out_P)
            else:
                ro_M = jax.tree_util.tree_map(lambda v: v.reshape((M, Pm) + v.shape[1:]), ro)

                def step(carry, s):
                    w, opt_state = carry
                    mb = jax.tree_util.tree_map(lambda v: v[s % M], ro_M)
                    g_mb, clip_mb, out_mb = group_grads(w, mb, cfg)
                    upd, opt_state = tx.update(jnp.mean(g_mb, axis=0), opt_state, w)
                    return (optax.apply_updates(w, upd), opt_state), (jnp.mean(clip_mb),
                                                                     jnp.mean(out_mb))

                (w, opt_state), (clip_S, out_S) = jax.lax.scan(step, (w, opt_state),
                                                               jnp.arange(M * E))
                stats["clip_frac"], stats["outside_frac"] = jnp.mean(clip_S), jnp.mean(out_S)
            return (w, opt_state), (w, stats)

        def advance(tx, state: RunState, ts_T, bits_T):
            (w, opt_state), (w_TxD, stats) = jax.lax.scan(
                lambda c, bits: update(tx, c, bits), (state.params, state.opt_state), bits_T)
            logits_TxNxK = test.z0[None] + jnp.einsum("nkd,td->tnk", test.phi, w_TxD)
            acc_T = jnp.mean(jnp.sum(jax.nn.softmax(logits_TxNxK, axis=-1) * test.R[None],
                                     axis=-1), axis=-1)
            drift_T = jnp.mean(w_TxD[:, Ds:], axis=-1)
            peak_T = jnp.maximum(state.aux, jax.lax.cummax(acc_T))
            hits = {"prog": acc_T >= cfg.target, "fail": drift_T >= cfg.drift_threshold,
                    "div": ~(jnp.isfinite(acc_T) & jnp.all(jnp.isfinite(w_TxD), axis=-1)),
                    "collapse": acc_T <= peak_T - cfg.collapse_drop}
            m_tr = policy_metrics(w, train)
            metrics = {name: jnp.mean(v) for name, v in stats.items()}
            metrics.update(heldout_acc=acc_T[-1], progress_frac=(1.0 - acc_T[-1]) / err0,
                           train_acc=m_tr["acc"], kl=m_tr["kl"], entropy=m_tr["entropy"],
                           drift=jnp.mean(w[Ds:]), skill=jnp.mean(w[:Ds]))
            return state._replace(params=w, opt_state=opt_state, aux=peak_T[-1]), hits, metrics

        def init(tx) -> RunState:
            w0 = jnp.zeros((Ds + cfg.drift_dim,), dtype)
            return RunState(w0, tx.init(w0), initial_clocks(("collapse",)), accuracy(w0, test))

        return Dynamics(lambda lr: make_optimizer(opt, lr, batch_), init, draw, advance)

    return dyn
