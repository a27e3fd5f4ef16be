"""The CPU lowering of the RNG that the engine installs gives JAX's random bits exactly."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, strategies as st
from jax.extend.random import threefry_2x32

from tests.helpers import THREEFRY_KNOWN_ANSWERS
from twoclock.engine.runtime import fast_rng

U32 = st.integers(0, 2**32 - 1)


def hash_pairs(key, count):
    return np.asarray(jax.jit(threefry_2x32)(jnp.asarray(key, jnp.uint32),
                                             jnp.asarray(count, jnp.uint32)))


def test_the_unrolled_lowering_is_installed():
    assert fast_rng() and fast_rng()  # installed, and asking again is harmless
    text = jax.jit(threefry_2x32).lower(jnp.zeros(2, jnp.uint32),
                                        jnp.zeros(4, jnp.uint32)).as_text()
    assert "threefry" in text.lower() and "while" not in text


def test_threefry_known_answers():
    """Threefry-2x32 with 20 rounds: the known-answer vectors of its authors' Random123."""
    for key, count, want in THREEFRY_KNOWN_ANSWERS:
        np.testing.assert_array_equal(hash_pairs(key, count), np.array(want, np.uint32))


@given(st.tuples(U32, U32), st.lists(U32, min_size=16, max_size=16))  # one shape: one compile
def test_unrolled_hash_equals_jaxs_loop(key, count):
    """Bit for bit the loop form JAX would otherwise use on the CPU."""
    from jax._src.random import threefry2x32 as tf  # the loop form (a JAX internal)
    k = jnp.asarray(key, jnp.uint32)
    x = jnp.asarray(count, jnp.uint32).reshape(2, -1)
    loop = jax.jit(functools.partial(tf._threefry2x32_lowering, use_rolled_loops=True))
    want = np.concatenate([np.asarray(v) for v in loop(k[0], k[1], x[0], x[1])])
    np.testing.assert_array_equal(hash_pairs(key, count), want)
