"""Failure-clock forms, the model-form error in the bands, relative (collapse) conditions, the
bound where no pilot failed and the clipping onset (twoclock.pilot.forms, .conditions,
.clipping), each against a hand computation."""
import csv
import math

import numpy as np
import pytest

from tests.helpers import assert_close
from twoclock.pilot import clipping, forms, logs as pl, report
from twoclock.pilot import fit as pf
from twoclock.pilot.plan import PilotError, PilotRuns, plan as typed_plan


def plan(runs, **kw) -> dict:
    """The plan's JSON (what plan.json holds, and what these tests read)."""
    return typed_plan(runs, **kw).to_json()


# ---------------------------------------------------------------------------- relative conditions

def test_a_fall_below_the_running_peak_is_interpolated_between_logged_points():
    s = [0, 100, 200, 300, 400]
    c = pl.parse_condition("acc<=peak-0.1875", "--failure")
    assert c.text == "acc<=peak-0.1875" and c.ref == "peak"
    # peak 0.75 at 200; 0.625 at 300 is 0.125 below, 0.5 at 400 is 0.25 below: the fall of
    # 0.1875 is half-way, at 350 (binary fractions: exact)
    assert pl.crossing(s, [0.25, 0.5, 0.75, 0.625, 0.5], c) == (350.0, 4)
    # the peak is the running one, not the run's best: 0.5 then 0.25 falls 0.25 by 100, the
    # 0.1875 three quarters of the way (a global peak, 0.75, would time it at 0)
    assert pl.crossing(s, [0.5, 0.25, 0.75, 0.75, 0.75], c) == (75.0, 1)
    # a curve that only rises never falls below its peak: censored at its last sample
    assert pl.crossing(s, [0.1, 0.2, 0.3, 0.4, 0.5], c) == (400.0, None)


def test_a_rise_above_the_running_trough_mirrors_the_fall():
    c = pl.parse_condition("loss>=trough+0.5", "--failure")
    # trough 1.0 at 100; 1.25 at 200 (+0.25), 2.0 at 300 (+1.0): +0.5 a third of the way
    at, i = pl.crossing([0, 100, 200, 300], [2.0, 1.0, 1.25, 2.0], c)
    assert i == 3 and abs(at - (200 + 100 / 3)) < 1e-9


@pytest.mark.parametrize("text", ["acc>=peak-0.1", "acc<=trough+0.1", "acc<=peak-0",
                                  "acc<=peak+0.1", "acc<=peak-"])
def test_relative_conditions_in_the_wrong_direction_are_refused(text):
    with pytest.raises(PilotError, match="--failure"):
        pl.parse_condition(text, "--failure")


# ---------------------------------------------------------------------------- forms

def _runs(B, prog, fail, budget=None):
    B = np.asarray(B, np.float64)
    return PilotRuns(B, 1e-3 * np.sqrt(B / B.min()), np.asarray(prog, np.float64),
                     np.asarray(fail, np.float64),
                     np.full(B.size, math.inf if budget is None else budget),
                     np.full(B.size, math.nan), tuple(str(i) for i in range(B.size)))


def _knee(B, n_min=1000.0, b_crit=100.0):
    """The saturation form under the sqrt rule: N_min (1 + 0.44 B / B_crit)^(1/2)."""
    return n_min * np.sqrt(1 + (1.2 ** 2 - 1) * np.asarray(B, np.float64) / b_crit)


def test_a_failure_clock_tied_to_progress_is_found_and_extrapolated_with_it():
    """N_fail = 3 N_prog in every run (progress on a knee, with multiplicative noise that the
    ratio cancels): the coupled form's leave-one-end-out error is 0, it is chosen, log k is
    log 3 exactly, and its prediction is 3 x the progress prediction at every batch."""
    rng = np.random.default_rng(0)
    B = np.repeat([32.0, 64.0, 128.0, 256.0], 4)
    prog = _knee(B) * np.exp(0.05 * rng.standard_normal(B.size))
    out = plan(_runs(B, prog, 3.0 * prog), predict=[1024.0, 2048.0])
    ff = out["fit"]["failure_form"]
    assert ff["chosen"] == "coupled", ff["why"]
    assert_close(ff["coupled"]["ratio_to_progress"], 3.0, rtol=1e-12, atol=0, what="k")
    assert ff["coupled"]["form_error"]["curvature"] < 1e-12
    for p in out["predictions"]:
        assert_close(p["failure_samples"]["median"], 3.0 * p["progress_samples"]["median"],
                     rtol=1e-12, atol=0, what=f"coupled median at {p['batch']}")


