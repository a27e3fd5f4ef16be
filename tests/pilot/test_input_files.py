"""Input files (issue 24, class 7): a UTF-8 BOM, a duplicated column, an outlier batch, 100k
rows in linear time, plan.py's rescue, a truncated cached JSON in paper_figures."""
from contextlib import redirect_stderr, redirect_stdout
import importlib
import io
import json
import os
import time

import numpy as np
import pytest

from tests.helpers import plan_main
from twoclock.pilot import fit as pf, plan as pilot, report as pilot_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = ["batch,lr,progress_samples,failure_samples,budget,seconds_per_update",
        "8,0.01,2000,9000,20000,1.0", "16,0.0141421356,2100,,20000,1.1",
        "32,0.02,2500,9500,20000,1.3", "64,0.0282842712,3300,9400,20000,1.8"]


def _csv(tmp_path, lines, prefix=b""):
    p = tmp_path / "runs.csv"
    p.write_bytes(prefix + ("\n".join(lines) + "\n").encode())
    return str(p)


def _plan_main():
    return plan_main()


def _run(main, argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    """Excel's UTF-8 CSV starts with a BOM; before issue 24: "missing column 'batch'"."""
    plain = pilot.read_runs(_csv(tmp_path, GOOD))
    marked = pilot.read_runs(_csv(tmp_path, GOOD, prefix=b"\xef\xbb\xbf"))
    np.testing.assert_array_equal(plain.batch_R, marked.batch_R)
    np.testing.assert_array_equal(plain.prog_R, marked.prog_R)


@pytest.mark.parametrize("lines, words", [
    ([GOOD[0] + ",batch"] + [r + ",8" for r in GOOD[1:]], "column 'batch' appears twice"),
    (GOOD + ["1e30,0.01,2000,9000,,"], "must be at most 2^53"),
    (GOOD + ["1e12,0.01,2000,9000,,"], "batch 1e+12 (run 5) is more than 1e+06 times"),
])
def test_a_duplicated_column_or_an_outlier_batch_is_refused(tmp_path, lines, words):
    """Before issue 24 the second 'batch' column was silently ignored, and one run at
    B = 1e30 moved the critical batch from 28 to 3e29 without a word."""
    with pytest.raises(pilot.PilotError) as e:
        pilot.read_runs(_csv(tmp_path, lines))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_rule_of_100k_runs_is_found_in_linear_time():
    """infer_rule compared every pair of runs (100k rows: about an hour); now neighbours in
    batch order, under a second, and the same rule as all pairs on a small sample."""
    rng = np.random.default_rng(0)
    n = 100_000
    B = 2.0 ** rng.integers(3, 10, n)
    lr = 1e-3 * (B / 8) ** 0.5 * (1 + rng.uniform(-1e-3, 1e-3, n))
    lr[: n // 10] = 1e-3  # a fixed-lr control
    t0 = time.perf_counter()
    r = pilot.infer_rule(B, lr)
    assert time.perf_counter() - t0 < 5
    assert r["p"] == 0.5 and r["b0"] == 8 and r["on_rule"].sum() >= 0.85 * n
    pick = rng.choice(n, 200, replace=False)  # all pairs: the same rule, the same runs on it
    small = pilot.infer_rule(B[pick], lr[pick])
    assert small["p"] == 0.5 and (small["on_rule"] == r["on_rule"][pick]).all()


def test_a_fit_over_many_runs_groups_them_by_batch(monkeypatch):
    """The grid of a progress fit over distinct batches gives the per-run grid's numbers."""
    rng = np.random.default_rng(1)
    B = 2.0 ** rng.integers(3, 9, 3000)
    N = 2000 * (1 + B / 64) ** 0.5 * np.exp(rng.normal(0, 0.05, B.size))
    grouped = pf.fit_progress(B, N, "saturation", 0.5)
    monkeypatch.setattr(pf, "GROUP_ABOVE", 10**9)
    per_run = pf.fit_progress(B, N, "saturation", 0.5)
    for a, b in zip(grouped._grid(), per_run._grid()):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("broken", ["table", "figure"])
def test_plan_keeps_its_result_when_publishing_fails(tmp_path, monkeypatch, broken):
    """plan.py had no rescue: a failing table or figure gave a traceback and exit 1."""
    def boom(*a, **k):
        raise RuntimeError(f"{broken} broke")
    monkeypatch.setattr(pilot_report if broken == "table" else
                        importlib.import_module("twoclock.figures.pilot"),
                        "table" if broken == "table" else "plan_figure", boom)
    code, _, err = _run(_plan_main(), [_csv(tmp_path, GOOD), "--out", str(tmp_path)])
    assert code == 3 and err.count("\n") == 1 and f"{broken} broke" in err, err
    # the JSON is written before the table's error is raised, and the line says so
    assert f"after writing {tmp_path / 'plan.json'}" in err
    assert json.loads((tmp_path / "plan.json").read_text())["critical_batch"]


def test_paper_figures_resimulates_a_truncated_cached_json(tmp_path, monkeypatch):
    """A cached result cut short (a full disk): before issue 24 a JSONDecodeError traceback;
    now one line naming it, and it is simulated again."""
    import paper_figures.__main__ as pfm
    from tests.cli.test_reliability import TINY, run_main
    good = tmp_path / "good"
    assert run_main([*TINY, "--no-store", "--no-figure", "--out", str(good)])[0] == 0
    results = tmp_path / "results"
    results.mkdir()
    cached = results / "critical_batch_quadratic.json"
    text = (good / "critical_batch_quadratic.json").read_text()
    cached.write_text(text[: len(text) // 2])
    ran = []

    def simulate(cmd, **kw):
        ran.append(cmd)
        cached.write_text(text)
        return type("Done", (), {"returncode": 0})()
    monkeypatch.setattr(pfm.subprocess, "run", simulate)
    code, out, err = _run(pfm.main, ["--results", str(results), "--out", str(tmp_path / "f"),
                                     "--only", "clocks_quadratic"])
    assert code == 0 and len(ran) == 1, (out, err)
    assert f"{cached} is unreadable (JSONDecodeError" in out and "re-simulating it" in out
    assert (tmp_path / "f" / "clocks_quadratic.png").exists()
