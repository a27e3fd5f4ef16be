"""`--smooth quad:N` (twoclock/pilot/clocks.py, `local_quadratic`): each logged point's value on
the least-squares quadratic through the N points centred on it. Against Savitzky and Golay's
weights worked by hand, numpy's polyfit at uneven spacing, a quadratic left as it is, a noisy
line's crossing worked by hand through the plan, and the flags' one-line refusals."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from twoclock.pilot import logs as pl
from twoclock.pilot.clocks import local_quadratic
from twoclock.pilot.plan import PilotError


def test_even_spacing_gives_savitzky_golays_five_point_weights_by_hand():
    # weights (-3, 12, 17, 12, -3) / 35 at the centre of 5 evenly spaced points
    v = np.array([0.0, 1.0, 0.0, 4.0, 2.0, 7.0, 3.0])
    got = local_quadratic(np.arange(7.0) * 800, v, 5)
    want = [0.0, 1.0,                                # the first two: no centred window, kept
            (-3 * 0 + 12 * 1 + 17 * 0 + 12 * 4 - 3 * 2) / 35,   # 54 / 35
            (-3 * 1 + 12 * 0 + 17 * 4 + 12 * 2 - 3 * 7) / 35,   # 68 / 35
            (-3 * 0 + 12 * 4 + 17 * 2 + 12 * 7 - 3 * 3) / 35,   # 157 / 35
            7.0, 3.0]                                # the last two, kept
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # independent noise keeps sum(w^2) = (9 + 144 + 289 + 144 + 9) / 35^2 = 17 / 35 of its
    # variance: the weights applied to a unit impulse are the weights themselves
    w = local_quadratic(np.arange(9.0), np.eye(9)[4], 5)[2:7]
    assert math.isclose(float(np.sum(w ** 2)), 17 / 35, rel_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.floats(0.5, 50.0), min_size=8, max_size=20),
       n=st.sampled_from([5, 7, 9]), seed=st.integers(0, 2**31 - 1))
@example(gaps=[1.0] * 8, n=5, seed=0)
@example(gaps=[1.0, 40.0, 0.5, 30.0, 2.0, 1.0, 50.0, 0.5], n=5, seed=1)
def test_uneven_spacing_is_the_windows_own_least_squares_quadratic(gaps, n, seed):
    s = 1000.0 + np.cumsum(gaps)
    v = np.random.default_rng(seed).normal(size=s.size)
    got = local_quadratic(s, v, n)
    h = n // 2
    if s.size < n:
        np.testing.assert_array_equal(got, v)
        return
    for i in range(s.size):
        if i < h or i >= s.size - h:
            assert got[i] == v[i]  # no centred window: kept as logged
            continue
        w = slice(i - h, i + h + 1)
        want = np.polyfit(s[w] - s[i], v[w], 2)[-1]  # the oracle: numpy's fit, at x = 0
        assert math.isclose(got[i], want, rel_tol=1e-7, abs_tol=1e-9), (i, got[i], want)


@settings(max_examples=40, deadline=None)
@given(a=st.floats(-5, 5), b=st.floats(-5, 5), c=st.floats(-5, 5),
       gaps=st.lists(st.floats(0.1, 10.0), min_size=5, max_size=15))
def test_a_quadratic_curve_is_left_as_it_is(a, b, c, gaps):
    s = np.cumsum(gaps)
    x = s / s[-1]
    v = a + b * x + c * x * x
    np.testing.assert_allclose(local_quadratic(s, v, 5), v, rtol=0, atol=1e-9)


def test_a_noisy_lines_crossing_by_hand_through_the_plan(tmp_path):
    """A line 0.1 per 100 samples with alternating noise +-0.02: at even spacing the 5-point
    weights turn the noise (-1)^i e into (-1)^i e (-3 - 12 + 17 - 12 - 3) / 35 = -13/35 of it.
    The target 0.52 is crossed between 500 and 600 samples: as logged between 0.48 and 0.62
    (528.57), smoothed between 0.5 + 0.26/35 and 0.6 - 0.26/35; the line itself at 520."""
    e, rows = 0.02, []
    for b in (8, 16, 32):  # one curve per batch, the same in samples
        for i in range(1, 11):
            rows.append(f"B{b},{b},0.01,{100 * i},{0.1 * i + e * (-1) ** i:.6f}")
    path = tmp_path / "l.csv"
    path.write_text("run,batch,lr,samples,acc\n" + "\n".join(rows) + "\n")
    lo, hi = 0.5 + 0.26 / 35, 0.6 - 0.26 / 35
    want = {"as logged": 500 + 100 * (0.52 - 0.48) / (0.62 - 0.48),
            "quad:5": 500 + 100 * (0.52 - lo) / (hi - lo)}
    for how, smoothing in (("as logged", None), ("quad:5", "quad:5")):
        out = pl.plan_logs(str(path), "acc>=0.52", [], smoothing=smoothing)
        got = [r["progress_samples"] for r in out["runs"]]
        np.testing.assert_allclose(got, [want[how]] * 3, rtol=1e-9, err_msg=how)
    assert abs(want["quad:5"] - 520) < abs(want["as logged"] - 520)  # 514.8 against 528.6
    assert out["logs"]["smoothing"] == {"kind": "quad", "samples": None, "points": 5}
    assert "after a local quadratic through 5 logged points" in pl.table(out)


@pytest.mark.parametrize("bad", ["quad:3", "quad:4", "quad:6", "quad:5.5", "quad:x", "quad:0",
                                 "quad:-5", "quad:inf", "quad"])
def test_a_bad_point_count_is_refused_in_one_line(bad):
    with pytest.raises(PilotError, match=r"^--smooth .*quad:N with N odd >= 5") as err:
        pl.parse_smooth(bad)
    assert "\n" not in str(err.value)


def test_odd_point_counts_are_read():
    assert pl.parse_smooth("quad:5") == ("quad", 5)
    assert pl.parse_smooth("quad:7.0") == ("quad", 7)


def test_the_practitioner_study_takes_it_and_refuses_it_elsewhere():
    from twoclock.studies.plan_calibration import Config
    assert Config(design="practitioner", smooth="quad:5").smooth == "quad:5"
    with pytest.raises(ValueError, match="--smooth must be given with --design practitioner"):
        Config(smooth="quad:5")
    with pytest.raises(ValueError, match="--smooth 'quad:4': expected"):
        Config(design="practitioner", smooth="quad:4")
