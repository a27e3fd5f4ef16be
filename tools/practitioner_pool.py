"""The practitioner design on several fresh design sets, pooled (docs/plan.md, "A practitioner's
sweep"). One set holds 16 designs a model and rule, so its statistics move from set to set by
about their distance from the goal's bounds; pooled, the sets' rows are one set of designs.
Prints each set's goal per model, the pooled summary (practitioner.summary), the median signed
error per cell with its 95% bootstrap CI over designs, and beside the column the no-theory
baseline (the largest pilot's clock carried on at the last slope, tools/practitioner_levels.py)
with the paired contrast column - baseline (twoclock/studies/planner/paired.py).

    python tools/practitioner_pool.py FOLDER ... [--column plan|adam|knee|auto]
        [--against COLUMN] [--no-baseline] [--score] [--json OUT.json]

--against COLUMN: also the paired contrast column - COLUMN per model and rule, and both
columns' coverage, median width and 8x median |error| per rule over the models.

Each FOLDER is the --out of `python experiments/plan_calibration.py --design practitioner
--compare-forms --design-seed S`, a different S each, with the same settings. --score checks
docs/preregistered/practitioner_fresh_sets_predictions.json (column auto, design seeds 3 to 7,
the baseline on)."""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from eval_every import misses  # noqa: E402
from practitioner_levels import _target, last_slope, slope_rows  # noqa: E402
from smooth_compare import COLUMNS, MODELS, column, meets, record  # noqa: E402
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.studies.planner import paired, practitioner  # noqa: E402

PREDICTIONS = "docs/preregistered/practitioner_fresh_sets_predictions.json"
SCORED_SETS = (3, 4, 5, 6, 7)  # the design seeds the pre-registered file pools
NEW_SETS = (6, 7)  # of those, the sets simulated after it was committed
# what every pooled run must share (a falsy value: the option off)
SAME = ("design", "rules", "eval_every_updates", "eval_items", "seeds", "heldout_seeds",
        "smoothing", "eval_noise")


def load(folder: str) -> dict:
    """A practitioner run's plan_calibration.json."""
    with open(os.path.join(folder, "plan_calibration.json")) as f:
        return json.load(f)


def mismatch(runs: list, name: str) -> str | None:
    """Why the runs cannot be pooled (one line), or None: another design, other settings, the
    column missing, or a design seed twice (its designs would count double)."""
    if any(r.get("design") != "practitioner" for r in runs):
        return "practitioner runs are needed (plan_calibration.py --design practitioner)"
    if name != "plan" and any(name not in r for r in runs):
        return f"runs with --compare-forms are needed (column {name})"
    for k in SAME:
        got = [r.get(k) or None for r in runs]
        if any(g != got[0] for g in got):
            return f"the runs differ in {k}: {', '.join(map(repr, got))}"
    seeds = [r["design_seed"] for r in runs]
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    return f"design seed {', '.join(map(str, twice))} given twice" if twice else None


def relabel(rows: list, design_seed: int) -> list:
    """Rows whose design is named by its set too ("S/seed"), so designs of different sets are
    different designs to summary, the bootstraps and the pairing."""
    return [{**r, "seed": f"{design_seed}/{r['seed']}"} for r in rows]


def baseline(folder: str, run: dict) -> list:
    """The last-slope baseline's rows for every design of a run (a refusal's line where the
    Adam plan that reads the pilots' clocks refuses), scored as practitioner.summary reads."""
    designs = {}
    for r in run["rows"]:
        designs.setdefault((r["model"], r["rule"], r["seed"]), []).append(r)
    out = []
    for (model, rule, seed), rows in designs.items():
        path = practitioner.design_path(folder, model, rule, seed)
        out += slope_rows(last_slope(path, _target(model), sorted(r["batch"] for r in rows)),
                          rows)
    return out


def signed(rows: list, model: str, rule: str, times: int) -> dict:
    """The median signed error of a cell's scored rows (one a design) with its 95% percentile
    bootstrap CI over designs (practitioner.median_ci), and how many truths lie above and
    below their bands (eval_every.misses)."""
    rs = [r for r in rows if (r["model"], r["rule"]) == (model, rule)]
    ci = practitioner.median_ci(rs, times, signed=True)
    return {"n": sum(r["times_largest_pilot"] == times and r.get("rel_error") is not None
                     for r in rs),
            "median": None if ci is None else practitioner.median_signed(rs, times), "ci": ci,
            **misses(rs, model, rule, times)}


def goals(rows: list) -> dict:
    """Per model (both rules): the summary row's goal numbers and what it misses."""
    keep = ("scored", "median_abs_error_2x", "median_abs_error_8x", "median_abs_error_8x_ci",
            "coverage_95", "coverage_95_never_as_miss", "median_width")
    return {s["model"]: {**{k: s[k] for k in keep}, "meets": meets(s),
                         "missed": practitioner.missed(s)}
            for s in practitioner.summary(rows) if s["rule"] == "both" and s["model"] != "all"}


