"""The floor-aware Adam form (twoclock/pilot/adam.py: floor_scale, floor_at, floor_levels) and
its pre-registered check (tools/adam_floor.py): hand-computed asymptotes and levels, a synthetic
family whose clocks the shifted levels give exactly, and the committed files' bookkeeping."""
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from tests.helpers import load_script, preregistered
from twoclock.pilot import adam

tool = load_script("tools/adam_floor.py")


@given(phi=st.floats(1e-3, 10.0), opt=st.floats(-1.0, 1.0), sign=st.sampled_from([1.0, -1.0]))
@example(phi=1e-3, opt=0.0, sign=1.0)
@example(phi=10.0, opt=1.0, sign=-1.0)  # a ceiling below a score's maximum
def test_floor_scale_recovers_phi_from_unequal_batches_lrs_and_updates(phi, opt, sign):
    # by hand: a_r = opt + s phi lr_r / sqrt(B_r / K_r); the runs' batches, lrs and K all differ
    # (a formula in B instead of m = B / K, or in lr^2, or without the optimum, misses)
    B, lr, K = np.array([8.0, 96.0, 32.0]), np.array([0.01, 0.003, 0.02]), np.array([1., 3., 2.])
    a = opt + sign * phi * lr / np.sqrt(B / K)
    got = adam.floor_scale(a, B, lr, K, optimum=opt)
    assert math.isclose(got, sign * phi, rel_tol=1e-9)
    assert np.allclose(adam.floor_at(got, B, lr, K, optimum=opt), a, rtol=1e-9, atol=1e-12)


def test_floor_scale_is_the_geometric_mean_and_refuses_plateaus_on_both_sides():
    # two runs off the 1/sqrt(m) law by x2 and x0.5: phi is their geometric mean, 1 (by hand)
    assert math.isclose(adam.floor_scale([2 * 0.1 / 2, 0.5 * 0.1 / 4], [4, 16], [0.1, 0.1]),
                        1.0, rel_tol=1e-12)
    with pytest.raises(ValueError, match="asymptote"):
        adam.floor_scale([0.1, -0.1], [8, 16], [0.01, 0.01])


def test_floor_levels_by_hand():
    # floors 0.3, 0.2 and a predicted 0.1; target 0.5 sits 0.4 above it: levels 0.7 and 0.6
    assert np.allclose(adam.floor_levels(0.5, [0.3, 0.2], 0.1), [0.7, 0.6])
    # a ceiling (a score rising to 0.8 at the predicted batch, optimum 1): target 0.6 sits 0.2
    # below it, so the pilots' ceilings 0.7, 0.75 give 0.5 and 0.55
    assert np.allclose(adam.floor_levels(0.6, [0.7, 0.75], 0.8, optimum=1.0), [0.5, 0.55])
    # a target at or past the predicted asymptote is never reached: None, on either side
    assert adam.floor_levels(0.1, [0.3], 0.1) is None
    assert adam.floor_levels(0.05, [0.3], 0.1) is None
    assert adam.floor_levels(0.85, [0.7], 0.8, optimum=1.0) is None


def test_the_shifted_levels_give_the_held_out_clock_exactly_where_the_plain_form_misses():
    # a synthetic family the floor-aware reading holds exactly: L_b(t) = F_b + D exp(-t / s(b)),
    # F_b = phi / sqrt(b), s(b) = A sqrt(b (b + B_n)) (samples). By hand the raw crossing of T is
    # s(b) log(D / (T - F_b)); a pilot read at F_b + (T - F*) takes s(b) log(D / (T - F*)), the
    # form's own shape times one constant, so the fit gives the held-out clock exactly. The plain
    # form, fitted to the raw crossings (whose log factor shrinks with b), misses.
    phi, D, A, b_n, T, lr0 = 0.15, 1.0, 50.0, 30.0, 0.1, 0.01
    s = lambda b: A * math.sqrt(b * (b + b_n))
    floors = np.array([phi / math.sqrt(b) for b in tool.PILOTS])
    crossing = lambda b, level: s(b) * math.log(D / (level - phi / math.sqrt(b)))
    out = tool.plan(crossing, floors, lr0, T)
    truth = [crossing(b, T) for b in tool.PREDICT]
    assert math.isclose(out["phi"] * lr0, phi, rel_tol=1e-12)  # floors in lr units: phi / lr0
    assert np.allclose(out["aware"], truth, rtol=1e-6)
    assert all(abs(p / t - 1) > 0.01 for p, t in zip(out["plain"], truth))
    assert out["linear"] == pytest.approx([crossing(32, T) * b / 32 for b in tool.PREDICT])


