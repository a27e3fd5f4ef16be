"""Does the pilots' progress metric turn back (twoclock/pilot/erosion.py), and what
`--progress-form auto` plans with then. Hand values: the least-squares slope of four points and
its t statistic worked on paper below; the plans compared with the planner's own plans of the
same log under the form auto should have chosen."""
import csv
import json
import math

import pytest

from tests.helpers import plan_main
from twoclock.pilot import erosion, logs as pl
from twoclock.pilot.config import LogsInput, PlanConfig
from twoclock.pilot.plan import PilotError

# Four tail points at samples 5..8 (x = -1.5, -0.5, 0.5, 1.5 about their mean, Sxx = 5):
# v = 1, 3, 2, 4: mean 2.5, Sxy = 4, slope 0.8, residuals -0.3, 0.9, -0.9, 0.3, SSE 1.8,
# sd sqrt(1.8 / 2), SE sd / sqrt(5), t = 0.8 / (sqrt(0.9) / sqrt(5)) = 1.88562
T_A = 0.8 / (math.sqrt(0.9) / math.sqrt(5))
# v = 0, 1, 2, 4: mean 1.75, Sxy 6.5, slope 1.3, residuals 0.2, -0.1, -0.4, 0.3, SSE 0.3,
# t = 1.3 / (sqrt(0.15) / sqrt(5)) = 7.50555
T_C = 1.3 / (math.sqrt(0.15) / math.sqrt(5))


class Run:
    def __init__(self, name, values, metric="loss"):
        self.name, self.samples_R = name, [float(s) for s in range(1, len(values) + 1)]
        self.metrics = {metric: [float(v) for v in values]}


def test_the_trend_is_read_from_the_last_half_of_the_points_by_hand():
    # eight points: the first four (wild) are not read; the t of the last four is T_A
    assert erosion.trend_t(range(1, 9), [100, -50, 7, 0, 1, 3, 2, 4]) == pytest.approx(
        T_A, rel=1e-12)
    assert T_A == pytest.approx(1.88562, abs=1e-5) and T_C == pytest.approx(7.50555, abs=1e-5)
    # nine points: ceil(4.5) = 5 read; the four above after one more point whose own line
    # differs, so a reader of four gives T_A and a reader of five does not
    five = erosion.trend_t(range(1, 10), [9, 9, 9, 9, 5, 1, 3, 2, 4])
    assert five != pytest.approx(T_A, rel=1e-3) and five < 0  # 5 -> ~2.5: it falls


@pytest.mark.parametrize("values, want", [
    ([1, 2, 3], math.nan),                # fewer than 4 points: no trend
    ([5, 5, 5, 5, 5, 5], math.nan),        # flat and exact: no scatter, no slope
    ([0, 0, 0, 1, 2, 3, 4, 5], math.inf),  # an exact rising line: infinitely sure
    ([9, 9, 9, 9, 4, 3, 2, 1], -math.inf),
])
def test_degenerate_tails(values, want):
    got = erosion.trend_t(range(1, len(values) + 1), values)
    assert (math.isnan(got) if math.isnan(want) else got == want), (values, got)


def test_the_runs_are_pooled_as_stouffer_and_signed_away_from_the_target():
    a, c = Run("a", [0, 0, 0, 0, 1, 3, 2, 4]), Run("c", [0, 0, 0, 0, 0, 1, 2, 4])
    neg = Run("n", [0, 0, 0, 0, -1, -3, -2, -4])
    e = erosion.test([a, c], "loss", "<=")  # a loss that rises: away from its target
    assert e.z == pytest.approx((T_A + T_C) / math.sqrt(2), rel=1e-12) and e.turns_back
    assert dict(e.runs) == pytest.approx({"a": T_A, "c": T_C}, rel=1e-12)
    # the same curves as an accuracy (>=): rising is toward the target, so z is negative
    up = erosion.test([a, c], "loss", ">=")
    assert up.z == pytest.approx(-e.z, rel=1e-12) and not up.turns_back
    # one run away, its mirror toward: z = 0, not turning back
    assert erosion.test([a, neg], "loss", "<=").z == pytest.approx(0.0, abs=1e-12)
    # a run too short for a trend is left out of the pool (sqrt(1), not sqrt(2))
    short = Run("s", [1, 2, 3])
    one = erosion.test([c, short], "loss", "<=")
    assert one.z == pytest.approx(T_C, rel=1e-12) and [r for r, _ in one.runs] == ["c"]
    # the threshold is strict: z of one run at T_A (1.89) does not turn back at Z = 3
    assert not erosion.test([a], "loss", "<=").turns_back and erosion.Z == 3.0
    assert math.isnan(erosion.test([short], "loss", "<=").z)


