"""The pre-registered test of Adam's per-coordinate theory (`twoclock.models.policy.adam_noise`)
on cells it has not seen (docs/policy.md, "Predictions made before the runs").

`predict` (the study's `--predict`): runs the seen cell (the sqrt rule at the study's lr0, the
default config) over the study's batches, measures Adam's per-coordinate noise at the reference
policy of the seen config and of every unseen cell's, and returns per unseen cell, clock and
batch two predictions:
- raw: the theory's clock (the mean move and the random walk at Adam's steady normaliser);
- calibrated: raw x (measured median / raw) of the seen cell at the same batch and clock. The
  theory is a start-of-run picture whose absolute clocks come early (its directions turn as the
  policy sharpens); one seen cell fixes that factor, and the unseen cells test whether it
  carries over to another lr0, group size or warm-up.
The study writes them to its predictions file, to be committed before `--prereg` runs the
unseen cells and compares (`compare`): each clock's median and exponent with their paired
bootstrap CIs against both predictions. Goals: every predicted exponent inside the measured
CI, every absolute clock within 20%.
"""
import dataclasses

import numpy as np

from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.analysis.paired import finite_or_none, paired_ci
from twoclock.config import OptimConfig, finite, require
from twoclock.models.policy import adam_noise
from twoclock.models.policy.predict import measured_exponent
from twoclock.studies.policy_study.cells import with_overrides

# the cells the theory has not seen: {name: (lr0 factor, PolicyConfig overrides)}
UNSEEN = {"lr_half": (0.5, {}), "lr_double": (2.0, {}), "group4": (1.0, {"group": 4}),
          "group16": (1.0, {"group": 16}), "warmup_seed1": (1.0, {"warmup_seed": 1})}
# each clock and the held-out statistic whose move decides it (adam_noise's names)
DIRECTION = {"progress": "acc", "null": "null", "kl": "kl", "entropy": "entropy"}
WITHIN = 0.2  # the absolute clocks' goal: measured / predicted within 1 +- this
THEORY = ("Adam's per-coordinate noise at the reference policy (adam_noise): first passage of "
          "the mean move and the random walk at Adam's steady normaliser; calibrated: times the "
          "seen cell's measured / raw at the same batch and clock")


def design(st) -> dict:
    """What the predictions are for: the fields of the study's config the cells are built from."""
    return {"batches": sorted(int(b) for b in st.batches), "seeds": st.seeds,
            "budget": st.budget, "lr0": st.lr0, "seed": st.seed, "n_ckpt": st.n_ckpt}


class _Missing:
    def __repr__(self):
        return "nothing"


MISSING = _Missing()  # a key the predictions file does not have


def _at(pred, path: tuple):
    """pred[path[0]][path[1]]... (MISSING where a key is absent or its parent not an object)."""
    for k in path:
        pred = pred.get(k, MISSING) if isinstance(pred, dict) else MISSING
    return pred


def _real(v) -> bool:
    """A finite number in float64 (an integer of 400 digits is not)."""
    try:
        return finite(v)
    except OverflowError:
        return False


def validate(pred, st) -> None:
    """The predictions file's schema, before any cell runs (ValueError in one line naming the
    key): an object made for the study's design, `within` a number in (0, 1), `theory` a
    string, and per unseen cell and clock the raw and calibrated clocks at every batch of the
    design, each a number > 0 or null (not reached), their exponents numbers or null."""
    def check(path: tuple, ok, allowed: str):
        v = _at(pred, path)
        if not ok(v):
            raise ValueError(f"predictions_file: {'/'.join(path) or 'the file'} must be "
                             f"{allowed} (got {v!r:.60})")
    obj = lambda v: isinstance(v, dict)
    check((), obj, "a JSON object")
    for key in ("design", "within", "theory", "cells"):
        check((key,), lambda v: v is not MISSING, "present (a file written by --predict)")
    require(pred["design"] == design(st), "the study's design",
            f"the one the predictions were made for, {pred['design']!r:.200}", design(st))
    check(("within",), lambda v: _real(v) and 0 < v < 1, "a number in (0, 1)")
    check(("theory",), lambda v: isinstance(v, str), "a string")
    check(("cells",), obj, "an object {cell: ...}")
    for name in UNSEEN:
        check(("cells", name), obj, "an object (an unseen cell of the design)")
        check(("cells", name, "clocks"), obj, "an object {clock: ...}")
        for c in DIRECTION:
            where = ("cells", name, "clocks", c)
            check(where, obj, "an object {raw, calibrated, ...}")
            for kind in ("raw", "calibrated"):
                check((*where, kind), obj, "an object {batch: clock}")
                for b in map(str, st.batches):
                    check((*where, kind, b), lambda v: v is None or (_real(v) and v > 0),
                          "a number > 0 or null")
                check((*where, f"{kind}_exponent"),
                      lambda v: v is None or v is MISSING or _real(v), "a number or null")


