"""Adam's progress form under any lr rule (twoclock.pilot.adam): its two limits, its 1/lr and
its K against hand computations; the plan with --progress-form adam on pilots at mixed lrs and
update counts against the form computed here; and the form against the quadratic model under
the fixed and the sqrt rule (slow: it simulates).

The oracle everywhere is the formula written out in this file, N = A sqrt(m (m + B_n)) / lr
with m = B / K (docs/plan.md, "Adam's progress form"), never the module's own functions."""
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from twoclock.pilot import adam, forms, report
from twoclock.pilot.config import PlanConfig, parse_rule
from twoclock.pilot.plan import PilotError, plan, read_runs
from twoclock.pilot.result import Rule


def by_hand(B, lr, K, A, b_n):
    """The form written out: samples to target at batch B, lr, K updates per batch."""
    m = np.asarray(B, np.float64) / np.asarray(K, np.float64)
    return A * np.sqrt(m * (m + b_n)) / np.asarray(lr, np.float64)


# ---------------------------------------------------------------------------- the form itself

@given(p=st.floats(-1.0, 1.5), b_n=st.floats(1.0, 1e4))
@example(p=0.0, b_n=64.0)   # the fixed rule: 1/2 -> 1
@example(p=0.5, b_n=64.0)   # the sqrt rule: 0 -> 1/2
def test_the_local_exponent_is_half_minus_p_below_the_knee_and_one_minus_p_past_it(p, b_n):
    lr = lambda B: 1e-3 * (B / 8.0) ** p
    slope = lambda B: (math.log(by_hand(2 * B, lr(2 * B), 1, 1.0, b_n) /
                                by_hand(B, lr(B), 1, 1.0, b_n)) / math.log(2))
    lo, hi = b_n * 1e-7, b_n * 1e7
    # by hand: sqrt(m B_n) / lr ~ B^(1/2 - p) for m << B_n, m / lr ~ B^(1 - p) for m >> B_n;
    # the finite-difference slope misses the limit by O(m / B_n) = 1e-7 (tolerance 1e-6)
    assert abs(slope(lo) - (0.5 - p)) < 1e-6 and abs(slope(hi) - (1.0 - p)) < 1e-6
    assert abs(float(adam.local_exponent(lo, b_n, p)) - (0.5 - p)) < 1e-6
    assert abs(float(adam.local_exponent(hi, b_n, p)) - (1.0 - p)) < 1e-6
    # at the knee m = B_n: 1/2 - p + 1/4 (d/dlogB of 1/2 log(m + B_n) is m / (2 (m + B_n)))
    assert abs(float(adam.local_exponent(b_n, b_n, p)) - (0.75 - p)) < 1e-12


def test_the_log_form_is_half_log_m_m_plus_b_n_minus_log_lr():
    # by hand: m = 16, B_n = 48, lr = 0.5: 1/2 log(16 * 64) + log 2 = 1/2 log 1024 + log 2
    assert abs(float(adam.log_samples(16.0, 0.5, 48.0)) - (0.5 * math.log(1024) + math.log(2))
               ) < 1e-12
    # B_n infinite: the noise-dominated limit, 1/2 log m - log lr
    assert abs(float(adam.log_samples(16.0, 0.5, math.inf)) - (math.log(4) + math.log(2))) < 1e-12
    # K: m = B / K only (64 samples in 4 updates are 16 a update)
    assert adam.per_update(64.0, 4.0) == 16.0


def _exact_runs(B, lr, K, A=50.0, b_n=40.0, wiggle=0.01):
    """Clocks from the formula, each run's off by +-wiggle in log (alternating, so the fit has
    residuals to make a band from, and the least squares optimum stays near the truth)."""
    N = by_hand(B, lr, K, A, b_n)
    return N * np.exp(wiggle * (-1.0) ** np.arange(np.size(B)))


