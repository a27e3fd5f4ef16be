"""The whole curve on the practitioner's sweep (issue 50 item 1 on item 6's design): each design's
log, already written by `python experiments/plan_calibration.py --design practitioner
--progress-form adam --out FOLDER`, planned again with the Adam form at its target alone (the
study's own plan) and with the target and LEVELS more levels of the same metric fitted jointly
(`twoclock/pilot/levels.py`: each level its own scale, log B_n linear in the level), scored at
the target against the study's held-out answers.

    python tools/practitioner_levels.py FOLDER [--fractions 0.15,0.3] [--first-design K]
        [--sharp] [--json OUT.json]

--sharp: the joint fit fits the knee's sharpness too (one for every level). FOLDER may be a
--compare-forms run (its rows' Adam records are the plan alone). Beside both, the no-theory
baseline: the largest pilot's clock carried on at the slope between the two largest pilots.

A level lies a fraction f of the way from the target back to where the pilots start: T + f (v0 -
T), v0 the median of the pilots' first logged values. Prints, per model, rule and held-out batch,
the median |error|, the 95% coverage and the median width both ways, and the paired contrast
|log(1 + err)| joint minus alone (twoclock/studies/planner/paired.py: 95% bootstrap CI over
designs)."""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from twoclock.pilot import bands  # noqa: E402
from twoclock.pilot.plan import PilotError  # noqa: E402
from twoclock.studies.planner import paired, practitioner  # noqa: E402
from twoclock.studies.planner.whole_curve import (  # noqa: E402,F401 (the tool's own names)
    adam_plan as _plan, first_values, level_texts, plan_both)


def last_slope(path: str, target: str, held) -> dict | str:
    """The no-theory baseline: the largest pilot's clock carried on at the slope in log-log
    between the two largest pilot batches (each batch's median clock as the plan reads it),
    {batch: samples}; or the refusal's line."""
    try:
        runs = _plan(path, target, held)["runs"]
    except PilotError as err:
        return str(err)
    by = {}
    for r in runs:
        by.setdefault(float(r["batch"]), []).append(r["progress_samples"])
    (b1, n1), (b2, n2) = [(b, float(np.median(by[b]))) for b in sorted(by)[-2:]]
    e = np.log(n2 / n1) / np.log(b2 / b1)
    return {b: n2 * (b / b2) ** e for b in held}


KEEP = ("model", "rule", "seed", "batch", "times_largest_pilot", "measured")  # a row's design


def slope_rows(slope, rows: list) -> list:
    """The last-slope baseline's rows for one design's study rows (slope: `last_slope`'s
    {batch: samples}, or its refusal's line), each scored against its row's answer."""
    out = []
    for r in rows:
        base = {k: r[k] for k in KEEP}
        out.append({**base, "refused": slope} if isinstance(slope, str) else {
            **base, "refused": None, "predicted": slope[r["batch"]], "rel_error": None
            if r["measured"] is None else slope[r["batch"]] / r["measured"] - 1})
    return out


def rescore(folder: str, fractions, first: int = 0, sharp: bool = False) -> tuple:
    """(rows alone, rows joint, rows of the last-slope baseline): the study's rows of designs
    (seeds) `first` on, re-planned both ways (sharp: the joint fit with the knee's sharpness)
    and carried on at the last slope. The plan alone is the study's own Adam-form plan (its
    row, or the row's "adam" record where the study compared forms): a row whose error
    differs from it is an error (the logs or the planner changed since the study ran)."""
    with open(os.path.join(folder, "plan_calibration.json")) as f:
        doc = json.load(f)
    alone, joint, base_rows, designs = [], [], [], {}
    for r in doc["rows"]:
        if r["seed"] < first:
            continue
        designs.setdefault((r["model"], r["rule"], r["seed"]), []).append(r)
    targets = {m: _target(m) for m, _, _ in designs}
    for (model, rule, seed), rows in designs.items():
        path = practitioner.design_path(folder, model, rule, seed)
        held = sorted(r["batch"] for r in rows)
        got = plan_both(path, targets[model], fractions, held, sharp)
        base_rows += slope_rows(last_slope(path, targets[model], held), rows)
        for r in rows:
            base = {k: r[k] for k in KEEP}
            for out, g in zip((alone, joint), got):
                if isinstance(g, str):
                    out.append({**base, "refused": g})
                elif r["measured"] is None:  # runs that never arrived: the band, as the study
                    out.append({**base, "refused": None, "ci": g[r["batch"]]["ci"]})
                else:
                    out.append({**base, "refused": None,
                                **bands.score(g[r["batch"]], r["measured"])})
            own = r.get("adam", r)
            if own.get("rel_error") is not None and alone[-1].get("rel_error") is not None \
                    and abs(alone[-1]["rel_error"] - own["rel_error"]) > 1e-9:
                raise SystemExit(f"{model} {rule} design {r['seed']} B {r['batch']}: the plan "
                                 "alone is not the study's (re-run the study)")
    return alone, joint, base_rows