# A log whose accuracy rises to a peak and then falls (drift), and one that keeps rising:
# acc = s / P up to 1.5 P, then 1.5 - 0.5 (s - 1.5 P) / P, with a +-0.002 wiggle so that no
# tail is an exact line. Pilots at B 8, 16, 32 (sqrt rule), the target acc >= 1 at s = P.
PILOTS = [("a", 8, 0.01, 1000), ("c", 16, 0.0141421356, 1200), ("e", 32, 0.02, 1500),
          ("f", 32, 0.02, 1400)]


def _log(path, peak: bool):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "batch", "lr", "samples", "acc"])
        for run, b, lr, P in PILOTS:
            for k, s in enumerate(range(100, 8001, 100)):
                acc = s / P if not peak or s <= 1.5 * P else 1.5 - 0.5 * (s - 1.5 * P) / P
                w.writerow([run, b, f"{lr:.10g}", s, f"{acc + 0.002 * (-1) ** k:.12g}"])
    return str(path)


@pytest.mark.parametrize("peak, chosen", [(True, None), (False, "adam")])
def test_auto_plans_a_metric_that_turns_back_with_the_default_forms(tmp_path, peak, chosen):
    path = _log(tmp_path / "l.csv", peak)
    auto = pl.plan_logs(path, "acc>=1", [], predict=[64, 256], progress_form="auto")
    same = pl.plan_logs(path, "acc>=1", [], predict=[64, 256], progress_form=chosen)
    assert auto["logs"]["erosion"]["turns_back"] is peak
    assert auto["logs"]["progress_form"] == {"asked": "auto", "chosen": chosen or "default"}
    assert [p["progress_samples"] for p in auto["predictions"]] == \
        [p["progress_samples"] for p in same["predictions"]]
    assert auto["fit"]["progress"]["form"] == same["fit"]["progress"]["form"]
    assert "progress_form" not in same["logs"]  # written only where auto was asked
    assert same["logs"]["erosion"] == auto["logs"]["erosion"]


def test_the_printout_says_the_metric_turns_back(tmp_path, capsys):
    path = _log(tmp_path / "l.csv", True)
    assert plan_main("plan_auto")(["--logs", path, "--progress", "acc>=1", "--progress-form",
                                   "auto", "--no-figure", "--out", str(tmp_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "turns back" in x)
    assert line.strip().startswith("acc turns back: over the last 50% of their points")
    assert "(chosen here)" in line
    with open(tmp_path / "plan.json") as f:
        e = json.load(f)["logs"]["erosion"]
    assert e["z"] > 3 and len(e["runs"]) == 4


def test_auto_refuses_what_needs_adams_form_in_one_line_where_it_chose_the_default(tmp_path):
    path = _log(tmp_path / "l.csv", True)
    with pytest.raises(PilotError, match=r"^--predict-rule: needs Adam's form, and "
                                         r"--progress-form auto chose the default forms"):
        pl.plan_logs(path, "acc>=1", [], progress_form="auto", predict_rule="fixed")
    with pytest.raises(PilotError, match=r"^--progress-form: auto chose the default forms .*"
                                         r"give one --progress target$"):
        from twoclock.pilot import config
        config.plan(PlanConfig(logs=LogsInput(path=path, progress="acc>=1 acc>=0.8"),
                               progress_form="auto"))
    # on a metric that does not turn back, auto is the Adam form: the same flag is taken
    rising = _log(tmp_path / "r.csv", False)
    got = pl.plan_logs(rising, "acc>=1", [], progress_form="auto", predict_rule="fixed")
    assert got["logs"]["progress_form"]["chosen"] == "adam"


def test_auto_needs_the_logged_curves():
    with pytest.raises(ValueError, match=r"^--progress-form must be adam or left out without --logs "
                                         r"LOGS.csv \(auto reads the logged curves\)"):
        PlanConfig(progress_form="auto")
