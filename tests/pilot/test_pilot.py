"""Pilot runs to a plan: known-answer fits, calibrated bands, safe recommendations, bad CSVs."""
import json
import math
import os

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from tests.helpers import assert_close, plan_main
from twoclock.pilot import article as pilot_article, fit as pf, plan as pilot, report as pilot_report
from twoclock.pilot.plan import PilotRuns
from twoclock.pilot.result import Estimate



def _truth(form, B, n_min, b_crit, p=0.5):
    a = pf.form_exponent(form, p)
    return n_min * (1 + (1.2 ** (1 / a) - 1) * np.asarray(B, float) / b_crit) ** a


def _runs(B, lr, prog, fail=None, budget=None, spu=None):
    n = len(B)
    full = lambda v, d: np.full(n, d) if v is None else np.asarray(v, float)
    return PilotRuns(np.asarray(B, float), np.asarray(lr, float), np.asarray(prog, float),
                     full(fail, math.inf), full(budget, math.inf), full(spu, math.nan),
                     ("",) * n, source="test")


def test_t_quantiles_match_tables():
    got = [pf.t_quantile(0.975, d) for d in (1, 2, 5, 10, 1000)]
    assert_close(got, [12.706, 4.303, 2.571, 2.228, 1.962], rtol=0, atol=2e-3, what="t_0.975")


@pytest.mark.parametrize("form", pf.FORMS)
def test_noiseless_runs_recover_the_form_and_critical_batch(form):
    B = np.array([64.0, 128, 256, 512, 1024, 2048])
    fit, _, sse, _ = pf.choose_progress(B, _truth(form, B, 5000.0, 300.0), p=0.5)
    assert fit.form == form and sse[form] < 1e-8
    assert_close(fit.critical(0.95)["batch"], 300.0, rtol=1e-3, atol=0, what="B_crit")
    assert_close(math.exp(fit.log_n_min), 5000.0, rtol=1e-3, atol=0, what="N_min")


def _wide_knee(B, n_min, b_crit, a, m):
    """N_min (1 + c (B / B_crit)^m)^(a/m) with c = 1.2^(m/a) - 1, written out by hand."""
    c = 1.2 ** (m / a) - 1
    return n_min * (1 + c * (np.asarray(B, float) / b_crit) ** m) ** (a / m)


@pytest.mark.parametrize("m", [0.25, 0.5, 1.0])
def test_the_sharpness_keeps_the_critical_batch_and_the_asymptote(m):
    """For every m: N(B_crit) = 1.2 N_min, and far past it the local exponent is a."""
    a = 0.5
    assert_close(pf._log_shape(np.array([300.0]), math.log(300.0), a, m)[0], math.log(1.2),
                 rtol=1e-12, atol=0, what="log N(B_crit) / N_min")
    far = np.array([3e40, 6e40])
    s = pf._log_shape(far, math.log(300.0), a, m)
    assert_close((s[1] - s[0]) / math.log(2), a, rtol=0, atol=1e-3, what="asymptotic exponent")
    B = np.array([10.0, 300.0, 5000.0])
    assert_close(np.exp(pf._log_shape(B, math.log(300.0), a, m)),
                 _wide_knee(B, 1.0, 300.0, a, m), rtol=1e-12, atol=0, what="the form by hand")


def test_a_wide_knee_is_recovered_and_extrapolated():
    """Runs on the saturation form with m = 1/2 (a knee twice as wide in log B): the mechanism
    is chosen on the two-parameter forms, m = 1/2 is recovered from 4 batches, and the
    prediction 8x past the pilots is the form's own value."""
    B = np.repeat([16.0, 32, 64, 128], 2)
    N = _wide_knee(B, 2000.0, 60.0, 0.5, 0.5)
    fit, plausible, _, why = pf.choose_progress(B, N, p=0.5)
    assert fit.form == "saturation" and fit.m == 0.5 and "m = 0.5" in why, why
    assert all(f.m == 0.5 for f in plausible if f.form == "saturation")
    assert fit.dof == B.size - 3
    assert_close(math.exp(fit.log_median([1024.0])[0]), _wide_knee(1024.0, 2000.0, 60.0, 0.5, 0.5),
                 rtol=1e-6, atol=0, what="N at 8x the largest pilot")
    # with two batches, or one run per batch (noise and a wider knee look alike), m is not
    # fitted: the two-parameter form with its n - 2 degrees of freedom
    two = pf.choose_progress(B[B <= 32], N[B <= 32], p=0.5)[0]
    assert two.m == 1.0 and two.dof == 2
    single = pf.choose_progress(B[::2], N[::2], p=0.5)[0]
    assert single.m == 1.0 and single.dof == 2