def test_the_fit_recovers_the_noise_scale_and_predicts_under_another_rule():
    B = np.repeat([8.0, 16.0, 32.0, 64.0], 2)
    lr = 0.01 * np.ones_like(B)
    N = _exact_runs(B, lr, 1.0, wiggle=0.0)  # exact: the fit must land on B_n = 40
    f = adam.fit_adam(B, N, lr, np.ones_like(B), p=0.5, lr0=0.02, b0=8.0)
    assert abs(f.noise_scale / 40.0 - 1) < 1e-3
    # predictions under lr = 0.02 (B / 8)^(1/2) at 8x: the formula at that lr
    for b in (64.0, 512.0):
        want = by_hand(b, 0.02 * math.sqrt(b / 8), 1.0, 50.0, 40.0)
        assert abs(math.exp(float(f.log_median([b])[0])) / want - 1) < 1e-3


def test_runs_at_different_lrs_enter_through_one_over_lr():
    B = np.array([8.0, 16.0, 32.0, 64.0, 8.0, 16.0, 32.0, 64.0])
    lr = np.array([0.01, 0.01, 0.01, 0.01, 0.04, 0.003, 0.02, 0.001])
    N = _exact_runs(B, lr, 1.0, wiggle=0.0)
    f = adam.fit_adam(B, N, lr, np.ones_like(B), p=0.0, lr0=0.01, b0=8.0)
    assert abs(f.noise_scale / 40.0 - 1) < 1e-3
    # the fixed rule at 0.01 predicts the formula at 0.01; a run at 4x the lr takes 1/4 the
    # samples (by hand: N ~ 1/lr)
    want = by_hand(256.0, 0.01, 1.0, 50.0, 40.0)
    assert abs(math.exp(float(f.log_median([256.0])[0])) / want - 1) < 1e-3
    assert abs(float(f.log_at(256.0, 0.04, 1.0) - f.log_at(256.0, 0.01, 1.0)) + math.log(4)
               ) < 1e-12


def test_k_updates_per_batch_only_change_the_samples_per_update():
    # runs with K = 4 at B = 4 m are the K = 1 runs at m, sample for sample (by hand: m = B / K)
    m = np.array([8.0, 16.0, 32.0, 64.0])
    N = _exact_runs(m, 0.01, 1.0, wiggle=0.0)
    one = adam.fit_adam(m, N, 0.01 * np.ones(4), np.ones(4), p=0.0, lr0=0.01, b0=8.0)
    four = adam.fit_adam(4 * m, N, 0.01 * np.ones(4), 4 * np.ones(4), p=0.0, lr0=0.01, b0=8.0)
    assert abs(four.noise_scale / one.noise_scale - 1) < 1e-9
    assert abs(float(one.log_at(128.0, 0.01, 4.0) - one.log_at(32.0, 0.01, 1.0))) < 1e-12
    # a prediction with K = 2 at B = 512 is the formula at m = 256
    two = adam.AdamFit(one.base, 0.0, 0.01, 8.0, k_pred=2.0)
    want = by_hand(512.0, 0.01, 2.0, 50.0, 40.0)
    assert abs(math.exp(float(two.log_median([512.0])[0])) / want - 1) < 1e-3


def test_under_the_sqrt_rule_with_one_update_it_is_the_saturation_form():
    from twoclock.pilot import fit as pf
    B = np.repeat([8.0, 16.0, 32.0, 64.0], 3)
    lr = 0.01 * np.sqrt(B / 8)
    N = _exact_runs(B, lr, 1.0, wiggle=0.05)
    f = adam.fit_adam(B, N, lr, np.ones_like(B), p=0.5, lr0=0.01, b0=8.0)
    s = pf.fit_progress(B, N, "saturation", 0.5)
    grid = [4.0, 8.0, 100.0, 1000.0]
    assert np.allclose(f.log_median(grid), s.log_median(grid), atol=1e-9)
    for a, b in zip(f.log_interval(grid, 0.95), s.log_interval(grid, 0.95)):
        assert np.allclose(a, b, atol=1e-9)


