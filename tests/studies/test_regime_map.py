"""The regime map's pieces that need no simulation: the truncation of a longer run to a shorter
budget, the mixed-share path, a finished cell read back, the config's refusals, and the
theory's clock against hand solutions."""
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st
from scipy.stats import norm

from twoclock.clock import NEVER
from twoclock.studies import regime_report as rr, regime_theory as th
from twoclock.studies.regime_map import Config, load_cell, mixed_path, truncated


class FakeRes:
    """Two batches, 1 lr0, 2 seeds, a checkpoint every update."""
    batches = (2, 4)
    lrs_BxL = np.array([[1.0], [2.0]])

    def __init__(self):
        self.prog_n = np.array([[[3.0, 7.5]], [[4.0, 12.0]]])
        self.extra = {"null_n": np.array([[[1.5, NEVER]], [[9.0, 11.0]]])}
        self.ckpt = []
        for b, n in ((2, 6), (4, 3)):
            s = b * np.arange(1, n + 1, dtype=float)
            self.ckpt.append({"samples": np.broadcast_to(s, (1, 2, n)).copy(),
                              "heldout_acc": np.broadcast_to(np.linspace(0.2, 0.4, n),
                                                             (1, 2, n)).copy(),
                              "zero_adv_frac": np.broadcast_to(
                                  np.linspace(0, 0.5, n), (1, 2, n)).copy()})


def test_truncation_censors_late_clocks_and_drops_late_checkpoints():
    res = FakeRes()
    t = truncated(res, 9)  # B 2 reaches 8 responses, B 4 reaches 8
    np.testing.assert_array_equal(t.prog_n, [[[3.0, 7.5]], [[4.0, NEVER]]])
    np.testing.assert_array_equal(t.extra["null_n"], [[[1.5, NEVER]], [[NEVER, NEVER]]])
    assert t.ckpt[0]["samples"][0, 0].tolist() == [2, 4, 6, 8]
    assert t.ckpt[1]["samples"][0, 0].tolist() == [4, 8]
    # the longer run is left as it was
    assert res.prog_n[1, 0, 1] == 12.0 and res.ckpt[0]["samples"].shape[-1] == 6


def test_mixed_path_share_and_active_responses_by_hand():
    res = FakeRes()
    path = mixed_path(res, 12)
    p = path["4"]  # checkpoints at 4, 8, 12 with mixed share 1, 0.75, 0.5
    share = dict(zip(p["responses"], p["share"]))
    active = dict(zip(p["responses"], p["active"]))
    assert share[4.0] == pytest.approx(1.0) and share[12.0] == pytest.approx(0.5)
    assert active[4.0] == pytest.approx(4.0)        # 4 responses at share 1
    assert active[12.0] == pytest.approx(4 + 3 + 2)  # + 4 x 0.75 + 4 x 0.5


def test_a_cell_is_read_back_only_with_its_config(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"config": {"a": 1}, "x": 2}')
    assert load_cell(str(path), {"a": 1})["x"] == 2
    assert load_cell(str(path), {"a": 2}) is None
    assert load_cell(str(tmp_path / "none.json"), {"a": 1}) is None


@pytest.mark.parametrize("kw, name", [
    ({"levels": (1.2,)}, "levels"), ({"levels": (0.3, 0.3)}, "levels"),
    ({"cells": ("0.7",)}, "cells"), ({"budgets": (8192,)}, "budgets"),
    ({"budgets": (0,)}, "budgets"), ({"end_b": 1.0}, "end_b"),
])
def test_bad_config_is_one_line_naming_the_field(kw, name):
    with pytest.raises(ValueError, match=rf"^{name} must be") as e:
        Config(**kw)
    assert "\n" not in str(e.value)


def test_cells_pick_levels_in_run_order():
    assert Config(cells=("0.2", "acc0.3")).todo() == (0.3, 0.2)
    assert Config().todo() == (0.3, 0.1, 0.2)


