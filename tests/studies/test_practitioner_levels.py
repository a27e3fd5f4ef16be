"""tools/practitioner_levels.py (the whole curve on the practitioner's sweep): the levels by
hand, each run's first value from interleaved rows, both plans against a synthetic family whose
clock at every level is known by hand, and the pooled bookkeeping by hand."""
import math

import numpy as np
import pytest

from tests.helpers import load_script
from twoclock.pilot.plan import PilotError

tool = load_script("tools/practitioner_levels.py")

# L_b(t) = D exp(-t / s(b)), s(b) = A sqrt(b (b + B_N)) samples at a fixed lr: by hand the
# crossing of any level x is s(b) log(D / x), one B_n at every level (Adam's form, exactly)
D, A, B_N, T = 1.0, 50.0, 30.0, 0.1
s = lambda b: A * math.sqrt(b * (b + B_N))


def _csv(path, batches=(8, 16, 32), points=400, span=6.0):
    with open(path, "w", encoding="utf-8") as f:
        f.write("run,batch,lr,samples,loss\n")
        for i in range(points):  # rows interleaved across runs, as a merged log would be
            for b in batches:
                t = span * s(b) * (i + 1) / points  # no step-0 evaluation
                f.write(f"r{b},{b},0.01,{t!r},{D * math.exp(-t / s(b))!r}\n")
    return str(path)


def test_the_levels_lie_a_fraction_of_the_way_back_to_the_median_start():
    # by hand: median of (0.3, 0.5, 0.4) is 0.4; 0.7 + 0.15 (0.4 - 0.7) = 0.655, + 0.3 (...) =
    # 0.61; a falling metric: median 0.9, 0.05 + 0.15 x 0.85 = 0.1775, 0.05 + 0.3 x 0.85 = 0.305
    assert tool.level_texts("acc>=0.7", [0.3, 0.5, 0.4], (0.15, 0.3)) == \
        "acc>=0.7 acc>=0.655 acc>=0.61"
    assert tool.level_texts("loss<=0.05", [1.0, 0.8, 0.9], (0.15, 0.3)) == \
        "loss<=0.05 loss<=0.1775 loss<=0.305"


@pytest.mark.parametrize("target, first", [
    ("loss<=0.37", [0.3, 0.35, 0.5]),   # median 0.35: already past the target
    ("loss<=0.35", [0.3, 0.35, 0.5]),   # median at the target: every level would be it
    ("acc>=0.6", [0.7, 0.65, 0.2]),     # a rising metric, median 0.65 past 0.6
])
def test_no_levels_where_the_median_start_already_meets_the_target(target, first):
    with pytest.raises(PilotError, match=r"median first logged value .* already meets the "
                                         r"target: no levels lie between"):
        tool.level_texts(target, first, (0.15, 0.3))


def test_the_joint_fit_is_refused_and_the_target_alone_kept_where_no_levels_lie(tmp_path):
    # B 16 and 32 first logged at 3 s(b), past T (exp(-3) D < T): the median start is past
    # the target, while B 8, logged from 0.05 s(8), crosses it between points
    with open(tmp_path / "logs.csv", "w", encoding="utf-8") as f:
        f.write("run,batch,lr,samples,loss\n")
        for b, k0 in ((8, 1), (16, 60), (32, 60)):
            for k in range(k0, 121):
                t = 0.05 * k * s(b)
                f.write(f"r{b},{b},0.01,{t!r},{D * math.exp(-t / s(b))!r}\n")
    path = str(tmp_path / "logs.csv")
    assert float(np.median(tool.first_values(path, "loss"))) < T
    alone, joint = tool.plan_both(path, f"loss<={T:g}", (0.15, 0.3), [64])
    assert isinstance(joint, str) and "no levels lie between" in joint, joint
    assert alone[64]["median"] > 0  # the target's own plan stands


def test_each_runs_first_value_is_read_from_interleaved_rows(tmp_path):
    path = _csv(tmp_path / "logs.csv", points=3)
    want = [D * math.exp(-2.0) for _ in (8, 16, 32)]  # t = span s(b) / points = 2 s(b)
    assert np.allclose(tool.first_values(path, "loss"), want, rtol=1e-12)


