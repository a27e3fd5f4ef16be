"""Model 2: the verifiable-reward bandit (RLVR), trained the way LLMs are trained with GRPO/PPO.

Problem. Train and held-out pools of prompts x; K candidate responses a per prompt; a verifier
r(x, a) in {0, 1} with `n_correct` correct responses per prompt. A "pretrained" logit table z0
gives each prompt an initial pass rate p0(x) ~ Beta(pass_a, pass_b) (spread evenly over the
correct and over the wrong responses).

Policy. pi_w(a | x) = softmax_a(z0(x, a) + phi(x, a) @ w) with shared features phi of dim
D = skill_dim + drift_dim, w = 0 at the start (the reference policy):
- skill block: phi_s(x, a) = skill_signal * (r(x, a) - n_correct / K) * u + feature_noise * eta,
  u = ones / sqrt(skill_dim), eta ~ N(0, I). Moving w_s along u raises the logits of correct
  responses on every prompt, held-out ones included (noise features limit the generalisation).
- drift block: phi_d(x, a) = drift_scale * zeta (held-out prompts) or drift_train_scale * zeta
  (train prompts, default 0), zeta ~ N(0, I), unrelated to correctness. The drift acts off the
  training distribution: invisible to the train verifier (so nothing resists it), it adds a
  random logit perturbation of scale ~|w_d| drift_scale sqrt(drift_dim) on held-out prompts,
  which eventually scrambles the policy there: held-out accuracy collapses while train
  accuracy holds (the *emergent* collapse).

Drift pull. Each sampled response i carries a non-verifier shaping signal xi_ij ~ N(drift_bias,
drift_noise) per drift coordinate j (think of a weak style/length bonus). It enters the
surrogate as a shaping term whose parameter gradient points along the drift coordinates,
importance-weighted and masked like a hard trust region:
    J_i = min(rho_i A_i, clip(rho_i) A_i) + keep_i * sg(rho_i) * sum_j xi_ij * w_dj,
keep_i = 1[1 - eps_low <= rho_i <= 1 + eps_high] (always 1 unclipped; shaping_clip = "ppo"
instead stops a sample by PPO's rule with the pull's own sign, see `shaping_keep`). xi has no advantage sign
to clip against (it is mostly noise), hence the symmetric mask. So the drift's per-sample
gradient has mean -drift_bias and variance drift_noise whatever the policy's entropy: its pull
does *not* fade as the policy sharpens (a pull acting through the policy's own sampling, e.g. a
shaping reward added to r, does: Var_pi(phi_d) -> 0), and GRPO's std normalisation never sees
it. With drift_train_scale > 0 the verifier's own gradient also acts on w_d (a restoring force
once drift hurts train accuracy); the measured noise scale includes it.

Rollouts and updates. One *update* = one rollout batch: P = B / G prompts sampled with
replacement from the train pool, G responses each (B responses), advantages per group, then
M minibatch optimizer steps (P / M prompts each) x E epochs over the batch, the ratio
pi_w / pi_behaviour taken against the policy that sampled the batch. With M = E = 1 the ratio
is 1 at the only step and clipping changes nothing. The learning-rate rule uses B (responses).

Implementation (for speed; the model is the one above). `group_loss` is the definition of the
surrogate; runs use its closed-form gradient `group_grads` (score function phi(a) - E_pi phi,
tested equal to autodiff). Each update's randomness is one raw-bits draw from fold_in(key, t):
prompts (bits mod n_train), responses by inverse CDF (one uniform each), and the shaping
signal; with M = E = 1 (rho = 1, nothing masked) only the group mean of xi enters, so it is
drawn directly as N(drift_bias, drift_noise / G). Held-out accuracy, which the clocks need
after every update, is computed for a checkpoint chunk of updates in one batched product.

Clocks (in responses; updates = rollout batches). Progress: first update after which the exact
held-out accuracy >= target. Failure: first update after which the drift statistic, the mean
signed displacement of the drift coordinates from their start (mean(w_d)), >= drift_threshold.
Emergent collapse (extra["collapse_n"]): first update after which held-out accuracy <= its
running peak - collapse_drop.
"""
from dataclasses import dataclass
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock import objectives as obj
from twoclock.config import _finite, require, require_choice, require_fraction, require_int, \
    require_positive
from twoclock.config import OptimConfig
from twoclock.scaling import make_optimizer
from twoclock.sweep import ModelSpec, register
from twoclock.trace import Trace, checkpoint_every


SHAPING_CLIPS = ("mask", "ppo")


