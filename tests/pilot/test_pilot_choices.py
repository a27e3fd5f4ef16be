"""The planner's choices, not only its numbers (issue 56, class 4): which clock the fit-only
recommendation reads when several failure conditions disagree, and which end of the power law's
exponent CI the failure-form rule reads. Oracles: pilots made by hand (metrics linear in
samples, so every crossing is exact; power laws through exact points, so every fit is known),
and the rule as docs/plan.md states it, written out here."""
import json
import math

from hypothesis import example, given, strategies as st
import numpy as np
import pytest
from scipy import stats

from twoclock.pilot import forms, logs as pl, plan as pp

# ---- the earliest *fitted* failure clock is the fit-only plan's ----------------------------
# run, batch, lr (sqrt rule from 0.01 at 8), P (acc = s / P), F (kl = s / F), E (ent = 2 - s/E).
# progress 4000 (B / 8)^(1/2). kl's clocks lie on a power law, 8000 (B / 16)^(1/2), so its
# fit is exact: 5657, 8000, 11314. ent's are 1000 (B / 8)^2 times 5/8, 64/25, 5/8: log
# residuals d, -2d, d are orthogonal to the line, so its fit is 1000 (B / 8)^2 = 1000, 4000,
# 16000 (hand: the geometric mean at B 16, (625 x 10240 x 10000)^(1/3) = 4000; the slope
# ln(10000 / 625) / ln 4 = 2). The conditions disagree at B 16 (kl earliest as measured, 8000
# < 10240; ent as fitted, 4000 < 8000) and at B 32 (ent as measured, 10000 < 11314; kl as
# fitted, 11314 < 16000).
R2 = math.sqrt(2)
PILOTS = [("a", 8, 0.01, 4000, 8000 / R2, 625),
          ("b", 16, 0.0141421356, 4000 * R2, 8000, 10240),
          ("c", 32, 0.02, 8000, 8000 * R2, 10000)]
LAST = 12000
FORMS = ["kl>=1=power", "ent<=1=power"]  # the power law, fitted in closed form


