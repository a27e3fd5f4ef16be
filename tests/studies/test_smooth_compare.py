"""tools/smooth_compare.py: a summary row meets the practitioner goal's criteria as the study's
own goal line judges them (practitioner.misses), each criterion alone failing it, and the
--eval-noise claims' subset (coverage, enough predictions, width) blind to the errors."""
import pytest

from tests.helpers import load_script

tool = load_script("tools/smooth_compare.py")

OK = {"model": "m", "rule": "both", "median_abs_error_2x": 0.10, "median_abs_error_8x": 0.15,
      "coverage_95": 0.90, "coverage_95_never_as_miss": 0.90, "scored": 40,
      "median_width": 2.0}  # every criterion at its boundary: met


@pytest.mark.parametrize("change,four,three", [
    ({}, True, True),
    ({"median_abs_error_8x": 0.1501}, False, True),
    ({"median_abs_error_2x": 0.1501}, False, True),
    ({"median_abs_error_8x": None}, False, True),  # no 8x median: the goal is not shown met
    ({"coverage_95": 0.8999, "coverage_95_never_as_miss": 0.8999}, False, False),
    ({"coverage_95_never_as_miss": 0.5}, True, True),  # not among the four
    ({"scored": 39}, False, False),
    ({"median_width": 2.0001}, False, False)])
def test_meets_reads_the_goals_criteria(change, four, three):
    row = {**OK, **change}
    assert tool.meets(row) is four
    assert tool.meets(row, ("coverage", "scored", "width")) is three
