"""Round three of the real sweep's pre-registered score: the planner's bands with the exponent
envelope (twoclock/pilot/envelope.py; docs/plan.md, "The exponent envelope"). No JAX.

    python tools/score_real_envelope.py predict ADAM_PREDICTIONS.json OUT.json
    python tools/score_real_envelope.py score ENVELOPE_PREDICTIONS.json OUT.json

`predict` takes the design (pilots, held-out runs, targets) and the earlier rounds' predictions
from round two's file (tools/score_real.py predict-adam; a file whose design is not the sweep's
is refused, as round two refuses round one's), and predicts every held-out run with
the envelope on, in both progress forms: `default_envelope` (round one's planner: forms as they
are, at batch B) and `adam_envelope` (round two's Adam form, p = 0, at m = B / K samples per
update). Each pilot's clock is its first evaluation at or past the target, s steps, so its
crossing lies in ((s - every) B, s B] samples: that interval is the pilot's bracket, which the
envelope's anchor takes in (envelope.anchor). Commit its file before running `score`, which
scores both beside the earlier rounds' planners (first_round_planner, adam) and the McCandlish
and obvious-rule baselines, with paired contrasts (score_real.paired_cis). Never tuned here:
every setting of the envelope was fixed on simulation (tools/envelope_table.py)."""
import json
import os
import sys

from real_sweep import read_sweep  # noqa: E402 (tools/)
from score_real import LEVEL, earlier_round, paired_cis, plan_pilots, score_banded  # noqa: E402
from twoclock.pilot import envelope

NEW = ("default_envelope", "adam_envelope")
OLD = ("first_round_planner", "adam")
BANDED = NEW + OLD
ALL = BANDED + ("mccandlish", "obvious_rule")


def predict(adam_path: str, out: str) -> dict:
    pre, sw, b_p, lr = earlier_round(adam_path, out)
    every = sw["meta"]["eval_every_steps"]
    targets = []
    for t in pre["targets"]:
        n_p = [t["pilot_samples"][r] for r in pre["pilots"]]
        bracket = [((n / b - every) * b, n) for n, b in zip(n_p, b_p)]
        _, by_b = plan_pilots(b_p, lr, n_p, {p["batch"] for p in t["predictions"]}, "pilots",
                              bracket=bracket)
        _, by_m = plan_pilots(b_p, lr, n_p, {p["per_update_batch"] for p in t["predictions"]},
                              "pilots", "adam", bracket)
        preds = []
        for p in t["predictions"]:
            d, a = by_b[p["batch"]], by_m[p["per_update_batch"]]
            preds.append({**{k: p[k] for k in ("run", "batch", "per_update_batch",
                                               "x_largest_pilot", "updates_per_batch",
                                               "off_design")},
                          "default_envelope": {"median": d["median"], "band": d["ci"],
                                               "envelope": d["envelope"]},
                          "adam_envelope": {"median": a["median"], "band": a["ci"],
                                            "envelope": a["envelope"]},
                          **{k: p[k] for k in OLD + ("mccandlish", "obvious_rule")}})
        targets.append({"target": t["target"], "pilot_samples": t["pilot_samples"],
                        "pilot_brackets": dict(zip(pre["pilots"], bracket)),
                        "predictions": preds})
    doc = {"sweep": pre["sweep"], "round_two": os.path.basename(adam_path),
           "pilots": pre["pilots"], "held_out": pre["held_out"],
           "off_design": pre["off_design"], "level": LEVEL,
           "envelope": {"slack": list(envelope.SLACK),
                        "how": "pilot/envelope.py as committed: exponents [1/2 - p, 1 - p] "
                               "(adam) or [0, max a] (default forms), anchored on the "
                               "largest pilot's clock interval"},
           "skipped_targets": pre["skipped_targets"], "targets": targets}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


def score(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows, ok, summary = score_banded(pre, read_sweep(pre["sweep"]), ALL, BANDED, (
        "run", "batch", "per_update_batch", "x_largest_pilot", "off_design"))
    ratio, groups = lambda k: [1 + r[f"{k}_error"] for r in ok], [r["target"] for r in ok]
    contrasts = {f"{a}_vs_{b}": paired_cis(ratio(a), ratio(b), groups)
                 for a in NEW for b in ("mccandlish", "obvious_rule")}
    doc = {"sweep": pre["sweep"], "predictions": os.path.basename(pred_path), "rows": rows,
           "summary": summary, "contrast_abs_log_error": contrasts,
           "note": "the envelope moves the band's ends, not the median (except where the "
                   "median lay outside the envelope): errors equal the earlier rounds' unless so"}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


COMMANDS = {"predict": predict, "score": score}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in COMMANDS:
        raise SystemExit(__doc__.split("\n\n")[1])
    COMMANDS[sys.argv[1]](sys.argv[2], sys.argv[3])
    print(f"wrote {sys.argv[3]}")
