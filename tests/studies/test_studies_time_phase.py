"""The time-to-target and phase-diagram studies on hand-made sweep results: what counts as
reaching the target, which time is the reference, which cell wins, what the tables print."""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.helpers import assert_close
from twoclock.config import SweepConfig
from twoclock.models import MODELS
from twoclock.models.bandit import BanditConfig
from twoclock.analysis.phase import phase_panel
from twoclock.studies import phase_study as ps
from twoclock.studies import time_to_target as tt
from twoclock.analysis.throughput import ThroughputModel

THR = ThroughputModel().scaled(32.0)


def fake_sweep(batches, prog_BxS, fail_BxS, lr=0.01):
    """A one-lr0 SweepResult stand-in: clocks [B, 1, S]."""
    prog, fail = (np.asarray(x, np.int64)[:, None, :] for x in (prog_BxS, fail_BxS))
    B = len(batches)
    return SimpleNamespace(batches=tuple(batches), lr0s=(lr,), prog_n=prog, fail_n=fail,
                           lrs_BxL=np.full((B, 1), lr), n_steps_B=np.full(B, 1000) // batches,
                           extra={})


@given(st.lists(st.integers(1, 50_000), min_size=3, max_size=9))
def test_time_to_target_is_samples_over_throughput_when_nothing_fails(p):
    res = fake_sweep((8, 64), [p, p], [[0] * len(p)] * 2)
    rows = tt.rows(res, "sqrt", 0.01, THR, None)
    for r, b in zip(rows, (8, 64)):
        assert_close(r["time_to_target"]["median"], np.median(p) / float(THR.throughput(b)),
                     rtol=1e-12, atol=0, what="median seconds")
        assert r["time_to_target"]["unit"] == "seconds"
        assert_close(r["throughput"]["responses_per_second"],
                     32.0 * r["throughput"]["samples_per_second"], rtol=1e-12, atol=0,
                     what="responses per second")


def test_failure_first_is_never_and_the_optimum_is_the_fastest_median():
    # batch 8: two of three seeds fail first (censored); batch 64 reaches in every seed
    res = fake_sweep((8, 64), [[100, 200, 300], [400, 500, 600]], [[50, 150, 0], [0, 0, 0]])
    rows = tt.rows(res, "sqrt", 0.01, THR, None)
    assert rows[0]["time_to_target"]["median"] is None
    assert rows[0]["progress_samples"]["median"] == 200  # the progress clock itself is kept
    fixed = tt.rows(fake_sweep((8, 64), [[90] * 3, [9000] * 3], [[0] * 3] * 2), "fixed", 0.01,
                    THR, None)
    s = tt.summary(rows + fixed, ["sqrt", "fixed"], 0.2, res, None)
    assert s["reference_seconds"] is None  # the first rule's smallest batch never got there
    fastest = min((r for r in rows + fixed if r["time_to_target"]["median"] is not None),
                  key=lambda r: r["time_to_target"]["median"])
    assert s["optimum"] == {"lr_rule": fastest["lr_rule"], "batch": fastest["batch"]}
    assert s["optimum"] == {"lr_rule": "fixed", "batch": 8}
    out = {"runs": rows + fixed, "lr_rules": ["sqrt", "fixed"], "critical_generation_batch": 39.5,
           **s}
    text = tt.report(out)
    assert "never" in text and "optimum: fixed LR at B=8" in text
    assert "B=64: " in text.splitlines()[-1] and "B=8:" not in text.splitlines()[-1]


def _never_out(prog_8_sqrt):
    """A time-to-target result where no fixed-rule run reaches the target, and the sqrt rule's
    at B 8 has clocks prog_8_sqrt (0: never), at B 64 never; budget 64."""
    never = [[0] * 3] * 2
    rows = (tt.rows(fake_sweep((8, 64), [prog_8_sqrt, [0] * 3], never), "sqrt", 0.01, THR, None)
            + tt.rows(fake_sweep((8, 64), never, never), "fixed", 0.01, THR, None))
    first = fake_sweep((8, 64), [prog_8_sqrt, [0] * 3], never)
    return {"runs": rows, "lr_rules": ["sqrt", "fixed"], "critical_generation_batch": 39.5,
            "config": {"sweep": {"budget": 64}},
            **tt.summary(rows, ["sqrt", "fixed"], 0.2, first, None)}


def test_nothing_reached_says_what_is_missing_not_an_empty_ratio_or_none_in_range():
    """No run reaches the target: the ratio line said nothing after its colon, the critical
    training batch was 'none in range' (there is no smallest-batch clock to slow down from),
    and the figure was skipped unsaid."""
    out = _never_out([0, 0, 0])
    lines = tt.report(out).splitlines()
    assert lines[-1] == ("fixed-LR / sqrt-LR time at the same batch: none (no batch where both "
                         "rules reached the target)")
    assert lines[-2] == ("critical generation batch 39.5, critical training batch not measured "
                         "(the smallest batch did not reach the target in most seeds)")
    assert not any(line.rstrip().endswith(":") for line in lines)
    assert tt.figure(out) == ("no batch reached the target (in most seeds, before failing) "
                              "within the budget of 64 samples")
    # B 8 under sqrt reaches at 40 in every seed: its row has a time, the reference does too,
    # and the figure is drawn; at B 8 under fixed nothing: still no ratio at any batch
    out = _never_out([40, 40, 40])
    assert out["reference_seconds"] is not None
    assert tt.report(out).splitlines()[-1].endswith("none (no batch where both rules reached "
                                                    "the target)")


