"""--floor-out (twoclock/pilot/floorout.py): on logs of a synthetic family whose floor-aware
clock is known by hand, the plan's prediction is that clock where the plain plan's is not; the
plateaus read; and the one-line refusals."""
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from twoclock.pilot import floorout
from twoclock.pilot.api import plan_logs
from twoclock.pilot.plan import PilotError

# L_b(t) = F_b + D exp(-t / s(b)), F_b = PHI / sqrt(b) (lr 0.01 fixed), s(b) = A sqrt(b (b + B_N))
# samples: by hand the raw crossing of T is s(b) log(D / (T - F_b)) and the floor-aware clock
# at B* is s(B*) log(D / (T - F*)), F* = PHI / sqrt(B*) (tests/pilot/test_adam_floor.py)
PHI, D, A, B_N, T = 0.15, 1.0, 50.0, 30.0, 0.1
s = lambda b: A * math.sqrt(b * (b + B_N))
clock = lambda b, t=T: s(b) * math.log(D / (t - PHI / math.sqrt(b)))


def _logs(batches=(8, 16, 32), points=600, span=14.0, lr=0.01, late=None):
    cols = {"run": [], "batch": [], "lr": [], "samples": [], "loss": []}
    for b in batches:  # logged from the first point after 0 (no step-0 evaluation)
        t = np.linspace(0, span * s(b), points + 1)[1:]
        v = PHI / math.sqrt(b) + D * np.exp(-t / s(b))
        if late == b:  # this run stopped early: its tail still falls
            t, v = t[: points // 4], v[: points // 4]
        for ti, vi in zip(t, v):
            for k, x in zip(cols, (f"r{b}", b, lr, ti, vi)):
                cols[k].append(x)
    return cols


def write_csv(path, **kw) -> str:
    """The synthetic logs as a CSV file (the command's input)."""
    cols = _logs(**kw)
    with open(path, "w", encoding="utf-8") as f:
        f.write(",".join(cols) + "\n")
        f.writelines(",".join(f"{x}" for x in row) + "\n" for row in zip(*cols.values()))
    return str(path)


def _plan(table, **kw):
    return plan_logs(table, f"loss<={T:g}", predict=[128, 256], progress_form="adam",
                     **kw).to_json()


def test_the_floor_aware_plan_predicts_the_hand_clock_where_the_plain_plan_misses():
    out = _plan(_logs(), floor_out=0.0)
    plain = _plan(_logs())
    for p, q, b in zip(out["predictions"], plain["predictions"], (128, 256)):
        want = clock(b)  # by hand, above
        assert p["batch"] == b and abs(p["progress_samples"]["median"] / want - 1) < 2e-3, b
        assert abs(q["progress_samples"]["median"] / want - 1) > 0.01, b
    fo = out["floor_out"]
    # each run's plateau: the tail's mean, F_b within exp(-10.5) D (the tail starts at 10.5 s)
    assert np.allclose([r["plateau"] for r in fo["runs"]],
                       [PHI / math.sqrt(b) for b in (8, 16, 32)], atol=3e-5)
    assert np.allclose([p["plateau"] for p in fo["predictions"]],
                       [PHI / math.sqrt(b) for b in (128, 256)], rtol=1e-3)
    assert math.isclose(fo["phi"] * 0.01, PHI, rel_tol=1e-3)
    assert "floor_out" not in plain
    # each run's floor over the target, by hand PHI / sqrt(b) / T: 0.530, 0.375, 0.265 (the
    # plateaus' 3e-5 over 0.1); the largest is r8's, beyond the 0.361 the quadratic checked
    assert np.allclose([r["floor_over_target"] for r in fo["runs"]],
                       [PHI / math.sqrt(b) / T for b in (8, 16, 32)], atol=3e-4)
    top = fo["floor_over_target"]
    assert top["run"] == "r8" and top["value"] == pytest.approx(PHI / math.sqrt(8) / T, abs=3e-4)
    assert top["line"].startswith("floor over the target: 0.53 at r8") and "beyond" in top["line"]


@pytest.mark.parametrize("optimum,a,target,want", [
    (0.0, [0.02, 0.01], 0.1, [0.2, 0.1]),        # a loss: a / T
    (1.0, [0.8, 0.9], 0.75, [0.8, 0.4]),         # an accuracy: (1 - a) / (1 - T)
    (2.0, [2.5, 2.25], 3.0, [0.5, 0.25])])       # a loss whose minimum is 2
def test_the_floor_over_the_target_by_hand(optimum, a, target, want):
    assert floorout.over_target(a, target, optimum) == pytest.approx(want)


@given(ratio=st.floats(0.0, 2.0))
@example(ratio=floorout.PLAIN_HELD)      # the boundaries belong to the side below them
@example(ratio=math.nextafter(floorout.PLAIN_HELD, 1.0))
@example(ratio=floorout.CHECKED[1])
@example(ratio=math.nextafter(floorout.CHECKED[1], 1.0))
def test_the_floor_over_the_target_is_placed_on_the_measured_map(ratio):
    line = floorout.regime(ratio, "r")
    held, checked, beyond = ("plain form's 8x error held" in line, "and at most 0.361" in line,
                             "beyond the floors" in line)
    assert (held, checked, beyond) == (ratio <= 0.127, 0.127 < ratio <= 0.361, ratio > 0.361)


def test_a_batch_whose_predicted_plateau_is_past_the_target_is_not_expected_to_reach_it():
    # target 0.06: at B 4 the predicted plateau PHI / 2 = 0.075 lies above it (by hand)
    out = plan_logs(_logs(), "loss<=0.06", predict=[4, 64], progress_form="adam",
                    floor_out=0.0).to_json()
    never, ok = out["predictions"]
    assert never["progress_samples"]["median"] is None and "not expected" in never["band_why"]
    assert abs(ok["progress_samples"]["median"] / clock(64, 0.06) - 1) < 2e-3


def test_floor_out_needs_the_adam_form_and_a_run_at_its_plateau():
    with pytest.raises(PilotError, match="--floor-out.*--progress-form adam"):
        plan_logs(_logs(), "loss<=0.1", predict=[128], floor_out=0.0)
    with pytest.raises(PilotError, match="run 'r16' still moves"):
        _plan(_logs(late=16), floor_out=0.0)
    # plateaus 0.053, 0.0375, 0.0265 (PHI / sqrt(b)): an optimum of 0.03 lies among them
    with pytest.raises(PilotError, match="both sides of the optimum 0.03"):
        _plan(_logs(), floor_out=0.03)


def test_the_command_reads_the_flag(tmp_path, capsys):
    # the CSV the command reads plans as the table in memory does (--predict 4: not expected)
    from tests.helpers import plan_main
    path = write_csv(tmp_path / "l.csv")
    args = ["--logs", path, "--progress", "loss<=0.06", "--progress-form", "adam", "--predict",
            "4", "64", "--no-figure", "--out", str(tmp_path)]
    assert plan_main("plan_floor_out")(args + ["--floor-out", "0"]) == 0
    # by hand: r8's floor PHI / sqrt(8) = 0.0530 over the target 0.06
    assert "floor over the target: 0.884 at r8" in capsys.readouterr().out
    import json
    with open(tmp_path / "plan.json") as f:
        out = json.load(f)
    want = plan_logs(_logs(), "loss<=0.06", predict=[4, 64], progress_form="adam",
                     floor_out=0.0).to_json()
    got = [p["progress_samples"]["median"] for p in out["predictions"]]
    assert got[0] is None and want["predictions"][0]["progress_samples"]["median"] is None
    assert got[1] == pytest.approx(want["predictions"][1]["progress_samples"]["median"], rel=1e-9)


def test_plateaus_that_do_not_close_on_the_optimum_are_not_adams_floor():
    # a declining ceiling (the bandit's fixed lr: drift wears the best accuracy down as B grows)
    # read as a floor would predict a plateau near the optimum at a large batch: refused. By
    # hand: distances 0.166, 0.1775, 0.191 at B 64, 128, 256 (lr fixed) rise with B, slope
    # log(0.191 / 0.166) / log(4) = +0.10
    assert floorout.law([0.834, 0.8225, 0.809], [64, 128, 256], [1e-6] * 3, [1] * 3, 1.0) == \
        pytest.approx(math.log(0.191 / 0.166) / math.log(4), abs=2e-3)
    assert floorout.law([0.1, 0.1 / math.sqrt(2)], [8, 16], [0.01] * 2, [1, 1], 0.0) == \
        pytest.approx(-0.5)
    assert math.isnan(floorout.law([0.1, 0.2], [8, 16], [0.01] * 2, [1, 2], 0.0))  # m 8, 8
    cols = _logs()
    for i, (b, v) in enumerate(zip(cols["batch"], cols["loss"])):  # floors rise with B
        cols["loss"][i] = v - PHI / math.sqrt(b) + PHI * math.sqrt(b) / 32
    with pytest.raises(PilotError, match="do not close on the optimum"):
        _plan(cols, floor_out=0.0)


def test_plateaus_off_the_law_are_refused_though_they_fall_with_b():
    # floors PHI / sqrt(b) x (1, 1.5, 1): they still fall from B 8 to 32 (the slope test passes)
    # but the middle run's phi is 1.5 times the others' with no noise to forgive it
    cols = _logs()
    for i, b in enumerate(cols["batch"]):
        if b == 16:
            cols["loss"][i] += 0.5 * PHI / math.sqrt(b)
    assert floorout.law([PHI / math.sqrt(8), 1.5 * PHI / 4, PHI / math.sqrt(32)], [8, 16, 32],
                        [0.01] * 3, [1] * 3, 0.0) < 0
    with pytest.raises(PilotError, match="disagree with Adam's floor law.*2 degrees of freedom"):
        _plan(cols, floor_out=0.0)


def _came_back() -> dict:
    """_logs() with run r32 falling past the target 0.1 to its floor and then drifting back up
    to 0.13 (a line from the run's middle on)."""
    cols = _logs()
    t32 = [t for t, b in zip(cols["samples"], cols["batch"]) if b == 32]
    half = t32[len(t32) // 2]
    for i, (b, t) in enumerate(zip(cols["batch"], cols["samples"])):
        if b == 32 and t > half:
            cols["loss"][i] = min(0.13, cols["loss"][i] + 0.2 * (t - half) / half)
    return cols


def test_a_run_that_reached_the_target_and_came_back_is_a_trough_not_a_floor():
    # run r32's tail sits past the target, so its plateau is not a floor
    cols = _came_back()
    with pytest.raises(PilotError, match="run 'r32' reached the target 0.1 and came back"
                                         ".*; a trough is not Adam's floor"):
        _plan(cols, floor_out=0.0)


def test_a_score_that_reached_the_target_and_came_back_is_a_peak_not_a_trough():
    # the same curves as a score, acc = 1 - loss (optimum 1, target 0.9): run r32 rises past
    # 0.9 to its floor 1 - 0.15 / sqrt(32) = 0.973 and falls back to 0.87, below the target:
    # its curve peaked, so the refusal names a peak (a score's turn), not a trough
    cols = _came_back()
    cols["acc"] = [1.0 - v for v in cols.pop("loss")]
    with pytest.raises(PilotError, match="run 'r32' reached the target 0.9 and came back") as e:
        plan_logs(cols, "acc>=0.9", predict=[128], progress_form="adam", floor_out=1.0)
    assert str(e.value).endswith("; a peak is not Adam's floor") and "trough" not in str(e.value)


def test_plateau_by_hand():
    # a line v = 2 + 0.5 s over 8 points: the last quarter (4 points, s 4..7) has mean 4.75 and
    # drifts 1.5 with standard error 0 (a line); a flat tail drifts 0
    mean, drift, se, se_mean = floorout.plateau(np.arange(8.0), 2 + 0.5 * np.arange(8.0))
    assert (mean, drift) == pytest.approx((4.75, 1.5)) and se == pytest.approx(0, abs=1e-12)
    assert se_mean == pytest.approx(0, abs=1e-12)
    mean, drift, _, _ = floorout.plateau(np.arange(16.0), np.r_[np.ones(8) * 3, np.ones(8)])
    assert (mean, drift) == pytest.approx((1.0, 0.0))
    # a noisy tail 1, 3, 1, 3 after 12 points of 0 (not in the tail), by hand:
    s, v = np.arange(16.0), np.r_[np.zeros(12), [1.0, 3.0, 1.0, 3.0]]
    mean, drift, se, se_mean = floorout.plateau(s, v)
    # x = -1.5, -0.5, 0.5, 1.5; v - 2 = -1, 1, -1, 1: sum x (v - 2) = 1.5 - 0.5 - 0.5 + 1.5 = 2,
    # sum x^2 = 5: slope 0.4, drift 0.4 x 3 = 1.2; residuals -1 + 0.6, 1 + 0.2, -1 - 0.2,
    # 1 - 0.6 = -0.4, 1.2, -1.2, 0.4: sd = sqrt(3.2 / 2) = 1.2649, se_mean = sd / 2
    assert (mean, drift) == pytest.approx((2.0, 1.2))
    assert se_mean == pytest.approx(math.sqrt(1.6) / 2)
    assert se == pytest.approx(math.sqrt(1.6) / math.sqrt(5) * 3)


def test_the_law_holds_within_its_noise_and_a_drift_plateau_does_not():
    # chi-square of log phi_r about its weighted mean, by hand: phi_r = d_r sqrt(m_r) / lr with
    # d = 0.1 / sqrt(m) x (1, 1.5, 1) at m 8, 16, 32 and no noise: log phi = (0, log 1.5, 0)
    # + c, weights 1 / LAW^2 = 400 each: mean log(1.5) / 3, chi2 = 400 (2 (log 1.5 / 3)^2 +
    # (2 log 1.5 / 3)^2) = 400 x 6 / 9 log(1.5)^2 = 43.8 > 13.816 (2 degrees of freedom)
    m = np.array([8.0, 16.0, 32.0])
    a = 0.1 / np.sqrt(m) * np.array([1.0, 1.5, 1.0])
    chi2, dof = floorout.agree(a, np.zeros(3), m, [0.01] * 3, [1] * 3, 0.0)
    assert dof == 2 and chi2 == pytest.approx(400 * 6 / 9 * math.log(1.5) ** 2)
    assert chi2 > floorout.chi2_999(2) == 13.816
    # a noisy plateau (se 0.3 of its distance) forgives the same spread: weights 1 / 0.0925
    chi2, _ = floorout.agree(a, 0.3 * a, m, [0.01] * 3, [1] * 3, 0.0)
    assert chi2 == pytest.approx(6 / 9 * math.log(1.5) ** 2 / (0.09 + 0.0025))
    assert chi2 < floorout.chi2_999(2)
    # the table and Wilson-Hilferty beyond it: the 0.999 quantile with 20 degrees of freedom
    # is 45.315 (tables)
    assert floorout.chi2_999(20) == pytest.approx(45.315, rel=5e-3)
    # the bandit's fixed-lr plateaus that passed the slope test (a practitioner design: 0.2756,
    # 0.2563, 0.2722 at B 64, 128, 256, standard errors 0.004, 0.0035, 0.0041) are refused here
    chi2, dof = floorout.agree([0.2756, 0.2563, 0.2722], [0.004, 0.0035, 0.0041],
                               [64, 128, 256], [1e-6] * 3, [1] * 3, 0.0)
    assert chi2 > floorout.chi2_999(dof)
