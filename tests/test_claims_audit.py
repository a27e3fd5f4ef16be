"""Self-audit tests of the claims table's statistics (twoclock.analysis.claims; docs/testing.md, "Self-audit"). The table's own test compares the committed file with
what the command writes now, which passes any bug made before the file was written; these
check the pieces by hand on made-up seeds instead."""
import numpy as np
import pytest

from twoclock.analysis import claims, claims_theory, clocks


def _source(per_seed, batches, rule="sqrt"):
    """A claims.Source over made-up clocks {clock: [B][1 lr0][S]} (no committed file)."""
    s = claims.Source.__new__(claims.Source)
    S = len(next(iter(per_seed.values()))[0][0])
    s.name, s.path = "made here", "made here"
    s.d = {"batches": batches, "lr0s": [0.01], "seeds": S, "per_seed": per_seed,
           "lr_rule": rule}
    s.idx = clocks.bootstrap_indices(S)
    return s


def test_the_ratio_is_paired_over_seeds():
    # every seed at B 16 takes exactly 2x its own clock at B 8: paired, every resample's ratio
    # of medians is 2 (by hand), so the CI is [2, 2]; resampled apart it would spread
    x = np.random.default_rng(1).lognormal(7.0, 0.5, size=64)
    s = _source({"progress": [[x.tolist()], [(2 * x).tolist()]]}, [8, 16])
    r = s.ratio("progress", 16, 8, 0.01)
    assert r["median"] == pytest.approx(2.0, rel=1e-12)
    assert r["ci"] == pytest.approx([2.0, 2.0], rel=1e-12)


@pytest.mark.parametrize("rule, want", [("sqrt", 1000.0), ("fixed", 4000.0)])
def test_the_baseline_holds_samples_under_the_sqrt_rule_and_updates_under_a_fixed_lr(rule, want):
    # seen B 8's median 1000; at B 32 the sqrt rule's baseline holds the samples (1000), a
    # fixed lr's holds the updates (1000 x 32 / 8 = 4000)
    s = _source({"progress": [[[900.0, 1000.0, 1100.0]], [[1.0, 2.0, 3.0]]]}, [8, 32], rule)
    assert claims_theory._base(s, "progress", 32, 0.01, 8) == pytest.approx(want)


@pytest.mark.parametrize("ci, want", [([0.96, 1.04], "holds"), ([0.9, 1.04], "not established"),
                                      ([0.96, 1.2], "not established"), ([1.06, 1.2], "fails"),
                                      ([0.5, 0.94], "fails"), ([0.95, 1.05], "holds")])
def test_within_holds_only_where_the_whole_ci_lies_in_the_range(ci, want):
    assert claims.verdict(ci, ("within", 0.95, 1.05)) == want
