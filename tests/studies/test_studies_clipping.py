"""The clipping study's claims from per-seed failure clocks, against hand computations."""
import numpy as np
import pytest

from twoclock.analysis.clocks import bootstrap_indices
from twoclock.studies import clipping


def test_delay_is_a_ratio_of_medians_with_censored_runs_as_infinity():
    idx = bootstrap_indices(5)
    d = clipping.delay_ci([30, 10, 20, 40, 50], [10, 30, 20, 5, 15], idx)
    assert d["median"] == pytest.approx(30 / 15)  # medians 30 and 15, whatever the seed order
    assert d["ci"][0] <= d["median"] <= d["ci"][1]
    # three of five runs censored with the clip: its median is +inf, so the ratio is unknown
    assert clipping.delay_ci([0, 0, 0, 40, 50], [10, 30, 20, 5, 15], idx)["median"] is None


def test_delay_contrast_is_the_delay_at_one_batch_over_the_other():
    idx = bootstrap_indices(4)
    hi_w, hi_n = np.array([60, 60, 80, 80]), np.array([40, 40, 40, 40])  # delay 70 / 40
    lo_w, lo_n = np.array([30, 30, 30, 30]), np.array([20, 20, 20, 20])  # delay 30 / 20
    d = clipping.delay_contrast(hi_w, hi_n, lo_w, lo_n, idx)
    assert d["median"] == pytest.approx((70 / 40) / (30 / 20))
    swapped = clipping.delay_contrast(lo_w, lo_n, hi_w, hi_n, idx)
    assert swapped["median"] == pytest.approx(1 / d["median"])
    assert d["ci"][0] <= d["median"] <= d["ci"][1]


def _runs(order):
    """Synthetic entries: at B = 64 the clip doubles N_fail, at 256 and 1024 it triples it."""
    runs = []
    for b in order:
        for c in (0.1, 0.2, None):
            k = 1 if c is None else (2 if b == 64 else 3)
            fail = [k * 100 * (s + 1) for s in range(5)]
            s = {"median": 100.0 * b, "ci": [0.0, 0.0], "reached": 5, "seeds": 5}
            runs.append({"batch": b, "clip": c, "fail_n": fail, "progress_samples": s,
                         "failure_samples": s, "collapse_samples": s, "early_accuracy": s})
    return runs


def test_claims_report_every_batch_and_do_not_depend_on_the_order_of_the_entries():
    idx = bootstrap_indices(5)
    a = clipping.claims(_runs((64, 256, 1024)), (64, 256, 1024), idx)
    b = clipping.claims(_runs((1024, 64, 256)), (1024, 64, 256), idx)
    assert a == b
    assert [k for k in a["a_failure_delay"]] == ["64", "256", "1024"]
    assert a["a_failure_delay"]["64"]["median"] == pytest.approx(2.0)
    assert a["a_failure_delay"]["256"]["median"] == pytest.approx(3.0)
    assert a["a_more_at_larger_batch"]["median"] == pytest.approx(1.5)  # 3 / 2
    assert a["b_progress_gap"]["none"] == pytest.approx(1024 / 64)
