"""Exact statistics of a policy on a pool, from one teacher-forced forward over the correct
answers (no sampling): the clocks' accuracy, KL, entropy and null-direction log-odds.

At answer position j the policy's next-token distribution p_j(. | prompt, correct prefix):
- accuracy: P(correct digits) * (p(END_A) + p(END_B)) at the end position, i.e. the exact
  probability that a sampled response is verified correct, averaged over the pool;
- kl: sum over the answer positions j <= n_digits of KL(p_j || p_ref,j), averaged over the pool
  (the token-level KL along the correct answer, not the KL of whole sampled responses);
- entropy: the mean over those positions (and the pool) of the entropy of p_j, in nats;
- null: log p(END_B) - log p(END_A) at the end position, averaged over the pool: the
  reward-indifferent choice;
- deploy: P(correct digits) * p(END_A) at the end position: the exact accuracy under the
  deployment grader, which accepts END_A only. The train verifier cannot see the END_B share,
  so any drift of the null log-odds towards END_B costs deploy accuracy and no reward.
"""
import jax
import jax.numpy as jnp

from twoclock import objectives as obj
from twoclock.models.policy import net
from twoclock.models.policy.task import ANSWER_LEN, END_A, END_B, Pool

STATS = ("acc", "kl", "entropy", "null", "deploy")


def as_jax(pool: Pool) -> Pool:
    return Pool(*(jnp.asarray(v) for v in pool))


def pool_logp(params, arch: net.Arch, pool: Pool):
    """Teacher-forced log-probabilities [N, ANSWER_LEN, V] along the correct answers."""
    return net.answer_logp(params, arch, pool.prompt, pool.answer)


def stats_from_logp(logp_NxAxV, logref_NxAxV, pool: Pool) -> dict:
    """{acc, kl, entropy, null, deploy} (scalars) of a pool from its teacher-forced log-probabilities;
    logref None gives kl 0."""
    nd = pool.n_digits
    mask_NxA = (jnp.arange(ANSWER_LEN)[None] <= nd[:, None]).astype(logp_NxAxV.dtype)
    digit_NxA = jnp.arange(ANSWER_LEN)[None] < nd[:, None]
    tok_logp = jnp.take_along_axis(logp_NxAxV, pool.answer[..., None], axis=-1)[..., 0]
    end_NxV = jnp.take_along_axis(logp_NxAxV, nd[:, None, None], axis=1)[:, 0]
    la, lb = end_NxV[:, END_A], end_NxV[:, END_B]
    logp_digits = jnp.sum(jnp.where(digit_NxA, tok_logp, 0.0), axis=1)
    logp_ok = logp_digits + jnp.logaddexp(la, lb)
    ent = jnp.sum(obj.entropy(logp_NxAxV) * mask_NxA) / jnp.sum(mask_NxA)
    out = {"acc": jnp.mean(jnp.exp(logp_ok)), "entropy": ent, "null": jnp.mean(lb - la),
           "deploy": jnp.mean(jnp.exp(logp_digits + la))}
    if logref_NxAxV is None:
        out["kl"] = jnp.zeros((), logp_NxAxV.dtype)
    else:
        out["kl"] = jnp.mean(jnp.sum(obj.kl(logp_NxAxV, logref_NxAxV) * mask_NxA, axis=1))
    return out


def pool_stats(params, arch: net.Arch, pool: Pool, logref=None) -> dict:
    return stats_from_logp(pool_logp(params, arch, pool), logref, pool)


def accuracy(params, arch: net.Arch, pool: Pool):
    return pool_stats(params, arch, pool)["acc"]


jit_pool_stats = jax.jit(pool_stats, static_argnums=1)