# ---------------------------------------------------------------------------- the plan

def _csv(tmp_path, rows, updates=True):
    p = tmp_path / "runs.csv"
    head = "batch,lr,progress_samples,failure_samples" + (",updates" if updates else "")
    p.write_text("\n".join([head] + [",".join(str(x) for x in r) for r in rows]) + "\n")
    return str(p)


def test_a_plan_from_mixed_lrs_and_updates_predicts_the_form(tmp_path):
    B = [64.0, 64.0, 128.0, 128.0, 256.0, 256.0, 512.0]
    lr = [1e-3, 2e-3, 1e-3, 5e-4, 3e-3, 7e-4, 2e-3]
    K = [1, 1, 1, 2, 1, 4, 8]
    N = _exact_runs(np.array(B), np.array(lr), np.array(K, float), A=1e-3, b_n=100.0,
                    wiggle=1e-4)
    path = _csv(tmp_path, [(b, l, f"{n:.17g}", "", k) for b, l, n, k in zip(B, lr, N, K)])
    runs = read_runs(path)
    assert runs.updates().tolist() == [float(k) for k in K]
    # the default forms refuse runs that share no rule over 3 batches (and say what would fit)
    with pytest.raises(PilotError, match="--progress-form adam"):
        plan(runs)
    out = report.plan_file(path, [1024.0, 4096.0], progress_form="adam",
                           predict_rule=parse_rule("fixed:0.001@64")).to_json()
    assert out["fit"]["progress"]["form"] == "adam"
    assert out["fit"]["rule"]["p"] == 0.0 and out["fit"]["rule"]["lr0"] == 1e-3
    for pr in out["predictions"]:  # within the +-1% wiggle of the formula at lr 1e-3, K = 1
        want = float(by_hand(pr["batch"], 1e-3, 1.0, 1e-3, 100.0))
        assert abs(pr["progress_samples"]["median"] / want - 1) < 2e-3
        lo, hi = pr["progress_samples"]["ci"]
        assert lo < want < hi


def test_the_form_says_its_noise_scale_or_that_the_pilots_show_no_knee(tmp_path):
    # clocks sqrt(m (m + 40)) / lr at B 8..64 have B_n 40 (by hand); clocks sqrt(m) / lr (the
    # noise-dominated limit, B_n infinite) are flat on the sqrt rule: no knee within the pilots
    B = [8.0, 16.0, 32.0, 64.0] * 2
    lr = [0.01] * 8
    knee = _exact_runs(np.array(B), np.array(lr), 1.0, b_n=40.0, wiggle=1e-4)
    flat = 50.0 * np.sqrt(B) / 0.01 * np.exp(1e-4 * (-1.0) ** np.arange(8))
    why = []
    for N in (knee, flat):
        path = _csv(tmp_path, [(b, l, f"{n:.17g}", "") for b, l, n in zip(B, lr, N)],
                    updates=False)
        why.append(report.plan_file(path, [512.0], progress_form="adam").to_json()
                   ["fit"]["progress"]["why"])
    b_n = float(why[0].split("B_n = ")[-1].split(" samples per update")[0])
    assert abs(b_n / 40.0 - 1) < 1e-2, why[0]
    assert "B_n above the pilots' batches (no knee within them)" in why[1], why[1]


