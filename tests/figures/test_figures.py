"""Every figure builds headless from result dicts and labels its axes; bad CLI input is one line."""
import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest

import paper_figures.__main__ as pf
from twoclock.figures import style as fs, critical_batch as plotting
from twoclock.analysis.results import SCHEMA, write_json

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _summ(m, lo=None, hi=None, reached=8):
    return {"median": m, "ci": [lo if lo is not None else m, hi if hi is not None else m],
            "reached": reached, "seeds": 8}


def schedule_result():
    curve = {"samples": [100, 1000, 5000], "progress_frac": [0.5, 0.04, 0.01],
             "drift": [0.01, 0.1, 0.5]}
    runs = [{"kind": k, "label": k, "curve": curve, "hours": _summ(h)}
            for k, h in (("constant_small", 15.0), ("constant_large", None), ("schedule", 12.0))]
    return {"config": {"model": {"target": 0.05, "drift_threshold": 0.2}}, "runs": runs,
            "curve_target": 0.05, "progress_label": "loss / initial loss",
            "plan": {"switch_samples": 800},
            "switch_sweep": [{"switch": s, "hours": _summ(h), "reached_first": r}
                             for s, h, r in ((0, None, 0.2), (400, 10.0, 1.0), (800, 12.0, 0.9))]}


def ttt_result():
    runs = [{"batch": b, "lr_rule": rule, "time_to_target": _summ(t * 3600, t * 3500, t * 3700)}
            for rule, ts in (("sqrt", (15, 9, 6, 7)), ("fixed", (15, 13, 14, 20)))
            for b, t in zip((8, 16, 32, 64), ts)]
    return {"runs": runs, "lr_rules": ["sqrt", "fixed"], "optimum": {"lr_rule": "sqrt", "batch": 32},
            "reference_seconds": 15 * 3600.0, "critical_generation_batch": 39.5,
            "critical_training_batch": 37.0}


def phase_result():
    B, L = [8, 16, 32], [0.005, 0.01, 0.02]
    tb, tl = np.geomspace(8, 32, 5), np.geomspace(0.005, 0.02, 5)
    ratio = np.log(50 / tb[None, :]) - np.log(tl[:, None] / 0.005)
    panel = {"title": "quadratic", "unit": "samples", "batch_unit": "samples per update",
             "batches": B, "lr0s": L, "margin": [[300, 100, -50], [200, None, -100], [50, -20, -300]],
             "reached_first": [[1, 1, 0.2], [1, 1, 0.1], [1, 0.4, 0]],
             "theory": {"batches": tb.tolist(), "lr0s": tl.tolist(), "log_ratio": ratio.tolist()}}
    return {"panels": [panel, dict(panel, title="bandit", theory=None)]}


def bandit_result():
    return {"unit": "responses", "runs": [
        {"batch": b, "lr0": 0.02, "progress_samples": _summ(1000 * b ** 0.2),
         "failure_samples": _summ(5000.0)} for b in (64, 128, 256)]}


def clipping_result():
    runs = [{"batch": b, "clip": c, "progress_samples": _summ(900.0 * (1 + (c or 0))),
             "failure_samples": _summ(8000.0, 7000.0, 9000.0),
             "early_accuracy": {"median": 0.8, "ci": [0.79, 0.81]}}
            for b in (64, 1024) for c in (0.1, 0.2, None)]
    return {"unit": "responses", "runs": runs, "config": {"early_samples": 4096}}


def headline_result():
    """Two lr0s x three batches; the largest batch's progress clock is censored."""
    runs = [{"batch": b, "lr0": lr0,
             "progress_samples": _summ(1000.0 * b ** 0.3) if b < 128 else _summ(None, None,
                                                                                  None, 3),
             "failure_samples": _summ(9000.0, 8000.0, 10000.0),
             "theory": {"failure_samples": 8800.0,
                        "progress_samples": 1000.0 * b ** 0.3 if b < 128 else None}}
            for b in (8, 32, 128) for lr0 in (0.01, 0.02)]
    return {"runs": runs, "config": {"delta": 0.2}}