def errors(rows: list) -> dict:
    """Per model (both rules): the median |error| at 2x and 8x of a plan without bands (the
    baseline), with the 8x median's 95% bootstrap CI over designs, and how many scored."""
    out = {}
    for m in dict.fromkeys(r["model"] for r in rows):
        sc = [r for r in rows if r["model"] == m and r.get("rel_error") is not None]
        e = lambda t: [abs(r["rel_error"]) for r in sc if r["times_largest_pilot"] == t]
        med = lambda t: float(np.median(e(t))) if e(t) else None
        out[m] = {"scored": len(sc), "median_abs_error_2x": med(2), "median_abs_error_8x": med(8),
                  "median_abs_error_8x_ci": practitioner.median_ci(sc, 8)}
    return out


def by_rule(rows: list) -> dict:
    """Per rule, over every model: scored, 95% coverage, median width, 8x median |error|."""
    out = {}
    for rule in practitioner.RULES:
        sc = [r for r in rows if r["rule"] == rule and r.get("rel_error") is not None]
        e8 = [abs(r["rel_error"]) for r in sc if r["times_largest_pilot"] == 8]
        out[rule] = {"scored": len(sc),
                     "coverage_95": float(np.mean([r["covered"] for r in sc])) if sc else None,
                     "median_width": float(np.median([r["width"] for r in sc])) if sc else None,
                     "median_abs_error_8x": float(np.median(e8)) if e8 else None}
    return out


def measure(folders: list, name: str = "auto", with_baseline: bool = True,
            against: str | None = None) -> tuple:
    """(doc, pooled rows): each set's goals, the pooled goals and summary, signed errors per
    cell and, with the baseline, its pooled goals and the paired contrast column - baseline
    (|log(1 + err)|) per model at 8x, per model and in all; against: the contrast column -
    against per model and rule, and both columns by rule (`by_rule`)."""
    runs = [load(f) for f in folders]
    why = mismatch(runs, name) or (against and mismatch(runs, against))
    if why:
        raise SystemExit(f"practitioner_pool.py: {why}")
    pool = lambda c: [x for r in runs for x in relabel(column(r, c), r["design_seed"])]
    sets = {r["design_seed"]: relabel(column(r, name), r["design_seed"]) for r in runs}
    rows = [x for rs in sets.values() for x in rs]
    doc = {"column": name, "design_seeds": list(sets),
           "settings": {k: runs[0].get(k) or None for k in SAME},
           "sets": {str(s): goals(rs) for s, rs in sets.items()},
           "pooled": goals(rows),
           "summary": practitioner.summary(rows),
           "signed": [{"model": m, "rule": rule, "times_largest_pilot": t,
                       **signed(rows, m, rule, t)}
                      for m in dict.fromkeys(r["model"] for r in rows)
                      for rule in practitioner.RULES for t in (2, 8)]}
    if with_baseline:
        base = [x for f, r in zip(folders, runs)
                for x in relabel(baseline(f, r), r["design_seed"])]
        models = list(dict.fromkeys(r["model"] for r in rows))
        groups = [(m, "both", 8) for m in models] + [(m, "both", None) for m in models] + [
            ("all", "both", None)]
        doc["baseline"] = {"pooled": errors(base),
                           "contrast": paired.contrast(base, rows, groups=groups)}
    if against:
        other = pool(against)
        models = list(dict.fromkeys(r["model"] for r in rows))
        groups = [(m, rule, None) for m in models for rule in practitioner.RULES] + [
            ("all", rule, None) for rule in practitioner.RULES + ("both",)]
        doc["against"] = {"column": against,
                          "contrast": paired.contrast(other, rows, groups=groups),
                          "by_rule": {name: by_rule(rows), against: by_rule(other)}}
    return doc, rows


def pct(x) -> str:
    return "-" if x is None else f"{x:.1%}"