@dataclass(frozen=True)
class BanditConfig:
    """The verifiable-reward bandit (Model 2 of DESIGN.md); see the module docstring."""
    n_train: int = 256           # train prompts
    n_test: int = 256            # held-out prompts
    responses: int = 8           # K candidate responses per prompt
    n_correct: int = 2           # correct responses per prompt
    pass_a: float = 1.0          # initial pass rate p0 ~ Beta(pass_a, pass_b)
    pass_b: float = 2.0
    skill_dim: int = 4
    skill_signal: float = 1.0
    feature_noise: float = 0.5
    drift_dim: int = 16
    drift_scale: float = 0.25    # scale of the drift features on held-out prompts
    drift_train_scale: float = 0.0  # ... and on train prompts (0: invisible to the verifier)
    drift_bias: float = 0.05     # mean of the per-response shaping signal xi (b)
    drift_noise: float = 25.0    # variance of xi (c_d)
    group: int = 8               # G responses per prompt in a rollout batch
    advantage: str = "grpo"
    adv_eps: float = 1e-6
    minibatches: int = 1         # M optimizer steps per epoch
    epochs: int = 1              # E passes over each rollout batch
    clip_low: float | None = 0.2  # None: unclipped surrogate
    clip_high: float | None = None  # None: = clip_low (symmetric); > clip_low: clip-higher
    kl_coef: float = 0.0
    shaping_clip: str = "mask"   # how clipping acts on the shaping pull: "mask" | "ppo"
    target: float = 0.75         # held-out accuracy
    drift_threshold: float = 2.0
    collapse_drop: float = 0.1
    init_seed: int = 0

    def __post_init__(self):
        require_int("n_train", self.n_train)
        require_int("n_test", self.n_test)
        require_int("responses", self.responses, lo=2)
        require(isinstance(self.n_correct, int) and 1 <= self.n_correct < self.responses,
                "n_correct", f"an integer in [1, responses - 1] = [1, {self.responses - 1}]",
                self.n_correct)
        require_positive("pass_a", self.pass_a)
        require_positive("pass_b", self.pass_b)
        require_int("skill_dim", self.skill_dim)
        require_positive("skill_signal", self.skill_signal)
        require(_finite(self.feature_noise) and self.feature_noise >= 0, "feature_noise",
                "a finite number >= 0", self.feature_noise)
        require_int("drift_dim", self.drift_dim)
        require(_finite(self.drift_scale) and self.drift_scale >= 0, "drift_scale",
                "a finite number >= 0", self.drift_scale)
        require(_finite(self.drift_train_scale) and self.drift_train_scale >= 0,
                "drift_train_scale", "a finite number >= 0", self.drift_train_scale)
        require(_finite(self.drift_bias) and self.drift_bias >= 0, "drift_bias",
                "a finite number >= 0", self.drift_bias)
        require(_finite(self.drift_noise) and self.drift_noise >= 0, "drift_noise",
                "a finite number >= 0", self.drift_noise)
        require_int("group", self.group, lo=2)
        require_choice("advantage", self.advantage, obj.ADVANTAGES)
        require_positive("adv_eps", self.adv_eps)
        require_int("minibatches", self.minibatches)
        require_int("epochs", self.epochs)
        if self.clip_low is not None:
            require_positive("clip_low", self.clip_low)
            require(self.clip_low < 1, "clip_low", "in (0, 1)", self.clip_low)
        if self.clip_high is not None:
            require(self.clip_low is not None, "clip_high", "None when clip_low is None",
                    self.clip_high)
            require_positive("clip_high", self.clip_high)
        require(_finite(self.kl_coef) and self.kl_coef >= 0, "kl_coef", "a finite number >= 0",
                self.kl_coef)
        require_choice("shaping_clip", self.shaping_clip, SHAPING_CLIPS)
        require_fraction("target", self.target)
        require_positive("drift_threshold", self.drift_threshold)
        require_fraction("collapse_drop", self.collapse_drop)
        require_int("init_seed", self.init_seed, lo=0)

    @property
    def eps_high(self):
        return self.clip_low if self.clip_high is None else self.clip_high

    def prompts(self, batch: int) -> int:
        """P = B / G prompts per rollout batch; ValueError unless B is a multiple of G >= M."""
        require_int("batch", batch)
        require(batch % self.group == 0, "batch", f"a multiple of group G = {self.group}", batch)
        P = batch // self.group
        require(P >= self.minibatches, "minibatches",
                f"<= prompts per batch P = {P} (batch {batch} / group {self.group})",
                self.minibatches)
        require(P % self.minibatches == 0, "minibatches",
                f"a divisor of prompts per batch P = {P}", self.minibatches)
        return P


def describe_batch(cfg: BanditConfig, batch: int) -> dict:
    """What a batch of B responses is made of: {"prompts": P, "group": G}."""
    return {"prompts": cfg.prompts(batch), "group": cfg.group}


class Pool(NamedTuple):
    """One prompt pool: z0 [N, K], features phi [N, K, D], rewards R [N, K] (float 0/1)."""
    z0: np.ndarray
    phi: np.ndarray
    R: np.ndarray


def initial_pass_rates(cfg: BanditConfig, n: int, rng) -> np.ndarray:
    return np.clip(rng.beta(cfg.pass_a, cfg.pass_b, size=n), 0.01, 0.99)


def make_pool(cfg: BanditConfig, n: int, rng, drift_scale: float) -> Pool:
    """A pool of n prompts: exactly n_correct correct responses each, pass rate p0 ~ Beta."""
    K, nc = cfg.responses, cfg.n_correct
    R = np.zeros((n, K))
    R[:, :nc] = 1.0
    p0 = initial_pass_rates(cfg, n, rng)
    z0 = np.where(R > 0, np.log(p0 / nc)[:, None], np.log((1 - p0) / (K - nc))[:, None])
    u = np.ones(cfg.skill_dim) / math.sqrt(cfg.skill_dim)
    phi_s = (cfg.skill_signal * (R - nc / K))[:, :, None] * u \
        + cfg.feature_noise * rng.standard_normal((n, K, cfg.skill_dim))
    phi_d = drift_scale * rng.standard_normal((n, K, cfg.drift_dim))
    return Pool(z0, np.concatenate([phi_s, phi_d], axis=-1), R)