def test_headline_figure_builds_with_labelled_axes(tmp_path):
    assert fs.axes_labelled(plotting.clocks_vs_batch_figure(headline_result()))
    paths = fs.save(plotting.clocks_vs_batch_figure(headline_result()), str(tmp_path / "h"))
    assert all(os.path.getsize(p) > 1000 for p in paths)


def regime_map_result():
    """Delays over (batch, lr0) for each eps, one cell censored, with the predicted boundary."""
    B, L = [64, 256, 1024], [0.01, 0.02, 0.04]
    delay = {str(c): [[None if (c, b, l) == (0.5, 64, 0.01) else 1 + 0.5 / c * l * b / 1024
                       for l in L] for b in B] for c in (0.1, 0.2, 0.5)}
    return {"unit": "responses", "batches": B, "lr0s": L, "clips": [0.1, 0.2, 0.5],
            "delay": delay, "eps_star": [[0.2 * l * b / 1024 for l in L] for b in B]}


BUILDERS = [
    ("clipping", lambda: pf.clipping(clipping_result())),
    ("clipping_regime_map", lambda: pf.FIGURES["clipping_regime_map"][2](regime_map_result())),
    ("schedule", lambda: pf.schedule(schedule_result())),
    ("time_to_target", lambda: pf.time_to_target(ttt_result())),
    ("phase_diagram", lambda: pf.phase_diagram(phase_result())),
    ("clocks_quadratic", lambda: pf.clocks_quadratic(headline_result())),
    ("clocks_bandit", lambda: pf.clocks_bandit(bandit_result())),
]


def test_every_paper_figure_has_a_builder_under_test():
    assert {n for n, _ in BUILDERS} == set(pf.FIGURES)


@pytest.mark.parametrize("name, build", BUILDERS, ids=[n for n, _ in BUILDERS])
def test_figure_builds_headless_with_labelled_axes(name, build, tmp_path):
    assert matplotlib.get_backend().lower() == "agg"
    fig = build()
    assert fs.axes_labelled(fig), f"{name}: an axis has no label"
    for ax in fig.axes:
        if ax.get_label() != "<colorbar>" and ax.get_xlabel().startswith("batch"):
            assert ax.get_xscale() == "log", f"{name}: batch axis must be logarithmic"
    paths = fs.save(fig, str(tmp_path / name))
    assert [os.path.splitext(p)[1] for p in paths] == [".pdf", ".png"]
    assert all(os.path.getsize(p) > 1000 for p in paths)


def test_axes_labelled_catches_a_missing_label():
    fig, (ax,) = fs.figure()
    ax.plot([1, 2], [1, 2])
    ax.set_xlabel("batch")
    assert not fs.axes_labelled(fig)
    ax.set_ylabel("samples")
    assert fs.axes_labelled(fig)


@pytest.mark.parametrize("script, args, name", [
    ("schedule.py", ["--margin", "1.5"], "margin"),
    ("schedule.py", ["--model", "bandit", "--batch-large", "1020"], "batch"),
    ("time_to_target.py", ["--lr-rules", "cubic"], "--lr-rules"),
    ("phase_diagram.py", ["--models", "bandit", "--failure-clock", "tick"], "failure-clock"),
    ("phase_diagram.py", ["--models", "lattice"], "model"),
    ("phase_diagram.py", ["--batches", "8", "16"], "--batches"),
])
def test_bad_cli_input_is_one_line_exit_2(script, args, name):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", script)] + args,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and name in err[0] and "Traceback" not in done.stderr


def test_schedule_figure_takes_label_and_target_from_the_result():
    fig = fs.schedule_figure(dict(schedule_result(), curve_target=0.4,
                                  progress_label="held-out error / initial error"))
    ax = fig.axes[0]
    assert ax.get_ylabel() == "held-out error / initial error (median)"
    assert [0.4, 0.4] in [list(line.get_ydata()) for line in ax.get_lines()]


def test_a_cached_result_of_an_older_schema_is_simulated_again(tmp_path):
    path = str(tmp_path / "r.json")
    assert not pf.current(path)
    write_json(path, {"schema": SCHEMA - 1, "runs": []})
    assert not pf.current(path)
    write_json(path, {"schema": SCHEMA, "runs": []})
    assert pf.current(path)
