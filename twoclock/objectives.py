"""Policy-gradient objectives of RLVR: group advantages, PPO/GRPO ratio clipping, exact KL.

Shapes: `_PxG` is P prompts x G responses (one group per prompt), `_K` the K candidate
responses of one prompt. Every function is pure jnp and works on any leading shape.
"""
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from twoclock.config import require, require_positive

ADVANTAGES = ("grpo", "grpo_bessel", "drgrpo", "rloo")
KL_ESTIMATORS = ("k1", "k3")


def advantages(r_PxG: jax.Array, kind: str = "grpo", eps: float = 1e-6) -> jax.Array:
    """Group-relative advantages of rewards r [..., G].

    grpo:   (r - mean) / (std + eps), std over the group (population, ddof = 0);
    grpo_bessel: the same with the Bessel-corrected std (ddof = 1, TRL's and verl's), which
            makes the advantages sqrt((G - 1) / G) times grpo's (eps aside);
    drgrpo: r - mean (Dr.GRPO drops the std normalisation);
    rloo:   r_i - mean_{j != i} r_j = G / (G - 1) * (r_i - mean).
    Every estimator has zero mean per group and is zero when a group's rewards are equal.

    grpo (ddof 0) stays the default, for a measured reason: the two stds differ by a constant
    per run, which Adam divides out up to its eps; only a KL penalty in the loss keeps its scale
    (weighed 1.069x more under grpo_bessel at G 8). With the same seeds the policy's clocks
    moved by parts per million without a KL penalty and by at most 0.05% with kl_coef 0.1 in
    the loss (docs/policy.md, "Clip-higher over time, and the group std measured").
    """
    G = r_PxG.shape[-1]
    centred = r_PxG - jnp.mean(r_PxG, axis=-1, keepdims=True)
    if kind in ("grpo", "grpo_bessel"):
        ddof = 0 if kind == "grpo" else 1
        return centred / (jnp.std(r_PxG, axis=-1, keepdims=True, ddof=ddof) + eps)
    if kind == "drgrpo":
        return centred
    if kind == "rloo":
        return centred * (G / (G - 1))
    raise ValueError(f"advantage must be one of {', '.join(ADVANTAGES)} (got {kind!r})")


def zero_advantage_groups(r_PxG: jax.Array) -> jax.Array:
    """bool [...]: groups whose rewards are all equal (no verifier gradient at all)."""
    return jnp.all(r_PxG == r_PxG[..., :1], axis=-1)


class ClipBand(NamedTuple):
    """The importance ratio's band [lo, hi] of PPO/GRPO's clipped surrogate: a sample whose
    ratio has left it in the direction its advantage pushes is on a clipped branch (no
    gradient). Built from the flags by `clip_band` alone; UNCLIPPED, (-inf, inf), never binds.
    A NamedTuple is a JAX pytree: a compiled program may take the band as an argument, and lo
    and hi are then arrays."""
    lo: float
    hi: float

    @property
    def binds(self) -> bool:
        """Whether some ratio can leave the band (every band but UNCLIPPED's); a concrete band's
        only (a traced one raises)."""
        return bool(self.lo > -math.inf or self.hi < math.inf)


UNCLIPPED = ClipBand(-math.inf, math.inf)


def clip_band(clip_low: float | None, clip_high: float | None = None) -> ClipBand:
    """The band (1 - clip_low, 1 + clip_high) of the flags, clip_high defaulting to clip_low
    (DAPO's clip-higher when larger); UNCLIPPED where clip_low is None, the one place that reads
    None as unclipped. ValueError naming the flag unless clip_low is in (0, 1) or None and
    clip_high a finite number > 0, or None (None when clip_low is)."""
    if clip_low is None:
        require(clip_high is None, "clip_high", "None when clip_low is None", clip_high)
        return UNCLIPPED
    require_positive("clip_low", clip_low)
    require(clip_low < 1, "clip_low", "in (0, 1)", clip_low)
    if clip_high is not None:
        require_positive("clip_high", clip_high)
    return ClipBand(1 - clip_low, 1 + (clip_low if clip_high is None else clip_high))