def cell_config(base, name: str):
    """The model config of an unseen cell (or of the seen one, name 'seen')."""
    return base if name == "seen" else with_overrides(base, UNSEEN[name][1])


def lr0_of(st, name: str) -> float:
    return st.lr0 * (1.0 if name == "seen" else UNSEEN[name][0])


def cells(st, base, names) -> list:
    """[(name, model config, OptimConfig, SweepConfig)]: each named cell under the sqrt rule."""
    sqrt = OptimConfig(lr_rule="sqrt")
    return [(n, cell_config(base, n), sqrt,
             dataclasses.replace(st.sweep, batches=tuple(sorted(st.batches)),
                                 lr0s=(lr0_of(st, n),), n_ckpt=st.n_ckpt))
            for n in names]


def theory(st, base, names, log=print) -> dict:
    """{name: {clock: {batch: raw predicted responses}}} for the named cells: one per-coordinate
    measurement per distinct model config (cells that differ only in lr0 share it)."""
    sqrt = OptimConfig(lr_rule="sqrt")
    by_cfg = {}
    for n in names:
        by_cfg.setdefault(cell_config(base, n), []).append(n)
    out = {}
    for cfg, group in by_cfg.items():
        log(f"[policy study] per-coordinate noise at the reference of {', '.join(group)}")
        m = adam_noise.measure(cfg, {n: (sqrt, lr0_of(st, n)) for n in group}, st.batches,
                               ref_batch=max(st.batches), seed=st.seed)
        for n in group:
            pred = m["rules"][n]["clocks"]
            out[n] = {c: {str(b): finite_or_none(pred[d]["both"][str(b)]) for b in st.batches}
                      for c, d in DIRECTION.items()}
    return out


def median_of(n_S):
    """The median over seeds of per-seed clocks (0: never), None where it is not reached."""
    return finite_or_none(np.median(censored(n_S)))


def calibrate(raw: dict, seen_raw: dict, seen_measured: dict) -> dict:
    """{clock: {batch: raw x seen measured / seen raw}} (None where any of them is missing)."""
    out = {}
    for c, per in raw.items():
        out[c] = {}
        for b, v in per.items():
            r, m = seen_raw[c].get(b), seen_measured[c].get(b)
            out[c][b] = None if None in (v, r, m) or r <= 0 else float(v * m / r)
    return out


def exponent_of(per: dict, batches=None):
    """Least-squares d log N / d log B over the given batches (default: all) with a value."""
    bs = sorted(per, key=int) if batches is None else [str(b) for b in batches]
    return measured_exponent([int(b) for b in bs], [per.get(b) for b in bs])


def predictions(st, seen_per_seed: dict, raw: dict) -> dict:
    """The predictions file's content: the design, the seen cell's measured medians and raw
    clocks, and per unseen cell the raw and calibrated clocks and exponents."""
    seen_measured = {c: {b: median_of(seen_per_seed[b][c]) for b in seen_per_seed}
                     for c in DIRECTION}
    out = {"study": "policy_study", "written_before_the_runs": True, "design": design(st),
           "theory": THEORY, "within": WITHIN,
           "seen": {"measured_median": seen_measured, "raw": raw["seen"]}, "cells": {}}
    for n in (k for k in raw if k != "seen"):
        cal = calibrate(raw[n], raw["seen"], seen_measured)
        out["cells"][n] = {
            "lr0": lr0_of(st, n), "overrides": UNSEEN[n][1],
            "clocks": {c: {"raw": raw[n][c], "calibrated": cal[c],
                           "raw_exponent": exponent_of(raw[n][c]),
                           "calibrated_exponent": exponent_of(cal[c])} for c in DIRECTION}}
    return out