def test_the_knee_width_switch_gives_the_two_parameter_fit(monkeypatch):
    """fit.FIT_SHARPNESS = False (the ablation docs/plan.md reports) fits the same wide-knee runs
    with m = 1: the two-parameter least squares fit, which misses the m = 1/2 truth at 8x."""
    B = np.repeat([16.0, 32, 64, 128], 2)
    N = _wide_knee(B, 2000.0, 60.0, 0.5, 0.5)
    monkeypatch.setattr(pf, "FIT_SHARPNESS", False)
    off = pf.fit_progress(B, N, "saturation", 0.5, sharp=True)
    plain = pf._fit_progress(B, N, "saturation", 0.5, 1.0)
    assert off.m == 1.0 and off.dof == B.size - 2 and off.sse == plain.sse
    assert off.log_b_crit == plain.log_b_crit and off.log_n_min == plain.log_n_min
    truth = _wide_knee(1024.0, 2000.0, 60.0, 0.5, 0.5)
    assert math.exp(off.log_median([1024.0])[0]) / truth - 1 > 0.2  # +26% by hand
    monkeypatch.setattr(pf, "FIT_SHARPNESS", True)
    assert pf.fit_progress(B, N, "saturation", 0.5, sharp=True).m == 0.5


def test_the_band_with_m_fitted_is_the_profile_over_m():
    """Every m of the grid whose best fit the F threshold SSE_min (1 + t^2 / dof) does not
    reject (fitted here one m at a time) has its prediction inside the band: the band is not
    the fitted m's alone."""
    rng = np.random.default_rng(2)
    B = np.repeat([16.0, 32, 64, 128], 4)
    N = _wide_knee(B, 2000.0, 60.0, 0.5, 0.7) * np.exp(0.05 * rng.standard_normal(B.size))
    fit = pf.fit_progress(B, N, "saturation", 0.5, sharp=True)
    assert fit.dof == B.size - 3
    t = pf.t_quantile(0.975, fit.dof)
    thr = fit.sse * (1 + t * t / fit.dof)
    lo, hi = fit.log_interval([1024.0], 0.95)
    kept = 0
    for m in pf.SHARPNESS:
        f = pf._fit_progress(B, N, "saturation", 0.5, m)
        if f.sse <= thr:
            kept += 1
            assert lo[0] - 1e-9 <= f.log_median([1024.0])[0] <= hi[0] + 1e-9, m
    assert kept >= 2  # the test means something: more than the fitted m is plausible
    alone = pf._fit_progress(B, N, "saturation", 0.5, fit.m)
    a_lo, a_hi = (alone.log_interval([1024.0], 0.95))
    assert lo[0] <= a_lo[0] + 1e-9 and hi[0] >= a_hi[0] - 1e-9


def test_flat_progress_has_no_critical_batch():
    B = np.array([8.0, 16, 32, 64])
    fit = pf.fit_progress(B, [1000.0, 1010, 990, 1000], "saturation", 0.5)
    cb = fit.critical(0.95)
    assert cb["batch"] is None and cb["ci"][1] is None and cb["ci"][0] > 64  # knee ruled out


def test_failure_power_law_with_censored_runs():
    B = np.array([8.0, 16, 32, 64, 128, 256])
    true = 4000.0 * (B / 8) ** 0.5  # larger batches survive longer (less drift per sample)
    budget = 15000.0
    fail = np.where(true <= budget, true, math.inf)  # 128 and 256 did not fail
    ff = pf.fit_failure(B, fail, np.full(B.size, budget))
    assert_close(ff.q, 0.5, rtol=0, atol=1e-9, what="failure exponent")
    # a censored run the line would fail early must pull the exponent up, not be ignored
    low = pf.fit_failure(B[:3], [4000.0, 4000.0, math.inf], np.full(3, 16000.0))
    assert low.q > 0 and low.censored_active == 1


# ---------------------------------------------------------------------------- calibration

LEVEL, K_SE, N_CONFIGS = 0.95, 3.0, 2000  # tolerance: K_SE binomial standard errors


def _coverage(draw):
    rng = np.random.default_rng(13)  # one stream of configurations, fixed for reproducibility
    hits = np.array([draw(rng) for _ in range(N_CONFIGS)])
    se = math.sqrt(LEVEL * (1 - LEVEL) / N_CONFIGS)
    return hits.mean(axis=0), se


