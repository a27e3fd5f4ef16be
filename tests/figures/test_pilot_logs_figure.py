"""The figure of a plan from logs: a relative condition drawn as the curve it compares, batches
in numeric order, no empty slot in the grid, the clipping onset drawn."""
import os

import matplotlib.pyplot as plt
import numpy as np
import pytest

from twoclock.figures.pilot_logs import logs_figure
from twoclock.figures.style import axes_labelled
from twoclock.pilot import logs as pl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv")
PEAK = "heldout_acc<=peak-0.1"


@pytest.fixture(scope="module")
def readme_plan():
    """The README's plan: three failure conditions, one relative to the running peak, and the
    clipped share."""
    return pl.plan_logs(EXAMPLE, "heldout_acc>=0.75", ["drift>=2", "kl>=1.5", PEAK],
                        predict=[512, 1024], clip="clip_frac")


def _panel(fig, start: str):
    got = [a for a in fig.axes if a.get_title(loc="left").split(" ", 1)[-1].startswith(start)]
    assert len(got) == 1, [a.get_title(loc="left") for a in fig.axes]
    return got[0]


def _vertical_at(ax, x: float) -> bool:
    return any(len(ln.get_xdata()) == 2 and np.allclose(ln.get_xdata(), [x, x])
               for ln in ax.get_lines())


def test_a_condition_on_the_running_peak_is_drawn_as_the_distance_from_it(readme_plan):
    out = {**readme_plan, "logs": {**readme_plan["logs"],
                                   "curves": [dict(c) for c in readme_plan["logs"]["curves"]]}}
    # one run's curve by hand: values 0.5, 0.7, 0.6, 0.8, 0.65 are 0, 0, 0.1, 0, 0.15 below
    # their running peak
    out["logs"]["curves"][0][PEAK] = {"samples": [1e3, 2e3, 3e3, 4e3, 5e3],
                                      "values": [0.5, 0.7, 0.6, 0.8, 0.65], "clock": 5e3,
                                      "crossed": True, "line": 0}
    fig = logs_figure(out)
    a = _panel(fig, "failure: " + PEAK)
    assert a.get_ylabel() == "heldout_acc - running peak"
    np.testing.assert_allclose(a.get_lines()[0].get_ydata(), [0, 0, -0.1, 0, -0.15],
                               rtol=0, atol=1e-15)
    assert any(len(ln.get_ydata()) == 2 and np.allclose(ln.get_ydata(), [-0.1, -0.1])
               for ln in a.get_lines())  # the level
    assert axes_labelled(fig)
    plt.close(fig)


def test_the_legend_lists_batches_in_numeric_order(readme_plan):
    # runs in the order of their names, as text: B128-..., B256-..., B64-...
    curves = sorted(readme_plan["logs"]["curves"], key=lambda c: c["run"])
    assert [c["batch"] for c in curves][:1] == [128]
    fig = logs_figure({**readme_plan, "logs": {**readme_plan["logs"], "curves": curves}})
    legend = _panel(fig, "progress").get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["B = 64", "B = 128", "B = 256"]
    plt.close(fig)


def test_every_panel_has_data_and_the_last_fills_its_row(readme_plan):
    """Progress, three failures, the clipped share and the clocks: six panels in two full rows;
    without the clipped share, five, the clocks spanning the two free slots of the second."""
    for plan, n, span in ((readme_plan, 6, 1),
                          ({**readme_plan, "clip_onset": None}, 5, 2)):
        fig = logs_figure(plan)
        assert len(fig.axes) == n
        for a in fig.axes:
            assert any(len(ln.get_xdata()) > 0 for ln in a.get_lines()), a.get_title(loc="left")
        last = fig.axes[-1].get_subplotspec()
        assert last.colspan.stop == 3 and len(last.colspan) == span
        assert fig.axes[-1].get_title(loc="left").split(" ", 1)[1].startswith("clocks")
        plt.close(fig)


def test_the_clipping_onset_is_drawn_and_nothing_past_the_reach(readme_plan):
    co = readme_plan["clip_onset"]
    assert co["binds_at"] is not None
    assert all(p["share"] is None for p in co["predictions"])  # 512, 1024: past the reach
    fig = logs_figure(readme_plan)
    clip, clocks = _panel(fig, "clipping"), fig.axes[-1]
    assert _vertical_at(clip, co["binds_at"]) and _vertical_at(clocks, co["binds_at"])
    labels = [t.get_text() for t in clip.get_legend().get_texts()]
    assert "predicted" not in labels and "past the reach" in labels
    # the fitted line stops at the reach
    fit = [ln for ln in clip.get_lines() if ln.get_label() == "fit (its checked reach)"]
    assert len(fit) == 1 and max(fit[0].get_xdata()) <= co["reach"]["batches"][1] * (1 + 1e-9)
    plt.close(fig)
    # no positive share in any pilot: no clipping panel
    none = {**co, "runs": [{**p, "share": 0.0} for p in co["runs"]], "binds_at": None}
    fig = logs_figure({**readme_plan, "clip_onset": none})
    assert len(fig.axes) == 5
    plt.close(fig)
