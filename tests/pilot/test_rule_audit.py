"""Self-audit tests of the lr rule's inference (twoclock.pilot.rule; docs/testing.md, "Self-audit"): the rule lr = lr0 (B / b0)^p by hand."""
import numpy as np
import pytest

from twoclock.pilot.rule import infer_rule


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0])
def test_the_rule_is_read_at_the_smallest_batch_by_hand(p):
    # six runs on lr = 0.003 (B / 16)^p at B 16 ... 128 and a control at lr 0.05 (on none of
    # the three rules: 0.05 is not 0.003 (32 / 16)^p for p in {0, 1/2, 1})
    B = np.array([16.0, 32.0, 64.0, 128.0, 16.0, 64.0, 32.0])
    lr = 0.003 * (B / 16.0) ** p
    lr[-1] = 0.05
    r = infer_rule(B, lr)
    assert r["p"] == pytest.approx(p, abs=1e-9)
    assert r["b0"] == 16.0
    assert r["lr0"] == pytest.approx(0.003, rel=1e-9)  # the lr at b0, not at B = 1
    assert r["on_rule"].tolist() == [True] * 6 + [False]