def test_a_prediction_rule_keeps_the_pilots_own_rule_apart(tmp_path):
    """Pilots on the sqrt rule (lr 0.01 sqrt(B / 8)), predicted under a fixed lr 0.01: the
    printout and fit.pilots_rule give the pilots' rule, fit.rule the predicted one, and at a
    pilot batch whose lr the fixed rule does not share (16: 0.01 against 0.0141) the
    recommendation reads the fit at lr 0.01, by hand the formula there, not the runs."""
    B = [8.0, 16.0, 32.0, 64.0] * 2
    lr = [0.01 * math.sqrt(b / 8) for b in B]
    N = _exact_runs(np.array(B), np.array(lr), 1.0, b_n=40.0, wiggle=1e-4)
    path = _csv(tmp_path, [(b, l, f"{n:.17g}", "") for b, l, n in zip(B, lr, N)],
                updates=False)
    out = report.plan_file(path, [128.0], progress_form="adam",
                           predict_rule=parse_rule("fixed:0.01@8")).to_json()
    assert out["fit"]["rule"]["p"] == 0.0 and out["fit"]["pilots_rule"]["p"] == 0.5
    assert out["fit"]["pilots_rule"]["lr0"] == pytest.approx(0.01 * math.sqrt(B[0] / 8))
    head = report.table(out).splitlines()[0]
    assert "8 on the rule lr = 0.01 (B/8)^0.5; predictions under lr = 0.01 (B/8)^0 " in head
    est = {e["batch"]: e for e in out["estimates"]}
    assert est[8.0]["source"] == "runs"  # lr 0.01 at B 8 under both rules
    assert est[16.0]["source"] == "fit"
    assert est[16.0]["progress"] == pytest.approx(by_hand(16.0, 0.01, 1.0, 50.0, 40.0), rel=1e-3)
    # without --predict-rule there is no second rule
    assert report.plan_file(path, [128.0], progress_form="adam").to_json()["fit"][
        "pilots_rule"] is None


def test_the_flags_reach_the_plan_json(tmp_path):
    import json
    from twoclock.cli.plan import main
    B = [8.0, 16.0, 32.0, 64.0] * 2
    lr = [0.01, 0.02, 0.01, 0.005, 0.03, 0.01, 0.002, 0.01]
    N = _exact_runs(np.array(B), np.array(lr), 1.0, b_n=40.0)
    path = _csv(tmp_path, [(b, l, f"{n:.17g}", "") for b, l, n in zip(B, lr, N)], updates=False)
    assert main([path, "--progress-form", "adam", "--predict-rule", "sqrt:0.01@8", "--predict",
                 "512", "--no-figure", "--out", str(tmp_path / "o")]) == 0
    out = json.loads((tmp_path / "o" / "plan.json").read_text())
    assert out["fit"]["progress"]["form"] == "adam" and out["fit"]["rule"]["p"] == 0.5
    want = float(by_hand(512.0, 0.01 * math.sqrt(512 / 8), 1.0, 50.0, 40.0))
    got = out["predictions"][0]["progress_samples"]
    assert got["ci"][0] < want < got["ci"][1]


def test_the_default_plan_ignores_the_updates_column(tmp_path):
    """Pilots that all take K = 3: the default forms' numbers are those without the column,
    and each prediction is for runs that take 3 (docs/plan.md, "Updates per rollout batch")."""
    B = [8.0, 16.0, 32.0, 64.0] * 2
    rows = [(b, 0.01 * math.sqrt(b / 8), 1000 * (1 + b / 64) ** 0.5 * (1.01 if i % 2 else 0.99),
             "") for i, b in enumerate(B)]
    a = report.plan_file(_csv(tmp_path, rows, updates=False)).to_json()
    b = report.plan_file(_csv(tmp_path, [r + (3,) for r in rows])).to_json()
    a.pop("source"), b.pop("source")
    assert [p.pop("updates") for p in a["predictions"]] == [1.0] * 4
    assert [p.pop("updates") for p in b["predictions"]] == [3.0] * 4
    assert a == b


@pytest.mark.parametrize("text", ["quadratic", "0.5:1e-3", "0.5:-1@8", "9", "0.5:1e-3@0"])
def test_a_bad_prediction_rule_is_refused_in_one_line(text):
    with pytest.raises(ValueError, match="--predict-rule"):
        PlanConfig(progress_form="adam", predict_rule=text)


def test_a_prediction_rule_needs_the_adam_form():
    with pytest.raises(ValueError, match="--predict-rule.*--progress-form adam"):
        PlanConfig(predict_rule="fixed")


