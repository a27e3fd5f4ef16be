"""Censored medians, bootstrap CIs and the interpolated critical batch."""
import math

import numpy as np
from hypothesis import example, given, strategies as st

from tests.helpers import assert_close
from twoclock.analysis import clocks


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=40))
def test_summary_of_uncensored_is_the_median_inside_its_ci(xs):
    s = clocks.summarize(np.array(xs))
    assert s["median"] == np.median(xs)
    assert s["reached"] == s["seeds"] == len(xs)
    assert s["ci"][0] <= s["median"] <= s["ci"][1]


@given(st.integers(1, 20), st.integers(0, 20))
@example(2, 2)   # exactly half censored: the upper middle value is inf, the median is None
@example(3, 2)   # one more crossed: the middle value is a crossing
@example(1, 0)
def test_censored_runs_are_kept_and_decide_the_median(n_hit, n_miss):
    x = np.array([100] * n_hit + [0] * n_miss)
    s = clocks.summarize(x)
    assert s["seeds"] == n_hit + n_miss and s["reached"] == n_hit
    if n_miss * 2 >= n_hit + n_miss:   # the middle value(s) include a censored run
        assert s["median"] is None
    else:
        assert s["median"] == 100
    assert all(v is None or math.isfinite(v) for v in s["ci"])


def test_all_censored_is_none_never_nan():
    s = clocks.summarize(np.zeros(8, int))
    assert s == {"median": None, "ci": [None, None], "reached": 0, "seeds": 8}


@given(st.floats(1.25, 3.0), st.integers(3, 7))
@example(1.2 + 1e-12, 3)  # a slowdown just past 1 + delta at the second batch: found there
def test_critical_batch_interpolates_on_log_b(growth, n):
    # N_prog(B) = N0 * growth^(j) at B = 8 * 2^j: the 1.2 crossing is at log_growth(1.2) octaves.
    batches = [8 * 2**j for j in range(n)]
    prog = np.array([[1000.0 * growth**j] * 5 for j in range(n)])
    cb = clocks.critical_batch(batches, prog)
    expected = 8 * 2 ** (0 + (1.2 - 1) / (growth - 1))   # linear on log B between j=0 and j=1
    assert_close(cb["batch"], expected, rtol=1e-9, atol=0, what="critical batch")
    assert cb["found"] == 1.0


def test_no_critical_batch_when_flat():
    prog = np.full((5, 6), 1000)
    cb = clocks.critical_batch([8, 16, 32, 64, 128], prog)
    assert cb["batch"] is None and cb["ci"] == [None, None]


def test_critical_batch_ci_brackets_point_with_noise():
    rng = np.random.default_rng(1)
    batches = [8, 16, 32, 64, 128]
    prog = np.array([[1000 * (1 + 0.1 * j * j) * rng.uniform(0.95, 1.05) for _ in range(16)]
                     for j in range(5)])
    cb = clocks.critical_batch(batches, prog)
    assert cb["ci"][0] <= cb["batch"] <= cb["ci"][1]


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_median_ci_of_plain_values_keeps_zeros(xs):
    s = clocks.median_ci(np.array(xs))  # accuracies: 0 is a value here, not "never"
    assert s["median"] == np.median(xs)
    assert s["ci"][0] <= s["median"] <= s["ci"][1]


def _coverage(level, n_draws, S, seed):
    """Fraction of n_draws samples (S values each, from four known distributions) whose
    median_ci at `level` contains the true median."""
    rng = np.random.default_rng(seed)
    dists = [(lambda n: rng.exponential(2.0, n), 2.0 * math.log(2)),
             (lambda n: rng.normal(3.0, 1.0, n), 3.0),
             (lambda n: rng.lognormal(0.0, 1.0, n), 1.0),
             (lambda n: rng.integers(1, 10**6, n), (1 + 10**6 - 1) / 2)]
    hits = 0
    for k in range(n_draws):
        draw, med = dists[k % len(dists)]
        ci = clocks.median_ci(draw(S), level=level)["ci"]
        hits += ci[0] <= med <= ci[1]
    return hits / n_draws


def test_median_ci_covers_the_true_median_at_its_level():
    """Coverage within K_SE = 4 binomial standard errors of the nominal level.

    The bootstrap percentile CI of a median is near-nominal from ~16 seeds (measured 0.935-0.95
    at 0.95); a CI of the wrong level (0.55 called 0.95) is ~35 SE off.
    """
    K_SE = 4.0
    for level, n, S in ((0.95, 400, 24), (0.8, 200, 24)):
        cov = _coverage(level, n, S, seed=int(100 * level))
        se = math.sqrt(level * (1 - level) / n)
        assert abs(cov - level) <= K_SE * se, (level, cov, se)


def test_censored_runs_widen_the_ci_to_the_budget():
    # 9 of 16 seeds crossed: the median is finite, the upper bound is often "> budget" (None)
    x = np.array([100 * (k + 1) for k in range(9)] + [0] * 7)
    s = clocks.summarize(x)
    assert s["median"] == 850.0 and s["reached"] == 9   # (800 + 900) / 2
    assert s["ci"][1] is None and s["ci"][0] is not None and s["ci"][0] <= 850.0


