"""Momentum's head start read by each run's length (tools/momentum_head.py): the head start's
inverse, a synthetic family the method holds exactly where the plain form misses, and the
committed files' bookkeeping."""
import math

import numpy as np
import pytest

from tests.helpers import load_script, preregistered

tool = load_script("tools/momentum_head.py")


@pytest.mark.parametrize("beta1,target", [(0.9, 0.05), (0.8, 0.1)])
def test_taking_momentum_out_and_putting_it_back_are_inverses(beta1, target):
    u = np.array([3.0, 15.3, 62.3, 216.6, 4000.0])  # updates with momentum, unsorted scales
    u0 = tool.without_momentum(u, beta1, target)
    np.testing.assert_allclose(tool.with_momentum(u0, beta1, target), u, rtol=1e-9)
    assert (u0 > u).all()
    # a long run saves kappa C by hand (beta1 / (1 - beta1) x (1/2) ln(1 / target)) to first
    # order; a short one saves less (Adam's bias correction)
    kappa_c = beta1 / (1 - beta1) * 0.5 * math.log(1 / target)
    assert abs(u0[-1] - u[-1] - kappa_c) < 0.05
    assert u0[1] - u[1] < u0[3] - u[3] < kappa_c


def test_the_run_length_head_start_gives_the_held_out_clock_exactly_where_the_plain_form_misses():
    # runs whose updates without momentum follow the Adam form under the sqrt rule,
    # u0(b) = A sqrt(1 + B_n / b) / lr(b) x lr0 (N0 = b u0 = A' sqrt(b (b + B_n)) / lr), and
    # with momentum take u0 - H(u0) (the exact one-coordinate saving): the 'run' method takes
    # H out of each pilot and puts it back, so it predicts B 128 and 256 exactly; the plain form
    # fitted to the clocks as they are does not (a run of some 15 updates loses most of its
    # head start, the default cell's miss); 'held' is the largest pilot's clock
    A, b_n, lr0, beta1, target, S = 150.0, 30.0, 0.01, 0.9, 0.05, 32
    lr = lambda b: lr0 * math.sqrt(b / 8)
    u0 = lambda b: A * math.sqrt(1 + b_n / b) * lr0 / lr(b)
    clock = lambda b: b * float(tool.with_momentum(u0(b), beta1, target))
    cell = {"target": target, "lr0": lr0, "beta1": beta1}
    m = tool.methods({b: np.full(S, clock(b)) for b in tool.PILOTS},
                     {b: lr(b) for b in tool.PILOTS}, cell)
    truth = [clock(b) for b in tool.PREDICT]
    np.testing.assert_allclose(m["run"], truth, rtol=1e-4)
    assert all(abs(p / t - 1) > 0.01 for p, t in zip(m["plain"], truth))
    assert m["held"] == [clock(32)] * 2
    s = tool.score_of(m, truth)  # by hand: the error at 8x and the exponent 128 -> 256
    assert s["error"]["held"] == pytest.approx(clock(32) / truth[-1] - 1, rel=1e-12)
    assert s["simulated"] == pytest.approx(math.log2(truth[1] / truth[0]), rel=1e-12)
    assert abs(s["gap"]["run"]) < 1e-4 and abs(s["gap"]["plain"]) > 0.005
    assert "held" not in s["gap"]


def test_the_committed_predictions_are_the_tools_cells():
    pred = preregistered("momentum_head_predictions.json")
    assert pred["rule"] == tool.RULE
    assert [{k: c[k] for k in ("target", "lr0", "beta1")} for c in pred["cells"]] == tool.CELLS
    for c in pred["cells"]:
        p = c["predicted"]
        assert set(p["error"]) == {"plain", "run", "held"} and set(p["gap"]) == {"plain", "run"}


def test_the_scores_bookkeeping_by_hand():
    pred = preregistered("momentum_head_predictions.json")
    got = preregistered("momentum_head_measured.json")
    assert got["n"] == len(got["cells"]) == len(pred["cells"]) == 5
    holds = numbers = 0
    for c, r in zip(pred["cells"], got["cells"]):
        assert {k: r[k] for k in ("target", "lr0", "beta1")} == tool.CELLS[got["cells"].index(r)]
        for part in ("error", "gap"):
            assert r["run_beats_plain"][part] == (r["contrast"][part][1] < 0)
            for k, (lo, hi) in r["ci"][part].items():
                assert lo < hi
                assert r["meanfield_holds"][f"{part} {k}"] == (lo <= c["predicted"][part][k]
                                                               <= hi)
                holds += r["meanfield_holds"][f"{part} {k}"]
                numbers += 1
    assert got["meanfield_holds"] == holds and got["meanfield_numbers"] == numbers == 25
    for part in ("error", "gap"):
        assert got["run_beats_plain"][part] == sum(r["run_beats_plain"][part]
                                                   for r in got["cells"])