def test_a_power_law_failure_clock_is_not_taken_for_progress():
    """N_fail = 20 000 (B / 64)^0.5 exactly while progress follows a knee: the power law's
    left-out ends are predicted exactly, the coupled form's are not."""
    rng = np.random.default_rng(1)
    B = np.repeat([32.0, 64.0, 128.0, 256.0], 4)
    prog = _knee(B) * np.exp(0.05 * rng.standard_normal(B.size))
    out = plan(_runs(B, prog, 20_000.0 * np.sqrt(B / 64)), predict=[2048.0])
    ff = out["fit"]["failure_form"]
    assert ff["chosen"] == "power" and ff["power"]["form_error"]["curvature"] < 1e-9, ff["why"]
    assert_close(out["predictions"][0]["failure_samples"]["median"],
                 20_000.0 * math.sqrt(2048 / 64), rtol=1e-9, atol=0, what="power median")


def _ols_slope_ci(x, y):
    """Least-squares slope of y on x and its 95% Student-t CI, by the textbook formulas."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    sxx = np.sum((x - x.mean()) ** 2)
    b = np.sum((x - x.mean()) * (y - y.mean())) / sxx
    resid = y - y.mean() - b * (x - x.mean())
    se = math.sqrt(np.sum(resid ** 2) / (x.size - 2) / sxx)
    t = pf.t_quantile(0.975, x.size - 2)
    return b, (b - t * se, b + t * se)


def _tied_runs(seed=5):
    """Progress on a knee that turns inside the pilots; failure 1.45 x the same knee, each with
    its own noise (so the ratio's noise does not cancel)."""
    rng = np.random.default_rng(seed)
    B = np.repeat([32.0, 64.0, 128.0], 8)
    knee = _knee(B, b_crit=20.0)
    return B, knee * np.exp(0.03 * rng.standard_normal(B.size)), \
        1.45 * knee * np.exp(0.03 * rng.standard_normal(B.size))


def test_a_growing_clock_with_a_constant_ratio_is_read_as_coupled(monkeypatch):
    """The two tests by hand (textbook least squares): log N_fail on log B has a slope whose CI
    lies above 0 (not flat), log(N_fail / N_prog) one whose CI includes 0 (ratio constant): the
    coupled form is chosen, its median exp(mean log ratio) x the progress median. On these
    runs the left-out error alone picks the knee."""
    B, prog, fail = _tied_runs()
    _, (q_lo, _) = _ols_slope_ci(np.log(B), np.log(fail))
    _, (s_lo, s_hi) = _ols_slope_ci(np.log(B), np.log(fail / prog))
    assert q_lo > 0 and s_lo <= 0 <= s_hi, (q_lo, s_lo, s_hi)
    out = plan(_runs(B, prog, fail), predict=[1024.0])
    ff = out["fit"]["failure_form"]
    assert ff["chosen"] == "coupled" and "keeps its ratio to progress" in ff["why"], ff["why"]
    k = math.exp(np.mean(np.log(fail / prog)))
    p = out["predictions"][0]
    assert_close(p["failure_samples"]["median"], k * p["progress_samples"]["median"],
                 rtol=1e-12, atol=0, what="coupled median")
    monkeypatch.setattr(forms, "COUPLED_WHEN_TIED", False)
    assert plan(_runs(B, prog, fail), predict=[1024.0])["fit"]["failure_form"]["chosen"] == "knee"


def test_the_bands_level_does_not_change_the_chosen_form():
    """The tests run at 95% whatever the level asked: the same form and median at 50%."""
    B, prog, fail = _tied_runs()
    a, b = (plan(_runs(B, prog, fail), predict=[1024.0], level=lvl) for lvl in (0.5, 0.95))
    assert a["fit"]["failure_form"]["chosen"] == b["fit"]["failure_form"]["chosen"] == "coupled"
    assert (a["predictions"][0]["failure_samples"]["median"]
            == b["predictions"][0]["failure_samples"]["median"])


def test_a_flat_clock_is_left_to_the_left_out_error(monkeypatch):
    """N_fail flat in B (a random walk's clock, noise 0.3 in log) while progress grows: the
    exponent's CI (by hand) includes 0, so the tests do not apply and the choice is the
    left-out error's, the same as with the rule switched off."""
    rng = np.random.default_rng(5)
    B = np.repeat([32.0, 64.0, 128.0], 8)
    prog = _knee(B, b_crit=20.0) * np.exp(0.03 * rng.standard_normal(B.size))
    fail = 20_000.0 * np.exp(0.3 * rng.standard_normal(B.size))
    _, (q_lo, q_hi) = _ols_slope_ci(np.log(B), np.log(fail))
    assert q_lo <= 0 <= q_hi
    with_rule = plan(_runs(B, prog, fail), predict=[1024.0])["fit"]["failure_form"]
    monkeypatch.setattr(forms, "COUPLED_WHEN_TIED", False)
    without = plan(_runs(B, prog, fail), predict=[1024.0])["fit"]["failure_form"]
    assert with_rule["chosen"] == without["chosen"]
    assert "keeps its ratio" not in with_rule["why"]


def _flat_runs():
    """The flat clock of the test above: progress on a knee, failure a random walk's clock."""
    rng = np.random.default_rng(5)
    B = np.repeat([32.0, 64.0, 128.0], 8)
    prog = _knee(B, b_crit=20.0) * np.exp(0.03 * rng.standard_normal(B.size))
    return B, prog, 20_000.0 * np.exp(0.3 * rng.standard_normal(B.size))


def test_each_plausible_forms_median_is_reported_beside_the_band():
    """by_form holds each plausible form's own median: the power law's is the least squares
    line of log N_fail on log B (no run censored), the coupled form's exp(mean log ratio) x the
    progress median (both by hand); the band's median is the chosen form's, and the spread is
    max / min - 1. A form the tests chose says so; one the left-out error chose says that."""
    B, prog, fail = _flat_runs()
    out = plan(_runs(B, prog, fail), predict=[512.0, 1024.0])
    ff = out["fit"]["failure_form"]
    assert set(ff["plausible"]) >= {"power", "coupled"} and ff["chosen_by"] == "left-out error"
    q, a = np.polyfit(np.log(B), np.log(fail), 1)
    k = math.exp(np.mean(np.log(fail / prog)))
    for p in out["predictions"]:
        fs, b = p["failure_samples"], p["batch"]
        assert_close(fs["by_form"]["power"], math.exp(a + q * math.log(b)), rtol=1e-9, atol=0,
                     what=f"power median at {b}")
        assert_close(fs["by_form"]["coupled"], k * p["progress_samples"]["median"], rtol=1e-12,
                     atol=0, what=f"coupled median at {b}")
        assert fs["median"] == fs["by_form"][ff["chosen"]]
        m = list(fs["by_form"].values())
        assert_close(forms.disagreement(fs), max(m) / min(m) - 1, rtol=1e-12, atol=0,
                     what="spread")
    assert "the forms disagree at B 1024" in report.table(out)  # the CSV path's table too
    B, prog, fail = _tied_runs()
    assert plan(_runs(B, prog, fail), predict=[1024.0])["fit"]["failure_form"]["chosen_by"] == \
        "tests"


def test_forms_that_disagree_are_reported_only_where_the_left_out_error_chose(tmp_path,
                                                                            monkeypatch):
    """From logs (acc = s / P and drift = s / F, linear, so the clocks are P and F exactly):
    on the flat clock the forms differ by more than 15% at the largest batch and the table
    says so with their medians; on the tied clock the tests chose, and it says nothing even
    with the threshold below its forms' spread (11%)."""
    from tests.pilot.test_pilot_logs import _write

    def table_of(B, prog, fail):
        rows = []
        for i, (b, P, F) in enumerate(zip(B, prog, fail)):
            for smp in np.linspace(0.0, 1.5 * max(prog.max(), fail.max()), 400):
                rows.append([f"r{i}", f"{b:g}", f"{1e-3 * math.sqrt(b / 32):.10g}",
                             f"{smp:.10g}", f"{smp / P:.12g}", f"{smp / F:.12g}"])
        path = _write(tmp_path / "l.csv", ["run", "batch", "lr", "samples", "acc", "drift"],
                      rows)
        out = pl.plan_logs(path, "acc>=1", ["drift>=1"], predict=[512, 1024])
        return out, pl.table(out)

    out, text = table_of(*_flat_runs())
    fs = out["failures"][0]["predictions"][-1]["failure_samples"]
    assert forms.disagreement(fs) > report.FORMS_DISAGREE
    line = [x for x in text.splitlines() if x.startswith("    the forms disagree")]  # its own
    assert len(line) == 1 and "B 1024" in line[0], text
    for name, v in fs["by_form"].items():
        assert f"{name} {v:.0f}" in line[0], line
    monkeypatch.setattr(report, "FORMS_DISAGREE", 0.05)
    out, text = table_of(*_tied_runs())
    assert out["failures"][0]["form"]["chosen_by"] == "tests"
    assert forms.disagreement(out["failures"][0]["predictions"][-1]["failure_samples"]) > 0.05
    assert "the forms disagree" not in text


def test_a_form_given_with_form_is_the_median_and_the_band(tmp_path):
    """--form 'drift>=1=power' on the flat clock: the median is the least squares power law by
    hand, the band that form's band alone (no wider than the pilots' union), and it says so;
    without it the pilots chose another form."""
    from tests.pilot.test_pilot_logs import _write
    B, prog, fail = _flat_runs()
    rows = []
    for i, (b, P, F) in enumerate(zip(B, prog, fail)):
        for smp in np.linspace(0.0, 1.5 * fail.max(), 400):
            rows.append([f"r{i}", f"{b:g}", f"{1e-3 * math.sqrt(b / 32):.10g}", f"{smp:.10g}",
                         f"{smp / P:.12g}", f"{smp / F:.12g}"])
    path = _write(tmp_path / "l.csv", ["run", "batch", "lr", "samples", "acc", "drift"], rows)
    free = pl.plan_logs(path, "acc>=1", ["drift>=1"], predict=[512, 1024])
    given = pl.plan_logs(path, "acc>=1", ["drift>=1"], predict=[512, 1024],
                         forms=["drift >= 1=power"])
    assert free["failures"][0]["form"]["chosen"] != "power"
    form = given["failures"][0]["form"]
    assert form["chosen"] == "power" and form["chosen_by"] == "--form"
    assert form["plausible"] == ["power"] and "chosen with --form" in form["why"]
    q, a = np.polyfit(np.log(B), np.log(fail), 1)
    for p, f in zip(given["failures"][0]["predictions"], free["failures"][0]["predictions"]):
        g = p["failure_samples"]
        assert_close(g["median"], math.exp(a + q * math.log(p["batch"])), rtol=1e-9, atol=0,
                     what=f"power median at {p['batch']}")
        assert g["by_form"] == {"power": g["median"]}
        lo, hi = f["failure_samples"]["ci"]
        assert lo <= g["ci"][0] and g["ci"][1] <= hi
    assert "the forms disagree" not in pl.table(given)


def test_coupled_fit_by_hand_with_a_censored_run():
    """log ratios of the failed runs: log 2, log 4 -> mean log sqrt(8); a censored run whose
    level (ratio 8) lies above that pushes it: mean of log 2, log 4, log 8 = log 4."""
    cf = pf.fit_coupled([1.0, 2.0, 4.0], [200.0, 400.0, math.inf], [0, 0, 800.0],
                        [100.0, 100.0, 100.0])
    assert cf.censored_active == 1
    assert_close(cf.log_k, math.log(4.0), rtol=0, atol=1e-12, what="log k")
    # standard error: sd of (log 2, log 4, log 8) with ddof 1 is log 2, over sqrt(3)
    assert_close(cf.se, math.log(2.0) / math.sqrt(3), rtol=1e-12, atol=0, what="se")


def test_the_leave_one_end_out_curvature_by_hand():
    """Batches 1, 2, 4: leaving out 1 (nearest 2, range to 4: log 2) a prediction 0.1 high at
    distance log 2 implies k = 2 * 0.1 / (log 2 * 2 log 2); leaving out 4 the same with -0.1.
    The form error at B = 16 (distance log 4 past 4, full range log 4) is k/2 * d (d + r),
    times the calibrated scale 0.7 (docs/plan.md)."""
    B = np.array([1.0, 1.0, 2.0, 2.0, 4.0, 4.0])
    loo = forms.loo_rate(B, lambda keep, b: (0.1 if b == 1.0 else -0.1, 0.03),
                         lambda b: (0.0, 0.04))
    assert [e["noise"] for e in loo["errors"]] == pytest.approx([0.05, 0.05], rel=1e-12)
    L = math.log(2.0)
    k = 2 * 0.1 / (L * 2 * L)
    assert_close(loo["rate"], k, rtol=1e-12, atol=0, what="curvature")
    assert_close(forms.sigma(loo, [16.0], 1.0, 4.0)[0], 0.7 * 0.5 * k * (2 * L) * (4 * L),
                 rtol=1e-12, atol=0, what="sigma at 16")
    assert forms.sigma(loo, [2.0, 3.0], 1.0, 4.0).tolist() == [0.0, 0.0]  # inside: none


def test_widen_grows_each_half_width_in_quadrature():
    band = [{"median": 100.0, "ci": [80.0, 125.0]}]
    out = forms.widen(band, [0.1], 0.95)[0]
    z = 1.959963984540054
    assert_close(out["ci"][0], 100 * math.exp(-math.hypot(math.log(1.25), z * 0.1)),
                 rtol=1e-12, atol=0, what="low")
    assert_close(out["ci"][1], 100 * math.exp(math.hypot(math.log(1.25), z * 0.1)),
                 rtol=1e-12, atol=0, what="high")
    assert forms.widen(band, [0.0], 0.95)[0]["ci"] == pytest.approx([80.0, 125.0], rel=1e-12)


def test_the_bands_carry_the_form_error_beyond_the_pilots():
    """Progress that bends past the pilots' reach is what a wrong form misses: the band at 8x
    the largest pilot is wider than the fit's own sampling band by the left-out error."""
    rng = np.random.default_rng(2)
    B = np.repeat([32.0, 64.0, 128.0], 8)
    prog = 1000.0 * (B / 32) ** (0.1 * np.log2(B / 16)) * np.exp(0.03 * rng.standard_normal(B.size))
    out = plan(_runs(B, prog, 5 * prog), predict=[1024.0])
    pfit, plaus, _, _ = pf.choose_progress(B, prog, 0.5)
    samp = pf.envelope(pfit, plaus, [1024.0], 0.95)[0]["ci"]
    got = out["predictions"][0]["progress_samples"]["ci"]
    assert out["fit"]["progress_form_error"]["curvature"] > 0
    assert got[0] < samp[0] and got[1] > samp[1], (got, samp)


# ---------------------------------------------------------------------------- no failure seen

def test_no_failure_in_any_pilot_gives_the_bound_that_follows(tmp_path):
    """No run crosses kl>=5: the plan goes on, and at each predicted batch no failure is
    expected before min(shortest run, rho N_prog(B)), rho = min run length / progress clock
    (every run logs to 8000; the slowest progress clock is 1450, so rho = 8000 / 1450)."""
    from tests.pilot.test_pilot_logs import HEAD, _rows, _write
    path = _write(tmp_path / "l.csv", HEAD, _rows())
    out = pl.plan_logs(path, "acc>=1", ["kl>=5"], predict=[64, 128])
    f = out["failures"][0]
    assert f["failed_runs"] == 0 and f["form"] is None
    for b, p in zip(f["no_failure_before"], out["predictions"]):
        n_prog = p["progress_samples"]["median"]
        assert_close(b["samples"], min(8000.0, 8000.0 / 1450.0 * n_prog), rtol=1e-12, atol=0,
                     what=f"bound at {b['batch']}")
    assert "no failure expected before" in pl.table(out)


def test_one_failed_pilot_bounds_the_others_and_is_named(tmp_path):
    """Only run f fails kl>=1 (kl = s / 4000: at 4000, logged to 6000); it has the slowest
    progress clock (1600) and the shortest log, so a bound that kept it would be
    min(6000, 6000 / 1600 N_prog). Over the five that did not fail: min(8000, 8000 / 1390
    N_prog). With two failed runs (kl>=0.35: e at 7000 too) there is no bound."""
    from tests.pilot.test_pilot_logs import _write
    pilots = [("a", 8, 0.01, 1050, 9e9, 8000), ("b", 8, 0.01, 1110, 9e9, 8000),
              ("c", 16, 0.0141421356, 1130, 9e9, 8000), ("d", 16, 0.0141421356, 1190, 9e9, 8000),
              ("e", 32, 0.02, 1390, 20000, 8000), ("f", 32, 0.02, 1600, 4000, 6000)]
    rows = [[run, b, f"{lr:.10g}", s, f"{s / P:.12g}", f"{s / F:.12g}"]
            for run, b, lr, P, F, last in pilots for s in range(0, last + 1, 100)]
    path = _write(tmp_path / "l.csv", ["run", "batch", "lr", "samples", "acc", "kl"], rows)
    out = pl.plan_logs(path, "acc>=1", ["kl>=1"], predict=[64, 128])
    f = out["failures"][0]
    assert f["failed_runs"] == 1 and f["form"] is None
    assert f["failed"] == [{"run": "f", "batch": 32.0, "samples": pytest.approx(4000.0)}]
    for b, p in zip(f["no_failure_before"], out["predictions"]):
        n_prog = p["progress_samples"]["median"]
        assert_close(b["samples"], min(8000.0, 8000.0 / 1390.0 * n_prog), rtol=1e-12, atol=0,
                     what=f"bound at {b['batch']}")
    assert "one pilot failed (f, B 32, at 4000 samples)" in pl.table(out)
    two = pl.plan_logs(path, "acc>=1", ["kl>=0.35"], predict=[64])  # e at 7000, f at 1400
    assert two["failures"][0]["failed_runs"] == 2 and two["failures"][0]["failed"] == []
    assert all(b["samples"] is None for b in two["failures"][0]["no_failure_before"])


# ---------------------------------------------------------------------------- clipping onset

def _clip_log(tmp_path, share_of_lr) -> str:
    """PILOTS's log with a clipped share share_of_lr(lr) on every row."""
    from tests.pilot.test_pilot_logs import PILOTS
    rows = []
    for run, b, lr, P, F, E, last in PILOTS:
        for s in range(0, last + 1, 100):
            rows.append([run, b, f"{lr:.10g}", s, s / P, s / F, share_of_lr(lr)])
    path = tmp_path / "l.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["run", "batch", "lr", "samples", "acc", "kl", "clip"]] + rows)
    return str(path)


def test_clipping_onset_by_hand(tmp_path):
    """share = 0.004 (lr / 0.01)^2 under the sqrt rule from lr 0.01 at B 8, so share =
    0.004 B / 8 (0.016 at B 32, the largest pilot): it passes 0.02 at B = 40; with a fixed
    minibatch size (steps ~ B) the move is lr B, share = c (lr B)^(2/3), passing 0.02 at B = 40
    still. The line's reach: shares up to 4 x 0.016 = 0.064 (B 128), moves up to 4x B 32's
    (fixed steps: move ~ B^0.5, B 512; per batch: move ~ B^1.5, B 32 4^(2/3) = 80.6)."""
    path = _clip_log(tmp_path, lambda lr: 0.004 * (lr / 0.01) ** 2)
    out = pl.plan_logs(path, "acc>=1", ["kl>=1"], predict=[48, 64, 256], clip="clip")
    co = out["clip_onset"]
    assert_close(co["slope"]["value"], 2.0, rtol=1e-6, atol=0, what="slope")
    assert_close(co["binds_at"], 40.0, rtol=1e-6, atol=0, what="bind batch")
    assert_close([p["share"] for p in co["predictions"][:2]], [0.024, 0.032], rtol=1e-6, atol=0,
                 what="predicted shares")
    assert co["predictions"][2]["share"] is None  # the line's 0.128 is 8x the largest pilot's
    assert_close(co["reach"]["batches"], [0.5, 128.0], rtol=1e-6, atol=0, what="reach")
    assert_close(co["reach"]["share"], 0.064, rtol=1e-9, atol=0, what="reach share")
    text = pl.table(out)
    assert "passes 0.02 at B ~ 40" in text and "B 48: 0.024; B 64: 0.032; B 256: -" in text
    assert "past the line's checked reach, B 0.5 to 128, shares up to 0.064" in text
    per = pl.plan_logs(path, "acc>=1", ["kl>=1"], predict=[64, 128], clip="clip",
                       clip_steps="per_batch")["clip_onset"]
    # share = 0.004 (B/8) = c (lr B)^b with lr B ~ B^1.5: b = 2/3; passes 0.02 at B = 40 still
    assert_close(per["slope"]["value"], 2 / 3, rtol=1e-6, atol=0, what="per-batch slope")
    assert_close(per["binds_at"], 40.0, rtol=1e-6, atol=0, what="per-batch bind")
    assert_close(per["reach"]["batches"][1], 32 * 4 ** (2 / 3), rtol=1e-6, atol=0,
                 what="per-batch reach")
    # B 128: the line's 0.064 is within 4x the largest share, but its move is 8x B 32's
    assert_close(per["predictions"][0]["share"], 0.032, rtol=1e-6, atol=0, what="per-batch 64")
    assert per["predictions"][1]["share"] is None


def test_the_clip_share_is_not_extrapolated_past_its_checked_reach(tmp_path):
    """Pilots below 0.03 (share = 0.025 (lr / 0.02)^5, 0.025 at B 32, B^2.5 under the sqrt
    rule): the line gives 0.025 4^2.5 = 0.8 at B 128 (32x the pilots) and 0.025 8^2.5 = 4.5
    at B 256, neither predicted; 0.025 1.25^2.5 = 0.0437 at B 40 is. The reach ends where the
    line reaches 4 x 0.025: B = 32 4^0.4 = 55.7; the onset (0.02) is at B = 32 0.8^0.4 = 29.3."""
    path = _clip_log(tmp_path, lambda lr: 0.025 * (lr / 0.02) ** 5)
    out = pl.plan_logs(path, "acc>=1", ["kl>=1"], predict=[40, 64, 128, 256], clip="clip")
    co = out["clip_onset"]
    assert [p["share"] is None for p in co["predictions"]] == [False, True, True, True]
    assert_close(co["predictions"][0]["share"], 0.025 * 1.25 ** 2.5, rtol=1e-6, atol=0,
                 what="share at 40")
    assert_close(co["reach"]["batches"][1], 32 * 4 ** 0.4, rtol=1e-6, atol=0, what="reach")
    assert_close(co["binds_at"], 32 * 0.8 ** 0.4, rtol=1e-6, atol=0, what="onset")
    assert all(0 < s <= 0.1 * (1 + 1e-9) for s in co["curve"]["share"])
    # a bind level past the reach (4 x 0.025 = 0.1): the line's onset is not given
    far = pl.plan_logs(path, "acc>=1", ["kl>=1"], clip="clip", clip_bind=0.2)["clip_onset"]
    assert far["binds_at"] is None and "past its checked reach" in far["reading"]
    # shares near 0.5: the cap is 1, never more (B 40: 0.4 1.25^2.5 = 0.699; B 48: 1.10)
    big = pl.plan_logs(_clip_log(tmp_path, lambda lr: 0.4 * (lr / 0.02) ** 5), "acc>=1",
                       ["kl>=1"], predict=[40, 48], clip="clip")["clip_onset"]
    assert big["reach"]["share"] == 1.0
    assert_close(big["predictions"][0]["share"], 0.4 * 1.25 ** 2.5, rtol=1e-6, atol=0,
                 what="share at 40")
    assert big["predictions"][1]["share"] is None


def test_a_clip_share_that_stays_zero_has_no_onset(tmp_path):
    from tests.pilot.test_pilot_logs import PILOTS
    rows = [[run, b, f"{lr:.10g}", s, s / P, s / F, 0.0] for run, b, lr, P, F, E, last in PILOTS
            for s in range(0, last + 1, 100)]
    path = tmp_path / "l.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["run", "batch", "lr", "samples", "acc", "kl", "clip"]] + rows)
    co = pl.plan_logs(str(path), "acc>=1", ["kl>=1"], clip="clip")["clip_onset"]
    assert co["binds_at"] is None and "no trend" in co["reading"]


def test_clip_settings_are_refused_in_one_line(tmp_path):
    from tests.pilot.test_pilot_logs import HEAD, _rows, _write
    path = _write(tmp_path / "l.csv", HEAD, _rows())
    with pytest.raises(PilotError, match="--clip-bind"):
        pl.plan_logs(path, "acc>=1", ["kl>=1"], clip="kl", clip_bind=1.5)
    with pytest.raises(PilotError, match="--clip-steps"):
        pl.plan_logs(path, "acc>=1", ["kl>=1"], clip="kl", clip_steps="sometimes")
    assert clipping.STEPS == ("fixed", "per_batch")
