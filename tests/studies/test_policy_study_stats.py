"""The policy study's statistics and cells (issue 34): its answers on a hand-made study whose
cells all differ (seeds with different clocks, some censored), against a NumPy transcription of
a paired percentile bootstrap at 95%; each cell's configuration by hand."""
import math

import numpy as np
import pytest

from twoclock.config import SweepConfig
from twoclock.models.policy import PolicyConfig
from twoclock.studies import policy_study as ps
from twoclock.studies.protocol import overridden

S, B0, B1 = 9, "64", "512"
CLOCKS = ("progress", "null", "kl", "entropy", "collapse")
CELLS = ("sqrt", "fixed", "clip_none_M1E1", "clip_eps0.2_fixed_m", "clip_none_fixed_m",
         "clip_higher_fixed_m", "collapse_eps0.2", "collapse_none", "variant_lr_x4_eps0.2",
         "variant_lr_x4_none")  # one variant only: the other's cells are missing


def _cell(rng, scale, rule=False):
    per = {}
    for b, f in ((B0, 1.0), ("128", 1.3), (B1, 2.1)):
        row = {}
        for j, k in enumerate(CLOCKS):
            v = np.round(scale * f * (1000 + 300 * j) * rng.lognormal(0, 0.4, S)).astype(int)
            v[rng.random(S) < 0.15] = 0  # never crossed
            row[k] = v.tolist()
        row["early_acc"] = rng.uniform(0.1, 0.6, S).tolist()
        row["final_acc"] = rng.uniform(0.2, 0.7, S).tolist()
        row["peak_acc"] = rng.uniform(0.5, 0.8, S).tolist()
        row["stayed_down"] = (rng.random(S) < 0.4).tolist()
        row["clip_frac"] = rng.uniform(0, 0.1, S).tolist()
        per[b] = row
    out = {"per_seed": per}
    if rule:
        out["critical_batch"] = [{"batch": 200.0 * scale, "ci": [150.0, 300.0]}]
        out["runs"] = [{"batch": int(b), "theory": {"exponent": {k: 0.1 * i for i, k in
                                                                  enumerate(CLOCKS)}},
                        "regime": {d: "drift" for d in ("acc", "null", "kl", "entropy")},
                        "noise_scale": {d: 10.0 * int(b) for d in ("acc", "null", "kl",
                                                                   "entropy")}}
                       for b in per]
    return out


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(7)
    st = {"seeds": S, "batches": [64, 128, 512], "conventions": ["fixed_m"],
          "unstable_factor": 3.0, "clip_lr_factor": 0.25}
    cells = {n: _cell(rng, 1.0 + 0.37 * i, rule=n in ("sqrt", "fixed"))
             for i, n in enumerate(CELLS)}
    return st, cells, ps.answers(st, cells)


IDX = np.random.default_rng(0).integers(0, S, size=(2000, S))  # the paired resamples


def _cens(x):
    x = np.asarray(x, np.float64)
    return np.where(x > 0, x, np.inf)


def _ci(fn, *xs):
    """fn of the seeds and its paired percentile bootstrap 95% CI (NaN as inf; inf as None)."""
    xs = [np.asarray(x, np.float64) for x in xs]
    with np.errstate(invalid="ignore", divide="ignore"):
        point = fn(*xs)
        boot = np.array([fn(*(x[r] for x in xs)) for r in IDX])
    boot = np.where(np.isnan(boot), np.inf, boot)
    lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
    fin = lambda v: float(v) if np.isfinite(v) else None
    return {"median": fin(point), "ci": [fin(lo), fin(hi)]}


def _ratio(x, y):
    return _ci(lambda a, b: np.median(a) / np.median(b), _cens(x), _cens(y))


def _same(got, want):
    assert (got["median"] is None and want["median"] is None) or \
        got["median"] == pytest.approx(want["median"], rel=1e-9)
    for g, w in zip(got["ci"], want["ci"]):
        assert (g is None and w is None) or g == pytest.approx(w, rel=1e-9), (got, want)


