"""The shapes study's figures from a hand-written result, and `python -m paper_figures`
skipping a cached-only figure whose result file is not there."""
import matplotlib

matplotlib.use("Agg")

import paper_figures.__main__ as pf  # noqa: E402
from twoclock.figures import style as fs  # noqa: E402
from twoclock.figures.shapes import critical_target_figure, exponent_figure  # noqa: E402


def _row(pf_, acc, b, lo, hi, bn):
    return {"progress_frac": pf_, "accuracy": acc, "samples_at_b_min": 100.0,
            "critical_batch": b, "critical_ci": [lo, hi], "critical_found": 1.0,
            "noise": {"b_noise": bn}, "theory_batch": 1.44 * (8 + bn) - bn,
            "theory_path_batch": 12.0}


def result() -> dict:
    ex = [{"batches": [8, 16], "median": 0.6, "ci": [0.55, 0.65], "theory_path": 0.62,
           "theory_at_target": 0.55},
          {"batches": [16, 32], "median": None, "ci": [None, None], "theory_path": 0.7,
           "theory_at_target": 0.6}]
    panel = lambda name, acc0: {
        "model": name, "batches": [8, 16, 32], "unit": "samples", "start_accuracy": acc0,
        "critical": [_row(0.5, None if acc0 is None else 0.6, 14.0, 13.0, 15.0, 5.0),
                     _row(0.1, None if acc0 is None else 0.9, None, None, None, 40.0)],
        "fixed": {"exponents": ex}}
    return {"panels": [panel("quadratic", None), panel("bandit", 0.2)],
            "real": {"critical_batch": {"0.4": 325, "0.65": 3541},
                     "fixed_exponent": {"range": [1024, 8192], "exponent": [0.421, 0.667]}}}


def test_both_shapes_figures_build_with_labelled_axes(tmp_path):
    for name, build in (("crit", critical_target_figure), ("exp", exponent_figure)):
        fig = build(result())
        assert fs.axes_labelled(fig), name
        assert all(p.endswith((".pdf", ".png")) for p in fs.save(fig, str(tmp_path / name)))


def test_a_cached_only_figure_without_its_file_is_skipped_in_one_line(tmp_path, capsys):
    code = pf.main(["--only", "shapes_critical_batch", "policy_study", "--results",
                    str(tmp_path / "r"), "--out", str(tmp_path / "f")])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    skipped = [line for line in out if line.startswith("skipped")]
    assert len(skipped) == 2 and "shapes.json" in skipped[0] and "policy_study.json" in skipped[1]
    assert not (tmp_path / "f" / "shapes_critical_batch.png").exists()
