"""The clipped surrogate of one rollout batch: its definition and its closed-form gradient."""
from typing import NamedTuple

import jax
import jax.numpy as jnp

from twoclock import objectives as obj
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.bandit.problem import logp_of


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
    """1 for samples whose shaping pull counts, 0 for those the trust region stops (cfg.clip).

    mask: the sample's ratio left the band [clip.lo, clip.hi] (either side).
    ppo: PPO's rule with the pull's own sign: the pull raises log pi(a) at the rate
    s = xi . (phi_d(a) - E_pi phi_d), and stops once the ratio has already moved past the
    band in that direction (s > 0 and rho > clip.hi, or s < 0 and rho < clip.lo).
    Every sample counts where the band never binds (a non-finite ratio too).
    """
    clip = cfg.clip
    if not clip.binds:
        return jnp.ones(rho_G.shape, rho_G.dtype)
    if cfg.shaping_clip == "mask":
        return ((rho_G >= clip.lo) & (rho_G <= clip.hi)).astype(rho_G.dtype)
    s_G = jnp.sum(xi_GxDd * dphi_GxDd, axis=-1)
    return (~obj.clipped_mask(rho_G, s_G, clip)).astype(rho_G.dtype)


def group_loss(w, ro: Rollout, cfg: BanditConfig):
    """Loss (minus the surrogate, plus the KL penalty) of one prompt's group, and its clip mask."""
    Ds = cfg.skill_dim
    logp_K = jax.nn.log_softmax(ro.z0 + ro.phi @ w)
    logp_G = logp_K[ro.a]
    j_G, clipped_G = obj.log_ratio_objective(logp_G, ro.logp_old, ro.adv, cfg.clip,
                                             cfg.clip_ratio_c)
    rho_G = jax.lax.stop_gradient(jnp.exp(logp_G - ro.logp_old))
    pi_K = jax.lax.stop_gradient(jnp.exp(logp_K))
    dphi_G = ro.phi[ro.a][:, Ds:] - (pi_K @ ro.phi[:, Ds:])[None]
    keep_G = shaping_keep(rho_G, ro.xi, dphi_G, cfg)
    shaping = jnp.sum(jnp.mean((keep_G * rho_G)[:, None] * ro.xi, axis=0) * w[Ds:])
    if cfg.drift_source == "emergent":  # no shaping signal: the drift is the policy's own
        shaping = 0.0
    loss = -(jnp.mean(j_G) + shaping)
    if cfg.kl_in_loss:
        loss = loss + cfg.kl_coef * obj.kl(logp_K, ro.logref)
    return loss, (jnp.mean(clipped_G.astype(loss.dtype)), 1.0 - jnp.mean(keep_G))


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
    clipped_G = obj.clipped_mask(rho_G, ro.adv, cfg.clip, cfg.clip_ratio_c)
    c_G = jnp.where(clipped_G, 0.0, rho_G * ro.adv)             # d j_g / d log pi(a_g)
    onehot_GxK = jax.nn.one_hot(ro.a, K, dtype=rho_G.dtype)
    c_K = jnp.einsum("...g,...gk->...k", c_G, onehot_GxK)
    pi_K = jnp.exp(logp_PxK)
    dphi_G = None
    if cfg.shaping_clip == "ppo":  # unclipped, shaping_keep does not read it
        phi_d = ro.phi[..., Ds:]
        dphi_G = (jnp.einsum("...gk,...kd->...gd", onehot_GxK, phi_d)
                  - jnp.einsum("...k,...kd->...d", pi_K, phi_d)[..., None, :])
    keep_G = shaping_keep(rho_G, ro.xi, dphi_G, cfg)
    gl_K = -(c_K - jnp.sum(c_K, axis=-1, keepdims=True) * pi_K) / G
    if cfg.kl_in_loss:
        dlog = logp_PxK - ro.logref
        kl_ = jnp.sum(pi_K * dlog, axis=-1, keepdims=True)
        gl_K = gl_K + cfg.kl_coef * pi_K * (dlog - kl_)
    g_D = jnp.einsum("...k,...kd->...d", gl_K, ro.phi)
    if cfg.drift_source == "emergent":  # no shaping signal, no pull
        return g_D, jnp.mean(clipped_G.astype(rho_G.dtype), axis=-1), 1.0 - jnp.mean(keep_G, -1)
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
