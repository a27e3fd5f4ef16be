"""A clock is one noun (twoclock.clock): a toy clock, added in this file, is timed by the one
crossing function the engine (traced JAX arrays, under jit), the planner (a logged curve) and
the damage study (checkpoints) share, with the same answers; its censoring is the same in all.

The toy: a policy's entropy falling to 0.8 ("entropy <= 0.8"), logged every 100 samples as
2.0, 1.5, 1.0, 0.5, 0.3. It meets 0.8 first at 300 samples (0.5), the point before is 200
(1.0), and the line through them reaches 0.8 at f = (0.8 - 1.0) / (0.5 - 1.0) = 0.4 of the
way: 240 samples. Expected values are hand computations or the formula written out in plain
Python floats, never the module's own output.
"""
from fractions import Fraction
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from twoclock.clock import NEVER, Clock, Crossing, between, first_crossing, reached, stored
from twoclock.engine.stages import MARGIN
from twoclock.pilot.clocks import crossing
from twoclock.pilot.conditions import parse_condition
from twoclock.studies.damage_study import first_crossing as deficit_crossing

ENTROPY = Clock("entropy", "<=", 0.8)  # the toy clock
S = [0.0, 100.0, 200.0, 300.0, 400.0]
V = [2.0, 1.5, 1.0, 0.5, 0.3]


def jnp_crossing(clock, s, v):
    """The clock's first crossing of v at s as a compiled run would read it: jnp arrays, the
    first hit by argmax, the shared fraction with jnp.where; NEVER where none was seen."""
    hit = clock.holds(v)
    i = jnp.argmax(hit)
    at = between(s[i - 1], s[i], clock.fraction(v[i - 1], v[i], where=jnp.where))
    return jnp.where(jnp.any(hit) & (i > 0), at, NEVER)


def test_the_toy_clock_by_hand_in_numpy_and_in_a_compiled_run():
    c = first_crossing(S, V, ENTROPY)
    hand = 200.0 + (0.8 - 1.0) / (0.5 - 1.0) * (300.0 - 200.0)  # in plain Python floats
    assert c == Crossing(hand, 3) and c.seen and stored(c) == hand == pytest.approx(240.0)
    assert ENTROPY.fraction(1.0, 0.5) == pytest.approx(0.4, rel=1e-15)
    with jax.enable_x64(True):
        got = jax.jit(lambda s, v: jnp_crossing(ENTROPY, s, v))(
            jnp.asarray(S, jnp.float64), jnp.asarray(V, jnp.float64))
        assert float(got) == hand  # float64: the NumPy answer, bit for bit
    # float32 (the engine's default): the same rounding in NumPy and in XLA
    got32 = jax.jit(lambda s, v: jnp_crossing(ENTROPY, s, v))(
        jnp.asarray(S, jnp.float32), jnp.asarray(V, jnp.float32))
    f32 = ENTROPY.fraction(np.float32(1.0), np.float32(0.5))
    assert np.float32(got32) == between(np.float32(200), np.float32(300), f32)
    assert float(got32) == pytest.approx(240.0, rel=1e-6)


def test_the_toy_clock_censored_and_met_at_the_first_point():
    never = first_crossing(S, [2.0, 1.9, 1.8, 1.7, 0.81], ENTROPY)
    assert never == Crossing(400.0, None) and not never.seen and stored(never) == NEVER
    start = first_crossing(S, [0.7, 0.9, 0.5, 0.5, 0.5], ENTROPY)  # met before any crossing
    assert start == Crossing(0.0, 0) and not start.seen and stored(start) == NEVER
    for v in ([2.0, 1.9, 1.8, 1.7, 0.81], [0.7, 0.9, 0.5, 0.5, 0.5]):
        got = jax.jit(lambda s, v: jnp_crossing(ENTROPY, s, v))(
            jnp.asarray(S, jnp.float32), jnp.asarray(v, jnp.float32))
        assert float(got) == NEVER
    assert reached([240.0, NEVER]).tolist() == [True, False]


