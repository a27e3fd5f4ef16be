"""tools/one_seed_bias.py's analysis (the simulation is the practitioner study's own).

Oracles: hand arithmetic for the pooled seed scatter; clocks that are exactly Adam's form,
which every fit, on all runs or one seed's, must recover (error 0 against the form's own
clocks); a truth moved by a known factor moves every error by that factor."""
import math

import numpy as np
import pytest

from tests.helpers import load_script

osb = load_script("tools/one_seed_bias.py")


def test_scatter_by_hand_with_a_run_that_never_arrived():
    # pilot 1: 100, 200 (devs +-ln2/2); pilot 2: 100, 400, never (0: left out; devs +-ln4/2);
    # SS = ln2^2 / 2 + ln4^2 / 2 = 5 ln2^2 / 2, dof (2 - 1) + (2 - 1)
    N = np.array([[100.0, 200.0, 150.0], [100.0, 400.0, 0.0]])
    N[0, 2] = np.nan  # a third seed only at pilot 2 (nan: no run)
    assert osb.scatter(N) == pytest.approx(math.sqrt(5 * math.log(2) ** 2 / 2 / 2), rel=1e-12)


@pytest.mark.parametrize("p,knee", [(0.0, 0.5), (0.5, 2.0)])
def test_exact_form_clocks_are_recovered_by_every_fit(p, knee):
    pilots, held = [32.0, 64.0, 128.0], [256.0, 1024.0]
    lr = lambda b: 1e-3 * (b / 32.0) ** p
    clock = lambda b: math.sqrt(b * (b + knee * 128.0)) / lr(b)
    N = np.array([[clock(b)] * 4 for b in pilots])  # four seeds, no scatter
    truth = {h: clock(h) for h in held}
    got = osb.analyse(pilots, [lr(b) for b in pilots], N, held, truth, p)
    assert got["knee"] == pytest.approx(knee, rel=1e-6)
    assert max(abs(v) for v in got["all"].values()) < 1e-9
    assert max(abs(x) for v in got["one"].values() for x in v) < 1e-9
    # a truth 25% slower reads as -20% everywhere (1 / 1.25 - 1)
    slow = osb.analyse(pilots, [lr(b) for b in pilots], N, held,
                       {h: 1.25 * t for h, t in truth.items()}, p)
    assert slow["all"][1024.0] == pytest.approx(-0.2, rel=1e-9)
    assert slow["one"][1024.0] == pytest.approx((0.2, -0.2), rel=1e-9)


def test_a_truth_that_never_came_is_not_scored():
    pilots, N = [1.0, 2.0, 4.0], np.array([[1.0, 1.1], [1.5, 1.6], [2.5, 2.4]])
    got = osb.analyse(pilots, [1.0] * 3, N, [8.0, 32.0], {8.0: 4.0, 32.0: None}, 0.0)
    assert got["all"][32.0] is None and 32.0 not in got["one"] and 8.0 in got["one"]


def test_a_pilot_run_that_never_arrived_is_left_out_as_the_scatter_leaves_it():
    # exact form clocks at four seeds; seed 3 never arrived at the middle pilot (0). The fit to
    # every run still recovers the form (error 0), and seed 3 gets no one-seed fit: the others'
    # three (all exact) err 0
    pilots, held = [1.0, 2.0, 4.0], [8.0, 32.0]
    clock = lambda b: math.sqrt(b * (b + 2.0))
    N = np.array([[clock(b)] * 4 for b in pilots])
    N[1, 3] = 0.0
    got = osb.analyse(pilots, [1.0] * 3, N, held, {h: clock(h) for h in held}, 0.0)
    assert max(abs(v) for v in got["all"].values()) < 1e-9
    assert max(abs(x) for v in got["one"].values() for x in v) < 1e-9