def make_problem(cfg: BanditConfig) -> tuple[Pool, Pool]:
    """(train, held-out) pools, fixed by init_seed (the same for every seed of a sweep)."""
    rng = np.random.default_rng(cfg.init_seed)
    return (make_pool(cfg, cfg.n_train, rng, cfg.drift_train_scale),
            make_pool(cfg, cfg.n_test, rng, cfg.drift_scale))


def logp_of(w, z0_NxK, phi_NxKxD):
    return jax.nn.log_softmax(z0_NxK + jnp.einsum("nkd,d->nk", phi_NxKxD, w), axis=-1)


def accuracy(w, pool) -> jax.Array:
    """Exact expected verifier reward (pass@1) over a pool: mean_x sum_a pi(a|x) r(x, a)."""
    return jnp.mean(jnp.sum(jnp.exp(logp_of(w, pool.z0, pool.phi)) * pool.R, axis=-1))


def policy_metrics(w, pool) -> dict:
    """Exact accuracy, KL(pi_w || pi_ref) and entropy, averaged over a pool's prompts."""
    logp = logp_of(w, pool.z0, pool.phi)
    logref = jax.nn.log_softmax(pool.z0, axis=-1)
    return {"acc": jnp.mean(jnp.sum(jnp.exp(logp) * pool.R, axis=-1)),
            "kl": jnp.mean(obj.kl(logp, logref)), "entropy": jnp.mean(obj.entropy(logp))}


class Rollout(NamedTuple):
    """One rollout batch, per prompt (leading axis P)."""
    z0: jax.Array      # [P, K]
    phi: jax.Array     # [P, K, D]
    logref: jax.Array  # [P, K]
    a: jax.Array       # [P, G] sampled responses
    adv: jax.Array     # [P, G]
    xi: jax.Array      # [P, G, Dd] shaping signal
    logp_old: jax.Array  # [P, G] under the behaviour policy


def shaping_keep(rho_G, xi_GxDd, dphi_GxDd, cfg: BanditConfig):
    """1 for samples whose shaping pull counts, 0 for those the trust region stops.

    mask: the sample's ratio left the band [1 - eps_low, 1 + eps_high] (either side).
    ppo: PPO's rule with the pull's own sign: the pull raises log pi(a) at the rate
    s = xi . (phi_d(a) - E_pi phi_d), and stops once the ratio has already moved past the
    band in that direction (s > 0 and rho > 1 + eps_high, or s < 0 and rho < 1 - eps_low).
    """
    el, eh = cfg.clip_low, cfg.eps_high
    if el is None:
        return jnp.ones(rho_G.shape, rho_G.dtype)
    if cfg.shaping_clip == "mask":
        return ((rho_G >= 1 - el) & (rho_G <= 1 + eh)).astype(rho_G.dtype)
    s_G = jnp.sum(xi_GxDd * dphi_GxDd, axis=-1)
    return (~obj.clipped_mask(rho_G, s_G, el, eh)).astype(rho_G.dtype)


def group_loss(w, ro: Rollout, cfg: BanditConfig):
    """Loss (minus the surrogate, plus the KL penalty) of one prompt's group, and its clip mask."""
    Ds = cfg.skill_dim
    logp_K = jax.nn.log_softmax(ro.z0 + ro.phi @ w)
    logp_G = logp_K[ro.a]
    el, eh = cfg.clip_low, cfg.eps_high
    j_G, clipped_G = obj.log_ratio_objective(logp_G, ro.logp_old, ro.adv, el, eh)
    rho_G = jax.lax.stop_gradient(jnp.exp(logp_G - ro.logp_old))
    pi_K = jax.lax.stop_gradient(jnp.exp(logp_K))
    dphi_G = ro.phi[ro.a][:, Ds:] - (pi_K @ ro.phi[:, Ds:])[None]
    keep_G = shaping_keep(rho_G, ro.xi, dphi_G, cfg)
    shaping = jnp.sum(jnp.mean((keep_G * rho_G)[:, None] * ro.xi, axis=0) * w[Ds:])
    loss = -(jnp.mean(j_G) + shaping)
    if cfg.kl_coef > 0:
        loss = loss + cfg.kl_coef * obj.kl(logp_K, ro.logref)
    return loss, (jnp.mean(clipped_G.astype(loss.dtype)), 1.0 - jnp.mean(keep_G))


def batch_loss(w, ro: Rollout, cfg: BanditConfig):
    loss_P, (clip_P, out_P) = jax.vmap(group_loss, in_axes=(None, 0, None))(w, ro, cfg)
    return jnp.mean(loss_P), (jnp.mean(clip_P), jnp.mean(out_P))