def _log(path):
    """The pilots' curves as JSON Lines, one logged step a line."""
    rows = [{"run": run, "batch": b, "lr": lr, "samples": s, "acc": s / P, "kl": s / F,
             "ent": 2 - s / E}
            for run, b, lr, P, F, E in PILOTS for s in range(0, LAST + 1, 100)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def disagree(tmp_path_factory):
    path = _log(tmp_path_factory.mktemp("logs") / "l.jsonl")
    return pl.plan_logs(path, "acc>=1", ["kl>=1", "ent<=1"], forms=FORMS)


def test_estimates_take_the_earliest_fitted_clock_not_the_fit_of_the_earliest_measured(disagree):
    est = {e["batch"]: e for e in disagree["estimates"]}
    # measured: the earliest of each batch's clocks (one run a batch)
    assert [est[b]["failure"] for b in (8, 16, 32)] == pytest.approx([625, 8000, 10000],
                                                                      rel=1e-9)
    assert [est[b]["failure_clock"] for b in (8, 16, 32)] == ["ent<=1", "kl>=1", "ent<=1"]
    # fitted: the earliest fit, ent's at B 16 (not kl's 8000) and kl's at 32 (not ent's 16000)
    assert [est[b]["failure_fit"] for b in (8, 16, 32)] == pytest.approx(
        [1000, 4000, 8000 * R2], rel=1e-6)


def test_fit_only_recommendation_reads_the_earliest_fitted_clock(disagree):
    """With the 10% margin a batch is safe where progress <= 0.9 x failure. Measured: 4000 >
    562 at B 8, 5657 <= 7200 at 16: batch 16. Fitted (the progress fit within 1% of the runs):
    8 unsafe (limit 900), 16 unsafe (3600), 32 safe (8000 <= 10182): batch 32, its failure
    clock kl's 8000 sqrt 2. Reading the fit of the condition measured earliest (kl's 8000 at
    B 16, limit 7200), or the measured clock itself (8000), would call 16 safe, and cheaper:
    batch 16, failure 8000."""
    rec = disagree["recommendation"]
    assert rec["margin"] == 0.1 and rec["objective"] == "samples"
    assert rec["constant"]["batch"] == 16
    assert rec["constant"]["failure_samples"] == pytest.approx(8000, rel=1e-9)
    fit = rec["fit_only_constant"]
    assert fit["batch"] == 32, fit
    assert fit["failure_samples"] == pytest.approx(8000 * R2, rel=1e-6)
    assert fit["progress_samples"] == pytest.approx(8000, rel=0.05)


def test_plan_fit_only_recommendation_reads_the_fitted_failure_clock():
    """One failure condition (the pilot-run planner): ent's clocks above, 625, 10240, 10000,
    fitted 1000, 4000, 16000; progress 4000 (B / 8)^(1/2). Measured, B 16 is safe (5657 <=
    9216) and recommended; fitted, it is not (limit 3600) and 32 is (8000 <= 14400). The
    fit-only choice on the measured failure clock would be 16."""
    B = np.array([8.0, 16.0, 32.0])
    runs = pp.PilotRuns(B, 0.01 * np.sqrt(B / 8), 4000 * np.sqrt(B / 8),
                        np.array([625.0, 10240.0, 10000.0]), np.full(3, np.inf),
                        np.full(3, np.nan), ("a", "b", "c"), source="hand")
    rec = pp.plan(runs, failure_form="power").recommendation
    assert rec.constant["batch"] == 16
    assert rec.constant["failure_samples"] == pytest.approx(10240, rel=1e-12)
    assert rec.fit_only_constant["batch"] == 32, rec.fit_only_constant
    assert rec.fit_only_constant["failure_samples"] == pytest.approx(16000, rel=1e-6)


# ---- the failure-form rule: flat rejected when the exponent's CI lies above 0 -----------------
class _Power:
    def __init__(self, ci):
        self.ci = ci

    def exponent(self, level):
        assert level == forms.TEST_LEVEL  # the tests' own level, whatever the bands'
        return {"value": sum(self.ci) / 2, "ci": list(self.ci)}


class _Coupled:
    def __init__(self, ci):
        self.slope = {"value": sum(ci) / 2, "ci": list(ci)}


def _rule(q_ci, slope_ci) -> bool:
    """docs/plan.md: coupled by the tests when flat is rejected (the exponent's CI lies above
    0, its lower end > 0) and coupled is not (0 inside the ratio slope's closed CI)."""
    return q_ci[0] > 0 and slope_ci[0] <= 0 <= slope_ci[1]


ENDS = st.floats(-2, 2, allow_nan=False)


@given(q_lo=ENDS, q_w=st.floats(0, 2), s_lo=ENDS, s_w=st.floats(0, 2))
@example(q_lo=0.0, q_w=1.0, s_lo=-0.1, s_w=0.2)  # lower end exactly 0: flat not rejected
@example(q_lo=-0.2, q_w=0.6, s_lo=-0.1, s_w=0.2)  # straddles 0
@example(q_lo=0.1, q_w=0.4, s_lo=-0.1, s_w=0.2)  # lies above 0
@example(q_lo=0.1, q_w=0.4, s_lo=0.0, s_w=0.2)  # the slope's CI ends at 0: coupled kept
@example(q_lo=0.1, q_w=0.4, s_lo=-0.2, s_w=0.2)
@example(q_lo=0.1, q_w=0.4, s_lo=0.01, s_w=0.2)  # the slope's CI above 0: coupled rejected
def test_form_rule_reads_the_lower_end_of_the_exponents_ci(q_lo, q_w, s_lo, s_w):
    q_ci, s_ci = (q_lo, q_lo + q_w), (s_lo, s_lo + s_w)
    got = forms._tied_to_progress({"power": {"fit": _Power(q_ci)}}, _Coupled(s_ci))
    assert got == _rule(q_ci, s_ci)


B6 = np.array([8, 8, 16, 16, 32, 32], float)
RATIO_NOISE = np.array([1.0, 1.05, 0.97, 1.02, 1.03, 0.98])  # failure = 2 x progress x this


@pytest.mark.parametrize("prog, tied", [
    (np.array([1000, 1100, 1050, 980, 1020, 1080.]), False),  # flat: exponent CI straddles 0
    (np.array([1000, 1100, 1414, 1500, 2000, 2150.]), True)])  # grows: CI above 0
def test_form_rule_on_pilots_whose_exponent_ci_straddles_or_lies_above_zero(prog, tied):
    """Failure = 2 x progress x noise, so the ratio's slope is the same small number in both
    (its CI contains 0). The exponent's CI, by scipy's least squares and Student-t: with flat
    progress it straddles 0 (the left-out errors choose), growing it lies above (the tests
    choose coupled)."""
    fail = 2 * prog * RATIO_NOISE
    t = stats.t.ppf(0.975, B6.size - 2)
    q = stats.linregress(np.log(B6), np.log(fail))
    s = stats.linregress(np.log(B6), np.log(fail / prog))
    q_ci = (q.slope - t * q.stderr, q.slope + t * q.stderr)
    s_ci = (s.slope - t * s.stderr, s.slope + t * s.stderr)
    assert s_ci[0] < 0 < s_ci[1]
    assert (q_ci[0] > 0) == tied and q_ci[1] > 0  # the premise: straddles or lies above
    info = forms.failure_forms(B6, fail, prog, prog)
    assert info["chosen_by"] == ("tests" if tied else "left-out error")
    if tied:
        assert info["chosen"] == "coupled"
