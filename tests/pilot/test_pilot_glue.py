"""The pilot plan's glue, in the settings where it shows: rows in any order, a fixed-LR control
at an on-rule batch, the bands of two plausible forms, repeated batches, step times that differ
between batches, and smoothing of unevenly logged, curved metrics (each value by hand)."""
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from tests.helpers import assert_close, examples
from twoclock.pilot import fit as pf, logs as pl, plan as pilot
from twoclock.pilot.plan import PilotRuns

B_R = np.repeat([64.0, 128, 256, 512], 2)


def _truth(form, B, n_min, b_crit, p=0.5):
    a = 1.0 - p if form == "saturation" else 1.0
    return n_min * (1 + (1.2 ** (1 / a) - 1) * np.asarray(B, float) / b_crit) ** a


def _runs(B, lr, prog, fail, spu, order=None):
    o = np.arange(len(B)) if order is None else np.asarray(order)
    arr = lambda v: np.asarray(v, float)[o]
    return PilotRuns(arr(B), arr(lr), arr(prog), arr(fail), np.full(len(B), math.inf), arr(spu),
                     tuple(str(i) for i in o), source="test")


def _pilots(order=None, control=False):
    """Eight on-rule runs (lr = 1e-3 sqrt(B / 64)) with a 5% seed spread, failing earlier at
    larger batches, step times 10 + 0.01 B s; optionally a fixed-LR control at B = 128."""
    B, lr = list(B_R), list(1e-3 * np.sqrt(B_R / 64))
    prog = list(_truth("saturation", B_R, 2000.0, 300.0) * np.tile([0.95, 1.05], 4))
    fail = list(40000.0 * (B_R / 64) ** -1.5 * np.tile([1.03, 0.97], 4))
    spu = list(10.0 + 0.01 * B_R)
    if control:
        B, lr, prog, fail, spu = B + [128.0], lr + [1e-3], prog + [50000.0], fail + [1e6], \
            spu + [11.28]
    return _runs(B, lr, prog, fail, spu, order)


def _close_tree(a, b, where=""):
    """Equal structure; numbers equal to 1e-9 relative (sums in another order round apart)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for k in a:
            _close_tree(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close_tree(x, y, f"{where}/{i}")
    elif isinstance(a, float) and isinstance(b, float) and math.isfinite(a):
        assert_close(b, a, rtol=1e-9, atol=1e-12, what=where)
    else:
        assert a == b, (where, a, b)


@settings(max_examples=examples(5))  # a plan is ~0.1 s
@given(st.permutations(range(8)))
def test_the_plan_does_not_depend_on_the_order_of_the_rows(order):
    want = pilot.plan(_pilots(), predict=[1024.0])
    got = pilot.plan(_pilots(order), predict=[1024.0])
    assert want.fit.rule.b0 == 64.0 and want.fit.rule.p == 0.5
    assert_close(want.fit.rule.lr0, 1e-3, rtol=1e-9, atol=0, what="lr0")
    want, got = want.to_json(), got.to_json()
    for k in ("predictions", "critical_batch", "failure_exponent", "recommendation", "fit",
              "curves", "estimates"):
        _close_tree(want[k], got[k], k)


def test_hours_are_samples_over_the_batch_times_seconds_per_update():
    out = pilot.plan(_pilots(), predict=[128.0, 1024.0])
    for p in out.predictions:
        s = 10.0 + 0.01 * p.batch if p.batch == 128.0 else p.seconds_per_update
        assert_close(p.seconds_per_update, s, rtol=1e-12, atol=0, what="measured step time")
        assert_close(p.hours_to_target["median"],
                     p.progress_samples["median"] / p.batch * s / 3600, rtol=1e-12,
                     atol=0, what=f"hours at {p.batch}")
    # a whole-step roofline through 10 + 0.01 B grows with B where nothing was measured
    assert out.predictions[1].seconds_per_update > 10.0 + 0.01 * 512


def test_a_fixed_lr_control_stays_out_of_the_estimates():
    """The control at B = 128 (lr 1e-3, off the sqrt rule) took 50000 samples; the estimate at
    128 is the on-rule runs' median, by hand the mean of their two values."""
    out = pilot.plan(_pilots(control=True))
    assert out.fit.rule.off_rule_runs == 1
    est = {e.batch: e for e in out.estimates}
    on = _truth("saturation", np.array([128.0]), 2000.0, 300.0)[0]
    assert_close(est[128.0].progress, on, rtol=1e-12, atol=0, what="on-rule median")
    assert est[128.0].source == "runs"


def test_the_envelope_spans_both_plausible_forms():
    B = np.array([64.0, 128, 256, 512, 1024])
    N = _truth("saturation", B, 2000.0, 300.0) * np.array([1.1, 0.9, 1.05, 0.95, 1.0])
    sat, cur = pf.fit_progress(B, N, "saturation", 0.5), pf.fit_progress(B, N, "curvature", 0.5)
    at = [32.0, 300.0, 4096.0]
    env = pf.envelope(sat, [sat, cur], at, 0.9)
    for e, a, b in zip(env, pf.band(sat, at, 0.9), pf.band(cur, at, 0.9)):
        assert e["median"] == a["median"]
        assert e["ci"] == [min(a["ci"][0], b["ci"][0]), max(a["ci"][1], b["ci"][1])]
    assert any(a["ci"][0] != b["ci"][0] for a, b in zip(pf.band(sat, at, 0.9),
                                                        pf.band(cur, at, 0.9)))


def test_step_times_at_two_batches_keep_the_default_knee():
    # three measurements but two distinct batches: the knee is not identified
    m = pf.fit_step_times(np.array([64.0, 64.0, 256.0]), np.array([10.0, 10.2, 14.0]))
    assert m.knee == 3.74 and m.train_per_sample == 0.0


def test_ema_on_unevenly_logged_points_by_hand():
    """y_i = y_{i-1} + (1 - exp(-(s_i - s_{i-1}) / T)) (v_i - y_{i-1}): each interval its own
    weight (logged at 0, 1, 3, 6 samples, T = 2)."""
    s, v = [0.0, 1.0, 3.0, 6.0], [0.0, 1.0, 1.0, 4.0]
    y = [0.0]
    for i in (1, 2, 3):
        y.append(y[-1] + (1 - math.exp(-(s[i] - s[i - 1]) / 2)) * (v[i] - y[-1]))
    assert_close(pl.smooth(s, v, ("ema", 2.0)), y, rtol=1e-12, atol=0, what="EMA")


def test_window_includes_the_points_on_both_edges_by_hand():
    """A window of width 2 at s = 2 holds the points at 1, 2 and 3 (both edges inclusive);
    on v = s^2 its mean is (1 + 4 + 9) / 3, not the line's 4."""
    s = [0.0, 1.0, 2.0, 3.0, 4.0]
    v = [x * x for x in s]
    want = [(0 + 1) / 2, (0 + 1 + 4) / 3, (1 + 4 + 9) / 3, (4 + 9 + 16) / 3, (9 + 16) / 2]
    assert_close(pl.smooth(s, v, ("window", 2.0)), want, rtol=1e-12, atol=0, what="window")