def group_grads(w, ro: Rollout, cfg: BanditConfig, logp_PxK=None):
    """Per-group gradients of group_loss in closed form: (g_PxD, clipped_P, outside_P).

    For a linear-softmax policy d log pi(a) / dw = phi(a) - E_pi[phi], so the surrogate's
    gradient is phi^T times a logit-space vector per prompt: no autodiff, no gather of phi(a).
    PPO's min passes rho A (the unclipped branch) or nothing (the clipped one); the KL
    penalty's logit gradient is pi (log pi - log pi_ref - KL); the shaping term gives
    -mean_G(keep rho xi) on the drift coordinates. `logp_PxK`: the policy's log-probabilities
    at w if already computed (the rollout's, at the first step). Equals jax.grad(group_loss)
    per group up to rounding (tested).
    """
    G, K, Ds = ro.a.shape[-1], ro.z0.shape[-1], cfg.skill_dim
    if logp_PxK is None:
        logp_PxK = logp_of(w, ro.z0, ro.phi)
    logp_G = jnp.take_along_axis(logp_PxK, ro.a, axis=-1)
    rho_G = jnp.exp(logp_G - ro.logp_old)
    el, eh = cfg.clip_low, cfg.eps_high
    if el is None:
        clipped_G = jnp.zeros(rho_G.shape, bool)
    else:
        clipped_G = obj.clipped_mask(rho_G, ro.adv, el, eh)
    c_G = jnp.where(clipped_G, 0.0, rho_G * ro.adv)             # d j_g / d log pi(a_g)
    onehot_GxK = jax.nn.one_hot(ro.a, K, dtype=rho_G.dtype)
    c_K = jnp.einsum("...g,...gk->...k", c_G, onehot_GxK)
    pi_K = jnp.exp(logp_PxK)
    dphi_G = None
    if el is not None and cfg.shaping_clip == "ppo":
        phi_d = ro.phi[..., Ds:]
        dphi_G = (jnp.einsum("...gk,...kd->...gd", onehot_GxK, phi_d)
                  - jnp.einsum("...k,...kd->...d", pi_K, phi_d)[..., None, :])
    keep_G = shaping_keep(rho_G, ro.xi, dphi_G, cfg)
    gl_K = -(c_K - jnp.sum(c_K, axis=-1, keepdims=True) * pi_K) / G
    if cfg.kl_coef > 0:
        dlog = logp_PxK - ro.logref
        kl_ = jnp.sum(pi_K * dlog, axis=-1, keepdims=True)
        gl_K = gl_K + cfg.kl_coef * pi_K * (dlog - kl_)
    g_D = jnp.einsum("...k,...kd->...d", gl_K, ro.phi)
    pull = jnp.mean((keep_G * rho_G)[..., None] * ro.xi, axis=-2)  # xi [.., G or 1, Dd]
    g_D = jnp.concatenate([g_D[..., :Ds], g_D[..., Ds:] - pull], axis=-1)
    return (g_D, jnp.mean(clipped_G.astype(rho_G.dtype), axis=-1),
            1.0 - jnp.mean(keep_G, axis=-1))


def noise_stats(g_PxD, group: int, Ds: int) -> dict:
    """Per-response noise tr(Sigma) and unbiased |grad|^2 per block, from per-group gradients.

    Groups are the independent units: the batch mean of P group gradients has covariance
    Sigma_group / P = (G Sigma_group) / B, so the per-response noise is G tr(Sigma_group) and
    B_simple = G tr(Sigma_group) / |G|^2 in responses (McCandlish et al. 2018).
    """
    P = g_PxD.shape[0]
    out = {}
    for name, g in (("skill", g_PxD[:, :Ds]), ("drift", g_PxD[:, Ds:])):
        mean = jnp.mean(g, axis=0)
        if P > 1:
            tr_group = jnp.sum(jnp.var(g, axis=0, ddof=1))
        else:
            tr_group = jnp.zeros((), g.dtype)
        out[f"noise_{name}"] = group * tr_group
        out[f"signal_{name}"] = jnp.sum(mean * mean) - tr_group / P
    return out


def noise_scale(noise, signal, axis=None):
    """B_simple = mean(noise) / mean(signal) over checkpoints (and seeds): mean first, then ratio.

    None (inf) when the measured signal is not positive: no detectable signal, noise-dominated.
    """
    n, s = np.mean(noise, axis=axis), np.mean(signal, axis=axis)
    return np.where(s > 0, n / np.where(s > 0, s, 1.0), np.inf)


class BanditState(NamedTuple):
    w: jax.Array
    opt_state: optax.OptState
    peak: jax.Array
    prog_t: jax.Array
    fail_t: jax.Array
    div_t: jax.Array
    coll_t: jax.Array


def sample_responses(logp_PxK, u_PxG):
    """Responses a ~ pi by inverse CDF: a = #{k : cdf_k <= u} for uniforms u [P, G] in [0, 1)."""
    cdf_PxK = jnp.cumsum(jnp.exp(logp_PxK), axis=-1)
    a = jnp.sum(cdf_PxK[:, None, :] <= u_PxG[:, :, None], axis=-1)
    return jnp.minimum(a, logp_PxK.shape[-1] - 1).astype(jnp.int32)  # rounding: cdf_K < 1