def test_a_head_start_taken_out_and_put_back_gives_the_held_out_clock_exactly():
    # momentum's head start (tests/pilot/test_adam_momentum.py): runs that save H updates at
    # every batch, N(b) = b (A sqrt(1 + B_n / b) - H) samples (by hand: the form's updates
    # less H). With head=H the pilots' clocks plus H b are the form itself, fitted exactly, and
    # the prediction less H b is the held-out clock; without it the form predicts too fast, as
    # at the quadratic's default cell, and so does half the head start. A = 100 updates at
    # large B, H 12.5 of them (the default cell's 105 and 12.07 to 12.80). No floor: plateaus
    # of 1e-12, so the floor-aware plan is the plain one.
    A, b_n, H, T, lr0 = 100.0, 30.0, 12.5, 0.1, 0.01
    clock = lambda b, level: b * (A * math.sqrt(1 + b_n / b) - H)
    floors = np.zeros(len(tool.PILOTS))
    truth = [clock(b, T) for b in tool.PREDICT]
    out = tool.plan(clock, floors + 1e-12, lr0, T, head=H)
    assert np.allclose(out["plain"], truth, rtol=1e-6)
    assert np.allclose(out["aware"], truth, rtol=1e-4)
    for wrong in (0.0, H / 2):
        miss = tool.plan(clock, floors + 1e-12, lr0, T, head=wrong)["plain"]
        assert all(p / t - 1 < -0.004 for p, t in zip(miss, truth)), wrong


def test_a_target_below_the_predicted_floor_has_no_aware_clock():
    # floors phi / sqrt(b) with phi 0.9: at B 128 the floor is 0.0795, above the target 0.07
    floors = np.array([0.9 / math.sqrt(b) for b in tool.PILOTS])
    out = tool.plan(lambda b, lv: 100.0 * b, floors, 0.01, 0.07)
    assert math.isnan(out["aware"][0])


def test_the_committed_predictions_are_the_tools_cells():
    pred = preregistered("adam_floor_predictions.json")
    assert [{k: c[k] for k in ("target", "lr0", "model")} for c in pred["cells"]] == tool.CELLS
    assert pred["rule"] == tool.RULE
    for c in pred["cells"]:  # each error is its clock over mean field's truth, by hand
        p = c["predicted"]
        for k in ("plain", "aware", "linear"):
            assert np.allclose(p["error"][k], np.array(p[k]) / np.array(p["truth"]) - 1)


def test_the_scores_bookkeeping_by_hand():
    pred = preregistered("adam_floor_predictions.json")
    got = preregistered("adam_floor_measured.json")
    assert len(got["cells"]) == len(pred["cells"]) == got["n"] == 8
    d = []
    for c, r in zip(pred["cells"], got["cells"]):
        e, (lo, hi) = r["error"], r["contrast_ci"]
        assert r["predicted_aware"] == c["predicted"]["error"]["aware"][-1]
        assert math.isclose(r["contrast"], abs(e["aware"][-1]) - abs(e["plain"][-1]),
                            rel_tol=1e-12)
        assert r["prediction_holds"] == (r["aware_ci"][0] <= r["predicted_aware"]
                                         <= r["aware_ci"][1])
        assert r["goal"] == {k: abs(v[-1]) <= 0.15 for k, v in e.items()}
        assert lo < hi
        d.append(r["contrast"])
    assert got["aware_beats_plain"] == sum(r["contrast_ci"][1] < 0 for r in got["cells"])
    d = np.array(d)
    t975_df7 = 2.364624  # Student t, 7 degrees of freedom (tables)
    half = t975_df7 * d.std(ddof=1) / math.sqrt(d.size)
    assert np.allclose([got["contrast"]["mean"], *got["contrast"]["ci"]],
                       [d.mean(), d.mean() - half, d.mean() + half], rtol=1e-6)
