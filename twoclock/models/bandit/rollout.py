"""One rollout batch: prompts, sampled responses, rewards and advantages from one raw-bits draw."""
import math

import jax
import jax.numpy as jnp
import numpy as np

from twoclock import objectives as obj
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.bandit.problem import Pool, logp_of
from twoclock.models.bandit.surrogate import Rollout
from twoclock.models.grpo import epoch_orders


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

def n_order_bits(cfg: BanditConfig, batch: int) -> int:
    """Raw bits an update draws for its minibatch orders: P per epoch after the first where
    the config reshuffles, else none."""
    return cfg.prompts(batch) * (cfg.epochs - 1) if cfg.reshuffles(batch) else 0


def epoch_order(cfg: BanditConfig, batch: int, bits):
    """The rows [E, P] each epoch reads (`grpo.epoch_orders`) from an update's last bits, or
    None where the config does not reshuffle (every epoch reuses one split)."""
    n = n_order_bits(cfg, batch)
    if n == 0:
        return None
    return epoch_orders(bits[bits.shape[0] - n:].reshape(cfg.epochs - 1, -1))


def make_rollout(cfg: BanditConfig, batch: int, train: Pool):
    """(rollout, bits): bits(key) draws an update's randomness, and rollout(w, bits) ->
    (Rollout, logp_PxK, zero-advantage fraction) turns it into a batch of `batch` responses.

    One raw-bits draw per update feeds every random choice (one threefry expansion to compile
    instead of seven): prompts, one inverse-CDF uniform per response, the shaping signal, and
    last, where the config reshuffles, the minibatch orders (`epoch_order`; a draw's leading
    bits do not depend on its length, so the rollout is the one drawn without them).
    With M = E = 1 every sample keeps rho = 1 and only the group mean of xi enters the update,
    so that mean ~ N(b, c_d / G) is drawn directly. Emergent drift draws no shaping signal
    (xi is a zero placeholder the surrogate ignores).
    """
    P, G = cfg.prompts(batch), cfg.group
    on_policy = cfg.inner_steps(batch) == 1  # one step per batch: every ratio is 1
    Dd = cfg.drift_dim
    dtype = train.z0.dtype
    Ds = cfg.skill_dim
    v_d = jnp.full((Dd,), 1.0 / math.sqrt(Dd), dtype)  # the shaping reward's direction
    logref_train = jax.nn.log_softmax(train.z0, axis=-1)
    injected = cfg.drift_source == "injected"
    n_xi = 0 if not injected else P * Dd if on_policy else P * G * Dd
    n_order = n_order_bits(cfg, batch)
    xi_shape = (P, 1, Dd) if on_policy else (P, G, Dd)
    xi_sd = math.sqrt(cfg.drift_noise / (G if on_policy else 1))

    def bits(key):
        return jax.random.bits(key, (P + P * G + n_xi + n_order,), _uint(dtype))

    def rollout(w, bits):
        x_P = (bits[:P] % np.array(cfg.n_train, bits.dtype)).astype(jnp.int32)
        u_PxG = _uniform(bits[P:P + P * G], dtype).reshape(P, G)
        if injected:
            xi = cfg.drift_bias + xi_sd * _normal(bits[P + P * G:P + P * G + n_xi],
                                                  dtype).reshape(xi_shape)
        else:
            xi = jnp.zeros((P, 1, Dd), dtype)
        z0, phi, R, logref = train.z0[x_P], train.phi[x_P], train.R[x_P], logref_train[x_P]
        logp_PxK = logp_of(w, z0, phi)
        a_PxG = sample_responses(logp_PxK, u_PxG)
        r_PxG = jnp.take_along_axis(R, a_PxG, axis=1)
        logp_old = jnp.take_along_axis(logp_PxK, a_PxG, axis=1)
        score = r_PxG
        if cfg.shaping > 0:  # a non-verifier reward enters through the advantage
            s_PxG = jnp.take_along_axis(phi[..., Ds:] @ v_d, a_PxG, axis=1)
            score = score + cfg.shaping * s_PxG
        if cfg.kl_in_reward:
            score = obj.kl_penalised_rewards(score, logp_old,
                                             jnp.take_along_axis(logref, a_PxG, axis=1),
                                             cfg.kl_coef)
        adv = obj.advantages(score, cfg.advantage, cfg.adv_eps)
        zero_adv = jnp.mean(obj.zero_advantage_groups(r_PxG).astype(dtype))
        return Rollout(z0, phi, logref, a_PxG, adv, xi, logp_old), logp_PxK, zero_adv

    return rollout, bits