def _uint(dtype):
    return jnp.uint64 if jnp.finfo(dtype).bits == 64 else jnp.uint32


def _uniform(bits, dtype):
    """Uniform [0, 1) from raw bits, as jax.random.uniform makes them (mantissa trick)."""
    finfo = jnp.finfo(dtype)
    one = np.array(1.0, dtype).view(bits.dtype)
    fb = (bits >> np.array(finfo.bits - finfo.nmant, bits.dtype)) | one
    return jax.lax.bitcast_convert_type(fb, dtype) - np.array(1.0, dtype)


def _normal(bits, dtype):
    """Standard normals from raw bits, as jax.random.normal makes them (inverse erf)."""
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = jnp.maximum(lo, _uniform(bits, dtype) * (1 - lo) + lo)
    return np.array(math.sqrt(2), dtype) * jax.lax.erf_inv(u)


def make_update(cfg: BanditConfig, opt: OptimConfig, batch):
    """The per-update step shared by make_run and the batch schedules (twoclock.schedule).

    `batch` (static: it sets the array shapes P x G). Returns step_for(batch, lr, key) ->
    (tx, update) with update((w, opt_state), t) -> ((w, opt_state), (w, stats)): one rollout
    batch of update t (1-based global index; its randomness is fold_in(key, t)) consumed in
    M x E optimizer steps. step_for's batch (a traced scalar) only feeds the learning-rate
    companions. The clocks are kept by `track` (exact held-out accuracy of every update's w,
    batched over a chunk of updates); `step_for.pools` = (train, test) as jnp arrays.
    """
    require(batch is not None, "batch", "given (the bandit's batch sets array shapes)", batch)
    B = int(batch)
    P, G, M, E = cfg.prompts(B), cfg.group, cfg.minibatches, cfg.epochs
    Pm = P // M
    Ds, Dd = cfg.skill_dim, cfg.drift_dim
    dtype = jnp.result_type(float)
    train_np, test_np = make_problem(cfg)
    train = Pool(*(jnp.asarray(v, dtype) for v in train_np))
    test = Pool(*(jnp.asarray(v, dtype) for v in test_np))
    logref_train = jax.nn.log_softmax(train.z0, axis=-1)

    n_xi = P * Dd if M * E == 1 else P * G * Dd
    xi_shape = (P, 1, Dd) if M * E == 1 else (P, G, Dd)
    xi_sd = math.sqrt(cfg.drift_noise / (G if M * E == 1 else 1))

    def rollout(w, key):
        # One raw-bits draw per update feeds every random choice (one threefry expansion
        # to compile instead of seven): prompts, one inverse-CDF uniform per response, and
        # the shaping signal. With M = E = 1 every sample keeps rho = 1 and only the group
        # mean of xi enters the update, so that mean ~ N(b, c_d / G) is drawn directly.
        bits = jax.random.bits(key, (P + P * G + n_xi,), _uint(dtype))
        x_P = (bits[:P] % np.array(cfg.n_train, bits.dtype)).astype(jnp.int32)
        u_PxG = _uniform(bits[P:P + P * G], dtype).reshape(P, G)
        xi = cfg.drift_bias + xi_sd * _normal(bits[P + P * G:], dtype).reshape(xi_shape)
        z0, phi, R, logref = train.z0[x_P], train.phi[x_P], train.R[x_P], logref_train[x_P]
        logp_PxK = logp_of(w, z0, phi)
        a_PxG = sample_responses(logp_PxK, u_PxG)
        r_PxG = jnp.take_along_axis(R, a_PxG, axis=1)
        adv = obj.advantages(r_PxG, cfg.advantage, cfg.adv_eps)
        logp_old = jnp.take_along_axis(logp_PxK, a_PxG, axis=1)
        zero_adv = jnp.mean(obj.zero_advantage_groups(r_PxG).astype(dtype))
        return Rollout(z0, phi, logref, a_PxG, adv, xi, logp_old), logp_PxK, zero_adv

    def step_for(batch_, lr, key):
        tx = make_optimizer(opt, lr, jnp.asarray(batch_, dtype))

        def update(carry, t):
            w, opt_state = carry
            ro, logp_PxK, zero_adv = rollout(w, jax.random.fold_in(key, t))
            # per-group gradients at the behaviour policy: the noise scale, and with
            # M = E = 1 the only step's gradient (their mean)
            g_PxD, clip_P, out_P = group_grads(w, ro, cfg, logp_PxK)
            stats = noise_stats(g_PxD, G, Ds)
            g = jnp.mean(g_PxD, axis=0)
            stats["grad_norm"] = jnp.linalg.norm(g)
            stats["zero_adv_frac"] = zero_adv
            if M * E == 1:
                upd, opt_state = tx.update(g, opt_state, w)
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

        return tx, update

    step_for.pools = (train, test)
    return step_for


