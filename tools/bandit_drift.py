"""The bandit's 8x miss on the practitioner's sweep, cell by cell of its drift (docs/plan.md, "A
practitioner's sweep"): `python experiments/plan_calibration.py --models bandit --design
practitioner --progress-form adam` run at cells of the drift's knobs (drift_scale, drift_bias,
drift_noise), each cell scored per rule from design FIRST on.

    python tools/bandit_drift.py OUT [--cells "drift_scale=0 drift_scale=0.25,drift_bias=0.025"]
        [--designs 32] [--first-design 16] [--json OUT.json]

Each cell prints, per rule and both: the median |error| at 2x and 8x, the 8x median error
signed, the held-out answers that never came (their runs' median never reached the target), the
95% coverage (and counting never-reached as misses) and the goal's line
(twoclock/studies/planner/practitioner.py).

The order the theory puts on the cells, kappa = drift_scale x drift_bias / sqrt(drift_noise):
Adam's step on a drift coordinate whose per-response signal is N(b, c_d) is about
lr b / sqrt(b^2 + c_d / m), so below the drift's own noise scale c_d / b^2 (10^4 samples at the
defaults) it moves lr b sqrt(m / c_d) per update, and the held-out metric sees drift_scale times
that. The bandit's progress needs a fixed number of updates past its knee, so the drift held-out
accuracy pays by the target grows as kappa sqrt(m)."""
import argparse
import contextlib
import io
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.studies.planner import practitioner  # noqa: E402

KNOBS = {"drift_scale": 0.25, "drift_bias": 0.05, "drift_noise": 25.0}  # the model's defaults
CELLS = "drift_scale=0 drift_scale=0.125 drift_scale=0.25"
CLAIMS = ("met", "under", "miss", "none")  # `holds`


def parse_cells(text: str) -> list:
    """'drift_scale=0 drift_scale=0.25,drift_bias=0.025' -> [{knob: value}, ...] (the others
    at their defaults); SystemExit with one line for an unknown knob or a bad value."""
    cells = []
    for item in text.split():
        cell = {}
        for kv in item.split(","):
            k, _, v = kv.partition("=")
            if k not in KNOBS:
                raise SystemExit(f"--cells: a knob among {', '.join(KNOBS)}, got {k!r}")
            try:
                x = float(v)
            except ValueError:
                x = math.nan
            if not (math.isfinite(x) and (x >= 0 if k != "drift_noise" else x > 0)):
                raise SystemExit(f"--cells: {k} a finite number "
                                 f"{'> 0' if k == 'drift_noise' else '>= 0'}, got {v!r}")
            cell[k] = x
        cells.append(cell)
    if not cells:
        raise SystemExit("--cells: at least one cell, e.g. 'drift_scale=0'")
    return cells


def kappa(cell: dict) -> float:
    """drift_scale x drift_bias / sqrt(drift_noise), the others at their defaults."""
    c = {**KNOBS, **cell}
    return c["drift_scale"] * c["drift_bias"] / math.sqrt(c["drift_noise"])


def name(cell: dict) -> str:
    return ",".join(f"{k}={v:g}" for k, v in cell.items())


def argv(cell: dict, folder: str, designs: int) -> list:
    """experiments/plan_calibration.py's arguments for a cell."""
    return ["--models", "bandit", "--design", "practitioner", "--progress-form", "adam",
            "--designs", str(designs), "--out", folder, "--no-figure", "--quiet"] + [
        x for k, v in cell.items() for x in (f"--{k.replace('_', '-')}", f"{v:g}")]


def cell_rows(rows: list, first: int) -> list:
    """practitioner.summary's bandit rows (fixed, sqrt, both) over the designs from `first` on,
    each with the 8x median signed error and the 8x answers that never came."""
    rs = [r for r in rows if r["seed"] >= first]
    if not rs:
        raise SystemExit(f"--first-design: no design from {first} on")
    out = []
    for s in practitioner.summary(rs):
        if s["model"] != "bandit":
            continue
        ruled = [r for r in rs if s["rule"] in ("both", r["rule"])]
        at8 = [r for r in ruled if r["times_largest_pilot"] == 8]
        out.append({**s, "signed_error_8x": practitioner.median_signed(ruled, 8),
                    "never_8x": sum(r["measured"] is None for r in at8),
                    "answers_8x": len(at8)})
    return out


def row(cell_summary: list, rule: str) -> dict:
    return next(s for s in cell_summary if s["rule"] == rule)


def holds(claim: str, cs: list) -> bool:
    """A pre-registered claim on one cell's rows (cell_rows): 'met' the goal met on both rules
    pooled; 'under' the 8x median |error| at most practitioner's goal with every 8x answer
    come; 'miss' the sqrt rule's 8x signed median below -goal and the fixed lr's 8x answers
    never come (all of them); 'none' no held-out answer comes at all (both rules, 2x, 8x)."""
    both, fixed, sqrt = row(cs, "both"), row(cs, "fixed"), row(cs, "sqrt")
    if claim == "none":
        return both["unanswered"] == both["predictions"] > 0
    if claim == "met":
        return not both["goal_missed"]
    if claim == "under":
        return (both["never_8x"] == 0 and both["median_abs_error_8x"] is not None
                and both["median_abs_error_8x"] <= practitioner.GOAL)
    if claim == "miss":
        return (sqrt["signed_error_8x"] is not None and
                sqrt["signed_error_8x"] < -practitioner.GOAL and
                0 < fixed["never_8x"] == fixed["answers_8x"])
    raise ValueError(f"claim: met, under, miss or none, got {claim!r}")