def compare(pred: dict, cells_per_seed: dict) -> dict:
    """Per unseen cell and clock, from its per-seed clocks: the measured median per batch [CI]
    and its ratio to each prediction, the measured exponent [CI] over the batches reached, and
    each prediction's exponent over those same batches; then the goals' tallies."""
    from twoclock.studies.policy_study.answers import exponent_ci  # the study's one slope
    out = {"cells": {}}
    tally = {f"{k}_{g}": [0, 0] for k in ("raw", "calibrated")
             for g in ("exponents_inside_ci", "clocks_within")}
    for name, per in cells_per_seed.items():
        idx = bootstrap_indices(len(next(iter(per.values()))["progress"]))
        row = {}
        for c in DIRECTION:
            p = pred["cells"][name]["clocks"][c]
            meas = exponent_ci(per, c, idx)
            by_b = {}
            for b in sorted(per, key=int):
                x = censored(per[b][c])
                m = {**median_ci(x, idx=idx), "reached": int(np.isfinite(x).sum())}
                for kind in ("raw", "calibrated"):
                    v = p[kind].get(b)
                    m[f"over_{kind}"] = None if v is None else paired_ci(
                        lambda a, v=v: np.median(a, axis=-1) / v, x, idx=idx)
                    r = m[f"over_{kind}"]
                    if r is not None and r["median"] is not None:
                        t = tally[f"{kind}_clocks_within"]
                        t[0], t[1] = t[0] + (abs(r["median"] - 1) <= pred["within"]), t[1] + 1
                by_b[b] = m
            v = {"by_batch": by_b, "exponent": meas}
            # a bound beyond every resample (a censored median) is open
            lo, hi = (-np.inf if meas["ci"][0] is None else meas["ci"][0],
                      np.inf if meas["ci"][1] is None else meas["ci"][1])
            for kind in ("raw", "calibrated"):
                e = exponent_of(p[kind], meas["batches"]) if meas["median"] is not None else None
                inside = None if e is None else bool(lo <= e <= hi)
                v[f"{kind}_exponent"], v[f"{kind}_exponent_inside_ci"] = e, inside
                if inside is not None:
                    t = tally[f"{kind}_exponents_inside_ci"]
                    t[0], t[1] = t[0] + inside, t[1] + 1
            row[c] = v
        out["cells"][name] = row
    out["goals"] = {**tally, "within": pred["within"]}
    return out


__all__ = ["UNSEEN", "DIRECTION", "WITHIN", "design", "validate", "cell_config", "cells", "theory",
           "calibrate", "predictions", "compare", "median_of", "exponent_of"]


def report(out: dict) -> str:
    """predict: the predictions per cell; prereg: measured [CI] against them, and the goals."""
    fmt = lambda v, f=".3g": "-" if v is None else format(v, f)
    ci = lambda d: f"{fmt(d['median'])} [{fmt(d['ci'][0])}, {fmt(d['ci'][1])}]"
    pred, st = out["predictions"], out["study"]
    lines = [f"policy study, pre-registered test: batches {tuple(pred['design']['batches'])}, "
             f"{pred['design']['seeds']} seeds, budget {pred['design']['budget']} responses, "
             f"{out['seconds']:.0f} s", f"theory: {pred['theory']}"]
    if "comparison" not in out:
        lines.append("predicted responses per batch, raw | calibrated on the seen cell; "
                     "exponent raw | calibrated:")
        for name, cell in pred["cells"].items():
            for c, v in cell["clocks"].items():
                per = ", ".join(f"{b}: {fmt(v['raw'][b])} | {fmt(v['calibrated'][b])}"
                                for b in v["raw"])
                lines.append(f"  {name:>12} {c:>8}: {per}; exponent "
                             f"{fmt(v['raw_exponent'])} | {fmt(v['calibrated_exponent'])}")
        lines.append(f"wrote {out['wrote']}: commit it before --prereg runs the cells")
        return "\n".join(lines)
    cmp_ = out["comparison"]
    lines.append("measured median [CI] (seeds reached) and measured / calibrated prediction "
                 "[CI] per batch; exponent measured [CI] | raw | calibrated (over the same "
                 "batches; * inside the CI):")
    for name, row in cmp_["cells"].items():
        for c, v in row.items():
            per = "; ".join(
                f"{b}: {ci(m)} ({m['reached']}) x{ci(m['over_calibrated']) if m['over_calibrated'] else '-'}"
                for b, m in v["by_batch"].items())
            star = lambda k: "*" if v[f"{k}_exponent_inside_ci"] else ""
            lines.append(f"  {name:>12} {c:>8}: {per}")
            lines.append(f"  {'':>12} {'':>8}  exponent {ci(v['exponent'])} | "
                         f"{fmt(v['raw_exponent'])}{star('raw')} | "
                         f"{fmt(v['calibrated_exponent'])}{star('calibrated')}")
    g = cmp_["goals"]
    lines.append(f"goals: calibrated exponents inside the measured CI {g['calibrated_exponents_inside_ci'][0]}"
                 f"/{g['calibrated_exponents_inside_ci'][1]}; raw {g['raw_exponents_inside_ci'][0]}"
                 f"/{g['raw_exponents_inside_ci'][1]}; calibrated clocks within "
                 f"{g['within']:.0%}: {g['calibrated_clocks_within'][0]}/"
                 f"{g['calibrated_clocks_within'][1]}; raw {g['raw_clocks_within'][0]}/"
                 f"{g['raw_clocks_within'][1]}")
    lines.append(f"wrote {out['wrote']}")
    del st
    return "\n".join(lines)
