"""GRPO's clipped surrogate on sampled token sequences, and the per-group objectives whose
spread gives each direction's gradient noise scale.

Per token t of response i: j_it = min(rho_it A_i, clip(rho_it, clip.lo, clip.hi) A_i) (band clip)
(twoclock.objectives.ppo_objective) with rho_it = pi(y_it | ...) / pi_old(y_it | ...), pi_old the
behaviour policy that sampled the batch; with the dual clip c (clip_ratio_c), max(j_it, c A_i)
where A_i < 0. The KL penalty in the loss (kl_in loss) adds -kl_coef * rho_it k(t) per token,
with k1 = log pi - log pi_ref or k3 = r - log r - 1, r = pi_ref / pi (objectives.sampled_kl):
the ratio makes its expected gradient that of each token's KL(pi || pi_ref) at its sampled
prefix (without it k1's would be 0 and k3's that of KL(pi_ref || pi)). In the reward (kl_in
reward) it is already in A_i, and nothing is added here.
Aggregation (loss_agg) over the response tokens m_it (up to the first end token), with group
weights keep_i (0 for groups dynamic sampling drops):
- seq_sum: sum_i keep_i sum_t m_it j_it / (A_len sum_i keep_i), A_len the response length
  bound. At ratio 1 its gradient is mean_i A_i grad log pi(y_i) / A_len: REINFORCE, unbiased
  (Dr. GRPO; TRL's loss_type dr_grpo);
- seq_mean: sum_i keep_i mean_t j_it / sum_i keep_i, mean_t over response i's own tokens
  (GRPO's per-response mean; verl's loss_agg_mode seq-mean-token-mean, TRL's grpo);
- token_mean: sum_it keep_i m_it j_it / sum_it keep_i m_it (DAPO's token mean; verl's
  token-mean, TRL's bnpo and dapo).
A dropped group (keep 0) adds nothing to the loss, its gradient or the token counts, its KL
penalty included: the loss is that of the batch without the group (tested), as DAPO's filter
(verl's DAPO recipe) removes the group's samples before the loss. Keeping its KL would raise
the penalty's weight against the surrogate as more groups are dropped (as they saturate);
the KL penalty is thus estimated on the kept groups' prompts only.
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp

from twoclock import objectives as obj
from twoclock.models.policy import net


class Rollout(NamedTuple):
    """One rollout batch of B = P G responses, flat (groups contiguous)."""
    prompt: jax.Array    # int32 [B, prompt_len]
    resp: jax.Array      # int32 [B, A]
    mask: jax.Array      # float [B, A]: the response's tokens
    adv: jax.Array       # float [B]
    keep: jax.Array      # float [B]: 0 where dynamic sampling drops the group
    logp_old: jax.Array  # float [B, A]: behaviour policy's log-probabilities of resp
    logref: jax.Array    # float [B, A]: reference policy's (zeros without a KL penalty)


def token_logp(params, arch: net.Arch, prompt, resp, group: int = 1):
    """log pi(resp_t | prompt, resp_<t) [B, A]; with group G the rows come in groups of G
    consecutive responses to one prompt (a rollout's layout), whose forward runs once."""
    logp = net.answer_logp(params, arch, prompt[::group] if group > 1 else prompt, resp)
    return jnp.take_along_axis(logp, resp[..., None], axis=-1)[..., 0]


def token_objective(logp, ro: Rollout, cfg, clip: obj.ClipBand):
    """(j [B, A] to maximise, clipped bool [B, A]) of tokens with log-probabilities logp in the
    ratio band clip (cfg.clip, or a program's argument: `knobs`)."""
    adv = jnp.broadcast_to(ro.adv[:, None], logp.shape)
    j, clipped = obj.log_ratio_objective(logp, ro.logp_old, adv, clip, cfg.clip_ratio_c)
    if cfg.kl_in_loss:
        j = j - cfg.kl_coef * obj.sampled_kl(logp, ro.logp_old, ro.logref, cfg.kl_estimator)
    return j, clipped


def aggregate(j, ro: Rollout, agg: str):
    """The loss_agg mean of per-token values j [B, A] over the kept responses' tokens."""
    w = ro.mask * ro.keep[:, None]
    if agg == "seq_sum":
        return jnp.sum(w * j) / (j.shape[1] * jnp.maximum(jnp.sum(ro.keep), 1.0))
    if agg == "seq_mean":
        per = jnp.sum(ro.mask * j, axis=1) / jnp.maximum(jnp.sum(ro.mask, axis=1), 1.0)
        return jnp.sum(ro.keep * per) / jnp.maximum(jnp.sum(ro.keep), 1.0)
    return jnp.sum(w * j) / jnp.maximum(jnp.sum(w), 1.0)


def loss(params, ro: Rollout, cfg, arch: net.Arch, clip: obj.ClipBand):
    """(minus the surrogate, (clipped tokens, counted tokens, clipped active tokens, active
    tokens)) of one minibatch in the ratio band clip; tokens count where mask * keep > 0."""
    j, clipped = token_objective(token_logp(params, arch, ro.prompt, ro.resp, cfg.group), ro,
                                 cfg, clip)
    w = ro.mask * ro.keep[:, None]
    active = w * (ro.adv != 0)[:, None]
    c = clipped.astype(w.dtype)
    return -aggregate(j, ro, cfg.loss_agg), (jnp.sum(c * w), jnp.sum(w), jnp.sum(c * active),
                                             jnp.sum(active))


def group_objectives(params, ro: Rollout, cfg, arch: net.Arch, group: int,
                     clip: obj.ClipBand):
    """The surrogate of each group [P] in the ratio band clip (its own loss_agg mean; seq_sum's
    batch surrogate is their mean when no group is dropped): per-group gradients are its
    Jacobian."""
    j, _ = token_objective(token_logp(params, arch, ro.prompt, ro.resp, group), ro, cfg, clip)
    split = lambda v: v.reshape((-1, group) + v.shape[1:])
    ro_P = jax.tree_util.tree_map(split, ro)
    return jax.vmap(lambda jg, rg: aggregate(jg, rg, cfg.loss_agg))(split(j), ro_P)