def track(cfg: BanditConfig, state: BanditState, ts, w_TxD, test: Pool, n_steps):
    """Advance the clocks over updates ts [T] whose weights after each update are w_TxD.

    Returns (state, held-out accuracy after the last update).
    Exact held-out accuracy of all T policies in one batched product (the clocks need it
    after every update); first crossings, the running peak and the emergent collapse exactly
    as if checked update by update. Updates past n_steps (padding) never set a clock.
    """
    Ds = cfg.skill_dim
    logits = test.z0[None] + jnp.einsum("nkd,td->tnk", test.phi, w_TxD)
    acc_T = jnp.mean(jnp.sum(jax.nn.softmax(logits, axis=-1) * test.R[None], axis=-1), axis=-1)
    drift_T = jnp.mean(w_TxD[:, Ds:], axis=-1)
    peak_T = jnp.maximum(state.peak, jax.lax.cummax(acc_T))
    live_T = ts <= n_steps

    def first(prev, hit_T):
        hit_T = hit_T & live_T
        return jnp.where((prev == 0) & jnp.any(hit_T), ts[jnp.argmax(hit_T)], prev)

    bad_T = ~(jnp.isfinite(acc_T) & jnp.all(jnp.isfinite(w_TxD), axis=-1))
    return state._replace(
        w=w_TxD[-1], peak=peak_T[-1],
        prog_t=first(state.prog_t, acc_T >= cfg.target),
        fail_t=first(state.fail_t, drift_T >= cfg.drift_threshold),
        div_t=first(state.div_t, bad_T),
        coll_t=first(state.coll_t, acc_T <= peak_T - cfg.collapse_drop)), acc_T[-1]


def initial_state(cfg: BanditConfig, tx, test: Pool) -> BanditState:
    dtype = jnp.result_type(float)
    w0 = jnp.zeros((cfg.skill_dim + cfg.drift_dim,), dtype)
    zero = jnp.zeros((), jnp.int32)
    return BanditState(w0, tx.init(w0), accuracy(w0, test), zero, zero, zero, zero)


def make_chunk(cfg: BanditConfig, update, pools, n_steps: int, every: int):
    """chunk(state, t0) -> (state, checkpoint metrics) of updates t0 + 1 ... t0 + every."""
    train, test = pools
    Ds = cfg.skill_dim
    with jax.ensure_compile_time_eval():  # a constant, also when built inside a traced run
        err0 = 1.0 - float(accuracy(jnp.zeros((Ds + cfg.drift_dim,), test.z0.dtype), test))

    def chunk(state: BanditState, t0):
        ts = t0 + 1 + jnp.arange(every, dtype=jnp.int32)
        (_, opt_state), (w_TxD, stats) = jax.lax.scan(update, (state.w, state.opt_state), ts)
        state, acc = track(cfg, state._replace(opt_state=opt_state), ts, w_TxD, test, n_steps)
        m_tr = policy_metrics(state.w, train)
        out = {name: jnp.mean(v) for name, v in stats.items()}
        out.update(heldout_acc=acc, error_frac=(1.0 - acc) / err0, train_acc=m_tr["acc"],
                   kl=m_tr["kl"],
                   entropy=m_tr["entropy"], drift=jnp.mean(state.w[Ds:]),
                   skill=jnp.mean(state.w[:Ds]))
        return state, out

    return chunk


def make_run(cfg: BanditConfig, opt: OptimConfig, n_steps: int, n_ckpt: int = 128, batch=None):
    """A pure run(batch, lr, key) -> Trace of n_steps rollout batches of `batch` responses.

    `batch` (static: it sets the array shapes P x G) must be given here; run's own batch
    argument is only used by the learning-rate companions (Malladi) and may be traced.
    """
    require(batch is not None, "batch", "given (the bandit's batch sets array shapes)", batch)
    B = int(batch)
    step_for = make_update(cfg, opt, B)
    every = checkpoint_every(n_steps, n_ckpt)
    n_chunks = math.ceil(n_steps / every)

    def run(batch, lr, key) -> Trace:
        tx, update = step_for(batch, lr, key)
        chunk = make_chunk(cfg, update, step_for.pools, n_steps, every)
        state = initial_state(cfg, tx, step_for.pools[1])
        t0_C = jnp.arange(n_chunks, dtype=jnp.int32) * every
        state, ck = jax.lax.scan(chunk, state, t0_C)
        t_C = jnp.minimum(t0_C + every, n_steps)
        return Trace(
            prog_t=state.prog_t, fail_t=state.fail_t, div_t=state.div_t,
            prog_n=state.prog_t * B, fail_n=state.fail_t * B, div_n=state.div_t * B,
            extra={"collapse_n": state.coll_t * B},
            ckpt={"samples": t_C * B, **ck},
        )

    return run


