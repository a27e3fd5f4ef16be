"""Policy-gradient objectives of RLVR: group advantages, PPO/GRPO ratio clipping, exact KL.

Shapes: `_PxG` is P prompts x G responses (one group per prompt), `_K` the K candidate
responses of one prompt. Every function is pure jnp and works on any leading shape.
"""
import jax
import jax.numpy as jnp

ADVANTAGES = ("grpo", "drgrpo", "rloo")


def advantages(r_PxG: jax.Array, kind: str = "grpo", eps: float = 1e-6) -> jax.Array:
    """Group-relative advantages of rewards r [..., G].

    grpo:   (r - mean) / (std + eps), std over the group (population, ddof = 0);
    drgrpo: r - mean (Dr.GRPO drops the std normalisation);
    rloo:   r_i - mean_{j != i} r_j = G / (G - 1) * (r_i - mean).
    Every estimator has zero mean per group and is zero when a group's rewards are equal.
    """
    G = r_PxG.shape[-1]
    centred = r_PxG - jnp.mean(r_PxG, axis=-1, keepdims=True)
    if kind == "grpo":
        return centred / (jnp.std(r_PxG, axis=-1, keepdims=True) + eps)
    if kind == "drgrpo":
        return centred
    if kind == "rloo":
        return centred * (G / (G - 1))
    raise ValueError(f"advantage must be one of {', '.join(ADVANTAGES)} (got {kind!r})")


def zero_advantage_groups(r_PxG: jax.Array) -> jax.Array:
    """bool [...]: groups whose rewards are all equal (no verifier gradient at all)."""
    return jnp.all(r_PxG == r_PxG[..., :1], axis=-1)


def clipped_mask(ratio, adv, eps_low: float, eps_high: float) -> jax.Array:
    """bool: samples on the clipped branch of PPO's min, whose gradient is zero.

    A > 0 and ratio > 1 + eps_high, or A < 0 and ratio < 1 - eps_low.
    """
    return ((adv > 0) & (ratio > 1 + eps_high)) | ((adv < 0) & (ratio < 1 - eps_low))


def ppo_objective(ratio, adv, eps_low: float | None, eps_high: float | None) -> jax.Array:
    """Per-sample surrogate to maximise: min(ratio A, clip(ratio, 1-eps_low, 1+eps_high) A).

    eps_low None means unclipped (ratio A). eps_high != eps_low is DAPO's clip-higher.
    """
    if eps_low is None:
        return ratio * adv
    eps_high = eps_low if eps_high is None else eps_high
    return jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - eps_low, 1 + eps_high) * adv)


def log_ratio_objective(logp, logp_old, adv, eps_low, eps_high):
    """(objective, clipped) of samples with log-probabilities logp under the current policy."""
    ratio = jnp.exp(logp - logp_old)
    obj = ppo_objective(ratio, adv, eps_low, eps_high)
    if eps_low is None:
        return obj, jnp.zeros(ratio.shape, bool)
    eps_high = eps_low if eps_high is None else eps_high
    return obj, clipped_mask(ratio, adv, eps_low, eps_high)


def kl(logp_K: jax.Array, logq_K: jax.Array) -> jax.Array:
    """Exact KL(p || q) over the last axis, from log-probabilities."""
    return jnp.sum(jnp.exp(logp_K) * (logp_K - logq_K), axis=-1)


def entropy(logp_K: jax.Array) -> jax.Array:
    """Exact entropy over the last axis, from log-probabilities."""
    return -jnp.sum(jnp.exp(logp_K) * logp_K, axis=-1)