def _progress_config(rng):
    """Pilots at 3-5 doubling batches around the critical batch, 1-3 seeds each, log-normal
    noise of known width; covered? for a batch 2x beyond the largest pilot and for B_crit."""
    form = pf.FORMS[rng.integers(2)]
    b0 = 2.0 ** rng.integers(3, 8)
    B = b0 * 2.0 ** np.arange(rng.integers(3, 6))
    b_crit = float(np.exp(rng.uniform(np.log(B[0]), np.log(B[-1]))))
    n_min, sigma = float(np.exp(rng.uniform(7, 11))), rng.uniform(0.03, 0.3)
    B_R = np.repeat(B, rng.integers(1, 4))
    prog = _truth(form, B_R, n_min, b_crit) * np.exp(sigma * rng.standard_normal(B_R.size))
    fit = pf.fit_progress(B_R, prog, form, 0.5)
    b_new = 2 * B[-1]
    ci = pf.band(fit, [b_new], LEVEL)[0]["ci"]
    cb = fit.critical(LEVEL)["ci"]
    in_ci = lambda v, c: (c[0] or 0) <= v <= (c[1] or math.inf)
    return in_ci(_truth(form, b_new, n_min, b_crit), ci), in_ci(b_crit, cb)


def test_progress_bands_cover_at_their_level():
    cov, se = _coverage(_progress_config)
    for what, c in zip(("held-out N_prog", "critical batch"), cov):
        assert abs(c - LEVEL) <= K_SE * se, f"{what}: coverage {c:.3f}, claimed {LEVEL}"


def _failure_config(rng):
    B = 2.0 ** rng.integers(2, 6) * 2.0 ** np.arange(rng.integers(3, 6))
    q, sigma = rng.uniform(-1, 1), rng.uniform(0.05, 0.5)
    B_R = np.repeat(B, rng.integers(1, 3))
    fail = 1e4 * (B_R / B[0]) ** q * np.exp(sigma * rng.standard_normal(B_R.size))
    ff = pf.fit_failure(B_R, fail, np.full(B_R.size, math.inf))
    lo, hi = ff.exponent(LEVEL)["ci"]
    b_new = 2 * B[-1]
    c = pf.band(ff, [b_new], LEVEL)[0]["ci"]
    return lo <= q <= hi, c[0] <= 1e4 * (b_new / B[0]) ** q <= c[1]


def test_failure_bands_cover_at_their_level():
    cov, se = _coverage(_failure_config)
    for what, c in zip(("failure exponent", "held-out N_fail"), cov):
        assert abs(c - LEVEL) <= K_SE * se, f"{what}: coverage {c:.3f}, claimed {LEVEL}"


# ---------------------------------------------------------------------------- recommendation

clock = st.floats(1e3, 1e6)


@given(st.lists(st.tuples(clock, st.one_of(clock, st.just(math.inf)), st.floats(1e-4, 1e-1)),
                min_size=2, max_size=6), st.floats(0.0, 0.5))
# exactly at the margin: 500 samples to target with 1000 to failure leave 1 - 0.5 (safe)
@example([(500.0, 1000.0, 0.01), (400.0, 100.0, 0.001)], 0.5)
@example([(1000.0, 1000.0, 0.01), (2000.0, math.inf, 0.02)], 0.0)  # a tie at margin 0
def test_recommendation_never_fails_before_the_target(rows, margin):
    est = [Estimate(float(2 ** i), p, f, p, f, "fit", s) for i, (p, f, s) in enumerate(rows)]
    rec = pilot.recommend(est, margin, "seconds")
    c = rec.constant
    if c is not None:
        f = math.inf if c["failure_samples"] is None else c["failure_samples"]
        assert c["progress_samples"] <= (1 - margin) * f
        faster = [e for e in est if e.progress * e.seconds_per_sample < c["cost"] - 1e-9]
        assert all(e.progress > (1 - margin) * e.failure for e in faster)
    else:
        assert all(e.progress > (1 - margin) * e.failure for e in est)
    if rec.schedule is not None:
        assert rec.schedule["failure_fraction"] <= 1 - margin + 1e-9


def test_plan_skips_fast_batches_that_fail_first():
    B = np.repeat([64.0, 128, 256, 512], 2)
    prog = _truth("saturation", B, 2000.0, 4000.0)  # nearly batch-invariant progress
    fail = 40000.0 * (B / 64) ** -1.5                # but drift per sample grows with B
    spu = 10.0 + 0.01 * B                            # and larger batches are faster
    out = pilot.plan(_runs(B, 1e-3 * np.sqrt(B / 64), prog, fail, spu=spu), predict=[1024.0])
    assert out.failure_exponent.ci[1] < 0
    c = out.recommendation.constant
    assert c["batch"] == 256.0  # 512 would be fastest, but it fails first
    assert 512.0 in out.recommendation.unsafe and 1024.0 in out.recommendation.unsafe