def make_schedule_run(cfg: BanditConfig, opt: OptimConfig, n1: int, n2: int, n_ckpt: int = 128,
                      carry: str = "rescale", batches=None):
    """A pure run(b1, b2, lr1, lr2, key) -> Trace: n1 rollout batches of b1, then n2 of b2.

    `batches` = (b1, b2), static (they set the array shapes); run's b1, b2 only feed the
    learning-rate companions and the sample counts. The optimizer state is carried across the
    switch as in twoclock.schedule.carry_state; update t draws fold_in(key, t) as in a constant
    run, so b1 = b2 reproduces make_run's clocks (tested). ckpt["error_frac"] = (1 - held-out
    accuracy) / (1 - its initial value) is the falling progress curve the planner uses.
    """
    from twoclock.schedule import carry_state, samples_at, stage_chunks
    require(batches is not None and len(batches) == 2, "batches",
            "(b1, b2) given (the bandit's batch sets array shapes)", batches)
    B1, B2 = (int(b) for b in batches)
    n_steps = n1 + n2
    step1 = make_update(cfg, opt, B1)
    step2 = step1 if B2 == B1 else make_update(cfg, opt, B2)
    every = checkpoint_every(n_steps, n_ckpt)
    k1, r1, k2, t_C = stage_chunks(n1, n2, every)
    dtype = jnp.result_type(float)

    def stage(chunk_full, chunk_rest, state, t_start, k, r, outs):
        if k:
            state, o = jax.lax.scan(chunk_full, state,
                                    t_start + jnp.arange(k, dtype=jnp.int32) * every)
            outs.append(o)
        if r:
            state, o = chunk_rest(state, jnp.asarray(t_start + k * every, jnp.int32))
            outs.append(jax.tree_util.tree_map(lambda v: v[None], o))
        return state

    def run(b1, b2, lr1, lr2, key) -> Trace:
        b1, b2 = jnp.asarray(b1, dtype), jnp.asarray(b2, dtype)
        tx1, update1 = step1(b1, lr1, key)
        tx2, update2 = step2(b2, lr2, key)
        pools = step1.pools
        outs: list = []
        state = initial_state(cfg, tx1, pools[1])
        state = stage(make_chunk(cfg, update1, pools, n_steps, every),
                      make_chunk(cfg, update1, pools, n_steps, max(r1, 1)), state, 0, k1, r1, outs)
        fresh = tx2.init(state.w)
        state = state._replace(opt_state=carry_state(state.opt_state, fresh, b1, b2, carry,
                                                     opt.b1, opt.b2))
        state = stage(make_chunk(cfg, update2, pools, n_steps, every), None, state, n1, k2, 0,
                      outs)
        ck = {name: jnp.concatenate([o[name] for o in outs]) for name in outs[0]}
        samples = lambda t: samples_at(t, n1, B1, B2)
        return Trace(
            prog_t=state.prog_t, fail_t=state.fail_t, div_t=state.div_t,
            prog_n=samples(state.prog_t), fail_n=samples(state.fail_t),
            div_n=samples(state.div_t), extra={"collapse_n": samples(state.coll_t)},
            ckpt={"samples": samples(jnp.asarray(t_C)), **ck})

    return run


def drift_noise_scale(cfg: BanditConfig) -> float:
    """Configured B_simple of the drift block in responses, tr(Sigma) / |g|^2 = c_d / b^2
    (inf without a pull); the verifier adds to it when drift_train_scale > 0."""
    return math.inf if cfg.drift_bias == 0 else cfg.drift_noise / cfg.drift_bias**2


def predicted_failure_samples(cfg: BanditConfig, opt: OptimConfig, lr0: float,
                              batch: int) -> float:
    """Theory's failure clock in responses: drift_threshold over the mean drift per response.

    Each update takes M x E optimizer steps on minibatches of B / M responses whose drift
    gradient has mean -b and variance c_d M / B per coordinate. Adam's mean step is then
    lr b / (sqrt(c_d M / B + b^2) + eps) (the smooth form: noise-dominated, B << c_d / b^2,
    it is lr b sqrt(B / (M c_d)) and under the sqrt rule N_fail = D* sqrt(c_d b0) / (lr0 b)
    for M = E = 1, whatever B; signal-dominated, sign descent at lr per step and
    N_fail ~ sqrt(B)); SGD's is lr b, heavy ball's lr b / (1 - momentum). Ignores the
    verifier's restoring force (drift_train_scale > 0), clipping and epoch reuse (E > 1
    counts as E fresh steps), and the noise, which makes the first crossing somewhat earlier.
    """
    from twoclock.scaling import lr_for_batch
    cfg.prompts(batch)  # batch = P x G with M dividing P, else ValueError
    require_positive("lr0", lr0)
    if cfg.drift_bias == 0:
        return math.inf
    M, E, b = cfg.minibatches, cfg.epochs, cfg.drift_bias
    lr = lr_for_batch(lr0, batch, opt.b0, opt.lr_rule)
    if opt.name == "adam":
        eps = opt.eps / math.sqrt(batch / opt.b0) if opt.malladi else opt.eps
        step = lr * b / (math.sqrt(cfg.drift_noise * M / batch + b * b) + eps)
    elif opt.name == "momentum":
        step = lr * b / (1.0 - opt.momentum)
    else:
        step = lr * b
    return float(cfg.drift_threshold / (M * E * step) * batch)


def noise_scales(ckpt_b: dict, axis=-1) -> dict:
    """Measured B_simple per direction, {"skill": [...], "drift": [...]} in responses, from one
    batch's checkpoints (e.g. SweepResult.ckpt[i], arrays [L, S, C]): noise and signal
    averaged over `axis` first (inf: no detectable signal). axis=-1 gives one value per run
    [L, S]; a noise-dominated direction's signal is then mostly noise (per-run values scatter
    widely), so pool the seeds too, axis=(-2, -1) -> [L], to report a regime."""
    return {d: noise_scale(ckpt_b[f"noise_{d}"], ckpt_b[f"signal_{d}"], axis=axis)
            for d in ("skill", "drift")}


