"""`--progress-form auto` on the homework sweeps, pre-registered: its rule (the pilots' metric
turns back where the pooled trend z > 3, twoclock/pilot/erosion.py) was set on simulation
(docs/plan.md, "A metric that turns back") and is scored here on real runs. No JAX.

    python tools/real_auto.py predict OUT.json             # pilots only; refuses an existing OUT
    python tools/real_auto.py score PREDICTIONS.json OUT.json

`predict` makes every ingested homework sweep's designs as tools/real_knee.py predict does (the
same pilots, held-out batches and targets, every method there) and adds, per design, the
erosion test on its pilots' curves and "auto": the joint fit with the knee's sharpness where
the pilots' return does not turn back, the planner's default forms where it does (the study's
auto column, twoclock/studies/planner/practitioner.py). Commit its file before `score`, which
reads the held-out curves and scores auto beside the other methods, pooled by how far each
held-out batch lies beyond the largest pilot, with the paired contrasts auto minus each, over
every prediction and over the designs that turn back alone.
"""
import json
import os
import sys
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
import real_curves as rc  # noqa: E402
import real_knee as rk  # noqa: E402
from twoclock.pilot import erosion  # noqa: E402

METHODS = ("auto",) + rk.METHODS + ("default",)
NAMES = {**rk.NAMES, "auto": "auto (knee, or default where the return turns back)"}


def turns_back(runs: dict, pilots) -> dict:
    """The erosion test (pilot/erosion.py) on the pilot batches' runs of a rising return."""
    rs = [SimpleNamespace(name=r["run"], samples_R=np.asarray(r["samples"], np.float64),
                          metrics={"m": np.asarray(r["metric"], np.float64)})
          for b in pilots for r in runs[float(b)]]
    return erosion.test(rs, "m", ">=").to_json()


def with_auto(design: dict, test: dict) -> dict:
    """A design's predictions with "auto" added: its default forms' where the pilots turn
    back, else its joint_knee."""
    pick = "default" if test["turns_back"] else "joint_knee"
    for t in design["targets"]:
        for pr in t["predictions"].values():
            pr["auto"] = pr[pick]
    return {**design, "erosion": test}


def predict(out: str) -> dict:
    return rk.write_predictions(
        out, "every ingested homework sweep (tools/real_curves.py), predicted from its pilots' "
             "curves alone, with --progress-form auto's choice (auto) beside the methods of "
             "tools/real_knee.py and the default forms",
        lambda d, runs, meta: with_auto(d, turns_back(runs, d["pilots"])))


PREDICTIONS = "docs/preregistered/real_invpend_auto_predictions.json"


def claims(doc: dict) -> list:
    """The pre-registered claims (docs/preregistered/real_invpend_auto_claims.json), each (id,
    holds), as written there."""
    a, back = doc["all"], doc["turning_back"]["contrasts"]["joint_knee"]
    beyond = next(s for s in doc["by_bucket"] if s["design"] == "(4, inf]x")
    err = lambda m: a[m]["median_abs_error"]
    return [(1, back["ci_groups"][1] >= 0.0),
            (2, abs(err("auto") - err("joint_knee")) <= 0.02),
            (3, a["auto"]["coverage_95"] >= a["joint_knee"]["coverage_95"]),
            (4, beyond["auto"]["median_abs_error"] > 0.2)]


def score(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows, back = [], []
    for sw in pre["sweeps"]:
        got = [{"sweep": sw["sweep"], **r} for r in rc.score_rows(sw, METHODS)]
        turned = {d["name"] for d in sw["designs"] if d["erosion"]["turns_back"]}
        rows += got
        back += [r for r in got if r["design"] in turned]
    doc = {"predictions": pred_path, **rc.by_bucket(rows, METHODS),
           "all": rk.pooled_all(rows, METHODS),
           "designs": sum(len(sw["designs"]) for sw in pre["sweeps"]),
           "designs_turning_back": sum(d["erosion"]["turns_back"] for sw in pre["sweeps"]
                                       for d in sw["designs"]),
           "turning_back": {"all": rk.pooled_all(back, METHODS) if back else None,
                            "contrasts": rc.contrasts(back, None, METHODS) if back else None}}
    return rk.finish(doc, pred_path, PREDICTIONS, claims, out)


def main(argv) -> None:
    if argv[:1] == ["predict"] and len(argv) == 2:
        doc = predict(argv[1])
        d = [x for sw in doc["sweeps"] for x in sw["designs"]]
        n = sum(len(t["predictions"]) for x in d for t in x["targets"])
        print(f"wrote {argv[1]}: {len(doc['sweeps'])} sweeps, {len(d)} designs "
              f"({sum(x['erosion']['turns_back'] for x in d)} turn back), {n} predictions")
    elif argv[:1] == ["score"] and len(argv) == 3:
        doc = score(argv[1], argv[2])
        print(rc.set_markdown(doc, METHODS, NAMES))
        tb = doc["turning_back"]["all"]
        print(f"designs turning back: {doc['designs_turning_back']} of {doc['designs']}"
              + ("" if tb is None else f"; their {tb['targets']} predictions: " + "; ".join(
                  f"{NAMES.get(m, m)} " + ("-" if tb[m]["median_abs_error"] is None else
                                           f"{tb[m]['median_abs_error']:.1%}")
                  for m in ("auto", "joint_knee", "adam", "default"))))
        if rk.held_line(doc):
            print(rk.held_line(doc))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
