"""The bandit regimes study's printout on a hand-made case: a case swept at two lr0s (the
emergent drift's, whose lr exponent needs both) prints one table block per lr0, each labelled
with its lr0 (the second block had no label)."""
from twoclock.studies import bandit_regimes


def _s(med):
    return {"median": med, "ci": [med, med], "reached": 4, "seeds": 4}


def _run(batch, lr0):
    lr = lr0 * (batch / 8) ** 0.5
    return {"batch": batch, "lr0": lr0, "lr": lr, "progress_samples": _s(1000.0 * batch / 64),
            "failure_samples": _s(5000.0), "progress_updates": _s(1000.0 / 64),
            "drift_diagnostics": {"restoring_drift": 0.1, "adam_rms_drift": 0.2,
                                  "move_drift": 0.3}}


def test_each_lr0_block_is_labelled_with_its_lr0():
    case = {"seconds": 1.0, "failure_slope": 0.0, "unit": "responses",
            "config": {"sweep": {"budget": 40000}},
            "runs": [_run(b, lr0) for lr0 in (0.04, 0.02) for b in (128, 64)]}
    lines = bandit_regimes.report({"cases": {"emergent drift": case}}).splitlines()
    first, second = lines.index("lr0 = 0.02:"), lines.index("lr0 = 0.04:")
    # each label right above its block's rows, smallest batch first: lr(B) = lr0 sqrt(B / 8)
    assert lines[first + 1].split()[:2] == ["64", "0.0566"]
    assert lines[first + 2].split()[:2] == ["128", "0.08"]
    assert lines[second + 1].split()[:2] == ["64", "0.113"]
    assert lines[second + 2].split()[:2] == ["128", "0.16"]
    assert first < second


def test_one_lr0_needs_no_label():
    case = {"seconds": 1.0, "failure_slope": 0.0, "unit": "responses",
            "config": {"sweep": {"budget": 40000}}, "runs": [_run(b, 0.02) for b in (64, 128)]}
    text = bandit_regimes.report({"cases": {"injected drift": case}})
    assert "lr0 =" not in text and "    64    0.0566" in text