# The headline's defaults for --model bandit (lr0 is quoted at the CLI's b0 = 8 responses).
DEFAULT_SWEEP = dict(batches=(64, 128, 256, 512, 1024), lr0s=(0.02,), seeds=16, budget=100_000)

_HELP = {
    "n_train": "train prompts", "n_test": "held-out prompts", "responses": "K responses per prompt",
    "n_correct": "correct responses per prompt", "pass_a": "initial pass rate ~ Beta(a, b): a",
    "pass_b": "initial pass rate ~ Beta(a, b): b", "skill_dim": "skill feature directions",
    "skill_signal": "skill feature's correctness signal", "feature_noise": "skill feature noise",
    "drift_dim": "drift coordinates", "drift_scale": "drift feature scale on held-out prompts",
    "drift_train_scale": "drift feature scale on train prompts (0: invisible to the verifier)",
    "drift_bias": "mean b of the per-response drift signal",
    "drift_noise": "variance c_d of the per-response drift signal", "group": "G responses per prompt",
    "advantage": "grpo | drgrpo | rloo", "adv_eps": "GRPO std epsilon",
    "minibatches": "M optimizer steps per epoch", "epochs": "E passes over a rollout batch",
    "clip_low": "ratio clip 1 - eps_low ('none': unclipped)",
    "clip_high": "ratio clip 1 + eps_high (default eps_low; larger: clip-higher)",
    "kl_coef": "KL(pi || pi_ref) penalty",
    "shaping_clip": "clipping of the shaping pull: mask (ratio outside the band) | ppo (PPO's "
                    "rule with the pull's sign on log pi(a))",
    "target": "held-out accuracy target",
    "drift_threshold": "failure: mean drift displacement threshold",
    "collapse_drop": "emergent collapse: held-out accuracy drop below its running peak",
    "init_seed": "seed of the prompt pools",
}


def _optional_float(text: str):
    return "none" if text.lower() == "none" else float(text)


def add_args(group) -> None:
    """One flag per BanditConfig field (--drift-bias ...), default: the config's default."""
    from dataclasses import fields
    for f in fields(BanditConfig):
        default = getattr(BanditConfig, f.name)
        kind = (_optional_float if f.name in ("clip_low", "clip_high")
                else type(default) if default is not None else float)
        group.add_argument("--" + f.name.replace("_", "-"), dest="bandit_" + f.name, type=kind,
                           default=None, metavar=f.name.upper(),
                           help=f"{_HELP.get(f.name, f.name)} (default {default})")
    group.add_argument("--no-clip", dest="bandit_no_clip", action="store_true",
                       help="unclipped surrogate (same as --clip-low none)")


def config_from_args(ns) -> BanditConfig:
    """BanditConfig from the flags add_args added; ValueError names a bad parameter."""
    from dataclasses import fields
    kw = {f.name: getattr(ns, "bandit_" + f.name) for f in fields(BanditConfig)
          if getattr(ns, "bandit_" + f.name, None) is not None}
    kw = {k: None if v == "none" else v for k, v in kw.items()}
    if getattr(ns, "bandit_no_clip", False):
        kw["clip_low"], kw["clip_high"] = None, None
    cfg = BanditConfig(**kw)
    for b in getattr(ns, "batches", None) or ():  # the batch list sets P = B / G: check it now
        if isinstance(b, int) and b >= 1:
            cfg.prompts(b)
    return cfg


def annotate(cfg: BanditConfig, opt: OptimConfig, sweep, res, runs, crit) -> None:
    """Theory's failure clock and, per direction, the measured noise scale (seeds pooled) and
    regime for each (batch, lr0) entry of a result (in place). Each direction is measured over
    the checkpoints that decide its clock: skill up to the median progress clock, drift up to
    the median failure clock (the whole run where that clock is censored)."""
    for r in runs:
        i, j = res.batches.index(r["batch"]), res.lr0s.index(r["lr0"])
        r["theory"] = {"failure_samples": predicted_failure_samples(cfg, opt, r["lr0"],
                                                                    r["batch"])}
        ck = {k: v[j] for k, v in res.ckpt[i].items()}  # [S, C]
        r["noise_scale"], r["regime"] = {}, {}
        for d, clock in (("skill", "progress_samples"), ("drift", "failure_samples")):
            until = r[clock]["median"]
            keep = ck["samples"][0] <= (until if until is not None else np.inf)
            keep[0] = True  # at least the first checkpoint
            v = float(noise_scale(ck[f"noise_{d}"][:, keep], ck[f"signal_{d}"][:, keep]))
            r["noise_scale"][d] = v if np.isfinite(v) else None
            r["regime"][d] = "noise" if v > r["batch"] else "signal"
    del sweep, crit  # the bandit has no critical-batch theory


register(ModelSpec("bandit", make_run, static_batch=True, unit="responses",
                   add_args=add_args, config_from_args=config_from_args, annotate=annotate))

from twoclock.schedule import register_schedule  # noqa: E402  (schedule imports no model)
register_schedule("bandit", make_schedule_run, static_batch=True)