def test_a_figure_without_its_reference_says_which_batch_is_missing():
    """Only the fixed rule reaches at B 8: the reference (the first rule's smallest batch)
    is missing, and the reason names it."""
    never = [[0] * 3] * 2
    rows = (tt.rows(fake_sweep((8, 64), never, never), "sqrt", 0.01, THR, None)
            + tt.rows(fake_sweep((8, 64), [[40] * 3, [0] * 3], never), "fixed", 0.01, THR,
                      None))
    out = {"runs": rows, "lr_rules": ["sqrt", "fixed"], "config": {"sweep": {"budget": 64}},
           "reference_seconds": None}
    assert tt.figure(out) == ("the smallest batch under the sqrt rule (B=8), whose time all "
                              "times are normalised by, never reached the target (in most "
                              "seeds, before failing) within the budget of 64 samples")


def test_the_command_says_in_one_line_that_no_figure_was_drawn(tmp_path, capsys):
    """A study whose figure says why it draws nothing: the command prints that in one line
    (and removes an earlier run's figure of the same name, not of these results)."""
    from twoclock.cli import run_study
    from twoclock.studies import STUDIES
    out = _never_out([0, 0, 0])
    study = STUDIES.time_to_target._replace(run=lambda *a, **k: out)
    (tmp_path / "time_to_target.png").write_text("old")
    assert run_study.main(study, ["--out", str(tmp_path), "--quiet"], "time_to_target.py") == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == ("no figure: no batch reached the target (in most seeds, before "
                           "failing) within the budget of 64 samples; removed "
                           f"{tmp_path / 'time_to_target.png'} (an earlier run's figure)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["time_to_target.json"]


def test_time_to_target_config_bad_input():
    for kw, name in ((dict(lr_rules=("sqrt", "cubic")), "lr_rules"),
                     (dict(lr_rules=("sqrt", "sqrt")), "lr_rules"), (dict(delta=0.0), "delta"),
                     (dict(responses_per_sample=-1.0), "responses_per_sample")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            tt.Config(**kw)


def test_phase_panel_margin_counts_a_censored_progress_clock_as_the_budget():
    # B = 8 (budget 1000 // 8 * 8 = 1000 samples), 3 seeds; lr0 0.01 only
    res = fake_sweep((8, 16), [[100, 120, 140], [0, 0, 900]], [[400, 0, 500], [600, 700, 0]])
    res.n_steps_B = np.array([125, 62])
    p = phase_panel(res, "t")
    assert p["margin"][0][0] == 500 - 120  # fail median over {400, 500, inf}
    assert p["reached_first"][0][0] == 1.0
    # B = 16: progress censored (median inf), failure median 700: margin <= 700 - 62 * 16
    assert p["n_prog"][0][1] is None and p["margin"][0][1] == 700 - 62 * 16
    assert p["reached_first"][0][1] == pytest.approx(1 / 3)  # seed 2, whose failure never fired
    text = ps.report({"panels": [dict(p, margin=[[p["margin"][0][0], None]])]})
    assert text.splitlines()[-1].split()[:4] == ["0.01", "380", "1.00", ">"]


def test_phase_grid_comes_from_the_model_and_is_checked_before_simulating():
    bandit = MODELS["bandit"]
    cfg, grid, clock = ps.panel_setup(bandit)
    d = ps.defaults(bandit)
    assert grid == SweepConfig(**d.sweep) and clock == d.study["failure_clock"] == "fail_n"
    assert cfg.drift_threshold == d.model["drift_threshold"] != BanditConfig().drift_threshold
    mine = SweepConfig(batches=(64, 128), seeds=3, seed=7, n_ckpt=4)
    assert ps.panel_setup(bandit, cfg, mine, "collapse_n")[1:] == (mine, "collapse_n")
    with pytest.raises(ValueError, match="^batch must be a multiple"):
        ps.panel_setup(bandit, cfg, SweepConfig(batches=(64, 100)))
    with pytest.raises(ValueError, match="^failure_clock must be"):
        ps.panel_setup(bandit, cfg, mine, "tick")
    with pytest.raises(ValueError, match="^failure_clock must be"):  # the quadratic's has none
        ps.panel_setup(MODELS["quadratic"], None, None, "collapse_n")
    with pytest.raises(ValueError, match="^theory_points must be"):
        ps.Config(theory_points=1)


def test_phase_panel_of_an_extra_failure_clock_uses_that_clock():
    """fail_key names a model's extra clock (the bandit's collapse): the margin is its median
    minus progress, by hand; fail_n (never fired here) is not read."""
    res = fake_sweep((8, 16), [[100, 120, 140], [200, 210, 220]], [[0, 0, 0], [0, 0, 0]])
    res.extra = {"collapse_n": np.array([[[300, 0, 500]], [[260, 250, 0]]], np.int64)}
    p = phase_panel(res, "t", fail_key="collapse_n")
    assert p["n_fail"][0] == [500.0, 260.0]          # medians over {300, 500, inf}, {250, 260, inf}
    assert p["margin"][0] == [500.0 - 120, 260.0 - 210]
    assert p["reached_first"][0] == [1.0, 1.0]
    assert phase_panel(res, "t")["n_fail"][0] == [None, None]
