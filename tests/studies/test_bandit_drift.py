"""tools/bandit_drift.py: its cells, its kappa and its claims by hand, on rows built here (the
simulations behind the published table take minutes; docs/plan.md, "A practitioner's sweep")."""
import math

import pytest

from tests.helpers import load_script

bd = load_script("tools/bandit_drift.py")


def test_cells_parse_and_bad_ones_are_refused_in_one_line():
    assert bd.parse_cells("drift_scale=0 drift_scale=0.25,drift_noise=100") == [
        {"drift_scale": 0.0}, {"drift_scale": 0.25, "drift_noise": 100.0}]
    for text, words in [("foo=1", "a knob among"), ("drift_noise=0", "> 0"),
                        ("drift_bias=-1", ">= 0"), ("drift_scale=nan", "finite"),
                        ("drift_scale=x", "finite"), ("  ", "at least one cell")]:
        with pytest.raises(SystemExit, match=words):
            bd.parse_cells(text)


def test_kappa_by_hand():
    # the defaults: 0.25 x 0.05 / sqrt(25) = 0.0025; halving the scale or the bias, or
    # quadrupling the noise, halves it; doubling the scale with 4x the noise keeps it
    assert math.isclose(bd.kappa({}), 0.0025)
    for cell in ({"drift_scale": 0.125}, {"drift_bias": 0.025}, {"drift_noise": 100.0}):
        assert math.isclose(bd.kappa(cell), 0.00125), cell
    assert math.isclose(bd.kappa({"drift_scale": 0.5, "drift_noise": 100.0}), 0.0025)
    assert bd.kappa({"drift_scale": 0.0}) == 0.0


def test_a_cells_flags_are_the_studys():
    a = bd.argv({"drift_scale": 0.125, "drift_bias": 0.1}, "F", 32)
    assert a[a.index("--drift-scale") + 1] == "0.125" and a[a.index("--drift-bias") + 1] == "0.1"
    assert a[a.index("--designs") + 1] == "32" and a[a.index("--out") + 1] == "F"
    assert a[a.index("--progress-form") + 1] == "adam" and a[a.index("--models") + 1] == "bandit"


def _row(rule, seed, times, err, covered=True):
    """A study row (practitioner.model_rows' keys); err None: the answer never came."""
    base = {"model": "bandit", "rule": rule, "seed": seed, "batch": 256 * times,
            "times_largest_pilot": times, "refused": None}
    if err is None:
        return {**base, "measured": None, "ci": [1.0, 2.0]}
    return {**base, "measured": 1000.0, "predicted": 1000.0 * (1 + err), "rel_error": err,
            "covered": covered, "width": 1.5, "ci": [500.0, 2000.0]}


def _rows(fixed8, sqrt8, seeds=range(20), two=0.05):
    """Every seed at both rules, 2x (error `two`) and 8x (fixed8, sqrt8 per seed)."""
    return [r for s in seeds for r in (_row("fixed", s, 2, two), _row("fixed", s, 8, fixed8(s)),
                                       _row("sqrt", s, 2, two), _row("sqrt", s, 8, sqrt8(s)))]


def test_only_the_designs_from_the_first_on_are_scored():
    # seeds 0-9 err +90% at 8x, seeds 10-19 err -10%: from 10 on the 8x median is -10% signed
    rows = _rows(lambda s: 0.9 if s < 10 else -0.1, lambda s: 0.9 if s < 10 else -0.1)
    cs = bd.cell_rows(rows, 10)
    both = bd.row(cs, "both")
    assert both["scored"] == 40 and math.isclose(both["signed_error_8x"], -0.1)
    assert math.isclose(bd.row(cs, "sqrt")["median_abs_error_8x"], 0.1)
    assert math.isclose(bd.cell_rows(rows, 0)[-1]["signed_error_8x"], 0.4)  # (0.9 - 0.1) / 2
    with pytest.raises(SystemExit, match="--first-design"):
        bd.cell_rows(rows, 20)


@pytest.mark.parametrize("sqrt8,fixed_never,holds", [
    (-0.16, 20, True),     # below -15%, every fixed 8x answer never came
    (-0.15, 20, False),    # at -15%: not below it
    (-0.16, 19, False),    # one fixed 8x answer came
    (+0.16, 20, False)])   # too slow, not too fast
def test_the_miss_claim_at_its_bounds(sqrt8, fixed_never, holds):
    rows = _rows(lambda s: None if s < fixed_never else 0.0, lambda s: sqrt8)
    assert bd.holds("miss", bd.cell_rows(rows, 0)) is holds


@pytest.mark.parametrize("err8,never,holds", [(0.15, 0, True), (0.151, 0, False),
                                              (0.05, 1, False)])
def test_the_under_claim_at_its_bounds(err8, never, holds):
    rows = _rows(lambda s: None if s < never else -err8, lambda s: err8)
    assert bd.holds("under", bd.cell_rows(rows, 0)) is holds


def test_the_met_and_none_claims():
    good = _rows(lambda s: 0.05, lambda s: -0.05)
    assert bd.holds("met", bd.cell_rows(good, 0))
    # one uncovered band in ten: coverage 90% still meets; one in five (80%) does not
    assert bd.holds("met", bd.cell_rows([{**r, "covered": r["seed"] % 10 != 0} for r in good],
                                        0))
    assert not bd.holds("met", bd.cell_rows([{**r, "covered": r["seed"] % 5 != 0}
                                             for r in good], 0))
    nothing = _rows(lambda s: None, lambda s: None, two=None)
    assert bd.holds("none", bd.cell_rows(nothing, 0))
    assert not bd.holds("none", bd.cell_rows(good, 0))
    with pytest.raises(ValueError, match="claim"):
        bd.holds("maybe", bd.cell_rows(good, 0))
