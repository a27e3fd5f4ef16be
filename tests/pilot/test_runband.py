"""twoclock/pilot/runband.py: one run's band about the progress median.

Oracles: hand arithmetic (the pooled SD of two runs a batch is |ln(a / b)| / sqrt(2) per batch;
the band's ends by the formula with published quantiles: the normal's 1.959964 and Student's
t at 3 dof, 3.182446), logs whose clocks are exact (acc = s / P crosses 1 at P, a logged
point), and a Monte Carlo of lognormal runs about an Adam-form median whose coverage must reach
the band's level within 3 standard errors."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from tests.helpers import plan_main
from tests.pilot.test_logs_as_they_are import PILOTS, _log
from twoclock.pilot import forms, logs as pl, runband
from twoclock.pilot.config import LogsInput
from twoclock.pilot.plan import PilotError
from twoclock.pilot.result import Rule

Z975, T975_3 = 1.959963984540054, 3.182446305284263


def test_measured_pools_unequal_batches_in_any_order():
    # batch 128: 100, 100, 400 (devs -ln4/3, -ln4/3, 2 ln4/3); batch 64: 200, 100 (+-ln2/2);
    # batch 32: one run, no dof. SS = ln2^2 / 2 + 8 ln2^2 / 3, dof 1 + 2
    got = runband.measured([128, 64, 32, 128, 64, 128], [100, 200, 50, 100, 100, 400])
    assert got["dof"] == 3
    assert got["scatter"] == pytest.approx(math.log(2) * math.sqrt((1 / 2 + 8 / 3) / 3),
                                           rel=1e-12)
    assert runband.measured([8, 16, 32], [1, 2, 3]) is None  # one run a batch


def test_quantiles_are_the_published_ones():
    assert runband.quantile(0.95, None) == pytest.approx(Z975, rel=1e-9)
    assert runband.quantile(0.95, 3) == pytest.approx(T975_3, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 1.0), st.floats(0.0, 1.5), st.floats(0.0, 1.5))
@example(0.2, math.log(2), math.log(3))
@example(0.01, 0.0, 0.0)  # a point band: one run's band is the scatter's alone
def test_band_by_hand(s, a, b):
    m = 1000.0
    got = runband.band({"median": m, "ci": [m * math.exp(-a), m * math.exp(b)]},
                       runband.given(s), 0.95)
    assert got["ci"][0] == pytest.approx(m * math.exp(-math.sqrt(a * a + (Z975 * s) ** 2)),
                                         rel=1e-9)
    assert got["ci"][1] == pytest.approx(m * math.exp(math.sqrt(b * b + (Z975 * s) ** 2)),
                                         rel=1e-9)
    assert got["dof"] is None and got["source"] == "--run-scatter"


def test_open_ends_stay_open_and_no_scatter_no_band():
    info = {"scatter": 0.1, "dof": 3, "source": "x"}
    got = runband.band({"median": 10.0, "ci": [None, None]}, info, 0.95)
    assert got["ci"] == [None, None]
    got = runband.band({"median": 10.0, "ci": [5.0, None]}, info, 0.95)
    assert got["ci"][0] == pytest.approx(10 * math.exp(-math.sqrt(math.log(2) ** 2
                                                                  + (T975_3 * 0.1) ** 2)))
    assert runband.band({"median": 10.0, "ci": [5.0, 20.0]}, None, 0.95) is None
    assert runband.band({"median": None, "ci": [None, None]}, info, 0.95) is None


# the logs of test_logs_as_they_are: two runs a batch, clocks exactly P
SIGMA = math.sqrt((math.log(1100 / 1000) ** 2 + math.log(1250 / 1200) ** 2
                   + math.log(1500 / 1400) ** 2) / 2 / 3)


def test_a_plan_from_two_runs_a_batch_measures_the_scatter(tmp_path):
    out = pl.plan_logs(_log(tmp_path / "l.csv"), "acc>=1", [], predict=[64, 128])
    for p in out["predictions"]:
        rb, (lo, hi) = p["run_band"], p["progress_samples"]["ci"]
        m = p["progress_samples"]["median"]
        assert rb["scatter"] == pytest.approx(SIGMA, rel=1e-9) and rb["dof"] == 3
        w = lambda h: math.sqrt(h * h + (T975_3 * SIGMA) ** 2)
        assert rb["ci"] == pytest.approx([m * math.exp(-w(math.log(m / lo))),
                                          m * math.exp(w(math.log(hi / m)))], rel=1e-9)


def test_run_scatter_given_overrides_and_one_run_a_batch_gets_a_band(tmp_path, capsys):
    one = [p for p in PILOTS if p[0] in "ace"]  # one run a batch
    path = _log(tmp_path / "l.csv", one)
    assert all(p["run_band"] is None
               for p in pl.plan_logs(path, "acc>=1", [], predict=[64])["predictions"])
    got = pl.plan_logs(path, "acc>=1", [], predict=[64], run_scatter=0.3)["predictions"][0]
    assert got["run_band"]["scatter"] == 0.3 and got["run_band"]["dof"] is None
    main = plan_main("plan_runband")
    assert main(["--logs", path, "--progress", "acc>=1", "--predict", "64", "--no-figure",
                 "--out", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    assert "one run a batch: each band is for the median" in text and "one run's 95%" not in text
    assert main(["--logs", path, "--progress", "acc>=1", "--predict", "64", "--run-scatter",
                 "0.3", "--no-figure", "--out", str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    lo, hi = got["run_band"]["ci"]
    assert f"one run's 95% band (a run's log clock scatters by 0.3 about its batch's, from " \
           f"--run-scatter): B 64 [{lo:.4g}, {hi:.4g}]" in text
    assert "one run a batch: each band" not in text


@pytest.mark.parametrize("bad", [0.0, -0.1, 3.5, float("nan"), float("inf")])
def test_a_bad_run_scatter_is_refused_in_one_line(tmp_path, bad):
    path = _log(tmp_path / "l.csv")
    with pytest.raises(PilotError, match=r"^--run-scatter: the SD of a run's log clock"):
        pl.plan_logs(path, "acc>=1", [], predict=[64], run_scatter=bad)
    with pytest.raises(ValueError, match=r"^--run-scatter must be in \(0, 3\]"):
        LogsInput(path=path, progress="acc>=1", run_scatter=bad)


def test_one_runs_band_covers_one_run_at_its_level():
    # runs scattered lognormally (sigma 0.25) about an Adam-form median, four a pilot batch at
    # 1, 2, 4, one held-out run at 8; 400 draws. The run band must cover one run at 95% within
    # 3 standard errors (sqrt(0.95 0.05 / 400) = 0.011: at least 0.917); the median's band
    # alone, which leaves the run's own scatter out, covers less
    rng, sigma, draws = np.random.default_rng(3), 0.25, 400
    N = lambda b: np.sqrt(b * (b + 2.0))
    B = np.repeat([1.0, 2.0, 4.0], 4)
    run_in = med_in = 0
    for _ in range(draws):
        obs = N(B) * np.exp(sigma * rng.standard_normal(B.size))
        band = forms.adam_clock(B, obs, np.ones(B.size), np.ones(B.size),
                                Rule(0.0, 1.0, 1.0, 0)).band(np.array([8.0]), 0.95)[0]
        run = float(N(8.0) * math.exp(sigma * rng.standard_normal()))
        rb = runband.band(band, runband.measured(B, obs), 0.95)["ci"]
        run_in += rb[0] <= run <= rb[1]
        med_in += band["ci"][0] <= run <= band["ci"][1]
    assert run_in / draws >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / draws), run_in / draws
    assert med_in < run_in


def test_first_point_runs_used_at_their_bound_are_no_seeds(tmp_path):
    # two runs past the target at their first logged point at B 32 (each used at its bound's
    # geometric middle, pilot/clocks.bounded): their spread is the bounds', not a seed's, so the
    # scatter comes from B 8 and 16 alone (dof 2)
    from tests.pilot.test_first_point_bound import LATE, TWO
    late2 = ("h", 32, 0.02, 1450, 7000, 1600)
    out = pl.plan_logs(_log(tmp_path / "l.csv", TWO + [LATE, late2]), "acc>=1", [],
                       predict=[64])
    assert len(out["logs"]["progress_first_point"]) == 2
    rb = out["predictions"][0]["run_band"]
    assert rb["dof"] == 2
    assert rb["scatter"] == pytest.approx(math.sqrt((math.log(1100 / 1000) ** 2
                                                     + math.log(1250 / 1200) ** 2) / 2 / 2))
