"""--eval-items N: an evaluation's binomial noise as the progress clock's crossing noise
(twoclock.pilot.evalnoise), against hand computations.

Each run's accuracy rises linearly, acc = level x s / N_i, so at its crossing of `level` the
metric is p = level and its slope is level / N_i: by hand the crossing's sd in log samples is
sqrt(p (1 - p) / items) / (level / N_i x N_i) = sqrt(p (1 - p) / items) / level, the same for
every run."""
import json
import math

import numpy as np
import pytest

from tests.pilot.test_logs_adam import _log
from twoclock.pilot import api, fit as pf
from twoclock.pilot.plan import PilotError

RUNS = [(b, 1e-3, 1) for b in (64, 64, 128, 128, 256, 256, 512, 512)]


def test_the_crossing_sd_by_hand(tmp_path):
    path = _log(tmp_path, RUNS, target=0.4)  # logged up to acc 0.8
    out = api.plan_logs(path, "acc>=0.4", [], predict=[1024], eval_items=1000).to_json()
    got = out["logs"]["eval_noise"]
    # sqrt(0.4 x 0.6 / 1000) / 0.4 = 0.0154919334 / 0.4
    assert got["crossing_sd"] == pytest.approx(0.03872983346207417, rel=1e-9)
    assert got["items"] == 1000 and got["used"] == "crossing"
    # the residuals' sd: sqrt(SSE / dof) of the chosen form, as plan.json's fit.progress has it
    fp = out["fit"]["progress"]
    assert got["residual_sd"] == pytest.approx(
        math.sqrt(fp["sse_log"][fp["form"]] / fp["dof"]), rel=1e-12)
    assert got["residual_sd"] < got["crossing_sd"]


def test_the_band_takes_t_squared_times_the_floor_over_the_minimum():
    """With the floor above SSE / dof, the profile region is SSE <= SSE_min + t^2 floor: at
    the best fit the intercept may move by t sqrt(floor / n) (SSE grows by n x shift^2)."""
    B = np.repeat([64.0, 128.0, 256.0, 512.0], 2)
    N = 1e3 * np.sqrt(B * (B + 100.0)) * np.exp(1e-4 * (-1.0) ** np.arange(8))
    f = pf.fit_progress(B, N, "saturation", 0.0)
    assert f.dof == 6
    floor = 1e-3
    from dataclasses import replace
    _, _, w, _ = replace(f, floor=floor)._region(0.95)
    t = 2.446911848791681  # Student t, 0.975 quantile, 6 degrees of freedom (tables)
    assert w.max() == pytest.approx(t * math.sqrt(floor / 8), rel=1e-4)
    # twice SSE / dof (still below SSE with 6 degrees of freedom): the floor, not SSE / dof
    _, _, w2, _ = replace(f, floor=2 * f.sse / f.dof)._region(0.95)
    assert w2.max() == pytest.approx(t * math.sqrt(2 * f.sse / f.dof / 8), rel=1e-3)
    # a floor below SSE / dof changes nothing
    _, _, w0, _ = f._region(0.95)
    _, _, w1, _ = replace(f, floor=0.5 * f.sse / f.dof)._region(0.95)
    assert np.array_equal(w0, w1)


def test_a_floor_below_the_residuals_leaves_the_plan_as_it_was(tmp_path):
    path = _log(tmp_path, RUNS)
    base = api.plan_logs(path, "acc>=0.5", [], predict=[1024]).to_json()
    huge = api.plan_logs(path, "acc>=0.5", [], predict=[1024], eval_items=10 ** 12).to_json()
    assert huge["logs"]["eval_noise"]["used"] == "residual"
    assert huge["predictions"] == base["predictions"]
    noisy = api.plan_logs(path, "acc>=0.5", [], predict=[1024], eval_items=100).to_json()
    lo, hi = noisy["predictions"][0]["progress_samples"]["ci"]
    blo, bhi = base["predictions"][0]["progress_samples"]["ci"]
    assert lo < blo and hi > bhi  # wider where the evaluation is noisier than the residuals
    assert noisy["predictions"][0]["progress_samples"]["median"] == \
        base["predictions"][0]["progress_samples"]["median"]  # the median is the fit's


def test_the_flag_reaches_plan_json_and_bad_input_is_one_line(tmp_path, capsys):
    from twoclock.cli.plan import main
    path = _log(tmp_path, RUNS)
    assert main(["--logs", path, "--progress", "acc>=0.5", "--eval-items", "1000", "--predict",
                 "1024", "--no-figure", "--quiet", "--out", str(tmp_path / "o")]) == 0
    out = json.loads((tmp_path / "o" / "plan.json").read_text())
    assert out["logs"]["eval_noise"]["crossing_sd"] == pytest.approx(math.sqrt(0.25 / 1000) / 0.5)
    with pytest.raises(SystemExit) as e:
        main(["--logs", path, "--progress", "acc>=0.5", "--eval-items", "0", "--no-figure",
              "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "\n" not in err and "--eval-items" in err
    with pytest.raises(PilotError, match="--eval-items: a whole number"):
        api.plan_logs(path, "acc>=0.5", [], eval_items=2.5)


def test_a_metric_outside_zero_one_is_refused(tmp_path):
    path = _log(tmp_path, RUNS)  # acc reaches 0.5 x 2.0 = 1.0 at most: inside
    scaled = tmp_path / "pct.csv"
    with open(path) as f:
        lines = f.read().splitlines()
    rows = [lines[0]] + [",".join(r.split(",")[:-1] + [repr(100 * float(r.split(",")[-1]))])
                         for r in lines[1:]]
    scaled.write_text("\n".join(rows) + "\n")
    with pytest.raises(PilotError, match=r"--eval-items: acc must lie in \[0, 1\]"):
        api.plan_logs(str(scaled), "acc>=50", [], eval_items=1000)