def clipped_mask(ratio, adv, clip: ClipBand, clip_c: float | None = None):
    """bool: samples on a clipped branch of the surrogate, whose gradient is zero.

    A > 0 and ratio > clip.hi, or A < 0 and ratio < clip.lo (none for UNCLIPPED); with the dual
    clip c, also A < 0 and ratio > c.
    """
    out = ((adv > 0) & (ratio > clip.hi)) | ((adv < 0) & (ratio < clip.lo))
    if clip_c is not None:
        out = out | ((adv < 0) & (ratio > clip_c))
    return out


def ppo_objective(ratio, adv, clip: ClipBand, clip_c: float | None = None):
    """Per-sample surrogate to maximise: min(ratio A, clip(ratio, clip.lo, clip.hi) A); with
    the dual clip c > 1 (verl's clip_ratio_c), a negative-advantage sample's objective is
    max(that, c A), so that a ratio run past c stops pushing its probability down. UNCLIPPED
    gives ratio A bit for bit: the min takes two equal values, whose gradients JAX splits in
    halves that add up to ratio A's exactly."""
    j = jnp.minimum(ratio * adv, jnp.clip(ratio, clip.lo, clip.hi) * adv)
    if clip_c is not None:
        j = jnp.where(adv < 0, jnp.maximum(j, clip_c * adv), j)
    return j


def log_ratio_objective(logp, logp_old, adv, clip: ClipBand, clip_c: float | None = None):
    """(objective, clipped) of samples with log-probabilities logp under the current policy."""
    ratio = jnp.exp(logp - logp_old)
    return ppo_objective(ratio, adv, clip, clip_c), clipped_mask(ratio, adv, clip, clip_c)


def sampled_kl(logp, logp_old, logref, estimator: str = "k3"):
    """Per-sample estimate of KL(pi || pi_ref) from samples drawn by pi_old, whose expected
    value and expected gradient are KL(pi || pi_ref)'s and its gradient, also off-policy.

    k1 = log pi - log pi_ref, k3 = r - log r - 1 with r = pi_ref / pi (Schulman's low-variance
    form, >= 0), each times the ratio pi / pi_old (gradient flowing through it). Without the
    ratio, a loss term's expected gradient would be 0 for k1 (E_pi grad log pi = 0) and
    grad KL(pi_ref || pi) for k3, not grad KL(pi || pi_ref).
    """
    d = logref - logp
    k = -d if estimator == "k1" else jnp.exp(d) - d - 1.0
    return jnp.exp(logp - logp_old) * k


def kl_penalised_rewards(r, logp_old, logref, coef: float):
    """r - coef (log pi_old(y) - log pi_ref(y)): the KL penalty in the reward, from each
    response's log-probabilities (a sequence's: the sum over its tokens) under the behaviour
    and the reference policy, with no gradient through them.

    The k1 estimate, because in a reward only the score function carries the gradient:
    E_pi[grad log pi(y) (log pi(y) - log pi_ref(y))] = grad KL(pi || pi_ref) on-policy, over
    whole sequences; k3's r - log r - 1 there would add E_pi[grad log pi(y) pi_ref(y) / pi(y)]
    = -grad KL(pi_ref || pi)."""
    return r - coef * jax.lax.stop_gradient(logp_old - logref)


def kl(logp_K: jax.Array, logq_K: jax.Array) -> jax.Array:
    """Exact KL(p || q) over the last axis, from log-probabilities."""
    return jnp.sum(jnp.exp(logp_K) * (logp_K - logq_K), axis=-1)


def entropy(logp_K: jax.Array) -> jax.Array:
    """Exact entropy over the last axis, from log-probabilities."""
    return -jnp.sum(jnp.exp(logp_K) * logp_K, axis=-1)