def table(results: list) -> str:
    pct = lambda v: "-" if v is None else f"{v:.1%}"
    sgn = lambda v: "-" if v is None else f"{v:+.1%}"
    lines = ["| cell | kappa | rule | scored | abs. error 2x | 8x | 8x signed | 8x never came |"
             " 95% coverage | counting never as misses | goal |", "|" + "---|" * 11]
    for cell, cs in results:
        for s in cs:
            lines.append(f"| {name(cell)} | {kappa(cell):.5f} | {s['rule']} | {s['scored']} | "
                         f"{pct(s['median_abs_error_2x'])} | {pct(s['median_abs_error_8x'])} | "
                         f"{sgn(s['signed_error_8x'])} | {s['never_8x']} | "
                         f"{pct(s['coverage_95'])} | {pct(s['coverage_95_never_as_miss'])} | "
                         + ("; ".join(s["goal_missed"]) or "met") + " |")
    return "\n".join(lines)


def main(args=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="a folder: one sub-folder per cell (its logs and json)")
    ap.add_argument("--cells", default=CELLS, help="cells, space-separated, each knob=value "
                    f"pairs joined by commas; knobs {', '.join(KNOBS)} (default {CELLS!r})")
    ap.add_argument("--designs", type=int, default=practitioner.SEEDS,
                    help="designs per rule (plan_calibration's --designs)")
    ap.add_argument("--first-design", type=int, default=0, help="score designs from this on")
    ap.add_argument("--predictions", help="a pre-registered predictions file to score")
    ap.add_argument("--json", help="also write the cells' rows here")
    a = ap.parse_args(args)
    if a.designs < 1:
        ap.error(f"--designs: an integer >= 1, got {a.designs}")
    if not 0 <= a.first_design < a.designs:
        ap.error(f"--first-design: in [0, --designs - 1] = [0, {a.designs - 1}], "
                 f"got {a.first_design}")
    pre = None
    if a.predictions:
        with open(a.predictions) as f:
            pre = json.load(f)
        cells = [c["cell"] for c in pre["predictions"]]
        for c in pre["predictions"]:
            bad = [c[k] for k in ("theory", "baseline") if c[k] not in CLAIMS]
            if bad or set(c["cell"]) - set(KNOBS):
                raise SystemExit(f"--predictions: prediction {c['id']}: claims among "
                                 f"{', '.join(CLAIMS)} on knobs among {', '.join(KNOBS)}")
    else:
        cells = parse_cells(a.cells)
    from twoclock.cli import run_study  # noqa: PLC0415 (JAX: only to simulate)
    from twoclock.studies import STUDIES  # noqa: PLC0415
    results = []
    for cell in cells:
        folder = os.path.join(a.out, name(cell).replace("=", "") or "defaults")
        os.makedirs(folder, exist_ok=True)
        with io.StringIO() as log, contextlib.redirect_stdout(log):  # the study's own table
            rc = run_study.main(STUDIES.plan_calibration, argv(cell, folder, a.designs),
                                "plan_calibration.py")
            text = log.getvalue()
        atomic_write(os.path.join(folder, "log.txt"), lambda f: f.write(text))
        if rc != 0:
            raise SystemExit(f"cell {name(cell)}: plan_calibration failed ({folder}/log.txt)")
        with open(os.path.join(folder, "plan_calibration.json")) as f:
            results.append((cell, cell_rows(json.load(f)["rows"], a.first_design)))
        print(f"cell {name(cell)} done", flush=True)
    print(table(results))
    doc = {"designs": a.designs, "first_design": a.first_design,
           "cells": [{"cell": c, "kappa": kappa(c), "rows": cs} for c, cs in results]}
    if pre is not None:
        doc["holds"] = [{"id": p["id"], "cell": name(p["cell"]), **{
            k: {"claim": p[k], "holds": holds(p[k], cs)} for k in ("theory", "baseline")}}
            for p, (_, cs) in zip(pre["predictions"], results)]
        for k in ("theory", "baseline"):
            doc[f"{k}_held"] = sum(h[k]["holds"] for h in doc["holds"])
            print(f"pre-registered, {k}: {doc[f'{k}_held']} of {len(doc['holds'])} hold (" +
                  ", ".join(f"{h['id']} {h[k]['claim']} {'holds' if h[k]['holds'] else 'fails'}"
                            for h in doc["holds"]) + ")")
    if a.json:
        atomic_write(a.json, lambda f: json.dump(doc, f, indent=1))


if __name__ == "__main__":
    main()