def test_zero_updates_are_refused(tmp_path):
    with pytest.raises(PilotError, match="column updates"):
        read_runs(_csv(tmp_path, [(8, 0.01, 100, "", 0)]))


# ---------------------------------------------------------------------------- the quadratic model

SEEDS, PILOTS, BATCHES = 32, 3, (8, 16, 32, 64, 128, 256)


def quadratic_exponents(rule: str, seeds: int = SEEDS, resamples: int = 2000,
                        target: float = 0.05, lr0: float = 0.01, gap: int = 0,
                        beta1: float = 0.9, beta2: float = 0.999, **model) -> dict:
    """The quadratic model (defaults but `target` and `model`, Adam, lr0 at b0 8) under `rule`
    at BATCHES: the simulated local exponents d log N / d log B per doubling with percentile
    CIs (the median over seeds, seeds resampled jointly across batches), and the Adam form
    fitted to the first PILOTS batches: its exponents, its predictions and 95% bands at every
    batch. The budget grows as 1 / lr0 (2000 / lr0 samples: every run reaches every target
    below). gap > 0: also the paired 95% CI of the contrast form - simulated at the last
    doubling, from `gap` joint resamples of the seeds with the form refitted on each."""
    from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
    from twoclock.models import MODELS
    res = run_sweep(MODELS["quadratic"], QuadraticConfig(target=target, **model),
                    OptimConfig(name="adam", lr_rule=rule, beta1=beta1, beta2=beta2),
                    SweepConfig(batches=BATCHES, lr0s=(lr0,), seeds=seeds,
                                budget=round(2000 / lr0), n_ckpt=128), quiet=True)
    N, lr = res.prog_n[:, 0, :], res.lrs_BxL[:, 0]
    assert (N > 0).all(), "a run did not reach the target within the budget"
    B = np.array(BATCHES, np.float64)
    sim = np.diff(np.log(np.median(N, axis=1))) / math.log(2)
    rng = np.random.default_rng(0)
    boot = np.array([np.diff(np.log(np.median(N[:, rng.integers(0, seeds, seeds)], axis=1)))
                     for _ in range(resamples)]) / math.log(2)
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    p = {"fixed": 0.0, "sqrt": 0.5}[rule]
    k = slice(0, PILOTS)
    clock = forms.adam_clock(np.repeat(B[k], seeds), N[k].ravel(), np.repeat(lr[k], seeds),
                             np.ones(PILOTS * seeds), Rule(p, lr0, 8.0, 0))
    f, band = clock.fit, clock.band(B, 0.95)  # the plan's band: sampling and form error

    def contrast(s):  # form - simulated at the last doubling, seeds s at every batch
        g = adam.fit_adam(np.repeat(B[k], seeds), N[k][:, s].ravel(), np.repeat(lr[k], seeds),
                          np.ones(PILOTS * seeds), p, lr0, 8.0, sharp=True).log_median(B[-2:])
        sim_s = np.log(np.median(N[-2:, s], axis=1))
        return float(g[1] - g[0] - sim_s[1] + sim_s[0]) / math.log(2)
    draws = [contrast(rng.integers(0, seeds, seeds)) for _ in range(gap)]
    return {"sim": sim, "ci": (lo, hi), "form": np.diff(f.log_median(B)) / math.log(2),
            "truth": np.median(N, axis=1), "pred": np.exp(f.log_median(B)),
            "band": tuple(np.array([x["ci"][i] for x in band]) for i in (0, 1)),
            "noise_scale": f.noise_scale, "m": f.m,
            "gap": (contrast(np.arange(seeds)), *np.percentile(draws, [2.5, 97.5])) if gap
            else None}


@pytest.fixture(scope="module", params=["fixed", "sqrt"])
def quadratic(request):
    return request.param, quadratic_exponents(request.param)