@given(st.lists(st.integers(1, 10**6), min_size=2, max_size=30), st.sampled_from([0.5, 0.8, 0.95]))
def test_median_ci_bounds_are_the_bootstrap_quantiles(xs, level):
    """lo, hi = the (1 - level)/2 and (1 + level)/2 quantiles ("lower") of the resampled medians."""
    x = np.array(xs, np.float64)
    idx = clocks.bootstrap_indices(x.size)
    med_R = np.median(x[idx], axis=1)
    lo, hi = np.quantile(med_R, [(1 - level) / 2, (1 + level) / 2], method="lower")
    assert clocks.median_ci(x, level)["ci"] == [lo, hi]
    assert clocks.median_ci(x, level, idx=idx)["ci"] == [lo, hi]


def test_critical_batch_at_exactly_one_plus_delta():
    # the largest batch slows progress by exactly 1 + delta = 1.25 (exact in binary): found there
    prog = np.array([[1000] * 4, [1100] * 4, [1250] * 4])
    cb = clocks.critical_batch([8, 16, 32], prog, delta=0.25)
    assert_close([cb["batch"], *cb["ci"]], 32.0, rtol=1e-12, atol=0, what="critical batch")
    assert cb["found"] == 1.0


def test_critical_batch_ci_resamples_the_seeds():
    """The default CI is the one of the default paired resamples, and noise gives it width."""
    rng = np.random.default_rng(3)
    batches = [8, 16, 32, 64]
    prog = np.array([[1000 * (1 + 0.3 * j) * rng.uniform(0.8, 1.2) for _ in range(12)]
                     for j in range(4)])
    cb = clocks.critical_batch(batches, prog)
    assert cb == clocks.critical_batch(batches, prog, idx=clocks.bootstrap_indices(12))
    assert cb["ci"][0] < cb["batch"] < cb["ci"][1] and 0 < cb["found"] <= 1


@given(st.integers(0, 10**6), st.sampled_from([0.5, 0.9]), st.floats(1.0, 1.5))
def test_critical_batch_ci_is_the_quantiles_of_the_resampled_critical_batches(seed, level, slope):
    """With R explicit resamples: ci = the (1 -+ level)/2 quantiles of each resample's critical
    batch (those that found one), `found` their fraction; no point estimate, no CI."""
    rng = np.random.default_rng(seed)
    batches = [8, 16, 32, 64]
    prog = np.array([[1000 * slope**j * rng.uniform(0.7, 1.3) for _ in range(9)]
                     for j in range(4)])
    idx = clocks.bootstrap_indices(9, n_boot=40, seed=seed)
    cb = clocks.critical_batch(batches, prog, level=level, idx=idx)
    one = lambda r: clocks.critical_batch(batches, prog[:, idx[r]], idx=idx[:1])["batch"]
    got = np.array([b for b in map(one, range(len(idx))) if b is not None])
    assert cb["found"] == got.size / len(idx)
    if cb["batch"] is None or got.size == 0:
        assert cb["ci"] == [None, None]
    else:
        want = np.quantile(got, [(1 - level) / 2, (1 + level) / 2])
        assert_close(cb["ci"], want, rtol=1e-12, atol=0, what="critical-batch CI")


# A critical batch where the medians are not monotone in B: 1000, 900, 1300, 2000 at B = 8 ... 64.
# The ratio is to the smallest batch (not the fastest): 1, 0.9, 1.3, 2.0; it first reaches 1.2
# at B = 32, interpolated on log B from B = 16: frac = (1.2 - 0.9) / (1.3 - 0.9) = 3/4, so
# B = 16 * 2^0.75.
BUMPY_B = [8, 16, 32, 64]
BUMPY_MED = [1000.0, 900.0, 1300.0, 2000.0]


def _bumpy(S=5, seed=0):
    """Per-seed clocks with the medians BUMPY_MED: each row is its median times a symmetric
    spread (odd S: the median is the middle value itself)."""
    spread = np.linspace(0.9, 1.1, S)
    rng = np.random.default_rng(seed)
    return np.array([m * rng.permutation(spread) for m in BUMPY_MED])


def test_critical_batch_is_relative_to_the_smallest_batch_by_hand():
    cb = clocks.critical_batch(BUMPY_B, _bumpy())
    assert_close(cb["batch"], 16 * 2**0.75, rtol=1e-12, atol=0, what="critical batch")


@given(st.permutations(range(4)), st.integers(0, 10**6))
def test_critical_batch_does_not_depend_on_the_order_of_the_batches(perm, seed):
    """Batches given in any order (with their rows) give the sorted input's answer, CI too."""
    prog = _bumpy(7, seed)
    idx = clocks.bootstrap_indices(7)
    want = clocks.critical_batch(BUMPY_B, prog, idx=idx)
    got = clocks.critical_batch([BUMPY_B[i] for i in perm], prog[list(perm)], idx=idx)
    assert got == want
    assert_close(want["batch"], 16 * 2**0.75, rtol=1e-12, atol=0, what="critical batch")


def test_critical_batch_ci_of_a_single_finding_resample():
    """Two resamples, one of which finds a critical batch: the CI is that resample's value at
    both ends (the quantiles of one number), found = 1/2; not 'no CI'."""
    prog = np.array([[1000.0] * 3, [1000.0, 1500.0, 1500.0]])
    idx = np.array([[0, 1, 2], [0, 0, 0]])  # the original seeds; seed 0 three times (flat)
    cb = clocks.critical_batch([8, 16], prog, idx=idx)
    want = 8 * 2 ** ((1.2 - 1.0) / (1.5 - 1.0))
    assert_close([cb["batch"], *cb["ci"]], want, rtol=1e-12, atol=0, what="critical batch")
    assert cb["found"] == 0.5