def test_one_sided_median_variance_is_the_reflection_principle():
    # P(max W >= a by variance v) = 2 (1 - Phi(a / sqrt v)) = 1/2
    v = th.median_variance(0.4, two_sided=False)
    assert 2 * (1 - norm.cdf(0.4 / math.sqrt(v))) == pytest.approx(0.5, abs=1e-9)


def test_two_sided_survival_against_the_union_bound_and_a_simulation():
    # far from the barrier the two sides rarely both matter: 1 - 4 (1 - Phi(z)) to 1e-6
    for z in (2.5, 3.0):
        assert th.two_sided_survival(z) == pytest.approx(1 - 4 * norm.sf(z), abs=1e-6)
    # at the median barrier a random walk's |max| crosses half the time (4000 walks, 2000
    # steps: binomial se 0.0079, tolerance 4 se plus the discrete walk's bias ~0.02)
    v = th.median_variance(1.0, two_sided=True)
    rng = np.random.default_rng(0)
    w = np.cumsum(rng.normal(0, math.sqrt(v / 2000), (4000, 2000)), axis=1)
    crossed = np.mean(np.max(np.abs(w), axis=1) >= 1.0)
    assert crossed == pytest.approx(0.5, abs=4 * 0.0079 + 0.02)


@given(m0=st.floats(0.05, 1.0), s=st.floats(1.0, 8.0))
@example(m0=1.0, s=1.0)
def test_a_constant_share_gives_a_flat_clock(m0, s):
    r = np.linspace(1, 1e5, 50)
    assert th.clock_at(r, np.full(50, m0), s, 100.0) == pytest.approx(100.0 / m0, rel=1e-9)


@given(s=st.floats(1.0, 8.0))
def test_a_linearly_rising_share_gives_exponent_one_half_in_s(s):
    # m(r) = r / 1e4: A(u) = u^2 / 2e4; s A(N / s) = a gives N = sqrt(2e4 a s)
    r = np.linspace(1e-6, 1e5, 200_001)
    got = th.clock_at(r, r / 1e4, s, 500.0)
    assert got == pytest.approx(math.sqrt(2e4 * 500.0 * s), rel=1e-4)


def test_a_path_that_never_gets_there_is_censored():
    assert th.clock_at([10.0, 20.0], [0.1, 0.1], 1.0, 100.0) == math.inf


def test_stretch_reads_a_path_stretched_by_two():
    r = np.array([64.0, 128, 256, 512, 1024, 2048, 4096])
    acc = lambda rr: 0.2 + 0.4 * (1 - np.exp(-rr / 500))
    path = {"64": {"responses": r.tolist(), "acc": acc(r).tolist()},
            "256": {"responses": r.tolist(), "acc": acc(r / 2).tolist()}}
    s = th.stretch(path)
    assert s["64"] == 1.0
    # piecewise-linear reading of a smooth curve: within 5% of the exact 2
    assert s["256"] == pytest.approx(2.0, rel=0.05)


def test_the_command_refuses_a_bad_level_in_one_line_before_any_work():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, os.path.join(root, "experiments", "regime_map.py"),
                        "--levels", "1.5", "--no-figure", "--out", os.devnull + "_never"],
                       capture_output=True, text=True, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "levels must be" in lines[0], p.stderr


def test_path_check_finds_no_gap_on_an_exactly_stretched_path():
    # B 256's share and accuracy are B 64's at r / 2: its mixed responses are 2 A_64(R / 2)
    r = np.geomspace(64, 8192, 400)
    share = lambda rr: 0.9 - 0.5 * (1 - np.exp(-rr / 3000))
    acc = lambda rr: 0.3 + 0.5 * (1 - np.exp(-rr / 3000))
    path = {}
    for b, k in (("64", 1.0), ("256", 2.0)):
        m = share(r / k)
        rr, A = th.active(r, m)
        path[b] = {"responses": r.tolist(), "share": m.tolist(), "acc": acc(r / k).tolist(),
                   "active": A[1:].tolist()}
    cell = {"budgets": {"4096": {"mixed_path": path, "per_seed": {}}}}
    got = th.path_check(cell)["4096"]["256"]
    assert got["s_B"] == pytest.approx(2.0, rel=0.01)
    assert got["predicted"] == pytest.approx(got["measured"], rel=0.01)
    # and the stretched path has spent more: its share has fallen less by then
    assert got["measured"] > th.path_check(cell)["4096"]["64"]["measured"]