def test_the_form_predicts_the_quadratic_model_at_8x_within_the_planners_goal(quadratic):
    rule, q = quadratic
    # the planner's accuracy goal (report.GOAL, 15%) at 8x the largest pilot, and the 95% band
    # covers the simulated median
    err = q["pred"][-1] / q["truth"][-1] - 1
    assert abs(err) <= report.GOAL, (rule, err)
    assert q["band"][0][-1] <= q["truth"][-1] <= q["band"][1][-1], rule
    # the noise-dominated and the sign-like regimes both show: the simulated exponent rises
    # by more than 0.25 over the sweep, and the form's by more than 0.2 (by hand: a pure power
    # law would rise by 0)
    assert q["sim"][-1] - q["sim"][0] > 0.25 and q["form"][-1] - q["form"][0] > 0.2


# The regime map of the form's 8x exponent (docs/history/plan_notes.md, its table): the
# quadratic model under the fixed rule at five targets (lr0 0.01), at the default target
# with two smaller lrs, and at 0.07 with a third of the lr (a cell of the pre-registered check
# tools/adam_remains.py, where its floor is 0.023 of the target). Measured: inside the
# simulated CI at targets 0.2 and 0.1 and at 0.07 with lr0 0.003, below it elsewhere (a sharper
# knee than one sqrt(m (m + B_n)) near the noise floor, a wider one far from it); the cells
# where it fails are strict expected failures, so a form that closes one shows here.
_INSIDE = {(0.2, 0.01), (0.1, 0.01), (0.07, 0.003)}
_CELLS = [(0.3, 0.01), (0.2, 0.01), (0.1, 0.01), (0.07, 0.01), (0.05, 0.01), (0.05, 0.003),
          (0.05, 0.001), (0.07, 0.003)]


@pytest.mark.parametrize("target,lr0", [
    c if c in _INSIDE else pytest.param(*c, marks=pytest.mark.xfail(
        strict=True, reason="measured: the form's exponent at 8x lies outside the simulated "
        "CI in this cell (docs/history/plan_notes.md, the regime map)")) for c in _CELLS])
def test_the_fixed_lr_forms_exponent_at_8x_lies_in_the_simulated_exponents_ci(target, lr0):
    q = quadratic_exponents("fixed", target=target, lr0=lr0)
    lo, hi = q["ci"]
    assert lo[-1] <= q["form"][-1] <= hi[-1], (target, lr0, q["form"][-1], lo[-1], hi[-1])


# Under the sqrt rule the miss is Adam's momentum: at 8x a run reaches the target in 15
# updates (3920 samples at B 256), about the 1 / (1 - beta1) = 10 updates its first moment
# averages over. With beta1 0 (no momentum) the form's exponent lies inside the simulated CI
# (measured: 0.434 against [0.423, 0.444]; with beta1 0.9, 0.365 against [0.404, 0.412]);
# the momentum table in docs/history/plan_notes.md.
@pytest.mark.parametrize("beta1", [
    pytest.param(0.9, marks=pytest.mark.xfail(
        strict=True, reason="measured: under the sqrt rule at the default target the form's "
        "exponent at 8x (0.365) lies below the simulated CI ([0.404, 0.412]): momentum over "
        "runs of a few updates (docs/history/plan_notes.md, the momentum table)")), 0.0])
def test_the_sqrt_rule_forms_exponent_at_8x_lies_in_the_simulated_exponents_ci(beta1):
    q = quadratic_exponents("sqrt", beta1=beta1)
    lo, hi = q["ci"]
    assert lo[-1] <= q["form"][-1] <= hi[-1], (beta1, q["form"][-1], lo[-1], hi[-1])


# The knob between them, in mean field: one coordinate with the noise of the default model's
# knee (dim 1, sigma 3.6: B_n about 25 samples, the default's about 28), and the isotropic
# spectrum with it (alpha 0: 64 equal coordinates, the same clock as one).
ONE_COORDINATE = {"dim": 1, "sigma": 3.6}


