"""`--smooth quad:5` on the homework sweeps, pre-registered: chosen on simulation (docs/plan.md,
"Noisy evaluations") and scored here on real runs. No JAX.

    python tools/real_smooth.py predict OUT.json             # pilots only; refuses an existing OUT
    python tools/real_smooth.py score PREDICTIONS.json OUT.json

`predict` makes every ingested homework sweep's designs as tools/real_knee.py predict does (the
same pilots, held-out batches and targets, every method there) and adds the joint fit with the
knee's sharpness made from the pilots' curves read after a local quadratic through 5 logged
points ("joint_knee_smooth"; the targets are still chosen from the curves as logged). Commit
its file before `score`, which reads the held-out curves as logged (the truth is read as
before) and scores joint_knee_smooth beside the other methods, pooled by how far each held-out
batch lies beyond the largest pilot, with the paired contrasts joint_knee_smooth minus each.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
import real_curves as rc  # noqa: E402
import real_knee as rk  # noqa: E402

SMOOTH = "quad:5"
METHODS = ("joint_knee_smooth",) + rk.METHODS
NAMES = {**rk.NAMES, "joint_knee_smooth": f"joint with the knee, --smooth {SMOOTH}"}
PREDICTIONS = "docs/preregistered/real_invpend_smooth_predictions.json"


def with_smooth(design: dict, runs: dict, meta: dict) -> dict:
    """A design's predictions with joint_knee_smooth added: the joint fit with the knee of
    the same design planned after --smooth SMOOTH."""
    spec = {"name": design["name"], "pilots": design["pilots"], "held_out": design["held_out"]}
    sm = rc.predict_design(meta, runs, spec, True, SMOOTH)
    for t, s in zip(design["targets"], sm["targets"]):
        assert t["target"] == s["target"], (t["target"], s["target"])
        for b, pr in t["predictions"].items():
            pr["joint_knee_smooth"] = s["predictions"][b]["joint"]
    return design


def predict(out: str) -> dict:
    return rk.write_predictions(
        out, "every ingested homework sweep (tools/real_curves.py), predicted from its pilots' "
             f"curves alone, with the joint fit's knee made after --smooth {SMOOTH} "
             "(joint_knee_smooth) beside the methods of tools/real_knee.py", with_smooth)


def claims(doc: dict) -> list:
    """The pre-registered claims (docs/preregistered/real_invpend_smooth_claims.json), each
    (id, holds), as written there."""
    a, c = doc["all"], doc["contrasts"]["joint_knee"]
    beyond = next(s for s in doc["by_bucket"] if s["design"] == "(4, inf]x")
    err = lambda m: a[m]["median_abs_error"]
    return [(1, abs(err("joint_knee_smooth") - err("joint_knee")) <= 0.02),
            (2, c["ci_groups"][0] <= 0.0 <= c["ci_groups"][1]),
            (3, a["joint_knee_smooth"]["coverage_95"] >= a["joint_knee"]["coverage_95"] - 0.02),
            (4, beyond["joint_knee_smooth"]["median_abs_error"] > 0.2)]


def signed(rows, methods=METHODS[:2]) -> dict:
    """The median signed error of each method over the predictions both answered with a truth
    (positive: predicted later than the run)."""
    ok = [r for r in rows if all("refused" not in r[m] and r[m]["error"] is not None
                                 for m in methods)]
    return {"predictions": len(ok), **{m: float(np.median([r[m]["error"] for r in ok]))
                                       for m in methods}}


def score(pred_path: str, out: str) -> dict:
    return rk.score_with(pred_path, out, METHODS, PREDICTIONS, claims,
                         lambda doc: {"signed_median": signed(doc["rows"])})


def text(doc: dict, methods, names) -> str:
    """real_knee's printout and the median signed errors."""
    s = doc["signed_median"]
    return (rk.scored_text(doc, methods, names)
            + f"\nmedian signed error over the {s['predictions']} predictions both answered: "
            + "; ".join(f"{names.get(m, m)} {s[m]:+.1%}" for m in methods[:2]))


def main(argv) -> None:
    rk.main_with(argv, predict, score, METHODS, NAMES, __doc__, text)


if __name__ == "__main__":
    main(sys.argv[1:])
