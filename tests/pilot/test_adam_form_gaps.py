"""tools/adam_form_gaps.py, the regime map's pre-registered check: the committed predictions are
the tool's cells, `predict` never overwrites, and the committed scores' bookkeeping against a
NumPy recomputation from the stored numbers (no simulation)."""
import math

import numpy as np
import pytest

from tests.helpers import load_script, preregistered

gaps = load_script("tools/adam_form_gaps.py")


def test_the_committed_predictions_are_the_tools_cells():
    pred = preregistered("adam_form_gaps_predictions.json")
    assert [{k: c[k] for k in ("target", "lr0", "model")} for c in pred["cells"]] == gaps.CELLS
    for c in pred["cells"]:  # gap = form - simulated, both from the stored clocks' ends
        p = c["predicted"]
        assert math.isclose(p["gap"], p["form"] - p["simulated"], abs_tol=1e-12)
        assert math.isclose(p["simulated"], math.log2(p["clocks"][-1] / p["clocks"][-2]),
                            rel_tol=1e-12)
        assert c["baseline_gap"] == 0.0


def test_the_scores_bookkeeping_by_hand():
    pred = preregistered("adam_form_gaps_predictions.json")
    got = preregistered("adam_form_gaps_measured.json")
    assert len(got["cells"]) == len(pred["cells"]) == got["n"]
    diffs = []
    for c, r in zip(pred["cells"], got["cells"]):
        p, (gap, (lo, hi)) = c["predicted"]["gap"], (r["measured"]["gap"], r["measured"]["ci"])
        assert r["predicted_gap"] == p and lo <= gap <= hi
        assert r["theory_in_ci"] == (lo <= p <= hi) and r["baseline_in_ci"] == (lo <= 0 <= hi)
        assert r["theory_closer"] == (abs(p - gap) < abs(gap))
        diffs.append(abs(p - gap) - abs(gap))
    assert got["theory_in_ci"] == sum(r["theory_in_ci"] for r in got["cells"])
    d = np.array(diffs)
    t975_df6 = 2.446912  # Student t, 6 degrees of freedom (tables)
    half = t975_df6 * d.std(ddof=1) / math.sqrt(d.size)
    assert d.size == 7
    assert np.allclose([got["contrast"]["mean"], *got["contrast"]["ci"]],
                       [d.mean(), d.mean() - half, d.mean() + half], rtol=1e-6)


def test_the_8x_bookkeeping_by_hand():
    for r in preregistered("adam_form_gaps_measured.json")["cells"]:
        a = r["at_8x"]
        assert math.isclose(a["error"], a["predicted"] / a["simulated"] - 1, rel_tol=1e-12)
        assert a["covered"] == (a["band"][0] <= a["simulated"] <= a["band"][1])
        assert a["band"][0] < a["predicted"] < a["band"][1]


@pytest.mark.parametrize("cell", [{"target": 0.05, "lr0": 0.001, "model": {"dim": 1}},
                                  {"target": 0.05, "lr0": 0.001, "model": {"alpha": 0.0}}])
def test_the_floor_over_the_target_is_mean_fields_plateau(cell):
    # the tool's hand formula against mean-field Adam run to its plateau at B 8 (an independent
    # recursion), within the first-order term the formula drops (h lr sqrt(B) / (2 sqrt(c)),
    # h = 1 and c = 1 here: 0.0014)
    from twoclock import OptimConfig, QuadraticConfig
    from twoclock.models.quadratic.adam_progress import _adam_meanfield
    from twoclock.models.quadratic.problem import initial_loss
    cfg = QuadraticConfig(target=cell["target"], **cell["model"])
    loss, _, _ = _adam_meanfield(cfg, OptimConfig(name="adam", lr_rule="fixed"), cell["lr0"],
                                 8.0, 2_000_000, None)
    plateau = loss[-1] / initial_loss(cfg) / cell["target"]
    bound = cell["lr0"] * math.sqrt(8) / 2
    assert abs(gaps.floor_over_target(cell) / plateau - 1) <= bound