# ---------------------------------------------------------------------------- the article

def test_published_table_is_consistent():
    for r in pilot_article.published():
        if None not in (r["time_to_target"], r["responses_to_target"], r["throughput"]):
            assert_close(r["responses_to_target"] / r["throughput"], r["time_to_target"],
                         rtol=0.01, atol=0, what=f"time at P = {r['prompts']}")


def test_the_recommended_schedule_switches_after_a_whole_rollout_batch():
    # the published table's schedule had switched from 4096 after 323.7 samples, less than
    # one rollout batch (pilot/plan.py: min_switch = B1)
    s = pilot_report.plan_file().recommendation.schedule
    assert s is None or s["switch_samples"] >= s["b1"]
    text = pilot_report.table(pilot_report.plan_file().to_json())
    # no pilot failed: no failure clock to keep ahead, and no share of it spent
    assert "no pilot failed, so no failure clock to keep ahead" in text
    assert "failure clock spent" not in text and "failure clock at least" not in text


def test_default_plan_reproduces_the_article_reading():
    out = pilot_report.plan_file()
    a = out.article
    assert a["optimum_prompts"] == a["published_optimum_prompts"] == 1024
    t = {r["prompts"]: r["planned"] for r in a["rows"]}
    assert t[2048] > t[1024] and t[4096] > t[1024]
    assert out.fit.rule.p == 0.5 and out.fit.rule.off_rule_runs == 1
    hi = out.critical_batch.ci[1]
    assert hi is None or hi > 1024 * 8  # the runs do not rule out invariance through P = 1024


# ---------------------------------------------------------------------------- the script

def _plan_main():
    return plan_main()


GOOD = ["batch,lr,progress_samples,failure_samples,budget,seconds_per_update",
        "8,0.01,2000,9000,20000,1.0", "16,0.0141421356,2100,,20000,1.1",
        "32,0.02,2500,9500,20000,1.3", "64,0.0282842712,3300,9400,20000,1.8"]


def _csv(tmp_path, lines):
    p = tmp_path / "runs.csv"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_script_writes_the_json_schema(tmp_path, capsys):
    path = _csv(tmp_path, GOOD)
    assert _plan_main()([path, "--predict", "128", "256", "--out", str(tmp_path),
                         "--no-figure"]) == 0
    out = json.loads((tmp_path / "plan.json").read_text())
    assert [p["batch"] for p in out["predictions"]] == [128.0, 256.0]
    p = out["predictions"][0]
    assert set(p) >= {"batch", "lr", "progress_samples", "failure_samples"}
    assert set(p["progress_samples"]) == {"median", "ci", "envelope"}
    assert_close(p["lr"], 0.01 * 4, rtol=1e-6, atol=0, what="lr at 128 (sqrt rule)")
    assert set(out["critical_batch"]) == {"batch", "ci"}
    assert set(out["failure_exponent"]) >= {"value", "ci"}
    assert {"recommendation", "fit"} <= set(out)
    assert "recommendation" in capsys.readouterr().out


def test_figure_is_labelled(tmp_path):
    from twoclock.figures.style import axes_labelled
    from twoclock.figures.pilot import plan_figure
    fig = plan_figure(pilot.plan(pilot.read_runs(_csv(tmp_path, GOOD)),
                                 predict=[128.0]).to_json())
    assert axes_labelled(fig) and len(fig.axes) == 2


BAD = {
    "missing column": (["batch,lr,progress_samples", "8,0.01,100"], "failure_samples"),
    "non-positive batch": ([GOOD[0], GOOD[1], "-16,0.01,2100,,20000,1.1"] + GOOD[3:],
                           "line 3, column batch"),
    "NaN": (GOOD[:2] + ["16,0.01,nan,,20000,1.1"] + GOOD[3:], "line 3, column progress_samples"),
    "progress after budget": (GOOD[:3] + ["32,0.02,25000,,20000,1.3"] + GOOD[4:],
                              "line 4, column progress_samples"),
    "two batches": (GOOD[:3], "column batch: needs >= 3 distinct batches"),
    "one step time": ([GOOD[0], GOOD[1]] + [r.rsplit(",", 1)[0] + "," for r in GOOD[2:]],
                      "column seconds_per_update: needs step times at >= 2"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_csv_is_one_line_and_exit_2(case, tmp_path, capsys):
    lines, needle = BAD[case]
    with pytest.raises(SystemExit) as e:
        _plan_main()([_csv(tmp_path, lines), "--out", str(tmp_path), "--no-figure"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err
