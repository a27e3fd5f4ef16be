"""The practitioner design at two evaluation grids (docs/plan.md, "A practitioner's sweep"): two
runs of `python experiments/plan_calibration.py --design practitioner --progress-form adam`, the
published one (every 25 updates) and one with `--eval-every N`, on the same designs, compared
model by model: the summary rows, the 8x median signed errors, the paired contrast
(twoclock/studies/planner/paired.py) and where the uncovered truths lie (above or below the band).

    python tools/eval_every.py BASE.json OTHER.json [--first-design K]
        [--score policy|models|fresh] [--json OUT.json]

--score checks a pre-registered file's predictions: policy,
docs/preregistered/practitioner_eval_every_predictions.json; models,
docs/preregistered/practitioner_eval_every_models_predictions.json; fresh (designs 16 on),
docs/preregistered/practitioner_eval_every_fresh_predictions.json."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.studies.planner import paired, practitioner  # noqa: E402

KEYS = ("median_abs_error_2x", "median_abs_error_8x", "coverage_95",
        "coverage_95_never_as_miss", "median_width", "unanswered", "goal_missed")
PREDICTIONS = {"policy": "docs/preregistered/practitioner_eval_every_predictions.json",
               "models": "docs/preregistered/practitioner_eval_every_models_predictions.json",
               "fresh": "docs/preregistered/practitioner_eval_every_fresh_predictions.json"}


def signed_8x(rows, model: str, rule: str):
    """The median signed error at 8x of a model and rule (None: none scored)."""
    return practitioner.median_signed([r for r in rows if (r["model"], r["rule"]) ==
                                       (model, rule)], 8)


def misses(rows, model: str, rule: str, times: int) -> dict:
    """The scored predictions of a cell whose band missed: above it (the truth slower than the
    band) and below it."""
    out = {"above": 0, "below": 0}
    for r in rows:
        if (r["model"], r["rule"], r["times_largest_pilot"]) == (model, rule, times) and \
                r.get("rel_error") is not None and not r["covered"]:
            out["above" if r["measured"] > r["ci"][1] else "below"] += 1
    return out


def measure(base: list, other: list) -> dict:
    """Both runs on the models they share: summaries, signed 8x medians, misses by cell, and
    the paired contrast other - base."""
    models = [m for m in dict.fromkeys(r["model"] for r in other)
              if any(r["model"] == m for r in base)]
    base = [r for r in base if r["model"] in models]
    other = [r for r in other if r["model"] in models]
    doc = {}
    for name, rows in (("base", base), ("other", other)):
        doc[name] = {
            "summary": {f"{s['model']} {s['rule']}": {k: s[k] for k in KEYS}
                        for s in practitioner.summary(rows) if s["model"] != "all"},
            "signed_8x": {f"{m} {r}": signed_8x(rows, m, r) for m in models
                          for r in practitioner.RULES},
            "misses": {f"{m} {r} {t}x": misses(rows, m, r, t) for m in models
                       for r in practitioner.RULES for t in (2, 8)}}
    doc["contrast"] = paired.contrast(base, other)
    return doc


def report(doc: dict, base: str, other: str) -> str:
    """`measure`'s document as text: each cell's 8x error, coverage and width base -> other,
    the uncovered truths by side, and the paired contrast other - base."""
    f = lambda v: "-" if v is None else f"{v:.1%}"
    w = lambda v: "-" if v is None else f"x{v:.2f}"
    lines = []
    for k, s in doc["other"]["summary"].items():
        bs = doc["base"]["summary"][k]
        lines.append(f"{k:<16} 8x |err| {f(bs['median_abs_error_8x'])} -> "
                     f"{f(s['median_abs_error_8x'])}, coverage {f(bs['coverage_95'])} -> "
                     f"{f(s['coverage_95'])}, median width {w(bs['median_width'])} -> "
                     f"{w(s['median_width'])}")
    for k, m in doc["other"]["misses"].items():
        if m["above"] or m["below"]:
            lines.append(f"{k:<16} uncovered: {m['above']} above the band, {m['below']} below "
                         f"(base: {doc['base']['misses'][k]['above']}, "
                         f"{doc['base']['misses'][k]['below']})")
    return "\n".join(lines + [paired.contrast_table(doc["contrast"], base, other)])


def _contrast(doc, model, rule, times) -> dict:
    """The paired contrast's row of a cell."""
    return next(c for c in doc["contrast"]
                if (c["model"], c["rule"], c["times_largest_pilot"]) == (model, rule, times))