def test_the_planner_and_the_damage_study_time_the_toy_the_same_way():
    # the planner: the same condition parsed from a flag
    assert crossing(S, V, parse_condition("entropy<=0.8", "--failure")) == (240.0, 3)
    # the damage study's post-run clock rises to its level from 0 at 0 responses: -entropy
    # rising to -0.8 with the same samples crosses at the same place
    rise = -np.asarray(V[1:]) + 2.0  # 0.5, 1.0, 1.5, 1.7 after 100..400; 0 at 0
    assert deficit_crossing([S[1:]], [rise], 1.2).tolist() == [240.0]
    assert deficit_crossing([S[1:]], [rise], 1.8).tolist() == [NEVER]


@st.composite
def step(draw):
    """A step from s0 to s1 > s0 across which a '>=' clock's level is crossed: v0 < level <= v1."""
    fl = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
    v0, v1 = sorted((draw(fl), draw(fl)))
    level = draw(st.floats(v0, v1, exclude_min=True)) if v0 < v1 else None
    s0 = draw(st.floats(0, 1e9))
    return s0, s0 + draw(st.floats(1e-3, 1e6)), v0, v1, level


@settings(max_examples=300, deadline=None)
@given(step())
def test_an_interpolated_crossing_lies_between_its_two_points_and_is_the_hand_formula(x):
    s0, s1, v0, v1, level = x
    if level is None:
        return
    clock = Clock("x", ">=", level)
    c = first_crossing([s0, s1], [v0, v1], clock)
    assert c.index == 1 and s0 <= c.samples <= s1
    f = (level - v0) / (v1 - v0)  # the hand formula, plain Python floats
    if f >= 2.3e-308:  # (below, the fraction is the smallest normal float, after the point)
        assert c.samples == s0 + f * (s1 - s0)
    exact = Fraction(s0) + (Fraction(level) - Fraction(v0)) / (Fraction(v1) - Fraction(v0)) \
        * (Fraction(s1) - Fraction(s0))
    assert abs(c.samples - float(exact)) <= 1e-9 * max(abs(s1), 1.0)
    # a curve whose first point already meets it, and one that never does
    assert first_crossing([s0, s1], [v1, v1], clock) == (s0, 0)
    assert first_crossing([s0, s1], [v0, v0], clock) == (s1, None)


f32 = st.floats(-1e4, 1e4, allow_nan=False, width=32)
NEW_FRACTION = jax.jit(lambda a, b: MARGIN.fraction(a, b, where=jnp.where))


@jax.jit
def OLD_FRACTION(a, b):
    """The engine's margin fraction as it was written before the shared clock."""
    f = jnp.where(a < 0, a / (a - b), 1.0)
    return jnp.clip(jnp.where(jnp.isnan(f), 1.0, f), jnp.finfo(jnp.float32).tiny, 1.0)


@settings(max_examples=200, deadline=None)
@given(f32, f32)
def test_the_engines_margin_fraction_is_the_old_formula_bit_for_bit(m0, m1):
    """The engine computed m0 / (m0 - m1) (1 where m0 >= 0 or NaN, clipped to [tiny, 1]); the
    shared (0 - m0) / (m1 - m0) is the same number, in NumPy and under jit, wherever the
    engine reads it: not on a step m0 == m1 < 0, which crosses nothing (x - x is +0 both ways
    round, so there it is +inf, and was -inf)."""
    assume(not m0 == m1 < 0)
    m0_, m1_ = np.float32(m0), np.float32(m1)
    new, want = NEW_FRACTION(m0_, m1_), OLD_FRACTION(m0_, m1_)
    assert np.asarray(new).tobytes() == np.asarray(want).tobytes()
    assert np.float32(MARGIN.fraction(m0_, m1_)).tobytes() == np.asarray(want).tobytes()


