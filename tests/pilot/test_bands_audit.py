"""Self-audit tests of the bands' reasons (twoclock.pilot.bands; docs/testing.md, "Self-audit"): the pilot farthest from the fitted curve, on either side of it.
Expected values by hand."""
from twoclock.pilot import bands


def test_the_pilot_farthest_below_the_curve_is_named():
    # |log(700 / 1000)| = 0.357 > |log(1100 / 1000)| = 0.095: B 128 is the farthest, -30%
    est = [{"batch": 64.0, "progress": 1100.0, "progress_fit": 1000.0},
           {"batch": 128.0, "progress": 700.0, "progress_fit": 1000.0},
           {"batch": 256.0, "progress": 2000.0, "progress_fit": 2000.0}]
    rs = bands.reasons(256.0, {"batch": 100.0, "ci": [90.0, 110.0]}, est, {64.0, 128.0, 256.0})
    assert rs[-1] == "pilot B 128's clock (700 samples) lies -30% off the fitted curve"
