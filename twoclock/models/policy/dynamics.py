"""The policy's dynamics: one update = one rollout batch of B = P G responses, consumed in
M x E Adam steps on the clipped surrogate; the clocks read exact held-out statistics after
every update.

Noise scales are measured on the first chunk and on each chunk that crosses a multiple of
noise_every responses (a checkpoint's noise_fresh = 1; other checkpoints repeat the last
measurement), on the chunk's last rollout batch at its behaviour policy: per-group surrogate
gradients projected (one JVP each) on the unit gradient of each statistic over the held-out
pool (acc, kl, entropy, null). With d the projections of the P groups: noise = G Var(d) (per
response), signal = mean(d)^2 - Var(d) / P (unbiased), so noise / signal is the direction's
B_simple in responses (McCandlish et al. 2018), and drive = mean(d) says which way the
surrogate pushes the statistic.
"""
import dataclasses
import functools
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from twoclock import objectives as obj
from twoclock.config import OptimConfig
from twoclock.model import Dynamics, RunState, initial_clocks, initial_margins, only_shapes
from twoclock.models.grpo import epoch_orders, inner_scan, optimizer_step
from twoclock.models.policy import evaluate, net, task, warmup
from twoclock.models.policy.config import PolicyConfig
from twoclock.models.policy.surrogate import Rollout, group_objectives, loss, token_logp
from twoclock.scaling import make_optimizer

EXTRA_CLOCKS = ("kl", "entropy", "null", "collapse", "damage")
NOISE_DIRS = ("acc", "kl", "entropy", "null")


class Setup(NamedTuple):
    arch: net.Arch
    ref: dict          # the warm-up params (pi_ref, the start of every run)
    info: dict         # the warm-up's own record
    train: task.Pool
    test: task.Pool
    ood: task.Pool
    logref_test: jax.Array  # [n_test, A, V]
    start: dict        # held-out {acc, kl, entropy, null, deploy} and ood_acc at the reference


def prepare(cfg: PolicyConfig | None, store_root: str | None = warmup.DEFAULT_ROOT,
            log=None) -> None:
    """Model.prepare: the warm-up loaded or trained (`warmup.prepare`), before a sweep; with
    cfg None only its cache folder checked (`warmup.check`)."""
    warmup.check(store_root)  # a cache path that is a file: refused before training
    if cfg is not None:
        warmup.prepare(cfg, store_root, log)


def setup(cfg: PolicyConfig) -> Setup:
    """The warm-up and the pools as arrays, per config. The warm-up is the one `prepare`
    made; while the engine only traces shapes (its memory estimate, `only_shapes`) an
    unprepared one has a stand-in; a caller that never prepared it gets it prepared here,
    with its lines on stderr."""
    if warmup.ready(cfg) is None:
        if only_shapes():
            return _setup(cfg, True, jax.config.jax_enable_x64)
        warmup.prepare(cfg, log=lambda m: print(m, file=sys.stderr, flush=True))
    return _setup(cfg, False, jax.config.jax_enable_x64)


# keyed by x64 too: the pools' log-probabilities are in the float type of the call that made
# them, and a float32 Setup in a float64 scan fails its carry's types
@functools.lru_cache(maxsize=8)
def _setup(cfg: PolicyConfig, stand_in: bool, x64: bool) -> Setup:
    ref, info = warmup.stand_in(cfg) if stand_in else warmup.ready(cfg)
    arch = warmup.arch_of(cfg)
    train, test, ood = task.make_pools(cfg.n_train, cfg.n_test, cfg.pool_seed)
    pick = np.random.default_rng(cfg.pool_seed).permutation(ood.total.shape[0])[:cfg.n_ood]
    ood = task.Pool(*(v[np.sort(pick)] for v in ood))
    with jax.ensure_compile_time_eval():
        train, test, ood = (evaluate.as_jax(p) for p in (train, test, ood))
        if stand_in:  # shapes only: nothing computed
            shape = jax.eval_shape(lambda: evaluate.pool_logp(ref, arch, test))
            logref = jnp.zeros(shape.shape, shape.dtype)
            start = dict.fromkeys(("acc", "kl", "entropy", "null", "deploy", "ood_acc"), 0.5)
        else:
            logref = evaluate.pool_logp(ref, arch, test)
            start = {k: float(v) for k, v in
                     evaluate.stats_from_logp(logref, None, test).items()}
            start["ood_acc"] = float(evaluate.accuracy(ref, arch, ood))
    return Setup(arch, ref, info, train, test, ood, logref, start)