def _meanfield(batches, lr0: float, target: float = 0.05, above_floor: bool = False,
               **model) -> np.ndarray:
    """Mean-field Adam's clocks (twoclock/models/quadratic/adam_progress.py, no seeds) under the
    fixed rule, to the plateau: with above_floor, each run's own noise floor taken out."""
    from twoclock import OptimConfig, QuadraticConfig
    from twoclock.models.quadratic.adam_progress import adam_progress_samples
    opt, cfg = OptimConfig(name="adam", lr_rule="fixed"), QuadraticConfig(target=target, **model)
    return np.array([adam_progress_samples(cfg, opt, lr0, b, budget=round(6e5 / lr0),
                                           above_floor=above_floor) for b in batches])


def knee_table(above_floor: bool = False) -> list:
    """At the regime map's cells under the fixed rule, mean field: the B_n with which one
    sqrt(m (m + B_n)) has each doubling's exponent e, B_n = B (1 - r) / r, r = 2 e - 1, B the
    doubling's geometric middle (a single-B_n form: constant)."""
    B = np.array(BATCHES + (512,), np.float64)
    mid = np.sqrt(B[1:] * B[:-1])
    rows = []
    for target, lr0 in _CELLS:
        r = 2 * np.diff(np.log(_meanfield(B, lr0, target, above_floor))) / math.log(2) - 1
        rows.append((target, lr0, mid * (1 - r) / r))
    return rows


def two_point_error(lr0: float, above_floor: bool, **model) -> float:
    """Mean field at the default target: A and B_n of sqrt(m (m + B_n)) solved by hand from the
    clocks at B 8 and 16 (N16 / N8 = sqrt(2 (16 + B_n) / (8 + B_n))), and the relative error of
    that form's clock at B 512 (64x): 0 where one B_n holds over the whole range."""
    n8, n16, n512 = _meanfield((8, 16, 512), lr0, above_floor=above_floor, **model)
    r2 = (n16 / n8) ** 2 / 2
    b_n = (16 - 8 * r2) / (r2 - 1)
    return n8 * math.sqrt(512 * (512 + b_n) / (8 * (8 + b_n))) / n512 - 1


@pytest.mark.slow
def test_the_floor_the_lr_and_the_spectrum_each_bend_the_knee():
    """The mechanism of the regime map, in mean field (no seeds): taking each run's noise floor
    out shrinks the one-B_n form's 64x error on the default model at lr0 0.01; one coordinate
    with the same knee is closer to one B_n than the default spectrum at lr0 0.001 (floor out);
    and one coordinate's error shrinks with the lr (the small-lr limit the form is derived in).
    A form the model obeyed exactly would give 0 in each; a mechanism named wrongly fails the
    ordering it predicts."""
    raw, out = (two_point_error(0.01, f) for f in (False, True))
    assert raw < out < 0, (raw, out)
    spectrum, one = (two_point_error(0.001, True, **m) for m in ({}, ONE_COORDINATE))
    assert spectrum < one < 0, (spectrum, one)
    assert two_point_error(0.01, True, **ONE_COORDINATE) < one, one


