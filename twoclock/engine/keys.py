"""Per-seed PRNG keys: fold_in(PRNGKey(seed), s) for s < n_seeds, without a compile.

Computing the keys with JAX costs a program of its own: about 0.1 s of XLA compilation in a
fresh process, a tenth of a cold small sweep. For JAX's default Threefry-2x32 keys the same 64
bits come from the hash written in NumPy here (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3"); any other PRNG implementation falls back to JAX.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

_ROT_2x4 = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key_2: tuple, x0_N: np.ndarray, x1_N: np.ndarray) -> tuple:
    """Threefry-2x32 with 20 rounds of the counter words (x0, x1) under key (k0, k1), uint32."""
    k0, k1 = (np.uint32(k) for k in key_2)
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    with np.errstate(over="ignore"):  # uint32 arithmetic wraps, as the hash means it to
        x0, x1 = x0_N.astype(np.uint32) + ks[0], x1_N.astype(np.uint32) + ks[1]
        for i in range(5):
            for r in _ROT_2x4[i % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def _threefry_keys(seed: int, n_seeds: int) -> np.ndarray:
    # PRNGKey(seed) is (0, seed) for a 32-bit seed; fold_in(key, s) hashes the counter (0, s)
    s_N = np.arange(n_seeds, dtype=np.uint32)
    x0, x1 = threefry2x32((0, seed), np.zeros_like(s_N), s_N)
    return np.stack([x0, x1], axis=-1)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _jax_keys(seed: int, n_seeds: int) -> jax.Array:
    base = jax.random.PRNGKey(seed)
    return jax.vmap(lambda s: jax.random.fold_in(base, s))(jnp.arange(n_seeds))


def seed_keys(seed: int, n_seeds: int) -> np.ndarray:
    """The raw keys [n_seeds, ...] of fold_in(PRNGKey(seed), s), seed in [0, 2^32)."""
    if jax.config.jax_default_prng_impl == "threefry2x32":
        return _threefry_keys(seed, n_seeds)
    return np.asarray(_jax_keys(seed, n_seeds))
