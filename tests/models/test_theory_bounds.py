"""The quadratic theory in bounded memory and time (issue 24, class 3): the mean-field first
passage holds one chunk of rows, not [T, dim]; every search is bounded by the sweep's budget;
a progress theory too big for its limit is skipped with the reason in the JSON."""
import importlib
import tracemalloc

import numpy as np
import pytest

from twoclock import OptimConfig, QuadraticConfig, SweepConfig
from twoclock.models.quadratic import adam_progress as ap, drift, first_passage as fp
from twoclock.models.quadratic.problem import initial_loss, spectrum

predict = importlib.import_module("twoclock.models.quadratic.predict")  # the module, not the
# function the package exports under that name


def test_the_mean_field_first_passage_holds_one_chunk_of_rows(monkeypatch):
    """dim 256, 1500 updates that never reach the target: the old code kept every row (3 x
    [1501, 256] float64, 9 MiB); the stream keeps one chunk (here 64 rows, 0.4 MiB) and gives
    the median of the whole path."""
    cfg = QuadraticConfig(dim=256, target=0.01)
    opt = OptimConfig()
    # 64 rows a chunk, one compiled shape for both paths
    monkeypatch.setattr(fp, "ROW_ELEMENTS", 64 * 256, raising=False)
    lr, B, T = 1e-4, 8.0, 1500  # too slow to reach the target: the recursion runs all T
    loss, _, t, rows = ap._adam_meanfield(cfg, opt, lr, B, T, record=True)
    assert t == T
    whole = fp.median_from_moments(spectrum(cfg), *rows, cfg.target * initial_loss(cfg),
                                   extrapolate=False)
    del rows
    tracemalloc.start()
    try:
        got = ap.adam_progress_passage(cfg, opt, lr * (B / opt.b0) ** -0.5, B, budget=T * B)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * 2**20, peak  # the whole path's rows would be 9 MiB
    assert got == (None if whole == 0 else B * whole)


def test_the_failure_search_is_bounded_by_the_budget(monkeypatch):
    """lr0 1e-20: the old search doubled its window up to 10^7 updates (110 s and more); now at
    most max(4 budgets, 2^16) updates."""
    # quick: the 4 budgets bind here
    monkeypatch.setattr(predict, "FAILURE_MIN_UPDATES", 64, raising=False)
    asked = []
    real = drift.drift_path

    def spy(b1, b2, mu, s2, lr, n):
        asked.append(n)
        assert n <= 4 * 320 // 4, n
        return real(b1, b2, mu, s2, lr, n)
    monkeypatch.setattr(drift, "drift_path", spy)
    cfg = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.1, target=0.3)
    sweep = SweepConfig(batches=(4,), lr0s=(1e-20,), seeds=2, budget=320, n_ckpt=2)
    runs = [{"lr0": 1e-20, "batch": 4, "lr": 1e-20 / 2 ** 0.5}]
    predict.predict(cfg, OptimConfig(), sweep, None, runs, [])
    assert asked and runs[0]["theory"]["failure_samples"] is None


def test_a_theory_over_its_limit_is_skipped_with_the_reason(monkeypatch):
    """dim x updates above THEORY_MAX_WORK: the progress theory is null, its method
    "skipped", the reason recorded; the failure theory (per drift coordinate) still runs."""
    # dim 4 x 80 updates (B = 4) and x 40 (the critical batch's search from B0 = 8) are over
    # it, x 20 (B = 16) is not
    monkeypatch.setattr(predict, "THEORY_MAX_WORK", 4 * 39, raising=False)
    cfg = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.1, target=0.3)
    sweep = SweepConfig(batches=(4, 16), lr0s=(1e-2,), seeds=2, budget=320, n_ckpt=2)
    runs = [{"lr0": 1e-2, "batch": b, "lr": 1e-2 * (b / 8) ** 0.5} for b in (4, 16)]
    crit = [{"lr0": 1e-2}]
    predict.predict(cfg, OptimConfig(), sweep, None, runs, crit)
    small, large = (r["theory"] for r in runs)
    assert small["progress_samples"] is None and small["method"]["progress_samples"] == "skipped"
    assert "dim 4 x 80 updates" in small["skipped"] and "THEORY_MAX_WORK" in small["skipped"]
    assert small["failure_samples"] is not None
    assert large["method"]["progress_samples"] != "skipped" and "skipped" not in large
    assert crit[0]["theory"]["method"] == "skipped" and crit[0]["theory"]["skipped"]
    for name in ("sgd", "momentum"):
        runs = [{"lr0": 1e-2, "batch": 4, "lr": 1e-2 * 0.5 ** 0.5}]
        predict.predict(cfg, OptimConfig(name=name), sweep, None, runs, [])
        th = runs[0]["theory"]
        assert th["method"]["progress_samples"] == th["method"]["progress_samples_mean"] \
            == "skipped" and th["progress_samples"] is None, th