if __name__ == "__main__":  # the tables in docs/history/plan_notes.md
    for r in ("fixed", "sqrt"):
        q = quadratic_exponents(r)
        print(f"{r}: B_n {q['noise_scale']:.4g}, sharpness {q['m']:g}")
        for i in range(len(BATCHES) - 1):
            print(f"  B {BATCHES[i]}->{BATCHES[i + 1]}: simulated {q['sim'][i]:.3f} "
                  f"[{q['ci'][0][i]:.3f}, {q['ci'][1][i]:.3f}], form {q['form'][i]:.3f}")
        for b, t, p, lo, hi in zip(BATCHES, q["truth"], q["pred"], *q["band"]):
            print(f"  B {b}: simulated {t:.0f}, form {p:.0f} [{lo:.0f}, {hi:.0f}] "
                  f"({p / t - 1:+.1%})")
    print("fixed rule, B 128 -> 256: | target | lr0 | simulated [95% CI] | form | inside | "
          "8x error |")
    for target, lr0 in _CELLS:
        q = quadratic_exponents("fixed", target=target, lr0=lr0)
        s, lo, hi, f = q["sim"][-1], q["ci"][0][-1], q["ci"][1][-1], q["form"][-1]
        print(f"| {target:g} | {lr0:g} | {s:.3f} [{lo:.3f}, {hi:.3f}] | {f:.3f} | "
              f"{'yes' if lo <= f <= hi else 'no'} | {q['pred'][-1] / q['truth'][-1] - 1:+.1%} |")
    for above in (False, True):
        print("mean-field effective B_n per doubling (B 8->16 ... 256->512), fixed rule"
              + (", each run's floor taken out:" if above else ":"))
        for target, lr0, bn in knee_table(above):
            print(f"| {target:g} | {lr0:g} | " + " | ".join(f"{x:.1f}" for x in bn) + " |")
    print("mean field, default target: the 64x error of sqrt(m (m + B_n)) solved at B 8 and 16 "
          "| lr0 0.01 | 0.01, floor out | 0.001 | 0.001, floor out |")
    for name, model in (("default spectrum", {}), ("one coordinate", ONE_COORDINATE),
                        ("isotropic", {"alpha": 0.0, "sigma": 3.6})):
        print(f"| {name} | " + " | ".join(f"{two_point_error(lr0, f, **model):+.2%}"
                                          for lr0 in (0.01, 0.001) for f in (False, True)) + " |")
    print("the paired gap form - simulated at 128 -> 256 [95% CI, 300 resamples]:")
    for target, lr0, model in [(t, lr, {}) for t, lr in _CELLS] + [
            (0.05, 0.001, {"alpha": 0.0, "sigma": 3.6})]:
        q = quadratic_exponents("fixed", target=target, lr0=lr0, gap=300, **model)
        print(f"| {target:g} | {lr0:g} | {model or 'default'} | {q['gap'][0]:+.4f} "
              f"[{q['gap'][1]:+.4f}, {q['gap'][2]:+.4f}] | {q['form'][-1]:.4f} | "
              f"{q['sim'][-1]:.4f} [{q['ci'][0][-1]:.4f}, {q['ci'][1][-1]:.4f}] |")
    print("momentum, default target, 128 -> 256: | rule | beta1 | form - simulated [paired 95% "
          "CI] | form | simulated [95% CI] | 8x error |")
    for r in ("sqrt", "fixed"):
        for b1 in (0.9, 0.0):
            q = quadratic_exponents(r, beta1=b1, gap=300)
            print(f"| {r} | {b1:g} | {q['gap'][0]:+.4f} [{q['gap'][1]:+.4f}, {q['gap'][2]:+.4f}]"
                  f" | {q['form'][-1]:.4f} | {q['sim'][-1]:.4f} [{q['ci'][0][-1]:.4f}, "
                  f"{q['ci'][1][-1]:.4f}] | {q['pred'][-1] / q['truth'][-1] - 1:+.1%} |")
    from twoclock.pilot import fit as pf
    grid, pf.SHARPNESS = pf.SHARPNESS, tuple(np.round(np.geomspace(0.25, 4.0, 25), 6))
    try:  # the ablation: the sharpness grid widened to [1/4, 4], the default target
        for r in ("fixed", "sqrt"):
            q = quadratic_exponents(r)
            print(f"grid [1/4, 4], {r}: sharpness {q['m']:g}, exponent 128 -> 256 "
                  f"{q['form'][-1]:.3f} (simulated {q['sim'][-1]:.3f} [{q['ci'][0][-1]:.3f}, "
                  f"{q['ci'][1][-1]:.3f}]), 8x error {q['pred'][-1] / q['truth'][-1] - 1:+.1%}")
    finally:
        pf.SHARPNESS = grid
