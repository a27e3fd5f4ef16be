"""The policy study's answers, worked out from per-seed clocks (numpy only: no sweep is run).
Expected values come from hand computations and np.polyfit, never from the study's code."""
import dataclasses
import json

import numpy as np
import pytest

from twoclock.analysis import paired
from twoclock.models.policy import PolicyConfig
from twoclock.models.policy.predict import measured_exponent
from twoclock.studies import policy_study as ps
from twoclock.studies.protocol import overridden

rng = np.random.default_rng(7)
THEORY_CLOCKS = ("progress", "null", "kl", "entropy")
IDX = np.random.default_rng(0).integers(0, 9, size=(200, 9))


def test_ratio_ci_is_paired_and_its_point_is_the_ratio_of_medians():
    x = rng.integers(100, 1000, 9)
    same = paired.ratio_ci(x, x, IDX)
    # paired resampling: a clock against itself is exactly 1 in every resample (an unpaired
    # bootstrap would spread it)
    assert same == {"median": 1.0, "ci": [1.0, 1.0]}
    y = np.array([300, 100, 200, 500, 400, 900, 800, 700, 600])
    r = paired.ratio_ci(2 * y, y, IDX)
    assert r["median"] == pytest.approx(1000 / 500)
    assert r["ci"] == [pytest.approx(2.0), pytest.approx(2.0)]  # a paired factor of 2 exactly


def test_a_censored_median_is_none_not_a_number():
    never = np.zeros(9, int)  # no run crossed: every one is censored
    r = paired.ratio_ci(never, np.full(9, 100), IDX)
    assert r["median"] is None and r["ci"][1] is None


def test_delay_ratio_is_the_ratio_of_the_two_delays():
    base = np.array([100, 120, 90, 110, 105, 95, 130, 80, 115])
    # delay 3 at batch 1, delay 1.5 at batch 0: the delay is 2x larger at batch 1
    d = paired.ratio_of_ratios_ci(3 * base, base, 1.5 * base, base, IDX)
    assert d["median"] == pytest.approx(2.0)
    assert d["ci"] == [pytest.approx(2.0), pytest.approx(2.0)]


def test_exponent_is_the_least_squares_slope_over_the_reached_batches_unsorted():
    meds = {"64": 1000.0, "1024": 2500.0, "128": 1500.0, "256": 1600.0, "512": 0}
    per = {b: {"kl": (np.full(9, m) * rng.uniform(0.999, 1.001, 9)).round().astype(int)}
           for b, m in meds.items()}
    e = ps.exponent_ci(per, "kl", IDX)
    used = [64, 128, 256, 1024]  # 512 never crossed: left out, not read as 0
    expected = np.polyfit(np.log(used), np.log([np.median(per[str(b)]["kl"]) for b in used]),
                          1)[0]
    assert e["batches"] == used
    assert e["median"] == pytest.approx(expected, rel=1e-12)
    assert e["ci"][0] <= e["median"] <= e["ci"][1]


def test_exponent_needs_two_reached_batches():
    per = {"64": {"kl": [5] * 9}, "1024": {"kl": [0] * 9}}
    assert ps.exponent_ci(per, "kl", IDX)["median"] is None