def test_alone_and_joint_predict_the_hand_clock_of_a_one_b_n_family(tmp_path):
    path = _csv(tmp_path / "logs.csv")
    alone, joint = tool.plan_both(path, f"loss<={T:g}", (0.15, 0.3), [64, 256])
    for b in (64, 256):
        want = s(b) * math.log(D / T)
        assert alone[b]["median"] == pytest.approx(want, rel=2e-3), b
        assert joint[b]["median"] == pytest.approx(want, rel=2e-3), b


def test_a_refused_target_is_kept_as_its_line(tmp_path):
    path = _csv(tmp_path / "logs.csv", span=1.0)  # the runs end at D / e: never reach T
    alone, joint = tool.plan_both(path, f"loss<={T:g}", (0.15, 0.3), [64])
    assert isinstance(alone, str) and isinstance(joint, str) and "loss<=0.1" in alone


def test_the_pooled_rows_by_hand():
    row = lambda m, t, e, c, w: {"model": m, "rule": "fixed", "times_largest_pilot": t,
                                 "measured": 1.0, "rel_error": e, "covered": c, "width": w,
                                 "refused": None}
    alone = [row("q", 2, 0.1, True, 1.5), row("q", 8, -0.3, False, 3.0),
             row("q", 8, 0.2, True, 2.0), {**row("p", 8, None, None, None), "refused": "no"}]
    joint = [row("q", 2, 0.0, True, 1.0), row("q", 8, -0.1, True, 2.0),
             row("q", 8, 0.1, True, 4.0), {**row("p", 8, None, None, None), "refused": "no"}]
    never = {**row("q", 8, None, None, None), "measured": None, "ci": [1.0, 9.0]}
    alone, joint = alone + [never], joint + [never]  # a run that never arrived: not scored
    q, p, everything = tool.pooled(alone, joint)
    # by hand: q alone covers 2 of 3, widths 1.5, 3, 2 (median 2), 8x |errors| 0.3, 0.2 (0.25)
    assert q["alone"] == {"scored": 3, "refused": 0, "coverage_95": pytest.approx(2 / 3),
                          "median_width": 2.0, "median_abs_error_8x": pytest.approx(0.25)}
    assert q["joint"]["coverage_95"] == 1.0 and q["joint"]["median_width"] == 2.0
    assert q["joint"]["median_abs_error_8x"] == pytest.approx(0.1)
    assert p["alone"]["refused"] == 1 and p["alone"]["scored"] == 0
    assert everything["alone"]["scored"] == 3 and everything["alone"]["refused"] == 1


def test_the_six_claims_are_scored_as_written():
    """Each pre-registered claim flips when its own number crosses its bound, and only then."""
    side = lambda w, e: {"median_width": w, "median_abs_error_8x": e, "coverage_95": 0.95}
    pool = [{"model": "quadratic", "alone": side(1.6, 0.09), "joint": side(1.4, 0.08)},
            {"model": "bandit", "alone": side(1.8, 0.21), "joint": side(1.7, 0.21)},
            {"model": "policy", "alone": side(1.6, 0.18), "joint": side(1.4, 0.16)},
            {"model": "all", "alone": side(1.7, 0.13), "joint": {**side(1.5, 0.12),
                                                                 "coverage_95": 0.90}}]
    con = [{"model": m, "rule": "both", "ci": ci} for m, ci in
           (("quadratic", [-0.03, -0.001]), ("bandit", [-0.004, 0.0]),
            ("policy", [0.0, 0.009]), ("all", [-0.01, -0.001]))]
    assert tool.score(pool, con) == [(i, True) for i in range(1, 7)]  # bounds inclusive
    flip = {1: lambda: con[0].update(ci=[-0.03, 0.0]), 2: lambda: con[1].update(ci=[0.0001, 1]),
            3: lambda: con[2].update(ci=[-1, -0.0001]),
            4: lambda: pool[1]["joint"].update(median_width=1.8),
            5: lambda: pool[3]["joint"].update(coverage_95=0.8999),
            6: lambda: pool[2]["joint"].update(median_abs_error_8x=0.15)}
    for i, change in flip.items():
        keep = [dict(r, **{k: dict(r[k]) for k in ("alone", "joint")}) for r in pool], \
            [dict(r) for r in con]
        change()
        assert tool.score(pool, con) == [(j, j != i) for j in range(1, 7)], i
        pool[:], con[:] = keep


