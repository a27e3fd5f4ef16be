"""The schedule study: its bookkeeping (clocks for the planner, hours, switch grid, target
scale) on hand-made numbers, and one small end-to-end run whose switch-0 schedule must be the
constant large-batch run."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.helpers import assert_close
from twoclock.config import OptimConfig, SweepConfig
from twoclock.models import bandit, quadratic
from twoclock.models.bandit import BanditConfig
from twoclock.models.quadratic import QuadraticConfig
from twoclock.analysis.report import fmt_samples
from twoclock.config import Schedule
from twoclock.model import progress_target
from twoclock.engine.stages import constant_run
from twoclock.studies import schedule_study as ss
from twoclock.analysis.throughput import ThroughputModel

clock_S = st.lists(st.integers(0, 10_000), min_size=1, max_size=24)


@given(clock_S, clock_S, st.sampled_from([0.1, 0.2, 0.5]))
def test_measured_clocks_median_and_lower_quantile_count_censored_as_inf(p, f, q):
    c = ss.measured_clocks(8, np.array(p), np.array(f), q)
    inf = lambda x: np.sort([v if v > 0 else np.inf for v in x])
    p_inf, f_inf = inf(p), inf(f)
    n = len(p_inf)
    median = p_inf[n // 2] if n % 2 else (p_inf[n // 2 - 1] + p_inf[n // 2]) / 2
    assert c.n_prog == median or (np.isinf(median) and np.isinf(c.n_prog))
    assert c.n_fail == f_inf[int(np.floor(q * (len(f_inf) - 1)))]  # "lower": an order statistic


@given(st.sampled_from([8, 16, 64]), st.floats(0, 5000), st.integers(2, 9),
       st.one_of(st.none(), st.integers(0, 80)))
def test_switch_grid_is_whole_updates_in_range_with_the_planned_switch(b1, hi, n, k):
    planned = None if k is None else k * b1
    grid = ss.switch_grid(b1, hi, n, planned)
    assert grid == sorted(set(grid)) and grid[0] == 0
    assert all(s % b1 == 0 and 0 <= s <= max(hi, planned or 0) for s in grid)
    assert any(s > hi - b1 for s in grid)  # reaches the top to within one update
    if planned:
        assert planned in grid


def test_summarize_run_counts_failure_first_as_never_and_prices_each_stage():
    spp = {8: 2.0, 32: 0.5}.get  # seconds per sample at each batch
    sched = Schedule(8, 32, 160)
    # 160 samples at B1 (2 s each), the rest at B2 (0.5 s each): 100 -> 200 s, 300 -> 390 s
    r = ss.summarize_run("schedule", "x", sched, np.array([100, 300, 300]), np.zeros(3, int),
                         spp, None)
    assert_close(r["hours"]["median"], 390 / 3600, rtol=1e-12, atol=0, what="median hours")
    assert (r["batch1"], r["batch2"], r["switch"], r["reached_first"]) == (8, 32, 160, 1.0)
    # seed 0 reaches, seed 1 fails first, seed 2 reaches, seed 3 never reaches
    prog, fail = np.array([100, 200, 300, 0]), np.array([0, 150, 400, 50])
    r = ss.summarize_run("schedule", "x", sched, prog, fail, spp, None)
    assert r["reached_first"] == 0.5 and r["hours"]["reached"] == 2
    assert r["hours"]["median"] is None  # half the seeds never get there: censored
    assert r["progress_samples"]["reached"] == 3  # the progress clock itself counts seed 1
    r = ss.summarize_run("constant_small", "x", Schedule(8, 8, 0), prog[:3], fail[:3], spp, None)
    assert_close(r["hours"]["median"], 600 / 3600, rtol=1e-12, atol=0, what="median hours")


def test_progress_target_is_the_bandit_accuracy_target_on_the_progress_curve():
    """Where held-out accuracy equals its target, progress_frac equals progress_target."""
    cfg = BanditConfig(n_train=16, n_test=16, drift_dim=2, target=0.6)
    tr = constant_run(bandit.MODEL, cfg, OptimConfig(), 24, 24, batch=16)(
        jnp.float32(16), jnp.float32(0.05), jax.random.PRNGKey(0))
    acc, frac = np.asarray(tr.ckpt["heldout_acc"]), np.asarray(tr.ckpt["progress_frac"])
    target = progress_target(bandit.MODEL, cfg)
    # progress_frac is affine in accuracy: (1 - acc) / err0, and acc = target maps to target
    assert_close(frac / target, (1 - acc) / (1 - cfg.target), rtol=1e-5, atol=0,
                 what="progress_frac / progress_target")
    assert progress_target(quadratic.MODEL, QuadraticConfig(target=0.07)) == 0.07


def test_report_prints_a_censored_clock_with_its_counts():
    s = {"median": None, "ci": [10.0, None], "reached": 3, "seeds": 16}
    assert fmt_samples(s, counts=True) == ">budget (3/16)"
    assert fmt_samples({**s, "median": 12.345}, spec=".2f") == "12.35 [10.00, >budget]"


def test_study_bad_input_names_the_parameter():
    grid = lambda batches, lr0s=(0.01,): dict(sweep=SweepConfig(batches=batches, lr0s=lr0s))
    for kw, name in ((grid((256, 8)), "batch_large"), (grid((8, 32, 64)), "batches"),
                     (grid((8, 32), (0.01, 0.02)), "lr0"),
                     (dict(fail_quantile=0.7), "fail_quantile"), (dict(switches=1), "switches"),
                     (dict(planner="oracle"), "planner"), (dict(carry="keep"), "carry")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            ss.Config(**kw)


@pytest.mark.parametrize("args, name", [
    (["--batch-small", "64", "--batch-large", "64"], "batches"),
    (["--batch-small", "0"], "--batch-small"), (["--batch-small", "512"], "--batch-large"),
    (["--lr0", "0"], "--lr0"), (["--lr0", "-1"], "--lr0")])
def test_the_commands_batches_and_lr0_are_refused_by_the_sweeps_checks(args, name):
    """--batch-small, --batch-large and --lr0 reach the nested sweep, whose checks refuse them
    (the study adds only that the small batch comes first), each refusal naming the flag (a
    refusal of both, two equal batches, names the sweep's batches)."""
    from twoclock.cli.run_study import parse
    with pytest.raises(ValueError, match=f"^{name} must be"):
        parse(ss.STUDY, args, "schedule.py")


def test_small_study_switch_zero_is_the_constant_large_run():
    cfg = QuadraticConfig(dim=8, drift_dim=2, target=0.2, drift_threshold=0.05)
    sweep = SweepConfig(batches=(8, 32), lr0s=(0.02,), seeds=4, budget=1600, n_ckpt=8)
    study = ss.Config(switches=2, responses_per_sample=4.0, sweep=sweep,
                      throughput=ThroughputModel())
    assert (study.batches, study.lr0) == ((8, 32), 0.02)
    out = ss.run(quadratic.MODEL, cfg, OptimConfig(), study, quiet=True)
    large = next(r for r in out["runs"] if r["kind"] == "constant_large")
    zero = out["switch_sweep"][0]
    assert zero["switch"] == 0
    for k in ("progress_samples", "failure_samples", "reached_first", "hours"):
        assert zero[k] == large[k], k
    assert large["progress_samples"]["reached"] > 0  # the comparison is not of two nothings
    assert out["plan"]["switch_samples"] in [None] + [r["switch"] for r in out["switch_sweep"]]
    assert {"progress_frac", "drift", "samples"} == set(large["curve"])


def test_the_report_says_never_and_none_is_safe_where_nothing_reaches_the_target():
    """A plan whose clocks never come (a budget too short): the report prints "never" and "-",
    no Python None or inf, and names no "best" among options that are all unsafe."""
    from twoclock.studies.schedule_study import report
    never = {"batch": 8, "n_prog": None, "n_fail": None}
    opts = [{"kind": "constant_small", "switch": float("inf"), "samples": None, "seconds": None,
             "failure_fraction": None, "safe": False},
            {"kind": "constant_large", "switch": 0.0, "samples": None, "seconds": None,
             "failure_fraction": None, "safe": False}]
    out = {"plan": {"clocks": {"small": never, "large": {**never, "batch": 256}}, "margin": 0.1,
                    "options": opts, "best": opts[0], "switch_samples": None},
           "config": {"fail_quantile": 0.2, "planner": "curves"}, "runs": [],
           "switch_sweep": []}
    text = report(out)
    assert "B=8: N_prog never, N_fail never; B=256: N_prog never, N_fail never" in text
    assert "None" not in text and "inf" not in text
    assert "-> none is safe: the least risky is constant_small" in text and "best" not in text