def test_unknown_and_degenerate_points_before_give_the_point_itself():
    assert MARGIN.fraction(np.float32(np.nan), np.float32(0.3)) == 1.0  # unknown start
    assert MARGIN.fraction(np.float32(0.2), np.float32(0.3)) == 1.0  # already met
    assert MARGIN.fraction(-np.inf, 0.3) == 1.0  # a vertical line
    # an overflowing v1: the fraction underflows, but stays after the point before
    assert MARGIN.fraction(-1e-300, np.inf) == np.finfo(np.float64).tiny
    assert not math.isnan(ENTROPY.fraction(np.float64(np.nan), 0.5))
    with pytest.raises(ValueError, match="op"):
        Clock("x", "==", 1.0)


def test_a_strict_condition_is_met_only_past_its_level():
    """'x > 1' on 0, 1, 2 (samples 0, 10, 20): the point at 1 does not meet it, the point at 2
    does (index 2), and the line from (10, 1) reaches 1 at once: f = (1 - 1) / (2 - 1) = 0,
    which the clock keeps after the point before (the smallest normal float), so 10 samples.
    '>=' would meet it at index 1. The same for '<' falling through 1, and for the planner's
    parsed condition."""
    s = [0.0, 10.0, 20.0]
    assert first_crossing(s, [0.0, 1.0, 2.0], Clock("x", ">", 1.0)) == (10.0, 2)
    assert first_crossing(s, [0.0, 1.0, 2.0], Clock("x", ">=", 1.0)) == (10.0, 1)
    assert first_crossing(s, [2.0, 1.0, 0.0], Clock("x", "<", 1.0)) == (10.0, 2)
    assert first_crossing(s, [2.0, 1.0, 0.0], Clock("x", "<=", 1.0)) == (10.0, 1)
    assert crossing(s, [0.0, 1.0, 2.0], parse_condition("kl>1", "--failure")).index == 2
    assert Clock("x", ">", 1.0).holds(np.array([1.0, 1.5])).tolist() == [False, True]
    assert Clock("x", "<", 1.0).holds(np.array([1.0, 0.5])).tolist() == [False, True]


def test_the_damage_studys_deficit_clock_counts_from_zero_at_zero_responses():
    """The deficit is 0 at the reference (0 responses), so a level it passes before the first
    checkpoint crosses between 0 and that checkpoint: 0.5 at 100 responses reaches 0.3 at
    0.3 / 0.5 x 100 = 60, and 0.5 at exactly 100. A level <= 0 is met at the reference
    itself: no crossing (NEVER)."""
    s, x = [[100.0, 200.0, 300.0, 400.0]], [[0.5, 1.0, 1.5, 1.7]]
    assert deficit_crossing(s, x, 0.3).tolist() == [pytest.approx(60.0, rel=1e-15)]
    assert deficit_crossing(s, x, 0.5).tolist() == [100.0]
    assert deficit_crossing(s, x, 0.75).tolist() == [pytest.approx(150.0, rel=1e-15)]
    assert deficit_crossing(s, x, 0.0).tolist() == [NEVER]


def test_seed_crossings_time_each_seed_from_its_start_value_by_hand():
    """Two seeds, unequal curves, a falling condition from x0 = 1 at 0 samples: seed 0 reaches
    0.6 between 0 (1.0) and 10 (0.2) at 0.4 / 0.8 x 10 = 5; seed 1 between 20 (0.8) and 30
    (0.4) at 20 + 0.2 / 0.4 x 10 = 25; a seed that never gets there is NEVER, and so is one
    whose start already meets the condition (x0 = 0.5)."""
    from twoclock.clock import seed_crossings
    s = [[10.0, 20.0, 30.0], [10.0, 20.0, 30.0], [10.0, 20.0, 30.0]]
    x = [[0.2, 0.1, 0.0], [0.9, 0.8, 0.4], [0.9, 0.8, 0.7]]
    got = seed_crossings(s, x, Clock("x", "<=", 0.6), 1.0)
    assert got.tolist() == [pytest.approx(5.0, rel=1e-15), pytest.approx(25.0, rel=1e-15), NEVER]
    assert seed_crossings(s, x, Clock("x", "<=", 0.6), 0.5).tolist() == [NEVER] * 3