def test_progress_gap_is_each_rules_own_ratio_to_its_smallest_batch(study):
    st, c, a = study
    for rule in ("sqrt", "fixed"):
        per = c[rule]["per_seed"]
        gap = a["1_progress_gap"][rule]["gap_by_batch"]
        assert set(gap) == {"128", B1}
        for b in ("128", B1):
            _same(gap[b], _ratio(per[b]["progress"], per[B0]["progress"]))
        assert a["1_progress_gap"][rule]["critical_batch"] == c[rule]["critical_batch"][0]


def test_measured_exponent_is_the_least_squares_slope_with_its_ci(study):
    st, c, a = study
    per = c["sqrt"]["per_seed"]
    for clock in ("progress", "null"):
        m = a["2_exponents"]["sqrt"][clock]["measured"]
        use = [b for b in (B0, "128", B1) if np.isfinite(np.median(_cens(per[b][clock])))]
        assert m["batches"] == [int(b) for b in use] and len(use) >= 2
        x = np.log([int(b) for b in use])

        def slope(*v):
            y = np.log([np.median(u) for u in v])
            return np.polyfit(x, y, 1)[0] if np.isfinite(y).all() else np.inf
        _same(m, _ci(slope, *(_cens(per[b][clock]) for b in use)))


def test_clipping_claims_compare_the_cells_they_name(study):
    st, c, a = study
    p = lambda cell, b, k: c[cell]["per_seed"][b][k]
    m1 = a["3_clipping"]["M1xE1"]
    assert m1["identical_clocks"] is False
    for b in (B0, B1):
        _same(m1["delay"][b]["kl"], _ratio(p("sqrt", b, "kl"), p("clip_none_M1E1", b, "kl")))
    row = a["3_clipping"]["fixed_m"]
    eps, none, hi = "clip_eps0.2_fixed_m", "clip_none_fixed_m", "clip_higher_fixed_m"
    for b in (B0, B1):
        _same(row["a_delay"][b]["progress"], _ratio(p(eps, b, "progress"),
                                                      p(none, b, "progress")))
        for k in ("null", "collapse"):
            _same(row["a_delay"][b][k], _ratio(p(eps, b, k), p(none, b, k)))
            _same(row["c_fail_higher_over_eps"][b][k], _ratio(p(hi, b, k), p(eps, b, k)))
        _same(row["c_early_acc_higher_minus_eps"][b],
              _ci(lambda x, y: np.median(x) - np.median(y), p(hi, b, "early_acc"),
                  p(eps, b, "early_acc")))
        med = np.median(_cens(p(none, b, "kl")))
        assert row["median"]["none"][b]["kl"] == (pytest.approx(med) if np.isfinite(med)
                                                  else None)
    for k in ("entropy",):
        _same(row["a_more_at_larger_batch"][k], _ci(
            lambda w, x, y, z: (np.median(w) / np.median(x)) / (np.median(y) / np.median(z)),
            *(_cens(v) for v in (p(eps, B1, k), p(none, B1, k), p(eps, B0, k), p(none, B0, k)))))
    for name, cell in (("eps0.2", eps), ("none", none), ("higher", hi)):
        _same(row["b_progress_gap"][name], _ratio(p(cell, B1, "progress"),
                                                  p(cell, B0, "progress")))