def _cell(batches, seeds, scale=1.0, clip=0.0):
    out = {}
    for b in batches:
        f = scale * (1 + np.log2(b / 64) / 4)
        out[str(b)] = {**{k: (np.arange(1, seeds + 1) * 100 * f).astype(int).tolist()
                          for k in ps.CLOCK_KEYS},
                       "early_acc": (0.5 + 0.01 * np.arange(seeds)).tolist(),
                       "final_acc": [0.4] * seeds, "peak_acc": [0.6] * seeds,
                       "stayed_down": [True] * (seeds // 2) + [False] * (seeds - seeds // 2),
                       "clip_frac": [clip] * seeds}
    return {"per_seed": out, "critical_batch": [{"batch": 100.0, "ci": [90.0, 110.0]}],
            "runs": [{"batch": b, "theory": {"exponent": {c: 0.5 for c in THEORY_CLOCKS}},
                      "regime": {d: "signal" for d in ("acc", "null", "kl", "entropy")},
                      "noise_scale": {d: 10.0 for d in ("acc", "null", "kl", "entropy")}}
                     for b in batches]}



def _study(seeds=8):
    st = {"batches": [256, 64, 1024], "seeds": seeds, "budget": 12288, "conventions":
          ["fixed_m"], "unstable_factor": 3.0, "early_samples": 2048}
    c = {"sqrt": _cell((64, 256, 1024), seeds), "fixed": _cell((64, 256, 1024), seeds, 2.0),
         "clip_none_M1E1": _cell((64, 1024), seeds),
         "clip_eps0.2_fixed_m": _cell((64, 1024), seeds, 1.5, 0.02),
         "clip_none_fixed_m": _cell((64, 1024), seeds),
         "clip_higher_fixed_m": _cell((64, 1024), seeds, 1.2, 0.01),
         "collapse_eps0.2": _cell((64, 1024), seeds, 2.0), "collapse_none": _cell((64, 1024), seeds)}
    return st, c


def test_answers_from_per_seed_clocks_against_hand_computed_values():
    st, c = _study()
    a = ps.answers(st, c)
    # sqrt cell: clocks scale by 1 + log2(B/64)/4: 1, 1.5, 2 at 64, 256, 1024
    g = a["1_progress_gap"]["sqrt"]["gap_by_batch"]
    assert g["1024"]["median"] == pytest.approx(2.0) and g["256"]["median"] == pytest.approx(1.5)
    assert a["3_clipping"]["M1xE1"]["identical_clocks"] is True
    row = a["3_clipping"]["fixed_m"]
    assert row["a_delay"]["1024"]["kl"]["median"] == pytest.approx(1.5, rel=0.02)
    assert row["a_more_at_larger_batch"]["null"]["median"] == pytest.approx(1.0, rel=0.02)
    assert row["c_fail_higher_over_eps"]["64"]["entropy"]["median"] == pytest.approx(0.8, rel=0.02)
    assert row["c_early_acc_higher_minus_eps"]["64"]["median"] == pytest.approx(0.0)
    assert row["clip_frac"]["eps0.2"]["64"] == pytest.approx(0.02)
    coll = a["4_collapse"]
    assert coll["none"]["64"]["collapsed_seeds"] == 8 and coll["none"]["64"]["stayed_down_seeds"] == 4
    assert coll["clip_effect"]["1024"]["collapse_delay"]["median"] == pytest.approx(2.0, rel=0.02)
    # the M = E = 1 identity is checked, not assumed: one differing seed breaks it
    c["clip_none_M1E1"]["per_seed"]["1024"]["kl"][3] += 1
    assert ps.answers(st, c)["3_clipping"]["M1xE1"]["identical_clocks"] is False


def test_the_m1e1_control_pairs_with_the_sqrt_cells_first_seeds():
    """A control of 5 seeds against a sqrt cell of 8: compared with the sqrt cell's seeds
    0-4 (the control's keys are theirs), not 0-7 and not the last 5."""
    st, c = _study(seeds=8)
    c["clip_none_M1E1"] = _cell((64, 1024), 5)  # = the sqrt cell's seeds 0-4
    m1 = ps.answers(st, c)["3_clipping"]["M1xE1"]
    assert m1["seeds"] == 5 and m1["identical_clocks"] is True
    assert m1["delay"]["1024"]["kl"]["median"] == 1.0
    assert m1["delay"]["1024"]["kl"]["ci"] == [1.0, 1.0]
    # the same 5 values as the sqrt cell's last 5 seeds: not its runs
    for b in ("64", "1024"):
        for k, v in c["clip_none_M1E1"]["per_seed"][b].items():
            v[:] = c["sqrt"]["per_seed"][b][k][3:]
    m1 = ps.answers(st, c)["3_clipping"]["M1xE1"]
    assert m1["identical_clocks"] is False
    # hand computation: medians of 100 f (1..5) and 100 f (4..8) at 1024 (f = 2): 600 / 1200
    assert m1["delay"]["1024"]["kl"]["median"] == pytest.approx(600 / 1200)


def test_report_and_figure_from_the_json_round_trip(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from twoclock.figures.policy_study import study_figure
    st, c = _study()
    out = json.loads(json.dumps({"study": st, "cells": c, "answers": ps.answers(st, c),
                                 "seconds": 1.0}))
    text = ps.report(out)
    assert "1024: 2 [2, 2]" in text and "identical with and without clipping: True" in text
    study_figure(out).savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 10_000


def test_the_figure_draws_when_no_clock_was_reached(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from twoclock.figures.policy_study import study_figure
    st, c = _study()
    for cell in c.values():
        for per_b in cell["per_seed"].values():
            for k in ps.CLOCK_KEYS:
                per_b[k] = [0] * st["seeds"]
    out = {"study": st, "cells": c, "answers": ps.answers(st, c), "seconds": 1.0}
    assert "collapsed 0/8" in ps.report(out)
    study_figure(out).savefig(tmp_path / "f.png")


@pytest.mark.parametrize("parts", [("rules",), ("prereg",)])
def test_early_samples_past_the_shortest_runs_end_is_refused_before_any_cell(parts, tmp_path):
    """By hand: budget 1000 at batch 256 is 3 updates, 768 responses (at 64: 15, 960), so the
    last checkpoint of the shortest run is at 768; at 769 the early accuracy would be read at
    the first checkpoint instead (issue 55: --early-samples 4096 --budget 256 was taken)."""
    from twoclock.models import MODELS
    from twoclock.config import SweepConfig
    pred = tmp_path / "p.json"
    sweep = SweepConfig(batches=(64, 256), lr0s=(1e-4,), seeds=2, budget=1000)
    if parts == ("prereg",):  # a valid predictions file for this design, so that only the
        from twoclock.studies.policy_study import prereg  # early samples are refused
        d = prereg.design(ps.Config(sweep=sweep, early_samples=1))
        clock = {"raw": {"64": 1.0, "256": 2.0}, "calibrated": {"64": 1.0, "256": None}}
        pred.write_text(json.dumps({"design": d, "within": 0.2, "theory": "", "cells": {
            n: {"clocks": dict.fromkeys(THEORY_CLOCKS, clock)} for n in prereg.UNSEEN}}))
    st = lambda n: ps.Config(sweep=sweep, early_samples=n, parts=parts,
                             predictions_file=str(pred))
    st(768).check(MODELS["policy"], PolicyConfig(), None)
    with pytest.raises(ValueError, match=r"^early_samples must be <= 768, .* \(got 769\)$"):
        st(769).check(MODELS["policy"], PolicyConfig(), None)


@pytest.mark.parametrize("flags,name", [(["--clip-lr-factor", "0"], "clip_lr_factor"),
                                        (["--clip-lr-factor", "nan"], "clip_lr_factor"),
                                        (["--seeds", "1"], "seeds"),
                                        (["--batches", "64"], "batches")])
def test_bad_flags_are_one_line_errors_before_any_simulation(flags, name, tmp_path):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "experiments/policy_study.py", *flags, "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    flag = "--" + name.replace("_", "-")  # the flag typed, not the config field
    assert len(lines) == 1 and lines[0].startswith(f"policy_study.py: error: {flag} "), p.stderr
    assert not any(tmp_path.iterdir())  # nothing simulated, nothing written


def test_the_adam_slope_against_polyfit_skips_missing_and_infinite_points():
    b, v = [64, 256, 128, 1024, 512], [10.0, 30.0, None, 200.0, float("inf")]
    assert measured_exponent(b, v) == pytest.approx(
        np.polyfit(np.log([64, 256, 1024]), np.log([10.0, 30.0, 200.0]), 1)[0])
    assert measured_exponent([64, 128], [5.0, None]) is None


@pytest.mark.parametrize("bad", [{}, {"study": {}, "cells": {}}, [],
                                 {"study": {"seeds": 4, "batches": [64, 512],
                                            "conventions": []}, "cells": {"sqrt": {}}},
                                 {"study": {"seeds": 4, "batches": [], "conventions": []},
                                  "cells": {}}])
def test_reanswer_of_a_malformed_result_is_a_one_line_value_error(bad):
    with pytest.raises(ValueError) as e:
        ps.reanswer(bad)
    assert "\n" not in str(e.value) and "policy study" in str(e.value)


def test_reanswer_refuses_fewer_than_two_seeds():
    with pytest.raises(ValueError, match="seeds must be an integer >= 2"):
        ps.reanswer({"study": {"seeds": 0, "batches": [64, 512], "conventions": []},
                     "cells": {}})


def _result(batches, value, seeds=4):
    """A SweepResult whose every number at batch i is value + i (one lr0, value / 1000)."""
    from twoclock.engine.sweep import SweepResult
    B = len(batches)
    v_BxLxS = np.broadcast_to(value + np.arange(B, dtype=float)[:, None, None], (B, 1, seeds))
    return SweepResult(tuple(batches), (value / 1000,), np.full((B, 1), value), np.full(B, 12), v_BxLxS,
                       v_BxLxS + 0.5, v_BxLxS * 0, v_BxLxS, {"kl_n": v_BxLxS * 2},
                       [{"kl": np.full((1, seeds, 3), value + i)} for i in range(B)], 1.0, 0.0)


def test_cells_borrow_the_runs_another_cell_has_run():
    st = ps.Config()
    cells = {name: sweep.batches for name, _, _, sweep in ps.cells(st, PolicyConfig())}
    assert cells["sqrt"] == (64, 128, 256, 512, 1024) and cells["fixed"] == (128, 256, 512, 1024)
    for clip in ps.CLIPS:
        assert cells[f"clip_{clip}_fixed_m"] == (64, 1024)
        assert cells[f"clip_{clip}_fixed_size"] == (1024,)
    # the fixed rule's lr at b0 is the sqrt rule's to the last bit: its runs there are the same
    (sqrt, lr0), (fixed, lr0_fixed) = ps.rules(st)["sqrt"], ps.rules(st)["fixed"]
    assert sqrt.lr(lr0, 64) == fixed.lr(lr0_fixed, 64)
    assert ps.borrowed(st)["fixed"] == (64, "sqrt", (64, 128, 256, 512, 1024))
    # one convention alone, or one rule alone, runs every batch
    alone = ps.cells(dataclasses.replace(st, conventions=("fixed_size",)), PolicyConfig())
    assert {sw.batches for name, _, _, sw in alone if "fixed_size" in name} == {(64, 1024)}
    assert "fixed" not in ps.borrowed(dataclasses.replace(st, parts=("clip",)))
    # lending: the whole sweep, the borrowed batch's numbers from the lender, in the study's
    # batch order (unsorted here)
    un = overridden(st, {"sweep": {"batches": (256, 64, 1024)}})
    own = {name: sw for name, _, _, sw in ps.cells(un, PolicyConfig())}
    assert own["fixed"].batches == (256, 1024)
    from twoclock.studies.policy_study.cells import lend
    sq, fx = _result((256, 64, 1024), 1.0), _result((256, 1024), 10.0)
    loans = ps.borrowed(un)
    whole, res = lend("fixed", own["fixed"], fx, {"sqrt": sq}, loans)
    assert whole.batches == res.batches == (256, 64, 1024) and whole.seeds == un.seeds
    np.testing.assert_array_equal(res.prog_n[:, 0, 0], [10.0, 2.0, 11.0])
    np.testing.assert_array_equal(res.extra["kl_n"][:, 0, 0], [20.0, 4.0, 22.0])
    assert [float(c["kl"][0, 0, 0]) for c in res.ckpt] == [10.0, 2.0, 11.0]
    np.testing.assert_array_equal(res.lrs_BxL[:, 0], [10.0, 1.0, 10.0])
    assert res.lr0s == fx.lr0s  # the borrowing cell's lr0 (the lender's differs, as the rules')
    whole, res = lend("clip_none_fixed_size", own["clip_none_fixed_size"], _result((1024,), 3.0),
                      {"clip_none_fixed_m": _result((64, 1024), 5.0)}, loans)
    assert whole.batches == (64, 1024)
    np.testing.assert_array_equal(res.fail_n[:, 0, 0], [5.5, 3.5])
    assert lend("sqrt", own["sqrt"], sq, {}, loans) == (own["sqrt"], sq)  # a cell that borrows none


def test_the_contrasts_are_stated_as_paired_ratios_by_hand():
    """Clipped progress 3x at B 1024 and 1x at B 64 against unclipped 2x / 1x: the gaps are
    3 and 2, their contrast 1.5. KL clipped = 2 x progress, unclipped = 1 x: margin 2 and 1,
    clipping's effect on it 2. Collapse delayed 4x at 1024 and 2x at 64: contrast 2."""
    st, c = _study()
    seeds = np.arange(1, 9) * 100
    for name, (gap, kl) in {"eps0.2": (3, 2), "none": (2, 1), "higher": (2, 1)}.items():
        for b, g in (("64", 1), ("1024", gap)):
            per = c[f"clip_{name}_fixed_m"]["per_seed"][b]
            per["progress"] = (g * seeds).tolist()
            per["kl"] = (kl * g * seeds).tolist()
    for b, d in (("64", 2), ("1024", 4)):
        c["collapse_eps0.2"]["per_seed"][b]["collapse"] = (d * seeds).tolist()
        c["collapse_none"]["per_seed"][b]["collapse"] = seeds.tolist()
    a = ps.answers(st, c)
    row = a["3_clipping"]["fixed_m"]
    assert row["b_gap_eps_over_none"]["median"] == pytest.approx(1.5)
    assert row["b_gap_eps_over_none"]["ci"] == pytest.approx([1.5, 1.5])  # exact per seed
    assert row["margin"]["eps0.2"]["1024"]["kl"]["median"] == pytest.approx(2.0)
    assert row["margin"]["none"]["64"]["kl"]["median"] == pytest.approx(1.0)
    assert row["a_margin_eps_over_none"]["1024"]["kl"]["median"] == pytest.approx(2.0)
    assert a["4_collapse"]["clip_effect_larger_over_smaller"]["median"] == pytest.approx(2.0)
