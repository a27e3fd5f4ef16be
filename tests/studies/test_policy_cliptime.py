"""The cliptime part's answer logic (twoclock.studies.policy_study.cliptime) on hand-made
curves: the lead, the crossing interpolated between checkpoints, censoring, and the paired
bootstrap CI, against values worked out by hand and a loop-by-loop NumPy oracle."""
import json
import os

import numpy as np
import pytest

from twoclock.analysis.clocks import bootstrap_indices
from twoclock.studies.policy_study import cliptime

S = [0, 100, 200, 300, 400, 500]
RESULTS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "results",
                       "cliptime.json")


def test_crossing_interpolated_after_the_lead_by_hand():
    # the lead is the largest difference in (0, 200]: 0.03 at 200; the curve first reaches
    # <= 0 after it at 400 (-0.01) from 0.01 at 300: the crossing is halfway, 350
    d = [0.0, 0.02, 0.03, 0.01, -0.01, -0.02]
    assert cliptime.lead_crossing(S, d, 200) == pytest.approx((0.03, 350.0))
    # from 0.03 at 300 to -0.01 at 400: three quarters of the way, 375
    assert cliptime.lead_crossing(S, [0, 0.01, 0.02, 0.03, -0.01, 0], 200)[1] == \
        pytest.approx(375.0)
    # a dip before the lead does not count: the window's largest value is the lead
    assert cliptime.lead_crossing(S, [0, -0.01, 0.02, 0.01, 0.0, 0.0], 200)[1] == \
        pytest.approx(400.0)


def test_censored_and_no_lead():
    assert cliptime.lead_crossing(S, [0, 0.01, 0.02, 0.01, 0.005, 0.001], 200) == \
        pytest.approx((0.02, np.inf))  # never back to 0 in the budget: censored
    lead, cross = cliptime.lead_crossing(S, [0, -0.01, 0.0, 0.02, -0.01, 0], 200)
    assert (lead, cross) == (0.0, 0.0)  # no lead within the window: it lasted nothing
    with pytest.raises(ValueError, match="early_samples"):
        cliptime.lead_crossing(S, [0] * 6, 50)  # no checkpoint in the window


def oracle_crossing(s, d, window):
    """The same rule, by loops: lead = max d over 0 < s <= window (first index of the max);
    then the first later index with d <= 0, linear in s between it and the one before."""
    best = None
    for k in range(len(s)):
        if 0 < s[k] <= window and (best is None or d[k] > d[best]):
            best = k
    if d[best] <= 0:
        return d[best], 0.0
    for k in range(best + 1, len(s)):
        if d[k] <= 0:
            return d[best], s[k - 1] + (0 - d[k - 1]) / (d[k] - d[k - 1]) * (s[k] - s[k - 1])
    return d[best], np.inf


def test_paired_ci_against_a_loop_oracle():
    rng = np.random.default_rng(3)
    n, C = 7, len(S)
    ref = 0.3 + rng.normal(0, 0.05, (n, 1)) + np.linspace(0, 0.2, C)  # a seed effect
    wide = ref + np.array([0, 0.02, 0.03, 0.01, -0.01, -0.02]) + rng.normal(0, 0.01, (n, C))
    idx = bootstrap_indices(n, 300, seed=1)
    got = cliptime.lead_crossing_ci(S, wide, ref, 200, idx)
    boot = np.array([oracle_crossing(S, (wide[r] - ref[r]).mean(0), 200) for r in idx])
    lo, hi = np.quantile(boot[:, 1], [0.025, 0.975], method="lower")
    point = oracle_crossing(S, (wide - ref).mean(0), 200)
    assert got["crossing"]["median"] == pytest.approx(point[1])
    assert got["lead"]["median"] == pytest.approx(point[0])
    assert got["crossing"]["ci"] == pytest.approx([lo, hi])
    assert got["censored"] == pytest.approx(np.mean(np.isinf(boot[:, 1])))
    assert got["no_lead"] == pytest.approx(np.mean(boot[:, 1] == 0))


def test_the_ci_is_paired():
    # a large seed effect shared by both cells and the same difference in every seed: paired,
    # every resample sees that difference, so the CI is the point (unpaired it would spread)
    rng = np.random.default_rng(0)
    ref = rng.normal(0.4, 0.2, (9, 1)) + np.zeros((9, len(S)))
    wide = ref + np.array([0, 0.02, 0.03, 0.01, -0.01, -0.02])
    got = cliptime.lead_crossing_ci(S, wide, ref, 200, bootstrap_indices(9, 200))
    assert got["crossing"]["ci"] == pytest.approx([350.0, 350.0])
    assert got["censored"] == 0 and got["no_lead"] == 0


@pytest.mark.skipif(not os.path.exists(RESULTS), reason="no committed cliptime results")
def test_the_committed_answers_recompute_from_their_per_seed_numbers():
    with open(RESULTS) as f:
        out = json.load(f)
    again = json.loads(json.dumps(cliptime.answers(out["study"], out["cells"])))
    assert again == out["answers"]


@pytest.mark.slow  # the command's parser and checks up to the first run: ~8 s on 2 cores
def test_an_early_samples_before_the_first_checkpoint_is_refused_before_any_run(tmp_path):
    # at budget 256, B 128 has 2 updates and a checkpoint after each: the first at 128 responses
    from tests.cli.test_edge_values_policy_plan import STUDY, _study
    code, err = _study([*STUDY, "--early-samples", "127", "--parts", "cliptime", "--out",
                        str(tmp_path)], False)
    assert code == 2 and "--early-samples must be >= 128" in err, err
    assert len(err.strip().splitlines()) == 1
    assert _study([*STUDY, "--early-samples", "128", "--parts", "cliptime", "--out",
                   str(tmp_path)], False)[0] == "reached"