def test_variants_compare_their_own_cells_by_hand(study):
    st, c, a = study
    p = lambda cell, b, k: c[cell]["per_seed"][b][k]
    assert list(a["5_variants"]) == ["lr_x4"]  # warmup_seed1's cells are not in the study
    row = a["5_variants"]["lr_x4"]
    eps, none = "variant_lr_x4_eps0.2", "variant_lr_x4_none"
    for b in (B0, B1):
        for k in ("progress", "null", "kl"):
            _same(row["delay"][b][k], _ratio(p(eps, b, k), p(none, b, k)))
        _same(row["margin_eps_over_none"][b]["entropy"], _ci(
            lambda w, x, y, z: (np.median(w) / np.median(x)) / (np.median(y) / np.median(z)),
            *(_cens(v) for v in (p(eps, b, "entropy"), p(eps, b, "progress"),
                                 p(none, b, "entropy"), p(none, b, "progress")))))
        assert row["clip_frac"][b] == pytest.approx(np.median(p(eps, b, "clip_frac")))
    _same(row["more_at_larger_batch"]["collapse"], _ci(
        lambda w, x, y, z: (np.median(w) / np.median(x)) / (np.median(y) / np.median(z)),
        *(_cens(v) for v in (p(eps, B1, "collapse"), p(none, B1, "collapse"),
                             p(eps, B0, "collapse"), p(none, B0, "collapse")))))


def test_variant_cells_change_the_warm_up_or_the_lr_of_the_fixed_size_cells():
    st = ps.Config(sweep=SweepConfig(batches=(32, 128, 256), lr0s=(2e-3,), seeds=3, budget=1000),
                   clip_lr_factor=0.5,
                   parts=("variants",))
    base = PolicyConfig()
    got = {n: (cfg, opt, sw) for n, cfg, opt, sw in ps.cells(st, base)}
    assert list(got) == [f"variant_{v}_{c}" for v in ("warmup_seed1", "lr_x4")
                         for c in ("eps0.2", "none")]
    for name, (cfg, opt, sw) in got.items():
        assert (cfg.minibatches, cfg.epochs, cfg.mb_convention, cfg.mb_ref) == (
            4, 2, "fixed_size", 32)
        assert cfg.clip_low == (0.2 if name.endswith("eps0.2") else None)
        assert cfg.warmup.seed == (1 if "warmup" in name else 0) and sw.batches == (32, 256)
        # the clipping cells' lr (2e-3 x 0.5 at b0 8 under the sqrt rule, at B 32: 2e-3), 4x
        # for lr_x4, the same at every batch (the minibatch is 8 responses at every B)
        want = 2e-3 * (4 if "lr_x4" in name else 1)
        assert [opt.lr(sw.lr0s[0], b) for b in (32, 256)] == pytest.approx([want] * 2)
    assert "variants" not in ps.Config().parts  # the default study leaves them out


def test_collapse_answers_by_hand(study):
    st, c, a = study
    p = lambda cell, b, k: np.asarray(c[cell]["per_seed"][b][k])
    for name in ("eps0.2", "none"):
        cell = f"collapse_{name}"
        for b in (B0, B1):
            v = a["4_collapse"][name][b]
            assert v["collapsed_seeds"] == int((p(cell, b, "collapse") > 0).sum())
            assert v["stayed_down_seeds"] == int(p(cell, b, "stayed_down").sum())
            _same(v["final_acc"], _ci(np.median, p(cell, b, "final_acc")))
            _same(v["collapse_samples"], _ci(np.median, _cens(p(cell, b, "collapse"))))
    for b in (B0, B1):
        e = a["4_collapse"]["clip_effect"][b]
        _same(e["collapse_delay"], _ratio(p("collapse_eps0.2", b, "collapse"),
                                          p("collapse_none", b, "collapse")))
        _same(e["final_acc_clip_minus_none"], _ci(
            lambda x, y: np.median(x) - np.median(y), p("collapse_eps0.2", b, "final_acc"),
            p("collapse_none", b, "final_acc")))


def test_reanswer_works_the_answers_out_again(study):
    st, c, a = study
    again = ps.reanswer({"study": st, "cells": c, "answers": {}})
    _same(again["answers"]["1_progress_gap"]["fixed"]["gap_by_batch"][B1],
          a["1_progress_gap"]["fixed"]["gap_by_batch"][B1])