def test_the_last_slope_baseline_by_hand(tmp_path):
    """The family above: clocks at 16 and 32 are s(b) log(D / T); by hand the baseline at B is
    N32 (B / 32)^e, e = log(N32 / N16) / log 2, which a knee bending past the pilots misses."""
    path = _csv(tmp_path / "logs.csv")
    n = {b: s(b) * math.log(D / T) for b in (16, 32)}
    e = math.log(n[32] / n[16]) / math.log(2.0)
    got = tool.last_slope(path, f"loss<={T:g}", [64, 256])
    for b in (64, 256):
        assert got[b] == pytest.approx(n[32] * (b / 32) ** e, rel=2e-3), b
    assert got[256] / (s(256) * math.log(D / T)) - 1 < -0.02  # it misses the bend at 8x


def test_the_joint_fit_with_the_knees_sharpness_keeps_the_hand_clock(tmp_path):
    """One B_n at every level, Adam's own knee: fitting the sharpness too finds the same clock."""
    path = _csv(tmp_path / "logs.csv")
    _, joint = tool.plan_both(path, f"loss<={T:g}", (0.15, 0.3), [64, 256], sharp=True)
    for b in (64, 256):
        assert joint[b]["median"] == pytest.approx(s(b) * math.log(D / T), rel=2e-3), b


def test_the_knee_claims_are_scored_as_written():
    """Each of the nine pre-registered claims of the knee's sharpness flips when its own number
    crosses its bound, and only then (bounds as written: at most 15%, at least 90%, at most x2,
    the CI below 0, strictly below the baseline)."""
    side = lambda e2, e8, c, w: {"scored": 64, "median_abs_error_2x": e2,
                                 "median_abs_error_8x": e8, "coverage_95": c, "median_width": w}
    stats = {"quadratic": {"joint": side(0.06, 0.15, 0.9, 2.0), "last_slope_8x": 0.2},
             "bandit": {"joint": side(0.1, 0.1501, 0.9, 1.6), "last_slope_8x": 0.3},
             "policy": {"joint": side(0.15, 0.15, 0.95, 1.5), "last_slope_8x": 0.2}}
    con = [{"model": m, "rule": "both", "ci": ci} for m, ci in
           (("quadratic", [-0.1, 0.1]), ("bandit", [-0.01, 0.0]), ("policy", [-0.05, -1e-6]),
            ("all", [-1, 1]))]
    assert tool.score_knee(stats, con) == [(i, True) for i in range(1, 10)]
    pol, qua, ban = (stats[m]["joint"] for m in ("policy", "quadratic", "bandit"))
    flip = {2: lambda: con[2].update(ci=[-0.05, 0.0]),
            3: lambda: qua.update(median_abs_error_8x=0.1501),
            4: lambda: con[1].update(ci=[-0.01, -1e-6]),
            5: lambda: ban.update(median_abs_error_8x=0.15),
            6: lambda: qua.update(coverage_95=0.8999),
            7: lambda: ban.update(median_width=2.0001),
            8: lambda: stats["quadratic"].update(last_slope_8x=0.15)}
    for i, change in flip.items():
        keep = {m: {"joint": dict(v["joint"]), "last_slope_8x": v["last_slope_8x"]}
                for m, v in stats.items()}, [dict(r) for r in con]
        change()
        assert tool.score_knee(stats, con) == [(j, j != i) for j in range(1, 10)], i
        for m in stats:
            stats[m]["joint"].update(keep[0][m]["joint"])
            stats[m]["last_slope_8x"] = keep[0][m]["last_slope_8x"]
        con[:] = keep[1]
    # the policy's 8x error beyond 15% fails claim 1 and the goal (9), its coverage claim 6
    # (every model's) and the goal, its width claim 7 and the goal; its 2x error or its scored
    # count fails only the goal
    for k, v, fails in (("median_abs_error_8x", 0.1501, [1, 9]),
                        ("coverage_95", 0.8999, [6, 9]), ("median_width", 2.0001, [7, 9]),
                        ("median_abs_error_2x", 0.1501, [9]), ("scored", 39, [9])):
        old = pol[k]
        pol[k] = v
        assert [i for i, h in tool.score_knee(stats, con) if not h] == fails, k
        pol[k] = old