def empty_rollout(B: int, prompt_len: int, A: int, dtype) -> Rollout:
    z = jnp.zeros((B, A), dtype)
    return Rollout(jnp.zeros((B, prompt_len), jnp.int32), jnp.zeros((B, A), jnp.int32), z,
                   jnp.zeros((B,), dtype), jnp.zeros((B,), dtype), z, z)


def make_rollout(cfg: PolicyConfig, s: Setup, B: int):
    """rollout(w, key) -> (Rollout, {reward, resp_len, zero_adv_frac}) of B responses sampled
    by the policy w on P = B / G prompts drawn uniformly (with replacement) from the train pool."""
    P, G = cfg.prompts(B), cfg.group
    dtype = jnp.result_type(float)
    n_train = s.train.total.shape[0]

    def rollout(w, key):
        kp, ks = jax.random.split(key)
        idx_P = jax.random.randint(kp, (P,), 0, n_train)
        idx_B = jnp.repeat(idx_P, G)
        prompt_P, prompt = s.train.prompt[idx_P], s.train.prompt[idx_B]
        # the behaviour log-probabilities are the sampler's own (each token's distribution
        # as it was drawn): no second, teacher-forced forward; against the update's
        # teacher-forced forward they agree to float precision, not bit for bit
        resp, logp_old = net.sample(w, s.arch, prompt_P, task.ANSWER_LEN, ks, G)
        logp_old = jax.lax.stop_gradient(logp_old)
        r_PxG = task.verify(resp, s.train.answer[idx_B], s.train.n_digits[idx_B],
                            xp=jnp).astype(dtype).reshape(P, G)
        logref = (token_logp(s.ref, s.arch, prompt, resp, G) if cfg.kl_coef > 0
                  else jnp.zeros_like(logp_old))
        mask = task.response_mask(resp, jnp).astype(dtype)
        score = r_PxG
        if cfg.kl_in_reward:  # the response's log-probabilities: sums over its tokens
            seq = lambda lp: jnp.sum(mask * lp, axis=1).reshape(P, G)
            score = obj.kl_penalised_rewards(r_PxG, seq(logp_old), seq(logref), cfg.kl_coef)
        adv = obj.advantages(score, cfg.advantage, cfg.adv_eps).reshape(B)
        # the verifier's own zero-variance groups (DAPO's dynamic sampling reads accuracy)
        zero_P = obj.zero_advantage_groups(r_PxG)
        keep = jnp.repeat(~zero_P if cfg.dynamic_sampling else jnp.ones(P, bool), G)
        ro = Rollout(prompt, resp, mask, adv, keep.astype(dtype), logp_old, logref)
        return ro, {"reward": jnp.mean(r_PxG), "resp_len": jnp.mean(jnp.sum(mask, axis=1)),
                    "zero_adv_frac": jnp.mean(zero_P.astype(dtype))}

    return rollout


def epoch_order(cfg: PolicyConfig, B: int, key):
    """The rows [E, B] each epoch reads (`grpo.epoch_orders`, whole groups), drawn from
    fold_in(key, 2) of the update's key (the rollout's jax.random.split(key) is fold_in(key,
    0) and fold_in(key, 1)), or None where the config does not reshuffle (every epoch reuses
    one split)."""
    if not cfg.reshuffles(B):
        return None
    P = cfg.prompts(B)
    bits = jax.random.bits(jax.random.fold_in(key, 2), (cfg.epochs - 1, P))
    return epoch_orders(bits, cfg.group)