def score(which: str, doc: dict) -> list:
    """(id, holds) of a pre-registered file's predictions, as its claims are written."""
    b, o = doc["base"], doc["other"]
    if which == "policy":
        ci8 = _contrast(doc, "policy", "sqrt", 8)["ci"]
        fixed = _contrast(doc, "policy", "fixed", 8)["ci"]
        both = o["summary"]["policy both"]
        return [(1, o["summary"]["policy sqrt"]["median_abs_error_8x"] <= practitioner.GOAL),
                (2, ci8[1] < 0.0), (3, o["signed_8x"]["policy sqrt"] > 0.0),
                (4, fixed[0] <= 0.0 <= fixed[1]),
                (5, both["median_abs_error_8x"] <= practitioner.GOAL and
                 both["coverage_95"] >= practitioner.COVER),
                (6, both["median_width"] <= b["summary"]["policy both"]["median_width"])]
    if which == "models":
        never8 = o["summary"]["bandit fixed"]["unanswered"]  # its 2x answers all came
        return [(1, abs(o["signed_8x"]["quadratic sqrt"]) < abs(b["signed_8x"]["quadratic sqrt"])),
                (2, _contrast(doc, "quadratic", "sqrt", 8)["mean_diff"] < 0.0),
                (3, not o["summary"]["quadratic both"]["goal_missed"]),
                (4, o["summary"]["bandit sqrt"]["median_abs_error_8x"] > practitioner.GOAL),
                (5, never8 == 16)]
    if which == "fresh":
        sq = o["signed_8x"]["policy sqrt"]
        both = o["summary"]["policy both"]
        return [(1, o["summary"]["policy sqrt"]["median_abs_error_8x"] <= practitioner.GOAL),
                (2, sq is not None and 0.0 < sq <= practitioner.GOAL),
                (3, _contrast(doc, "policy", "sqrt", 8)["mean_diff"] < 0.0), (4, not both["goal_missed"]),
                (5, both["median_abs_error_8x"] <=
                 b["summary"]["policy both"]["median_abs_error_8x"])]
    raise ValueError(f"--score: policy, models or fresh, got {which!r}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="the every-25 run's plan_calibration.json")
    ap.add_argument("other", help="the --eval-every run's plan_calibration.json")
    ap.add_argument("--score", choices=tuple(PREDICTIONS), help="score a pre-registered file")
    ap.add_argument("--first-design", type=int, default=0,
                    help="compare the designs (seeds) from this one on")
    ap.add_argument("--json", help="write the comparison (and the scores) here")
    a = ap.parse_args(argv)
    if a.first_design < 0:
        ap.error(f"--first-design: a seed >= 0, got {a.first_design}")
    runs = []
    for path in (a.base, a.other):
        with open(path) as f:
            run = json.load(f)
        runs.append({**run, "rows": [r for r in run["rows"] if r["seed"] >= a.first_design]})
    doc = {"base_eval_every": runs[0].get("eval_every_updates"),
           "other_eval_every": runs[1].get("eval_every_updates"), **measure(runs[0]["rows"],
                                                                             runs[1]["rows"])}
    if not doc["base"]["summary"]:
        ap.error(f"the two runs share no model with designs from {a.first_design} on")
    print(report(doc, f"every {doc['base_eval_every']}", f"every {doc['other_eval_every']}"))
    if a.score:
        held = score(a.score, doc)
        doc.update(predictions=PREDICTIONS[a.score],
                   holds=[{"id": i, "holds": bool(h)} for i, h in held],
                   held=sum(bool(h) for _, h in held), n=len(held))
        print(f"pre-registered: {doc['held']} of {doc['n']} hold (" + ", ".join(
            f"{i} {'holds' if h else 'fails'}" for i, h in held) + ")")
    if a.json:
        atomic_write(a.json, lambda f: json.dump(doc, f, indent=1))


if __name__ == "__main__":
    main()
