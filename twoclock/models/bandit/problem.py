"""The bandit's problem: prompt pools, the linear-softmax policy and its exact metrics."""
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from twoclock import objectives as obj
from twoclock.models.bandit.config import BanditConfig


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


def emergent_train_drift(cfg: BanditConfig, pool: Pool) -> Pool:
    """The emergent drift's train features: on every prompt the random drift features get
    equal means over its correct and its wrong responses (so, at any policy that treats a
    prompt's correct responses alike and its wrong ones alike, they carry no correctness
    signal), plus `spurious` (r - n_correct / K) along v = ones / sqrt(drift_dim)."""
    Ds, K, nc = cfg.skill_dim, cfg.responses, cfg.n_correct
    phi_d, R = pool.phi[..., Ds:], pool.R[..., None]
    mean_c = np.sum(phi_d * R, axis=1, keepdims=True) / nc
    mean_w = np.sum(phi_d * (1 - R), axis=1, keepdims=True) / (K - nc)
    mean = np.mean(phi_d, axis=1, keepdims=True)
    phi_d = phi_d - np.where(R > 0, mean_c, mean_w) + mean
    v = np.ones(cfg.drift_dim) / math.sqrt(cfg.drift_dim)
    phi_d = phi_d + cfg.spurious * (R - nc / K) * v
    return pool._replace(phi=np.concatenate([pool.phi[..., :Ds], phi_d], axis=-1))


def make_problem(cfg: BanditConfig) -> tuple[Pool, Pool]:
    """(train, held-out) pools, fixed by init_seed (the same for every seed of a sweep)."""
    rng = np.random.default_rng(cfg.init_seed)
    train = make_pool(cfg, cfg.n_train, rng, cfg.drift_train_scale)
    test = make_pool(cfg, cfg.n_test, rng, cfg.drift_scale)
    if cfg.drift_source == "emergent":
        train = emergent_train_drift(cfg, train)
    return train, test


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
