"""The log check's accuracy goal, judged against each answer's own 95% CI: within when the
prediction is within the goal of every answer in it, outside when of none, open otherwise."""
import pytest

from twoclock.pilot import report
from twoclock.studies.planner import logs_check


def _row(answer, ci, predicted, batch=512, clock="c>=1"):
    rel = None if answer is None else predicted / answer - 1
    return {"batch": batch, "clock": clock, "measured_ci": ci,
            "vs_logged": {"measured": answer, "predicted": predicted, "rel_error": rel}}


def test_the_goal_is_fifteen_percent():
    # the goal, and the disagreement line's threshold follows it
    assert report.GOAL == 0.15 and report.FORMS_DISAGREE == report.GOAL


# a prediction of 1000 is within 15% of the answers a with 1000 / 1.15 <= a <= 1000 / 0.85,
# i.e. [869.57, 1176.47] (by hand)
@pytest.mark.parametrize("ci, expected", [
    ((900, 1100), "within"),
    ((870, 1176), "within"),       # just inside both ends
    ((869, 1100), "open"),         # the low end just outside: not established
    ((1000, 1177), "open"),        # the high end just outside
    ((700, 1300), "open"),         # a random walk's answer, wider than the goal
    ((1180, 1300), "outside"),     # every answer in the CI more than 15% above...
    ((700, 869), "outside"),       # ...or below
    ((900, None), "open"),         # censored above: could be anywhere higher
    ((1200, None), "outside"),
    ((None, 800), "outside"),
    (None, "open"),
])
def test_the_goal_is_judged_against_every_answer_in_the_ci(ci, expected):
    # the median itself (1000, 1100 or 800) does not decide: only the CI does
    assert logs_check.verdict(_row(1000.0, ci, 1000.0)) == expected


def test_a_censored_answer_has_no_verdict():
    assert logs_check.verdict(_row(None, None, 1000.0)) is None


def test_goal_sorts_the_predictions_and_says_why_in_one_line_each():
    rows = [_row(1000.0, (990, 1010), 1100.0, clock="p"),             # +10%: within
            _row(1000.0, (990, 1010), 1140.0, clock="q"),             # +14%, +15.2% off 990
            _row(4000.0, (2500, 5800), 6000.0, batch=1024, clock="d"),  # +50%, wide answer
            _row(3665.0, (3225, 4418), 5861.0, clock="d"),            # the 512-seed drift
            _row(None, None, 3000.0, clock="never")]                  # censored: no verdict
    g = logs_check.goal(rows)
    assert [r["clock"] for r in g["within"]] == ["p"]
    assert [(r["batch"], r["clock"]) for r in g["outside"]] == [(512, "d")]
    assert [(r["batch"], r["clock"]) for r in g["open"]] == [(512, "q"), (1024, "d")]
    assert g["open"][1]["answer_ci_rel"] == pytest.approx([2500 / 4000 - 1, 5800 / 4000 - 1])
    assert logs_check.goal_lines(g, 64) == [
        "the 15% goal against each answer's 95% CI: within 1, outside 1, open 2",
        "  outside at B 512 d: +59.9%, and more than 15% off every answer in its CI "
        "(-12% / +21%)",
        "  open at B 512 q: +14.0%, but its answer (64 seeds) is known only to -1% / +1%: "
        "more held-out seeds (--seeds) narrow it",
        "  open at B 1024 d: +50.0%, but its answer (64 seeds) is known only to -38% / +45%: "
        "more held-out seeds (--seeds) narrow it"]