def _target(model: str) -> str:
    """The model's progress condition at its default config (the study's default panels)."""
    from twoclock.models import MODELS  # noqa: PLC0415 (JAX: only to name the target)
    from twoclock.studies.planner import logs_check  # noqa: PLC0415
    m = MODELS[model]
    return logs_check.conditions(m, m.config())[0]


def pooled(alone: list, joint: list) -> list:
    """Per model and in all (both rules, 2x and 8x; practitioner.summary's "both" rows):
    scored, refused, the 95% coverage, the median width, and the median |error| at 8x, alone
    and joint."""
    keys = ("scored", "refused", "coverage_95", "median_width", "median_abs_error_8x")
    both = {name: {s["model"]: {k: s[k] for k in keys} for s in practitioner.summary(rs)
                   if s["rule"] == "both"} for name, rs in (("alone", alone), ("joint", joint))}
    return [{"model": m, "alone": both["alone"][m], "joint": both["joint"][m]}
            for m in both["alone"]]


def score(pool: list, con: list) -> list:
    """docs/preregistered/practitioner_levels_predictions.json's six claims, each (id, holds),
    from the pooled rows and the contrasts (per model, both rules, 2x and 8x pooled)."""
    p = {r["model"]: r for r in pool}
    c = {r["model"]: r["ci"] for r in con if r["rule"] == "both" and r["model"] != "all"}
    has0 = lambda ci: ci[0] <= 0.0 <= ci[1]
    e8 = lambda m: p[m]["joint"]["median_abs_error_8x"]
    return [(1, c["quadratic"][1] < 0.0), (2, has0(c["bandit"])), (3, has0(c["policy"])),
            (4, all(p[m]["joint"]["median_width"] < p[m]["alone"]["median_width"]
                    for m in ("quadratic", "bandit", "policy"))),
            (5, p["all"]["joint"]["coverage_95"] >= 0.9),
            (6, e8("quadratic") <= 0.15 and e8("bandit") > 0.15 and e8("policy") > 0.15)]


KNEE_SEED = 2  # the design seed of docs/preregistered/practitioner_knee_levels_predictions.json


def knee_stats(alone: list, joint: list, base: list) -> dict:
    """Per model (both rules): the median |error| at 2x and 8x, 95% coverage, median width and
    scored count of the plan alone and of the joint fit (practitioner.summary), and the 8x
    median |error| of the last-slope baseline."""
    both = lambda rows: {s["model"]: s for s in practitioner.summary(rows) if s["rule"] == "both"}
    a, j = both(alone), both(joint)
    e8 = lambda m: [abs(r["rel_error"]) for r in base if r["model"] == m
                    and r["times_largest_pilot"] == 8 and r.get("rel_error") is not None]
    keys = ("scored", "median_abs_error_2x", "median_abs_error_8x", "coverage_95",
            "median_width")
    return {m: {"alone": {k: a[m][k] for k in keys}, "joint": {k: j[m][k] for k in keys},
                "last_slope_8x": float(np.median(e8(m))) if e8(m) else None}
            for m in a if m != "all"}


def score_knee(stats: dict, con: list) -> list:
    """docs/preregistered/practitioner_knee_levels_predictions.json's claims, each (id, holds),
    as written there."""
    c = {r["model"]: r["ci"] for r in con if r["rule"] == "both" and r["model"] != "all"}
    j = lambda m, k: stats[m]["joint"][k]
    models = ("quadratic", "bandit", "policy")
    goal = lambda m: (j(m, "median_abs_error_2x") <= 0.15 and j(m, "median_abs_error_8x") <= 0.15
                      and j(m, "coverage_95") >= 0.9 and j(m, "scored") >= 40
                      and j(m, "median_width") <= 2.0)
    return [(1, j("policy", "median_abs_error_8x") <= 0.15),
            (2, c["policy"][1] < 0.0),
            (3, j("quadratic", "median_abs_error_8x") <= 0.15),
            (4, c["bandit"][1] >= 0.0),
            (5, j("bandit", "median_abs_error_8x") > 0.15),
            (6, all(j(m, "coverage_95") >= 0.9 for m in models)),
            (7, all(j(m, "median_width") <= 2.0 for m in models)),
            (8, all(j(m, "median_abs_error_8x") < stats[m]["last_slope_8x"] for m in models)),
            (9, goal("policy"))]