def test_a_finished_cell_is_read_back_and_a_missing_one_run(tmp_path, monkeypatch):
    from twoclock.atomic import dumps
    from twoclock.models.policy import MODEL, PolicyConfig
    from twoclock.studies import regime_map as rm
    from twoclock.studies.protocol import Engine

    class Ran(Exception):
        pass

    def no_run(*a, **k):
        raise Ran
        yield
    monkeypatch.setattr(rm, "run_cells", no_run)
    base = PolicyConfig()
    _, _, _, conf = rm.cell_config(Config(), base, 0.3)
    path = rm.cell_file(str(tmp_path), 0.3, conf)
    (tmp_path / "regime_map_cells").mkdir()
    with open(path, "w") as f:
        f.write(dumps({"config": conf, "level": 0.3}))
    out = rm.run(MODEL, base, None, Config(cells=("0.3",)), quiet=True,
                 engine=Engine(out=str(tmp_path)))
    assert list(out["cells"]) == ["acc0.3"] and out["missing"] == ["acc0.1", "acc0.2"]
    with pytest.raises(Ran):  # asked for, not finished: run
        rm.run(MODEL, base, None, Config(cells=("0.1",)), quiet=True,
               engine=Engine(out=str(tmp_path)))
    # another config (fewer seeds) is another file: the finished cell is not read for it
    _, _, _, other = rm.cell_config(Config(sweep=rm.SWEEP.__class__(
        batches=(64, 256, 1024), lr0s=(1e-4,), seeds=4, budget=8192)), base, 0.3)
    assert rm.cell_file(str(tmp_path), 0.3, other) != path


def test_the_predictions_are_read_from_the_checkout_and_quick_writes_its_own_file():
    from twoclock.studies import regime_map as rm
    preds = rm.read_predictions()
    assert preds is not None and set(preds["cells"]) == {"acc0.1", "acc0.2", "acc0.3"}
    assert Config().output_name(None, {"quick"}) == "regime_map_quick"
    assert Config().output_name(None, set()) == "regime_map"


def test_the_report_prints_a_censored_prediction_as_past_budget():
    from twoclock.studies.regime_report import predicted
    out = {"predictions": {"cells": {"acc0.3": {"8192": {
        "exponent": {"null": -0.0076, "deficit": None, "damage": None},
        "N": {"null": {"64": 1.0}, "deficit": {"64": None, "256": None}}}}}}}
    assert predicted(out, "acc0.3", "8192", "null") == "-0.0076"
    assert predicted(out, "acc0.3", "8192", "deficit") == "past budget"
    assert predicted(out, "acc0.3", "8192", "damage") == "-"
    assert predicted({"predictions": None}, "acc0.3", "8192", "null") == "-"


def test_a_path_carried_on_at_its_last_share_reaches_a_later_clock_by_hand():
    # the trapezoid over (0, 1), (50, 1), (100, 0.5) gives A(100) = 50 + 50 * 0.75 = 87.5;
    # carried on at the last share 0.5, A = 150 is reached at 100 + (150 - 87.5) / 0.5 = 225
    r, m = th.extend([50, 100], [1.0, 0.5], 400)
    assert r == [50.0, 100.0, 400.0] and m == [1.0, 0.5, 0.5]
    assert th.clock_at(r, m, 1.0, 150.0) == pytest.approx(225.0)
    assert math.isinf(th.clock_at([50, 100], [1.0, 0.5], 1.0, 150.0))  # not carried: censored
    assert th.extend([50, 100], [1.0, 0.5], 80) == ([50.0, 100.0], [1.0, 0.5])  # nothing to add


