"""Several --progress targets: the command's figure draws every target, not the first alone
(twoclock/figures/pilot_logs.py, targets_figure): each target's level on the progress panel,
and each target's own progress clock (fit, crossings, predictions) in the clocks panel."""
import json

import matplotlib.pyplot as plt
import numpy as np

from twoclock.cli.plan import main
from twoclock.figures import style

TARGETS = ("heldout_acc>=0.6", "heldout_acc>=0.57", "heldout_acc>=0.54")


def test_the_figure_of_several_targets_draws_each_target(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(style, "save", lambda fig, stem: drawn.append(fig) or [])
    assert main(["--logs", "twoclock/data/example_sweep_logs.csv", "--progress",
                 " ".join(TARGETS), "--predict", "256", "--quiet", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "plan.json").read_text())
    (fig,) = drawn
    by_title = {a.get_title(loc="left").split("\n")[0]: a for a in fig.axes}
    progress = next(a for t, a in by_title.items() if t.startswith("(a) progress"))
    clocks = next(a for t, a in by_title.items() if "clocks" in t)
    # each target's level, by hand from the command: 0.6, 0.57 and 0.54, a horizontal line
    flat = [ln.get_ydata()[0] for ln in progress.get_lines()
            if len(ln.get_ydata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1]]
    for level in (0.6, 0.57, 0.54):
        assert any(np.isclose(y, level) for y in flat), (level, flat)
    # each target's progress clock in the clocks panel, named, with its own plan's prediction
    labels = [t.get_text() for t in clocks.get_legend().get_texts()]
    for t in TARGETS:
        assert f"progress {t}" in labels, labels
    ys = [float(y) for ln in clocks.get_lines() for y in np.atleast_1d(ln.get_ydata())]
    for row in out["targets"]:
        (p,) = row["plan"]["predictions"]
        assert p["batch"] == 256
        assert any(np.isclose(y, p["progress_samples"]["median"]) for y in ys), row["condition"]
    plt.close(fig)