def test_cells_are_configured_as_documented():
    """Study(batches 32..256, lr0 2e-3, clip factor 0.5, unstable factor 4) with b0 = 8: the
    fixed rule starts at the sqrt rule's lr at B 32 (2e-3 sqrt(32 / 8) = 4e-3); the clipping
    cells run M x E = 4 x 2 at lr0 / 2 with mb_ref = the smallest batch; the collapse cells at
    4 lr0."""
    st = ps.Config(sweep=SweepConfig(batches=(32, 128, 256), lr0s=(2e-3,), seeds=3, budget=1000),
                   clip_lr_factor=0.5,
                   unstable_factor=4.0, conventions=("fixed_m", "fixed_size"))
    got = {n: (cfg, opt, sw) for n, cfg, opt, sw in ps.cells(st, PolicyConfig())}
    assert list(got) == ["sqrt", "fixed", "clip_none_M1E1"] + [
        f"clip_{c}_{v}" for v in ("fixed_m", "fixed_size") for c in ("eps0.2", "none", "higher")
    ] + ["collapse_eps0.2", "collapse_none"]
    cfg, opt, sw = got["sqrt"]
    assert (opt.lr_rule, sw.lr0s, sw.batches, sw.seeds, sw.budget) == (
        "sqrt", (2e-3,), (32, 128, 256), 3, 1000)
    cfg, opt, sw = got["fixed"]
    assert opt.lr_rule == "fixed" and sw.lr0s[0] == pytest.approx(4e-3, rel=1e-12)
    cfg, opt, sw = got["clip_none_M1E1"]
    # the control: min(control_seeds 8, seeds 3) seeds
    assert (cfg.clip_low, cfg.minibatches, cfg.epochs, sw.batches, sw.lr0s, sw.seeds) == (
        None, 1, 1, (32, 256), (2e-3,), 3)
    wide = overridden(st, {"sweep": {"seeds": 16}, "control_seeds": 5})
    assert [sw.seeds for n, _, _, sw in ps.cells(wide, PolicyConfig())
            if n in ("sqrt", "clip_none_M1E1")] == [16, 5]
    for conv in ("fixed_m", "fixed_size"):
        for name, (cl, ch) in (("eps0.2", (0.2, None)), ("none", (None, None)),
                               ("higher", (0.2, 0.28))):
            cfg, opt, sw = got[f"clip_{name}_{conv}"]
            assert (cfg.minibatches, cfg.epochs, cfg.mb_convention, cfg.mb_ref) == (4, 2, conv, 32)
            # fixed_size's smallest batch is fixed_m's runs, borrowed (cells.borrowed)
            assert (cfg.clip_low, cfg.clip_high, sw.batches) == (
                cl, ch, (32, 256) if conv == "fixed_m" else (256,))
            # fixed_m: the sqrt rule at lr0 / 2; fixed_size: every batch at the lr fixed_m has
            # at B 32 (its minibatch is the same at every B): 1e-3 sqrt(32 / 8) = 2e-3
            lrs = [opt.lr(sw.lr0s[0], b) for b in (32, 256)]
            want = [1e-3 * 2, 1e-3 * math.sqrt(32)] if conv == "fixed_m" else [2e-3, 2e-3]
            assert lrs == pytest.approx(want, rel=1e-12)
    assert got["clip_eps0.2_fixed_size"][0].n_minibatches(256) == 32  # 4 x 256 / 32
    for name, cl in (("eps0.2", 0.2), ("none", None)):
        cfg, opt, sw = got[f"collapse_{name}"]
        assert (cfg.minibatches, cfg.epochs, cfg.clip_low, sw.batches) == (4, 2, cl, (32, 256))
        assert sw.lr0s[0] == pytest.approx(8e-3, rel=1e-12)
    assert math.isclose(ps.rules(st)["fixed"][1], 4e-3, rel_tol=1e-12)