def _cell(e_null):
    path = {"responses": [64.0, 8192.0], "acc": [0.3, 0.5], "share": [0.9, 0.6],
            "active": [57.6, 6144.0]}
    exps = {"null": {"median": e_null, "ci": [e_null - 0.2, None]},
            "deficit": {"median": None, "ci": [None, None]},
            "damage": {"median": None, "ci": [None, None]}}
    return {"level": 0.3, "start": {"acc": 0.321}, "lr": 2.83e-4, "seconds": 1.0,
            "config": {"k": 1}, "extra": "dropped",
            "budgets": {R: {"per_seed": {"64": {"null": [100.0, None]}},
                            "answers": {"2_exponent": exps},
                            "mixed_path": {"64": path, "1024": path}} for R in ("2048", "8192")}}


def test_the_measured_file_keeps_every_cell_and_leaves_the_predictions_out():
    out = {"study": {"budgets": [2048, 8192]}, "predictions": {"cells": {}}, "missing": [],
           "cells": {"acc0.3": _cell(-0.1)}}
    got = rr.measured(out)
    assert "predictions" not in got and got["study"] == out["study"]
    assert set(got["cells"]["acc0.3"]) == {"level", "start", "lr", "seconds", "config", "budgets"}
    assert got["cells"]["acc0.3"]["budgets"]["8192"]["per_seed"]["64"]["null"] == [100.0, None]


def test_paper_figures_draws_the_map_from_a_current_cached_file_only(tmp_path, capsys):
    import json

    import matplotlib
    matplotlib.use("Agg")
    import paper_figures.__main__ as pf
    from twoclock.analysis.results import SCHEMA
    res, figs = tmp_path / "r", tmp_path / "f"
    res.mkdir()
    out = {"schema": SCHEMA, "study": {"budgets": [2048, 8192]}, "predictions": None,
           "missing": [], "cells": {"acc0.3": _cell(-0.1), "acc0.1": _cell(0.2)}}
    (res / "regime_map.json").write_text(json.dumps(out))
    assert pf.main(["--only", "regime_map", "--results", str(res), "--out", str(figs)]) == 0
    assert (figs / "regime_map.png").exists()
    del out["schema"]  # an older file: skipped in one line, not drawn
    (res / "regime_map.json").write_text(json.dumps(out))
    (figs / "regime_map.png").unlink()
    assert pf.main(["--only", "regime_map", "--results", str(res), "--out", str(figs)]) == 0
    assert [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("skipped")] == [
        f"skipped regime_map: no current regime_map.json in {res} (made by `python "
        f"experiments/regime_map.py --out {res}`)"]
    assert not (figs / "regime_map.png").exists()


def test_a_later_budgets_predictions_join_the_cells_without_replacing_earlier_ones(tmp_path):
    from twoclock.studies import regime_map as rm
    import json
    (tmp_path / "p.json").write_text(json.dumps(
        {"cells": {"acc0.1": {"8192": {"exponent": {"null": 0.02}}}}}))
    (tmp_path / "p_32768.json").write_text(json.dumps(
        {"cells": {"acc0.1": {"8192": {"exponent": {"null": 9.0}},
                              "32768": {"exponent": {"null": 0.015}}},
                   "acc0.3": {"32768": {"exponent": {"null": 0.002}}}}}))
    (tmp_path / "p_measured.json").write_text("{}")  # not a budget: ignored
    got = rm.read_predictions(str(tmp_path / "p.json"))["cells"]
    assert got["acc0.1"]["8192"]["exponent"]["null"] == 0.02
    assert got["acc0.1"]["32768"]["exponent"]["null"] == 0.015
    assert got["acc0.3"] == {"32768": {"exponent": {"null": 0.002}}}
    assert rm.read_predictions(str(tmp_path / "none.json")) is None
