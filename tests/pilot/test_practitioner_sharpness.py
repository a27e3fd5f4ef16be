"""tools/practitioner_sharpness.py: the prior is the median of the fitted sharpnesses taken to
fit.SHARPNESS's nearest point in log m, and the fit counts the runs that never arrived.

Oracles: logs by hand, and clocks made exactly on the m = 1 form."""
import math

import numpy as np
import pytest

from tests.helpers import load_script
from twoclock.pilot import fit as pf

ps = load_script("tools/practitioner_sharpness.py")


def test_the_prior_is_the_nearest_grid_point_in_log_m():
    # the six fits measured (quadratic 1, 1; bandit 0.8909, 1; policy 0.7937, 0.63): median
    # (0.8909 + 1) / 2 = 0.94545; |ln 0.94545| = 0.0561 < |ln(0.94545 / 0.8909)| = 0.0594, so
    # 1 (on a line the median of two neighbours is midway: a tie, which argmin gives to 0.8909)
    ms = [1.0, 1.0, 0.890899, 1.0, 0.793701, 0.629961]
    assert ps.prior(ms) == 1.0
    assert abs(math.log(0.945449 / 0.890899)) > abs(math.log(0.945449))
    # a median on a grid point is that point; between 0.7937 and 0.8909 the log-middle splits
    assert ps.prior([0.793701]) == pytest.approx(0.793701)
    lo, hi = 0.793701, 0.890899
    mid = math.sqrt(lo * hi)
    assert ps.prior([mid * 0.999]) == pytest.approx(lo) and ps.prior([mid * 1.001]) == \
        pytest.approx(hi)


def test_the_fit_reads_every_run_that_arrived_and_counts_the_rest():
    # clocks on the m = 1 Adam form under a fixed lr: N = sqrt(m (m + B_n)) / lr, B_n 50
    B, lr = np.array([8.0, 16.0, 32.0]), np.full(3, 0.01)
    n = np.sqrt(B * (B + 50.0)) / 0.01
    n_BxS = np.repeat(n[:, None], 3, axis=1)
    n_BxS[2, 2] = 0.0  # a run that never arrived
    got = ps.fitted_m(B, lr, n_BxS, 0.0, 0.01)
    assert got["runs"] == 8 and got["never"] == 1
    assert got["m"] == 1.0 and max(pf.SHARPNESS) == 1.0
    assert got["median_clocks"][2] == pytest.approx(n[2])
