"""The per-seed keys computed in NumPy are JAX's fold_in(PRNGKey(seed), s), bit for bit."""
import jax
import numpy as np
from hypothesis import given, strategies as st

from tests.helpers import THREEFRY_KNOWN_ANSWERS
from twoclock.engine.keys import _jax_keys, seed_keys, threefry2x32

U32 = st.integers(0, 2**32 - 1)


def test_numpy_threefry_known_answers():
    """Threefry-2x32 with 20 rounds: the known-answer vectors of its authors' Random123."""
    for key, (c0, c1), want in THREEFRY_KNOWN_ANSWERS:
        x0, x1 = threefry2x32(key, np.array([c0]), np.array([c1]))
        assert (int(x0[0]), int(x1[0])) == want


@given(U32, st.sampled_from([1, 2, 3, 16, 64]))  # few shapes: few compiles of the JAX side
def test_seed_keys_equal_jax_fold_in(seed, n_seeds):
    got = seed_keys(seed, n_seeds)
    want = np.asarray(_jax_keys(seed, n_seeds))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # and the definition itself, on the last seed (not only the jitted, vmapped form)
    last = jax.random.fold_in(jax.random.PRNGKey(seed), n_seeds - 1)
    np.testing.assert_array_equal(got[-1], np.asarray(last))


def test_other_prng_implementations_fall_back_to_jax():
    old = jax.config.jax_default_prng_impl
    try:
        jax.config.update("jax_default_prng_impl", "rbg")
        got = seed_keys(5, 3)
        want = np.stack([np.asarray(jax.random.fold_in(jax.random.PRNGKey(5), s))
                         for s in range(3)])
    finally:
        jax.config.update("jax_default_prng_impl", old)
    assert got.shape == (3, 4)  # rbg keys are four words, threefry's two
    np.testing.assert_array_equal(got, want)