def noise_stats(w, ro: Rollout, cfg: PolicyConfig, s: Setup, clip: obj.ClipBand) -> dict:
    """noise_d, signal_d, drive_d for each direction d of NOISE_DIRS (see the module doc) of
    the surrogate in the ratio band clip."""
    G = cfg.group

    def stats(p):
        st = evaluate.pool_stats(p, s.arch, s.test, s.logref_test)
        return jnp.stack([st[k] for k in NOISE_DIRS])

    U = jax.jacrev(stats)(w)  # each leaf [4, ...]
    sq = sum(jnp.sum(u.reshape(len(NOISE_DIRS), -1) ** 2, axis=1)
             for u in jax.tree_util.tree_leaves(U))
    inv = 1.0 / jnp.maximum(jnp.sqrt(sq), 1e-30)
    U = jax.tree_util.tree_map(lambda u: u * inv.reshape((-1,) + (1,) * (u.ndim - 1)), U)
    f = lambda p: group_objectives(p, ro, cfg, s.arch, G, clip)
    d_DxP = jax.vmap(lambda u: jax.jvp(f, (w,), (u,))[1])(U)
    P = d_DxP.shape[1]
    mean = jnp.mean(d_DxP, axis=1)
    var = jnp.var(d_DxP, axis=1, ddof=1) if P > 1 else jnp.zeros_like(mean)
    out = {}
    for i, k in enumerate(NOISE_DIRS):
        out[f"noise_{k}"] = G * var[i]
        out[f"signal_{k}"] = mean[i] ** 2 - var[i] / P
        out[f"drive_{k}"] = mean[i]
    return out


def knobs(cfg: PolicyConfig) -> tuple:
    """Model.knobs: the ratio band cfg.clip as a program's argument, {"lo", "hi"} (its fields),
    so that one program runs every clip setting; the config then carries the default clip."""
    shared = dataclasses.replace(cfg, clip_low=PolicyConfig.clip_low,
                                 clip_high=PolicyConfig.clip_high)
    return shared, {k: float(v) for k, v in cfg.clip._asdict().items()}


def finite_tree(tree):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in jax.tree_util.tree_leaves(tree)]))


