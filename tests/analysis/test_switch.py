"""The switch planner's pieces by hand: seconds under a schedule, who reached first on a tie,
the failure fraction of each option, the equal-progress remainder on a bumpy curve, and which
safe switch is the fastest when B1 fails first."""
import math

import numpy as np
import pytest

from tests.helpers import assert_close
from twoclock.analysis import switch as pl
from twoclock.config import Schedule


def test_seconds_to_prices_each_stage_at_its_own_throughput():
    # switch 100 samples at B1 = 8: 12 whole updates, 96 samples; B2 = 32 is 4x cheaper per sample
    spp = {8: 1.0, 32: 0.25}.get
    got = pl.seconds_to([50, 96, 200, 0], Schedule(8, 32, 100), spp)
    assert_close(got, [50.0, 96.0, 96 + 104 * 0.25, 0.0], rtol=1e-12, atol=0, what="seconds")


def test_a_tie_with_the_failure_clock_is_not_reaching_first():
    got = pl.reached_first(np.array([100, 100, 100, 0, 100]), np.array([100, 101, 0, 50, 99]))
    assert got.tolist() == [False, True, True, False, False]


def test_failure_fraction_of_each_option_by_hand():
    """Option failure fractions: S / N_fail(B1) + rest / N_fail(B2), with the clock-fraction
    rest(S) = (1 - S / N_prog(B1)) N_prog(B2)."""
    small, large = pl.Clocks(8, 1000.0, 2000.0), pl.Clocks(64, 1500.0, 1200.0)
    plan = pl.plan_switch(small, large, {8: 1.0, 64: 0.5}.get, margin=0.1)
    opts = {o.kind: o for o in plan.options}
    assert_close(opts["constant_small"].failure_fraction, 0.5, rtol=1e-12, atol=0)
    assert_close(opts["constant_large"].failure_fraction, 1.25, rtol=1e-12, atol=0)
    S = opts["schedule"].switch
    rest = (1 - S / 1000) * 1500
    assert_close(opts["schedule"].failure_fraction, S / 2000 + rest / 1200, rtol=1e-12, atol=0)
    assert_close(opts["schedule"].seconds, S * 1.0 + rest * 0.5, rtol=1e-12, atol=0)
    # the fastest safe schedule is the earliest switch with S/2000 + rest/1200 <= 0.9
    s_min = (1500 / 1200 - 0.9) / (1500 / 1000 / 1200 - 1 / 2000)
    assert s_min <= S <= s_min + 1000 / 400 + 1e-9


def test_curve_remaining_on_a_curve_that_rises_before_it_falls():
    """B2's logged loss 0.8, 0.9, 0.5 at 100, 200, 300 samples: its running minimum 0.8, 0.8,
    0.5 first reaches B1's level 0.7 between 200 and 300, a third of the way: S2 = 233.3."""
    small, large = pl.Clocks(8, 200.0, math.inf), pl.Clocks(64, 300.0, math.inf)
    rest = pl.curve_remaining(small, large, ([100.0, 200.0], [0.7, 0.4]),
                              ([100.0, 200.0, 300.0], [0.8, 0.9, 0.5]))
    assert_close(rest(100.0), 300 - (200 + 100 / 3), rtol=1e-12, atol=0, what="rest(100)")
    assert rest(200.0) == 0.0


def test_latest_safe_switch_when_the_small_batch_fails_first():
    """B1 fails at 900 samples before its target at 1000; B2 never fails but costs 2x per
    sample: time S + 2 (1000 - S) falls with S, so the best switch is the latest safe one,
    S = 900 (1 - margin) = 810 (on the grid: 1000 / 400 * 324)."""
    small, large = pl.Clocks(8, 1000.0, 900.0), pl.Clocks(64, 1000.0, math.inf)
    plan = pl.plan_switch(small, large, {8: 1.0, 64: 2.0}.get, margin=0.1)
    assert plan.best.kind == "schedule"
    assert_close(plan.best.switch, 810.0, rtol=1e-9, atol=0, what="switch")
    assert_close(plan.best.seconds, 810 + 2 * 190, rtol=1e-9, atol=0, what="seconds")
    assert plan.safe_switches[0] == pytest.approx(2.5)


def test_no_switch_comes_before_min_switch():
    """The planner switches after at least one rollout batch of B1 (min_switch = B1). B2 is 4x
    cheaper per sample and never fails, so without the bound the fastest schedule is the
    earliest switch on the grid (1000 / 400 = 2.5 samples); with min_switch 8 every schedule
    option's switch is at least 8, and the best is the earliest, 8 itself."""
    small, large = pl.Clocks(8, 1000.0, math.inf), pl.Clocks(64, 1000.0, math.inf)
    spp = {8: 1.0, 64: 0.25}.get
    free = pl.plan_switch(small, large, spp, margin=0.1, objective="seconds")
    opts = {o.kind: o for o in free.options}
    assert opts["schedule"].switch == pytest.approx(2.5)
    bound = pl.plan_switch(small, large, spp, margin=0.1, objective="seconds", min_switch=8.0)
    opts = {o.kind: o for o in bound.options}
    assert opts["schedule"].switch == pytest.approx(8.0)
    # a bound at or past B1's clock leaves no schedule to search
    none = pl.plan_switch(small, large, spp, margin=0.1, min_switch=1000.0)
    assert "schedule" not in {o.kind for o in none.options}
    with pytest.raises(ValueError, match="min_switch"):
        pl.plan_switch(small, large, spp, min_switch=-1.0)
