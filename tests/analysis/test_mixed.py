"""p_mix against an independent oracle: the exact enumeration of all 2^G reward outcomes of a
group, and hand values."""
import itertools

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from twoclock.analysis.mixed import mean_p_mix, p_mix


def enumerated(p: float, G: int) -> float:
    """P(the G rewards are not all equal), summed over every outcome of G Bernoulli(p)."""
    total = 0.0
    for outcome in itertools.product((0, 1), repeat=G):
        prob = np.prod([p if r else 1.0 - p for r in outcome])
        if len(set(outcome)) > 1:
            total += prob
    return total


@given(p=st.floats(0.0, 1.0))
@example(p=0.0)
@example(p=1.0)
@example(p=0.5)
def test_p_mix_is_the_enumerated_share_of_mixed_groups(p):
    for G in range(1, 7):
        assert p_mix(p, G) == pytest.approx(enumerated(p, G), abs=1e-12)


@pytest.mark.parametrize("p, G, want", [
    (0.5, 2, 0.5),            # HT, TH of 4 outcomes
    (0.3, 2, 2 * 0.3 * 0.7),  # 0.42
    (0.5, 8, 1 - 2 / 256),
    (0.1, 3, 1 - 0.001 - 0.729),
    (0.7, 1, 0.0),            # one response never differs from itself
    (0.0, 8, 0.0), (1.0, 8, 0.0),
])
def test_p_mix_hand_values(p, G, want):
    assert p_mix(p, G) == pytest.approx(want, abs=1e-12)


def test_p_mix_is_elementwise_and_symmetric():
    p = np.array([0.0, 0.2, 0.5, 0.8, 1.0])
    got = p_mix(p, 4)
    assert got.shape == p.shape
    np.testing.assert_allclose(got, [enumerated(x, 4) for x in p], atol=1e-12)
    np.testing.assert_allclose(got, got[::-1], atol=1e-15)


@given(rates=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4),
       weights=st.lists(st.integers(1, 5), min_size=4, max_size=4), G=st.integers(1, 5))
@example(rates=[0.0, 1.0], weights=[1, 1, 1, 1], G=4)
def test_mean_p_mix_enumerates_prompt_then_group(rates, weights, G):
    """A prompt drawn with probability w_i / sum w, then G responses at its pass rate: every
    (prompt, outcome) pair enumerated."""
    w = np.asarray(weights[:len(rates)], float)
    want = sum(wi / w.sum() * enumerated(p, G) for p, wi in zip(rates, w))
    assert mean_p_mix(rates, G, w) == pytest.approx(want, abs=1e-12)
    assert mean_p_mix(rates, G) == pytest.approx(np.mean([enumerated(p, G) for p in rates]),
                                                 abs=1e-12)


def test_mean_is_not_the_share_at_the_mean_pass_rate():
    # half the prompts always solved, half never: no group is mixed, at mean pass rate 1/2
    assert mean_p_mix([0.0, 1.0], 8) == 0.0
    assert p_mix(0.5, 8) == pytest.approx(1 - 2 / 256)


@pytest.mark.parametrize("p, G, name", [
    (0.5, 0, "G"), (0.5, 2.0, "G"), (0.5, True, "G"), (1.5, 4, "p"), (-0.1, 4, "p"),
    (float("nan"), 4, "p"), ([], 4, "p"),
])
def test_bad_input_is_one_line_naming_the_parameter(p, G, name):
    with pytest.raises(ValueError, match=rf"^{name} must be") as e:
        p_mix(p, G)
    assert "\n" not in str(e.value)


def test_bad_weights_are_refused():
    with pytest.raises(ValueError, match="^weights must be"):
        mean_p_mix([0.2, 0.4], 4, [1.0])
    with pytest.raises(ValueError, match="^weights must be"):
        mean_p_mix([0.2, 0.4], 4, [0.0, 0.0])