def table(alone: list, joint: list, base: list | None = None) -> str:
    """Per model, rule and held-out batch: scored, the median |error| alone and joint (and of
    the last-slope baseline, where given), the 95% coverage and the median width."""
    lines = ["| model | rule | held out | scored | median abs. error: alone, joint"
             + (", last slope" if base else "") + " | 95% "
             "coverage: alone, joint | median width: alone, joint |",
             "|---|---|---|---|---|---|---|"]
    for key in sorted({(r["model"], r["rule"], r["times_largest_pilot"]) for r in alone}):
        pick = lambda rs: [r for r in rs if (r["model"], r["rule"], r["times_largest_pilot"])
                           == key and r.get("rel_error") is not None]
        a, j, z = pick(alone), pick(joint), pick(base or [])
        if not a or not j:
            continue
        med = lambda rs, f: float(np.median([f(r) for r in rs]))
        lines.append(f"| {key[0]} | {key[1]} | {key[2]}x | {len(a)}, {len(j)} | "
                     f"{med(a, lambda r: abs(r['rel_error'])):.1%}, "
                     f"{med(j, lambda r: abs(r['rel_error'])):.1%}"
                     + (f", {med(z, lambda r: abs(r['rel_error'])):.1%}" if z else "") + " | "
                     f"{np.mean([r['covered'] for r in a]):.1%}, "
                     f"{np.mean([r['covered'] for r in j]):.1%} | "
                     f"x{med(a, lambda r: r['width']):.2f}, x{med(j, lambda r: r['width']):.2f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a practitioner run's --out folder (its json and logs)")
    ap.add_argument("--fractions", default="0.15,0.3",
                    help="the extra levels, as fractions of the way back to the start")
    ap.add_argument("--first-design", type=int, default=0,
                    help="score the designs (seeds) from this one on")
    ap.add_argument("--sharp", action="store_true",
                    help="the joint fit fits the knee's sharpness too (levels.joint_plan)")
    ap.add_argument("--json", help="also write the rows' summaries and contrasts here")
    a = ap.parse_args(argv)
    fractions = [float(x) for x in a.fractions.split(",")]
    if not fractions or any(not 0 < f < 1 for f in fractions):
        ap.error(f"--fractions: each in (0, 1), got {a.fractions!r}")
    if a.first_design < 0:
        ap.error(f"--first-design: a seed >= 0, got {a.first_design}")
    alone, joint, base = rescore(a.folder, fractions, a.first_design, a.sharp)
    if not alone:
        ap.error(f"--first-design: no design from {a.first_design} on in {a.folder}")
    con, pool = paired.contrast(alone, joint), pooled(alone, joint)
    print(table(alone, joint, base))
    print(paired.contrast_table(con, "alone", "joint"))
    for p in pool:
        print(f"{p['model']:<10} " + "; ".join(
            f"{k}: {p[k]['scored']} scored, {p[k]['refused']} refused" + ("" if not p[k][
                "scored"] else f", coverage {p[k]['coverage_95']:.1%}, median width "
                f"x{p[k]['median_width']:.2f}, 8x error " + (
                    "-" if p[k]["median_abs_error_8x"] is None else
                    f"{p[k]['median_abs_error_8x']:.1%}")) for k in ("alone", "joint")))
    with open(os.path.join(a.folder, "plan_calibration.json")) as f:
        seed = json.load(f).get("design_seed", 0)
    stats = knee_stats(alone, joint, base)
    for m, st in stats.items():
        print(f"{m:<10} last slope: 8x error " + ("-" if st["last_slope_8x"] is None else
                                                  f"{st['last_slope_8x']:.1%}"))
    if a.json:
        from twoclock.atomic import atomic_write  # noqa: PLC0415
        knee = a.sharp and seed == KNEE_SEED and fractions == [0.15, 0.3]
        doc = {"predictions": "docs/preregistered/practitioner_" + (
            "knee_" if knee else "") + "levels_predictions.json", "design_seed": seed,
               "sharp": a.sharp, "designs_from": a.first_design, "fractions": fractions,
               "pooled": pool, "stats": stats, "contrast": con}
        if knee:  # the pre-registered design of the knee's sharpness
            held = score_knee(stats, con)
            doc.update(holds=[{"id": i, "holds": h} for i, h in held],
                       held=sum(h for _, h in held), n=len(held))
            print(f"pre-registered: {doc['held']} of {doc['n']} hold (" + ", ".join(
                f"{i} {'holds' if h else 'fails'}" for i, h in held) + ")")
        elif a.first_design == 16 and fractions == [0.15, 0.3] and not a.sharp:  # the first
            held = score(pool, con)
            doc.update(holds=[{"id": i, "holds": h} for i, h in held],
                       held=sum(h for _, h in held), n=len(held))
            print(f"pre-registered: {doc['held']} of {doc['n']} hold (" + ", ".join(
                f"{i} {'holds' if h else 'fails'}" for i, h in held) + ")")
        atomic_write(a.json, lambda f: json.dump(doc, f, indent=1))


if __name__ == "__main__":
    main()
