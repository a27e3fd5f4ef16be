"""The updates-per-batch cost study (twoclock.studies.updates_cost): its config's refusals, its
cost recomputed from the per-seed clocks it stores (a NumPy oracle: the ratio of medians and a
paired percentile bootstrap written out here), and its report and figure on a hand-made result
(no simulation)."""
import math

import numpy as np
import pytest

from twoclock.models import MODELS
from twoclock.studies import updates_cost as uc


@pytest.mark.parametrize("kw,name", [({"updates": (2, 4)}, "updates"),
                                     ({"updates": (1, 0)}, "updates"),
                                     ({"lr0s": (0.1, -1.0)}, "lr0s"),
                                     ({"seeds": 1}, "seeds"),
                                     ({"budget_factor": 0.5}, "budget_factor"),
                                     ({"budget": 10}, "budget")])
def test_a_bad_grid_is_refused_in_one_line_naming_it(kw, name):
    with pytest.raises(ValueError, match=name):
        uc.Config(**kw)


def test_a_batch_the_model_cannot_split_is_refused_before_anything_runs():
    # by hand: B = K m responses are K m / G prompts in K minibatches of m / G prompts each, so
    # m = 12 with G = 8 (1.5 prompts an update) is refused and m = 24 (3) is not, for any K
    model = MODELS["bandit"]
    with pytest.raises(ValueError, match="per_update"):
        uc.Config(per_update=12, updates=(1, 4)).check(model, model.config())
    uc.Config(per_update=24, updates=(1, 4, 32)).check(model, model.config())


def _oracle_ratio(x, y, seeds, n_boot=2000):
    """med(x) / med(y) and the 2.5/97.5% percentiles over paired seed resamples (the project's
    resampling: numpy default_rng(0).integers(0, S, (2000, S)), 'lower' quantiles)."""
    idx = np.random.default_rng(0).integers(0, seeds, size=(n_boot, seeds))
    r = np.median(x[idx], axis=1) / np.median(y[idx], axis=1)
    lo, hi = np.quantile(r, [0.025, 0.975], method="lower")
    return float(np.median(x) / np.median(y)), float(lo), float(hi)


@pytest.fixture(scope="module")
def small():
    model = MODELS["bandit"]
    from twoclock import OptimConfig
    cfg = uc.Config(per_update=16, updates=(1, 2), lr0s=(0.1,), clips=(0.2,), seeds=3,
                    budget=8_000)
    return uc.run(model, model.config(), OptimConfig(name="adam"), cfg)


def test_the_cost_is_the_ratio_of_the_stored_clocks_medians(small):
    for c in small["cells"]:
        ps = {k: np.asarray(v, float) for k, v in c["per_seed"].items()}
        assert (ps["k_updates"] > 0).all() and (ps["one_update_at_m"] > 0).all()
        want = _oracle_ratio(ps["k_updates"], ps["one_update_at_m"], 3)
        got = (c["cost"]["median"], *c["cost"]["ci"])
        assert np.allclose(got, want, rtol=1e-12), (got, want)
        want1 = _oracle_ratio(ps["one_update_at_batch"], ps["one_update_at_m"], 3)
        assert np.allclose((c["one_update_cost"]["median"], *c["one_update_cost"]["ci"]),
                           want1, rtol=1e-12)
        assert c["batch"] == 16 * c["updates"]
    one = next(c for c in small["cells"] if c["updates"] == 1)
    assert one["cost"]["median"] == 1.0 and one["clip_frac_active"] == 0.0
    assert small["config"]["optimizer"]["lr_rule"] == "fixed"


def _hand_result():
    cell = lambda lr0, clip, k, cost: {
        "lr0": lr0, "clip": clip, "updates": k, "batch": 64 * k, "budget": 1,
        "progress_samples": {"median": 1000.0 * cost, "ci": [900.0, 1100.0]},
        "cost": {"median": cost, "ci": [cost * 0.9, cost * 1.1]},
        "one_update_cost": {"median": float(k), "ci": [k * 0.9, None]},
        "clip_frac_active": 0.01 * (k - 1), "per_seed": {}}
    return {"model": "bandit", "seconds": 1.0,
            "config": {"per_update": 64, "seeds": 16, "lr0s": [0.02, 0.1], "clips": [0.2, None]},
            "cells": [cell(l, c, k, 1.0 + (k - 1) * (l if c else 0.0))
                      for l in (0.02, 0.1) for c in (0.2, None) for k in (1, 2, 4)]}


def test_the_report_has_a_row_per_cell_with_its_cost_and_ci():
    text = uc.report(_hand_result()).splitlines()
    assert len(text) == 2 + 12
    # lr0 0.1, clip 0.2, K 4: cost 1 + 3 x 0.1 = 1.3 [1.17, 1.43] (by hand), clipped 0.03
    row = next(r for r in text if r.split()[:3] == ["0.1", "0.2", "4"])
    assert "1.30 [1.17, 1.43]" in row and row.rstrip().endswith("0.030")
    # an open CI end prints as '-'
    assert "4.00 [3.60, -]" in row


def test_the_figure_draws_a_line_per_lr0_and_clip():
    fig = uc.figure(_hand_result())
    assert len(fig.axes[0].get_lines()) >= 4 and not math.isnan(fig.axes[0].get_ylim()[0])
