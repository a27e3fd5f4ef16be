"""The GRPO group std, ddof 0 (`grpo`, the default) against ddof 1 (`grpo_bessel`, TRL's and
verl's), against a NumPy-free oracle written here: sums over the group, by hand."""
import math

import numpy as np
from hypothesis import example, given, strategies as st

from twoclock import objectives as obj

EPS = 1e-6


def oracle(r, ddof: int, eps: float = EPS) -> list:
    """(r_i - mean) / (sqrt(sum (r_j - mean)^2 / (G - ddof)) + eps), with Python floats."""
    G = len(r)
    m = sum(r) / G
    sd = math.sqrt(sum((x - m) ** 2 for x in r) / (G - ddof))
    return [(x - m) / (sd + eps) for x in r]


# hand-computed (eps 0): at G 2, r = (1, 0): population std 1/2, Bessel std 1/sqrt(2);
# at G 3, r = (1, 0, 0): variance 2/9 and 1/3; at G 8 with three 1s: 15/64 and 15/56
HAND = [((1.0, 0.0), (1.0, -1.0), (math.sqrt(0.5), -math.sqrt(0.5))),
        ((1.0, 0.0, 0.0), (math.sqrt(2), -math.sqrt(0.5), -math.sqrt(0.5)),
         (2 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3))),
        ((1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0),
         (5 / math.sqrt(15),) * 3 + (-3 / math.sqrt(15),) * 5,
         (5 / 8 / math.sqrt(15 / 56),) * 3 + (-3 / 8 / math.sqrt(15 / 56),) * 5)]


def test_both_stds_by_hand_at_group_2_3_8():
    for r, pop, bessel in HAND:
        x = np.asarray([r], np.float32)
        np.testing.assert_allclose(obj.advantages(x, "grpo", 0.0)[0], pop, rtol=1e-6)
        np.testing.assert_allclose(obj.advantages(x, "grpo_bessel", 0.0)[0], bessel, rtol=1e-6)
        # the oracle agrees with the hand values (it is what the property below trusts)
        np.testing.assert_allclose(oracle(r, 0, 0.0), pop, rtol=1e-12)
        np.testing.assert_allclose(oracle(r, 1, 0.0), bessel, rtol=1e-12)


@given(G=st.sampled_from([2, 3, 8]), data=st.data())
@example(G=2, data=None).via("a group with equal rewards")
@example(G=8, data=None).via("a group with equal rewards")
def test_grpo_and_bessel_match_the_oracle(G, data):
    if data is None:
        groups = [[1.0] * G, [0.0] * G]
    else:
        bits = st.lists(st.sampled_from([0.0, 1.0]), min_size=G, max_size=G)
        groups = data.draw(st.lists(bits, min_size=1, max_size=6))
    x = np.asarray(groups, np.float32)
    for kind, ddof in (("grpo", 0), ("grpo_bessel", 1)):
        got = np.asarray(obj.advantages(x, kind, EPS))
        want = np.asarray([oracle(g, ddof) for g in groups])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    a0_all, a1_all = obj.advantages(x, "grpo", EPS), obj.advantages(x, "grpo_bessel", EPS)
    for g, a0, a1 in zip(groups, a0_all, a1_all):
        if len(set(g)) == 1:  # equal rewards: no advantage under either std (eps: no 0/0)
            assert np.all(np.asarray(a0) == 0) and np.all(np.asarray(a1) == 0)
        else:  # otherwise the constant ratio sqrt((G - 1) / G): 0.935 at G 8 (eps aside)
            np.testing.assert_allclose(np.asarray(a1), math.sqrt((G - 1) / G) * np.asarray(a0),
                                       rtol=1e-5)
