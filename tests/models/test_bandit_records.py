"""The bandit's per-update records against their definitions (twoclock.models.bandit.dynamics).

One chunk of three updates from a nonzero start is replayed step by step with the rollout and
the closed-form group gradients (the surrogate's own tests check those), and every record is
recomputed from the replayed weights: the weights, the trust-region records, the held-out and
train metrics in float64 NumPy, Adam's second moment by hand, and the clocks' hits.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from tests.helpers import assert_close
from twoclock import OptimConfig
from twoclock.models.bandit import MODEL, BanditConfig
from twoclock.models.bandit.dynamics import pools
from twoclock.models.bandit.rollout import make_rollout
from twoclock.models.bandit.surrogate import group_grads, noise_stats

B, T = 32, 3   # 4 prompts x 8 responses; a chunk of 3 updates, so [-1], [1] and [-2] differ


def _logsoftmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _acc(w, pool):
    """Exact accuracy of w over a pool, float64 NumPy."""
    logp = _logsoftmax(pool.z0 + np.einsum("nkd,d->nk", pool.phi, w))
    return float(np.mean(np.sum(np.exp(logp) * pool.R, axis=-1)))


def _chunk(cfg, opt, lr, w0, aux=None):
    """The engine's advance over updates 1..T from w0: (state, hits, metrics, bits, dyn, tx)."""
    d = MODEL.dynamics(cfg, opt, B)(B, jax.random.PRNGKey(3))
    tx = d.optimizer(jnp.float32(lr))
    state = d.init(tx)
    state = state._replace(params=w0, opt_state=tx.init(w0),
                           aux=state.aux if aux is None else jnp.float32(aux))
    ts = jnp.arange(1, T + 1, dtype=jnp.int32)
    bits = d.draw(ts)
    new, hits, metrics = jax.jit(lambda s, b: d.advance(tx, s, ts, b))(state, bits)
    return jax.device_get((state, new, hits, metrics)), bits, tx


def _replay(cfg, opt, lr, w0, bits, tx):
    """The T updates step by step: weights after each, and each update's records."""
    train, _ = pools(cfg)
    rollout, _ = make_rollout(cfg, B, train)
    Ds, M, E, G = cfg.skill_dim, cfg.minibatches, cfg.epochs, cfg.group
    Pm = cfg.prompts(B) // M
    w, s, nu = w0, tx.init(w0), np.zeros(w0.shape)
    ws, recs = [], []
    for t in range(T):
        ro, logp, zero_adv = rollout(w, bits[t])
        g_PxD, clip_P, out_P = group_grads(w, ro, cfg, logp)
        g = np.asarray(jnp.mean(g_PxD, axis=0), np.float64)
        wd = np.asarray(w[Ds:], np.float64)
        rec = {k: float(v) for k, v in noise_stats(g_PxD, G, Ds).items()}
        rec.update(grad_norm=np.linalg.norm(g), zero_adv_frac=float(zero_adv),
                   restoring_drift=g[Ds:] @ wd / np.linalg.norm(wd))
        w_start, clips, outs, acts = w, [], [], []
        for k in range(M * E):   # minibatch k % M of the rollout batch, in order
            mb = jax.tree_util.tree_map(lambda v: v[(k % M) * Pm:(k % M + 1) * Pm], ro)
            gm, c, o = (g_PxD, clip_P, out_P) if M * E == 1 else group_grads(w, mb, cfg)
            gk = jnp.mean(gm, axis=0)
            upd, s = tx.update(gk, s, w)
            w = optax.apply_updates(w, upd)
            nu = opt.beta2 * nu + (1 - opt.beta2) * np.asarray(gk, np.float64) ** 2
            clips.append(float(jnp.mean(c)))
            outs.append(float(jnp.mean(o)))
            acts.append(float(jnp.mean(mb.adv != 0)))
        dw = np.asarray(w - w_start, np.float64)
        rec.update(clip_frac=np.mean(clips), outside_frac=np.mean(outs),
                   clip_frac_active=np.sum(clips) / max(np.sum(acts), 1e-12),
                   move_skill=np.linalg.norm(dw[:Ds]), move_drift=np.linalg.norm(dw[Ds:]))
        z0, phi = np.asarray(ro.z0, np.float64), np.asarray(ro.phi, np.float64)
        i = np.arange(len(dw))
        for name, block in (("skill", i < Ds), ("drift", i >= Ds)):
            wb = np.asarray(w_start, np.float64) + np.where(block, dw, 0.0)
            lp = np.take_along_axis(_logsoftmax(z0 + np.einsum("pkd,d->pk", phi, wb)),
                                    np.asarray(ro.a), axis=-1)
            rec[f"logratio_{name}"] = np.sqrt(np.mean((lp - np.asarray(ro.logp_old)) ** 2))
        ws.append(np.asarray(w, np.float64))
        recs.append(rec)
    return np.stack(ws), recs, nu


# thresholds inside each run's range, so that every hit array below varies over the chunk
@pytest.mark.parametrize("M, E, name, stat, lr, seed, target, threshold", [
    (1, 1, "sgd", "rms", 0.3, 1, 0.36, 0.6),       # accuracy falls (collapse), drift RMS rises
    (2, 2, "adam", "mean", 0.05, 4, 0.49, 0.2)])   # accuracy rises at every update (the peak)
