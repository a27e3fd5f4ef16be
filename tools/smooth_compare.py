"""A reading option on the practitioner design: a local quadratic through noisy evaluations
(`--smooth quad:5`, docs/plan.md, "Noisy evaluations") or the evaluation's size told to every
plan (`--eval-noise`, "An evaluation's noise"). Two runs of `python
experiments/plan_calibration.py --design practitioner --compare-forms`, the second with the
option, on the same designs, compared on one of their columns (auto by default): the summary
rows, the 8x median signed errors, where the uncovered truths lie, and the paired contrast
with - without (twoclock/studies/planner/paired.py).

    python tools/smooth_compare.py RAW.json OTHER.json [--option smooth|eval_noise]
        [--column plan|adam|knee|auto] [--score] [--json OUT.json]

--score checks the option's pre-registered file (column auto): smooth,
docs/preregistered/practitioner_smooth_predictions.json; eval_noise,
docs/preregistered/practitioner_eval_noise_predictions.json."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from eval_every import measure, report  # noqa: E402
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.studies.planner import practitioner  # noqa: E402

PREDICTIONS = "docs/preregistered/practitioner_smooth_predictions.json"
EVAL_NOISE = "docs/preregistered/practitioner_eval_noise_predictions.json"
COLUMNS = ("plan", "adam", "knee", "auto")  # plan: the planner's default forms (the rows')
MODELS = ("quadratic", "bandit", "policy")


def column(run: dict, name: str) -> list:
    """A run's rows as the plan in column `name` scored them (plan: the rows themselves)."""
    return run["rows"] if name == "plan" else practitioner.as_rows(run["rows"], name)


def meets(s: dict, criteria=("2x", "8x", "coverage", "scored", "width")) -> bool:
    """Whether a summary row meets the practitioner goal's `criteria` (practitioner.misses'
    names; by default its four over scored predictions: median |error| at 2x and 8x, 95%
    coverage over enough predictions, median width), an error criterion only with a median."""
    errors = {"2x": "median_abs_error_2x", "8x": "median_abs_error_8x"}
    return (not any(c in criteria for c, _ in practitioner.misses(s))
            and all(s[errors[c]] is not None for c in criteria if c in errors))


def score(raw: list, smooth: list, doc: dict) -> list:
    """(id, holds, measured) of the pre-registered claims, as the file words them."""
    rows = {s["model"]: s for s in practitioner.summary(smooth) if s["rule"] == "both"}
    pooled = {c["model"]: c for c in doc["contrast"]
              if c["rule"] == "both" and c["times_largest_pilot"] is None}
    held = [(i + 1, meets(rows[m]), {k: rows[m][k] for k in (
        "scored", "median_abs_error_2x", "median_abs_error_8x", "coverage_95", "median_width")})
        for i, m in enumerate(MODELS)]
    c = pooled["all"]
    held.append((4, c["ci"][1] < 0.0, c))
    held += [(5, pooled["quadratic"]["mean_diff"] < 0.0, pooled["quadratic"]),
             (6, pooled["policy"]["mean_diff"] < 0.0, pooled["policy"])]
    b = pooled["bandit"]
    held.append((7, b["ci"][0] <= 0.0 <= b["ci"][1], b))
    return held


def score_eval_noise(raw: list, other: list, doc: dict) -> list:
    """(id, holds, measured) of the --eval-noise file's claims, as it words them."""
    rows = lambda rs: {s["model"]: s for s in practitioner.summary(rs) if s["rule"] == "both"}
    a, b = rows(raw), rows(other)
    keep = lambda s: {k: s[k] for k in ("scored", "coverage_95", "median_width")}
    ok = lambda s: meets(s, ("coverage", "scored", "width"))
    held = [(i + 1, ok(b[m]), keep(b[m])) for i, m in enumerate(MODELS)]
    held.append((4, b["bandit"]["coverage_95"] >= a["bandit"]["coverage_95"],
                 {"without": keep(a["bandit"]), "with": keep(b["bandit"])}))
    wider = {m: b[m]["median_width"] / a[m]["median_width"] for m in ("quadratic", "policy")}
    held.append((5, all(v >= 1.1 for v in wider.values()), wider))
    return held


def record(doc: dict, predictions: str, held: list) -> str:
    """The scored claims ((id, holds, measured) each) put into doc beside the file they score,
    and the printout's line."""
    doc.update(predictions=predictions, held=sum(bool(h) for _, h, _ in held), n=len(held),
               claims=[{"id": i, "holds": bool(h), "measured": m} for i, h, m in held])
    return f"pre-registered: {doc['held']} of {doc['n']} hold (" + ", ".join(
        f"{i} {'holds' if h else 'fails'}" for i, h, _ in held) + ")"


OPTIONS = {  # option: (the run's key, its label, its pre-registered file, its claims)
    "smooth": ("smoothing", None, PREDICTIONS, score),
    "eval_noise": ("eval_noise", "--eval-noise", EVAL_NOISE, score_eval_noise)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", help="the run's plan_calibration.json without the option")
    ap.add_argument("other", help="the same designs' run with it")
    ap.add_argument("--option", choices=tuple(OPTIONS), default="smooth",
                    help="the option the second run has (default smooth)")
    ap.add_argument("--column", choices=COLUMNS, default="auto",
                    help="the plans compared (default auto)")
    ap.add_argument("--score", action="store_true",
                    help="score the option's pre-registered file (column auto)")
    ap.add_argument("--json", help="write the comparison (and the scores) here")
    a = ap.parse_args(argv)
    key, label, predictions, claims = OPTIONS[a.option]
    runs = []
    for path in (a.raw, a.other):
        with open(path) as f:
            runs.append(json.load(f))
    if a.score and a.column != "auto":
        ap.error(f"--score: the claims are on the auto column (got --column {a.column})")
    if any(r.get("design") != "practitioner" for r in runs) or (
            a.column != "plan" and any(a.column not in r for r in runs)):
        ap.error(f"two practitioner runs with --compare-forms are needed (column {a.column})")
    if runs[0].get(key) or not runs[1].get(key):
        ap.error(f"the first run without {a.option}, the second with it (got "
                 f"{runs[0].get(key)!r}, {runs[1].get(key)!r})")
    if runs[0]["design_seed"] != runs[1]["design_seed"]:
        ap.error(f"the same designs are needed (design seeds {runs[0]['design_seed']} and "
                 f"{runs[1]['design_seed']})")
    raw, other = (column(r, a.column) for r in runs)
    doc = {"column": a.column, "design_seed": runs[0]["design_seed"],
           "option": a.option, key: runs[1][key], **measure(raw, other)}
    print(report(doc, "without", label or f"--smooth {runs[1][key]}"))
    if a.score:
        print(record(doc, predictions, claims(raw, other, doc)))
    if a.json:
        atomic_write(a.json, lambda f: json.dump(doc, f, indent=1))


if __name__ == "__main__":
    main()