def report(doc: dict) -> str:
    """The measurement as text."""
    lines = [f"column {doc['column']}, design seeds {', '.join(map(str, doc['design_seeds']))}"]
    for s, g in list(doc["sets"].items()) + [("pooled", doc["pooled"])]:
        lines.append(f"{'set ' + s if s != 'pooled' else 'pooled':<8} " + "; ".join(
            f"{m} 8x {pct(v['median_abs_error_8x'])}, cov {pct(v['coverage_95'])}, "
            f"x{v['median_width']:.2f}: {'met' if v['meets'] else 'missed'}"
            for m, v in g.items()))
    lines.append("pooled, per model (both rules): 2x, 8x [95% CI], coverage (scored), never "
                 "reached as misses, median width")
    for m, v in doc["pooled"].items():
        ci = v["median_abs_error_8x_ci"]
        lines.append(f"  {m:<10} {pct(v['median_abs_error_2x'])}, "
                     f"{pct(v['median_abs_error_8x'])} [{pct(ci and ci[0])}, "
                     f"{pct(ci and ci[1])}], {pct(v['coverage_95'])} ({v['scored']}), "
                     f"{pct(v['coverage_95_never_as_miss'])}, x{v['median_width']:.2f}"
                     + ("" if v["meets"] else "; missed: " + "; ".join(v["missed"])))
    lines.append("median signed error [95% CI over designs] (truths above / below their band)")
    for c in doc["signed"]:
        if c["median"] is not None:
            lines.append(f"  {c['model']:<10} {c['rule']:<6} {c['times_largest_pilot']}x "
                         f"{c['n']:>3}: {c['median']:+.1%} [{c['ci'][0]:+.1%}, "
                         f"{c['ci'][1]:+.1%}] ({c['above']} / {c['below']})")
    if "baseline" in doc:
        lines.append("last-slope baseline, pooled: " + "; ".join(
            f"{m} 8x {pct(v['median_abs_error_8x'])}"
            for m, v in doc["baseline"]["pooled"].items()))
        lines.append(paired.contrast_table(doc["baseline"]["contrast"], "last slope",
                                           doc["column"]))
    if "against" in doc:
        a = doc["against"]
        for c, by in a["by_rule"].items():
            lines.append(f"{c}, over the models: " + "; ".join(
                f"{rule} {v['scored']} scored, coverage {pct(v['coverage_95'])}, width "
                f"x{v['median_width']:.2f}, 8x {pct(v['median_abs_error_8x'])}"
                for rule, v in by.items() if v["scored"]))
        lines.append(paired.contrast_table(a["contrast"], a["column"], doc["column"]))
    return "\n".join(lines)


def score(doc: dict, rows: list) -> list:
    """(id, holds, measured) of the pre-registered claims, as the file words them (rows: the
    pooled rows, `measure`'s)."""
    if sorted(doc["design_seeds"]) != list(SCORED_SETS) or doc["column"] != "auto" \
            or "baseline" not in doc:
        raise SystemExit("practitioner_pool.py --score: the claims pool design seeds "
                         f"{', '.join(map(str, SCORED_SETS))} on the auto column, with the "
                         "baseline")
    held = []
    for i, (s, m) in enumerate([(s, m) for s in NEW_SETS for m in MODELS]):
        g = doc["sets"][str(s)][m]
        held.append((i + 1, g["meets"], g))
    held += [(7 + i, doc["pooled"][m]["meets"], doc["pooled"][m]) for i, m in enumerate(MODELS)]
    new = [r for r in rows if int(r["seed"].split("/")[0]) in NEW_SETS]
    c = signed(new, "bandit", "fixed", 2)
    held.append((10, c["ci"] is not None and c["ci"][1] < 0.0, c))
    nev = doc["pooled"]["bandit"]["coverage_95_never_as_miss"]
    held.append((11, nev is not None and nev < 0.8, nev))
    eight = {r["model"]: r for r in doc["baseline"]["contrast"]
             if r["times_largest_pilot"] == 8}
    held.append((12, all(m in eight and eight[m]["ci"][1] < 0.0 for m in MODELS),
                 {m: eight.get(m) for m in MODELS}))
    return held


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="practitioner runs' --out folders")
    ap.add_argument("--column", choices=COLUMNS, default="auto",
                    help="the plans pooled (default auto)")
    ap.add_argument("--against", choices=COLUMNS,
                    help="also the paired contrast of the column against this one")
    ap.add_argument("--no-baseline", action="store_true",
                    help="leave out the last-slope baseline (it re-reads every design's log)")
    ap.add_argument("--score", action="store_true",
                    help=f"score {PREDICTIONS} (column auto, design seeds 3 to 7)")
    ap.add_argument("--json", help="write the measurement (and the scores) here")
    a = ap.parse_args(argv)
    if a.score and (a.column != "auto" or a.no_baseline):
        ap.error("--score: the claims are on the auto column with the baseline")
    for f in a.folders:
        if not os.path.isfile(os.path.join(f, "plan_calibration.json")):
            ap.error(f"{f}: no plan_calibration.json (give the study's --out folder)")
    if a.against == a.column:
        ap.error(f"--against: another column than --column {a.column}")
    doc, rows = measure(a.folders, a.column, not a.no_baseline, a.against)
    print(report(doc))
    if a.score:
        print(record(doc, PREDICTIONS, score(doc, rows)))
    if a.json:
        atomic_write(a.json, lambda f: json.dump(doc, f, indent=1))


if __name__ == "__main__":
    main()