def test_every_record_of_a_chunk_is_its_definition(M, E, name, stat, lr, seed, target,
                                                    threshold):
    """rtol 1e-4: float32 rounding of a few updates (the replay and the engine's scan fuse
    differently); every record is O(0.01) or larger here, atol 1e-6 covers the rest."""
    cfg = BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_bias=1.0, drift_noise=1.0,
                       drift_scale=1.0, drift_train_scale=0.5, minibatches=M, epochs=E,
                       clip_low=0.02,
                       drift_stat=stat, target=target, drift_threshold=threshold,
                       collapse_drop=0.03)
    opt = OptimConfig(name=name, lr_rule="fixed")
    w0 = jnp.asarray(np.random.default_rng(seed).normal(0, 0.3, cfg.skill_dim + cfg.drift_dim),
                     jnp.float32)
    (state, new, hits, metrics), bits, tx = _chunk(cfg, opt, lr, w0)
    w_TxD, recs, nu = _replay(cfg, opt, lr, w0, bits, tx)
    Ds = cfg.skill_dim
    close = lambda got, want, what: assert_close(got, want, rtol=1e-4, atol=1e-6, what=what)
    close(new.params, w_TxD[-1], "weights after the chunk")
    for k in recs[0]:   # the chunk's records are the means of its updates' records
        close(metrics[k], np.mean([r[k] for r in recs]), k)
    assert (name == "adam") == ("adam_rms_drift" in metrics)
    if name == "adam":  # nu = (1 - beta2) sum beta2^(n - i) g_i^2 over every inner step
        close(metrics["adam_rms_drift"], np.sqrt(np.mean(nu[Ds:])), "adam_rms_drift")
    if M * E > 1:
        assert max(r["clip_frac"] for r in recs) > 0   # the clip records are not trivially 0
    train, test = (jax.tree_util.tree_map(lambda v: np.asarray(v, np.float64), p)
                   for p in pools(cfg))
    acc_T = np.array([_acc(w, test) for w in w_TxD])
    w, wd = w_TxD[-1], w_TxD[-1][Ds:]
    logp = _logsoftmax(train.z0 + np.einsum("nkd,d->nk", train.phi, w))
    logref = _logsoftmax(train.z0)
    want = {"heldout_acc": acc_T[-1], "progress_frac": (1 - acc_T[-1]) / (1 - _acc(0 * w, test)),
            "train_acc": _acc(w, train),
            "kl": np.mean(np.sum(np.exp(logp) * (logp - logref), axis=-1)),
            "entropy": -np.mean(np.sum(np.exp(logp) * logp, axis=-1)),
            "drift": np.mean(wd) if stat == "mean" else np.sqrt(np.mean(wd**2)),
            "drift_rms": np.sqrt(np.mean(wd**2)), "skill": np.mean(w[:Ds])}
    for k, v in want.items():
        close(metrics[k], v, k)
    drift_T = (w_TxD[:, Ds:].mean(1) if stat == "mean" else
               np.sqrt(np.mean(w_TxD[:, Ds:] ** 2, axis=1)))
    peak_T = np.maximum(state.aux, np.maximum.accumulate(acc_T))
    close(new.aux, peak_T[-1], "running peak of the held-out accuracy")
    # each continuous clock's hits are its margin (>= 0: the condition holds), per update
    want_margins = {"prog": acc_T - cfg.target, "fail": drift_T - cfg.drift_threshold,
                    "collapse": peak_T - cfg.collapse_drop - acc_T}
    want_hits = {k: m >= 0 for k, m in want_margins.items()}
    for k, v in want_margins.items():
        close(hits[k], v, f"margin of {k}")
        np.testing.assert_array_equal(np.asarray(hits[k]) >= 0, want_hits[k], err_msg=k)
    np.testing.assert_array_equal(hits["div"], np.zeros(T, bool), err_msg="div")
    # no record sits on a threshold (float32 rounding cannot flip a hit), and the hits vary
    for v, thr in ((acc_T, cfg.target), (drift_T, cfg.drift_threshold),
                   (acc_T - peak_T, -cfg.collapse_drop)):
        assert np.min(np.abs(v - thr)) > 1e-4
    assert len(set(want_hits["prog"])) == len(set(want_hits["fail"])) == 2
    assert len(set(want_hits["collapse"])) == 2 or len(set(peak_T)) == T


def test_a_record_exactly_at_a_threshold_is_a_hit():
    """At lr 0 the weights stay at w0: a target equal to w0's held-out accuracy, a threshold
    equal to its drift and a peak exactly collapse_drop above it each count as crossed."""
    opt = OptimConfig(name="sgd", lr_rule="fixed")
    w0 = jnp.asarray(np.random.default_rng(2).normal(0.5, 0.3, 4 + 4), jnp.float32)
    cfg = BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_scale=1.0)
    (_, _, _, m), _, _ = _chunk(cfg, opt, 0.0, w0)
    acc, drift, drop = np.float32(m["heldout_acc"]), np.float32(m["drift"]), np.float32(0.125)
    peak = acc + drop
    assert peak - drop == acc and drift > 0   # exact in float32
    cfg = BanditConfig(n_train=32, n_test=32, drift_dim=4, drift_scale=1.0, target=float(acc),
                       drift_threshold=float(drift), collapse_drop=float(drop))
    (_, new, hits, m), _, _ = _chunk(cfg, opt, 0.0, w0, aux=peak)
    assert (m["heldout_acc"], m["drift"], new.aux) == (acc, drift, peak)
    for k in ("prog", "fail", "collapse"):   # margin exactly 0: the condition holds
        np.testing.assert_array_equal(hits[k], np.zeros(T, np.float32), err_msg=k)
