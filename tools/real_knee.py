"""The knee's sharpness fitted over the levels of each run's curve (`plan.py --fit-knee`,
twoclock/pilot/levels.py with sharp) on the homework sweeps, pre-registered: tuned on
simulation (docs/plan.md, "A practitioner's sweep"), scored on real runs. No JAX.

    python tools/real_knee.py predict OUT.json             # pilots only; refuses an existing OUT
    python tools/real_knee.py score PREDICTIONS.json OUT.json

`predict` makes every ingested homework sweep's designs as tools/real_curves.py predict-set
does (the same pilots, held-out batches and targets: the returns every pilot crosses after its
first evaluation) and adds, beside each method there, the joint fit with the knee's sharpness
("joint_knee"). Commit its file before `score`, which reads the held-out curves and scores
joint_knee beside the joint fit at the form's own knee, the Adam form alone, McCandlish and the
obvious rule, pooled by how far each held-out batch lies beyond the largest pilot, with the
paired contrasts joint_knee minus each (CIs over predictions and over sweeps), and, for the
committed predictions file, the claims of docs/preregistered/real_invpend_knee_claims.json.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
import real_curves as rc  # noqa: E402
from twoclock.atomic import atomic_write  # noqa: E402

METHODS = ("joint_knee", "joint", "adam", "mccandlish", "obvious_rule")
NAMES = {"joint_knee": "joint with the knee"}
PREDICTIONS = "docs/preregistered/real_invpend_knee_predictions.json"


def knee_designs(meta: dict, runs: dict) -> list:
    """A sweep's designs predicted as tools/real_curves.py does, with joint_knee added."""
    designs = []
    for d in meta["designs"]:
        base, knee = (rc.predict_design(meta, runs, d, sharp) for sharp in (False, True))
        for t, k in zip(base["targets"], knee["targets"]):
            for b, pr in t["predictions"].items():
                pr["joint_knee"] = k["predictions"][b]["joint"]
        designs.append(base)
    return designs


def write_predictions(out: str, what: str, each=lambda design, runs, meta: design) -> dict:
    """Every ingested sweep's knee_designs, each passed through each(design, runs, meta),
    written once to `out` with `what` said of them."""
    rc.write_once(out)
    sweeps = []
    for name in rc.ingested():
        meta, runs = rc.read_curves(name)
        sweeps.append({"sweep": name, "metric": meta["metric"],
                       "designs": [each(d, runs, meta) for d in knee_designs(meta, runs)]})
    doc = {"what": what, "level": rc.LEVEL, "buckets": rc.BUCKETS, "sweeps": sweeps}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


def predict(out: str) -> dict:
    """Every ingested sweep's designs predicted from their pilots, with joint_knee added."""
    return write_predictions(out, "every ingested homework sweep (tools/real_curves.py), "
                                  "predicted from its pilots' curves alone, with the joint "
                                  "fit's knee sharpness fitted (joint_knee) beside the methods "
                                  "of tools/real_curves.py")


def pooled_all(rows, methods=METHODS) -> dict:
    """Every held-out prediction in one group (rc.summary over a single 'all' design)."""
    return rc.summary([dict(r, design="all", batch=0.0) for r in rows], methods)[0]


def finish(doc: dict, pred_path: str, predictions: str, claims, out: str) -> dict:
    """The scored document with, for the committed predictions file, its pre-registered
    claims (claims(doc) -> [(id, holds)]), written atomically to `out`."""
    if os.path.normpath(pred_path).endswith(os.path.normpath(predictions)):
        held = claims(doc)
        doc.update(holds=[{"id": i, "holds": h} for i, h in held],
                   held=sum(h for _, h in held), n=len(held))
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


def held_line(doc: dict) -> str | None:
    """The claims' outcome as printed, or None where no claims were scored."""
    if "held" not in doc:
        return None
    return f"pre-registered: {doc['held']} of {doc['n']} hold (" + ", ".join(
        f"{i['id']} {'holds' if i['holds'] else 'fails'}" for i in doc["holds"]) + ")"


def scored_text(doc: dict, methods, names) -> str:
    """A scored document as printed: the table by bucket, every prediction pooled (median
    |error|, 95% coverage and median width of the first three methods) and the claims."""
    a = doc["all"]
    lines = [rc.set_markdown(doc, methods, names),
             f"all {a['targets']} ({a['never']} never reached): " + "; ".join(
                 f"{names.get(m, m)} " + ", ".join(
                     "-" if a[m][k] is None else (f"x{a[m][k]:.2f}" if k == "median_width"
                                                  else f"{a[m][k]:.1%}")
                     for k in ("median_abs_error", "coverage_95", "median_width"))
                 for m in methods[:3])]
    return "\n".join(lines + ([held_line(doc)] if held_line(doc) else []))


def claims(doc: dict) -> list:
    """The pre-registered claims (docs/preregistered/real_invpend_knee_claims.json), each (id,
    holds), as written there."""
    a, c = doc["all"], doc["contrasts"]
    beyond = next(s for s in doc["by_bucket"] if s["design"] == "(4, inf]x")
    has0 = lambda ci: ci[0] <= 0.0 <= ci[1]
    return [(1, c["joint"]["ci_groups"][1] >= 0.0),
            (2, a["joint_knee"]["coverage_95"] >= a["joint"]["coverage_95"]),
            (3, a["joint_knee"]["median_width"] >= a["joint"]["median_width"]),
            (4, beyond["joint_knee"]["median_abs_error"] > 0.2),
            (5, has0(c["mccandlish"]["ci_groups"]))]


def score_with(pred_path: str, out: str, methods, predictions: str, claims,
               more=lambda doc: {}) -> dict:
    """A predictions file's every sweep scored for `methods` (the first the one compared with
    each other), pooled by bucket and in all, with what more(doc) adds and the claims of the
    committed `predictions` file; written atomically to `out`."""
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows = []
    for sw in pre["sweeps"]:
        rows += [{"sweep": sw["sweep"], **r} for r in rc.score_rows(sw, methods)]
    doc = {"predictions": pred_path, **rc.by_bucket(rows, methods),
           "all": pooled_all(rows, methods)}
    doc.update(more(doc))
    return finish(doc, pred_path, predictions, claims, out)


def score(pred_path: str, out: str) -> dict:
    return score_with(pred_path, out, METHODS, PREDICTIONS, claims)


def main_with(argv, predict, score, methods, names, usage: str, text=scored_text) -> None:
    """`predict OUT.json` or `score PREDICTIONS.json OUT.json` of a tool on the homework
    sweeps, the scored document printed by text(doc, methods, names)."""
    if argv[:1] == ["predict"] and len(argv) == 2:
        doc = predict(argv[1])
        n = sum(len(t["predictions"]) for sw in doc["sweeps"] for d in sw["designs"]
                for t in d["targets"])
        print(f"wrote {argv[1]}: {len(doc['sweeps'])} sweeps, {n} predictions")
    elif argv[:1] == ["score"] and len(argv) == 3:
        print(text(score(argv[1], argv[2]), methods, names))
    else:
        raise SystemExit(usage)


def main(argv) -> None:
    main_with(argv, predict, score, METHODS, NAMES, __doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