def dynamics(cfg: PolicyConfig, opt: OptimConfig, batch: int):
    """dyn(batch, key) -> Dynamics for rollout batches of `batch` responses (a Python int: it
    sets the shapes P x G); dyn's own batch only feeds the learning-rate companions."""
    B = int(batch)
    cfg.prompts(B)  # validates B against G and M
    M, S = cfg.n_minibatches(B), cfg.inner_steps(B)
    s = setup(cfg)
    dtype = jnp.result_type(float)
    rollout = make_rollout(cfg, s, B)
    A = task.ANSWER_LEN
    grad = jax.grad(loss, has_aux=True)
    st0 = s.start
    coll0 = st0["acc"] if cfg.collapse_pool == "heldout" else st0["ood_acc"]
    # the margins at the reference (the start of every run): the peak is coll0, the shift 0
    margin0 = {"prog": st0["acc"] - cfg.target, "kl": st0["kl"] - cfg.kl_threshold,
               "entropy": cfg.entropy_threshold - st0["entropy"], "null": -cfg.null_threshold,
               "collapse": -cfg.collapse_drop, "damage": -cfg.damage_drop}
    margin0["fail"] = margin0[cfg.fail_stat]

    def dyn(batch_, key, knob=None) -> Dynamics:
        batch_ = jnp.asarray(batch_, dtype)
        clip = cfg.clip if knob is None else obj.ClipBand(**knob)

        def draw(ts_T):
            """The key of each update t of ts_T, fold_in(key, t)."""
            return jax.vmap(lambda t: jax.random.fold_in(key, t))(ts_T)

        def update(tx, carry, k):
            w0, opt_state, _ = carry
            ro, st = rollout(w0, k)
            if S == 1:
                g, cnt = grad(w0, ro, cfg, s.arch, clip)
                w, opt_state = optimizer_step(tx, w0, opt_state, g)
            else:
                w, opt_state, cnt_S = inner_scan(tx, w0, opt_state, ro, M, S,
                                                 lambda w, mb: grad(w, mb, cfg, s.arch, clip),
                                                 epoch_order(cfg, B, k))
                cnt = tuple(jnp.sum(c) for c in cnt_S)
            st["clip_frac"] = cnt[0] / jnp.maximum(cnt[1], 1.0)
            st["clip_frac_active"] = cnt[2] / jnp.maximum(cnt[3], 1.0)
            ev = evaluate.pool_stats(w, s.arch, s.test, s.logref_test)
            if cfg.collapse_pool == "ood":
                ev["coll"] = evaluate.accuracy(w, s.arch, s.ood)
            else:
                ev["coll"] = ev["acc"]
            ev["finite"] = finite_tree(w)
            return (w, opt_state, (w0, ro)), (ev, st)

        def advance(tx, state: RunState, ts_T, keys_T):
            carry = (state.params, state.opt_state,
                     (state.params, empty_rollout(B, task.PROMPT_LEN, A, dtype)))
            (w, opt_state, (w_last, ro_last)), (ev, st) = jax.lax.scan(
                lambda c, k: update(tx, c, k), carry, keys_T)
            peak_T = jnp.maximum(state.aux[0], jax.lax.cummax(ev["coll"]))
            deploy_peak_T = jnp.maximum(state.aux[1], jax.lax.cummax(ev["deploy"]))
            shift_T = jnp.abs(ev["null"] - st0["null"])
            hits = {"prog": ev["acc"] - cfg.target,
                    "kl": ev["kl"] - cfg.kl_threshold,
                    "entropy": cfg.entropy_threshold - ev["entropy"],
                    "null": shift_T - cfg.null_threshold,
                    "collapse": peak_T - cfg.collapse_drop - ev["coll"],
                    "damage": deploy_peak_T - cfg.damage_drop - ev["deploy"],
                    "div": ~(jnp.isfinite(ev["acc"]) & ev["finite"])}
            hits["fail"] = hits[cfg.fail_stat]
            # damage's drift is the null shift: the reward-invisible move that costs deploy
            drift = {"null": shift_T, "kl": ev["kl"], "entropy": ev["entropy"],
                     "damage": shift_T}[cfg.fail_stat]
            metrics = {k: jnp.mean(v) for k, v in st.items()}
            # measured where the chunk crosses a multiple of noise_every responses (and on the
            # first chunk): ts_T is shared by every seed and lane, so this stays a branch
            t0, t1 = ts_T[0], ts_T[-1]
            fresh = ((t1 * B) // cfg.noise_every > ((t0 - 1) * B) // cfg.noise_every) | (t0 == 1)
            noise = jax.lax.cond(fresh, lambda: noise_stats(w_last, ro_last, cfg, s, clip),
                                 lambda: state.aux[2])
            metrics.update(noise, noise_fresh=fresh.astype(dtype))
            acc = ev["acc"][-1]
            metrics.update(
                heldout_acc=acc, progress_frac=(1.0 - acc) / (1.0 - st0["acc"]),
                kl=ev["kl"][-1], entropy=ev["entropy"][-1], null=ev["null"][-1] - st0["null"],
                ood_acc=(ev["coll"][-1] if cfg.collapse_pool == "ood"
                         else evaluate.accuracy(w, s.arch, s.ood)),
                peak=peak_T[-1], drift=drift[-1], deploy_acc=ev["deploy"][-1],
                deploy_peak=deploy_peak_T[-1])
            return (state._replace(params=w, opt_state=opt_state,
                                   aux=(peak_T[-1], deploy_peak_T[-1], noise)),
                    hits, metrics)

        def init(tx) -> RunState:
            w0 = jax.tree_util.tree_map(jnp.asarray, s.ref)
            margins0 = initial_margins(margin0)
            no_noise = {f"{q}_{k}": jnp.zeros((), dtype) for q in ("noise", "signal", "drive")
                        for k in NOISE_DIRS}
            return RunState(w0, tx.init(w0), initial_clocks(EXTRA_CLOCKS),
                            (jnp.asarray(coll0, dtype), jnp.asarray(st0["deploy"], dtype),
                             no_noise), margins0)

        return Dynamics(lambda lr: make_optimizer(opt, lr, batch_), init, draw, advance)

    return dyn
