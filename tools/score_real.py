"""Score the planner on public batch sweeps (twoclock/data/real/), pre-registered: no JAX.

    python tools/score_real.py predict SWEEP OUT.json   # pilots only; refuses an existing OUT
    python tools/score_real.py score PREDICTIONS.json OUT.json
    python tools/score_real.py predict-adam PREDICTIONS.json OUT.json  # round two: Adam's form
    python tools/score_real.py score-adam ADAM_PREDICTIONS.json OUT.json

`predict` reads only the pilots' rows of a sweep (the three smallest batches with one update per
rollout batch), and writes, for every target they all reach after their first evaluation, the
planner's prediction with its 95% band (twoclock.pilot.plan on the pilots' clocks, forms as they
are) at every held-out batch, beside two baselines refitted on the same pilots (the sweep, its
design and the baselines: tools/real_sweep.py):
- McCandlish: N = N_min (1 + B / B_noise) in samples, least squares in log N;
- the obvious rule: the largest pilot's clock scaled by (B / B_pilot)^(1 - p), lr ~ B^p.
Commit its file before running `score`. `score` reads the held-out truths and writes each
prediction's error, whether the band covers the truth, and the band's width. Method and
numbers: docs/real_runs.md.

`predict-adam` (second round) predicts on the first round's design (read from its predictions
file) with the planner's Adam form (twoclock/pilot/adam.py), per target and jointly across the
targets (twoclock/pilot/levels.py), each several-update run at m = B / K samples per update;
its options and their reasons are written into its file (ADAM_OPTIONS). `score-adam` scores it
beside the first round's planner and both baselines, with paired contrasts.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
from real_sweep import (GRID, design, mccandlish_fit,  # noqa: E402,F401 (GRID: tests read it)
                        mccandlish_predict, obvious_rule, read_sweep)
from twoclock.pilot import bands, levels  # noqa: E402
from twoclock.pilot.fit import t_quantile  # noqa: E402
from twoclock.pilot.plan import PilotError, PilotRuns, plan  # noqa: E402

LEVEL = 0.95


def plan_pilots(b_p, lr, n_p, at, source: str, form: str | None = None, bracket=None,
                level: float = LEVEL) -> tuple:
    """(the plan, {batch: its band}) from the pilots' clocks n_p (samples; one update each, no
    failure, no budget, no step time), predicted at the batches `at`. form None: the planner's
    forms as they are; "adam": its Adam form under this sweep's rule p = 0 (lr fixed), lr0 =
    the smallest pilot's. bracket: each clock's logged samples either side of its crossing
    (the envelope's anchor, pilot/envelope.py), else none."""
    runs = PilotRuns(np.array(b_p, float), np.array(lr, float), np.array(n_p, float),
                     np.full(len(b_p), np.inf), np.full(len(b_p), np.inf),
                     np.full(len(b_p), np.nan), ("",) * len(b_p), source=source,
                     updates_R=np.ones(len(b_p)),
                     bracket_R=None if bracket is None else np.array(bracket, float))
    kw = {} if form is None else {"progress_form": form,
                                  "predict_rule": (0.0, float(lr[0]), float(b_p[0]))}
    pl = plan(runs, predict=sorted(at), level=level, **kw)
    return pl, {pr.batch: pr.progress_samples for pr in pl.predictions}


def write_once(out: str) -> None:
    """Refuse an existing predictions file: pre-registered predictions are written once."""
    if os.path.exists(out):
        raise SystemExit(f"{out}: exists; predictions are written once (pick a new path)")


def earlier_round(path: str, out: str) -> tuple:
    """(an earlier round's predictions, its sweep, the pilots' batches, their lrs) for a later
    round's predict into `out`; refuses an existing `out` and a file whose design (pilots,
    held-out and several-update runs) is not the sweep's."""
    write_once(out)
    with open(path, encoding="utf-8") as f:
        pre = json.load(f)
    sw = read_sweep(pre["sweep"])
    if list(design(sw)) != [pre["pilots"], pre["held_out"], pre["off_design"]]:
        raise SystemExit(f"{path}: its design is not the sweep's")
    runs = sw["runs"]
    return (pre, sw, [float(runs[r]["batch"]) for r in pre["pilots"]],
            [float(runs[r]["lr"]) for r in pre["pilots"]])


def _targets(sw: dict) -> list[str]:
    return sorted({t for _, t in sw["steps"]}, key=float)


def predict(sweep: str, out: str) -> dict:
    write_once(out)
    sw = read_sweep(sweep)
    meta, runs = sw["meta"], sw["runs"]
    pilots, held, multi = design(sw)
    every = meta["eval_every_steps"]
    lr = [float(runs[r]["lr"]) for r in pilots]
    b_p = [float(runs[r]["batch"]) for r in pilots]
    p = math.log(lr[-1] / lr[0]) / math.log(b_p[-1] / b_p[0])  # the pilots' rule lr ~ B^p
    targets, skipped = [], {}
    for t in _targets(sw):
        s = [sw["steps"][(r, t)] for r in pilots]
        if any(v is None for v in s):
            skipped[t] = ("not reached by pilot " + ", ".join(
                r for r, v in zip(pilots, s) if v is None))
            continue
        if any(v <= every for v in s):
            skipped[t] = ("pilot " + ", ".join(r for r, v in zip(pilots, s) if v <= every) +
                          f" passed it at its first evaluation (step {every}): no crossing")
            continue
        n_p = [v * b for v, b in zip(s, b_p)]
        B_out = sorted({float(runs[r]["batch"]) for r in held + multi})
        try:
            pl, by_b = plan_pilots(b_p, lr, n_p, B_out, f"{sweep} pilots at {t}")
        except PilotError as e:
            skipped[t] = f"planner refused: {e}"
            continue
        mc = mccandlish_fit(b_p, n_p)
        rows = []
        for r in held + multi:
            b = float(runs[r]["batch"])
            band = by_b[b]
            rows.append({"run": r, "batch": b, "x_largest_pilot": b / b_p[-1],
                         "updates_per_batch": int(runs[r]["updates_per_batch"]),
                         "off_design": r in multi,
                         "planner": {"median": band["median"], "band": band["ci"]},
                         "mccandlish": mccandlish_predict(mc, b),
                         "obvious_rule": obvious_rule(b_p[-1], n_p[-1], b, p)})
        targets.append({"target": t, "pilot_samples": dict(zip(pilots, n_p)),
                        "planner_fit": {"form": pl.fit.progress.form,
                                        "critical_batch": pl.critical_batch.batch,
                                        "critical_batch_ci": pl.critical_batch.ci},
                        "mccandlish_fit": mc, "predictions": rows})
    doc = {"sweep": sweep, "metric": meta["metric"], "clock": meta["clock"],
           "pilots": pilots, "held_out": held, "off_design": multi, "lr_exponent_p": p,
           "level": LEVEL, "planner": "twoclock.pilot.plan.plan on the pilots' clocks "
           "(runs-CSV planner, forms as they are)",
           "baselines": {"mccandlish": "N = N_min (1 + B / B_noise) refitted on the pilots, "
                                       "least squares in log N",
                         "obvious_rule": "largest pilot's clock x (B / B_pilot)^(1 - p)"},
           "skipped_targets": skipped, "targets": targets}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


def _width(band: list, median: float) -> float:
    """The band's half-width as a factor: max(hi / median, median / lo) (pilot.bands.width)."""
    return bands.width({"median": median, "ci": band})


def _contrast(a: list, b: list) -> dict:
    """Mean of the paired difference |log err a| - |log err b| with a Student-t 95% CI (the
    predictions share runs, so the CI is optimistic); 'not established' where it spans 0."""
    d = np.abs(np.log(a)) - np.abs(np.log(b))
    n = d.size
    m, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(n))
    half = t_quantile(0.975, n - 1) * se
    ci = [m - half, m + half]
    return {"mean": m, "ci": ci, "n": n, "reading": "not established" if ci[0] <= 0 <= ci[1]
            else ("planner closer" if ci[1] < 0 else "baseline closer")}


def score(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    sw = read_sweep(pre["sweep"])
    every = sw["meta"]["eval_every_steps"]
    rows = []
    for t in pre["targets"]:
        for pr in t["predictions"]:
            s = sw["steps"][(pr["run"], t["target"])]
            if s is None:
                rows.append({"target": t["target"], "run": pr["run"], "truth": None,
                             "note": "held-out run never reached the target"})
                continue
            truth = s * pr["batch"]
            lo_t = max(s - every, 0) * pr["batch"]
            med, band = pr["planner"]["median"], pr["planner"]["band"]
            row = {"target": t["target"], "run": pr["run"], "batch": pr["batch"],
                   "x_largest_pilot": pr["x_largest_pilot"], "off_design": pr["off_design"],
                   "truth": truth, "truth_interval": [lo_t, truth],
                   "planner_error": med / truth - 1,
                   "planner_in_band": bool(band[0] <= truth <= band[1]),
                   "planner_band_factor": _width(band, med),
                   "planner_in_truth_interval": bool(lo_t < med <= truth),
                   "mccandlish_error": pr["mccandlish"] / truth - 1,
                   "obvious_rule_error": pr["obvious_rule"] / truth - 1}
            rows.append(row)
    ok = [r for r in rows if r["truth"] is not None and not r["off_design"]]
    summary = {}
    for x in sorted({r["x_largest_pilot"] for r in ok}):
        at = [r for r in ok if r["x_largest_pilot"] == x]
        summary[f"{x:g}x"] = {
            "n": len(at),
            **{f"median_abs_{k}_error": float(np.median([abs(r[f"{k}_error"]) for r in at]))
               for k in ("planner", "mccandlish", "obvious_rule")},
            "coverage": sum(r["planner_in_band"] for r in at) / len(at),
            "median_band_factor": float(np.median([r["planner_band_factor"] for r in at]))}
    ratio = lambda k: [1 + r[f"{k}_error"] for r in ok]
    doc = {"sweep": pre["sweep"], "predictions": os.path.basename(pred_path),
           "rows": rows, "summary": summary,
           "contrast_abs_log_error": {
               k: _contrast(ratio("planner"), ratio(k)) for k in ("mccandlish", "obvious_rule")}}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


# ---- Second round: Adam's progress form (twoclock/pilot/adam.py), alone and jointly ----
# Every option below was fixed before any Adam score was computed; `predict_adam` writes
# them, with their reasons, into the predictions file.
ADAM_OPTIONS = {
    "form": "planner's Adam form as it is: plan.plan(progress_form='adam'), N = A sqrt(m (m + "
            "B_n)) / lr, knee sharpness 1 (a sharpness fit needs repeated batches; one run a "
            "batch here), its own profile band and leave-one-end-out form error",
    "rule": "p = 0 (the sweep's lr is fixed at 1e-6 for every run), lr0 = 1e-6 at b0 = the "
            "smallest pilot (b0 cancels under p = 0)",
    "updates": "a run of batch B with K updates per batch is predicted at m = B / K: under a "
               "fixed lr the form's samples N(B, K) equal N(m, 1) exactly, so the planner "
               "(which predicts one update per batch) is asked at batch m; its form-error "
               "widening is then measured by the distance in log m, the form's own coordinate",
    "joint": "twoclock.pilot.levels.joint_plan over the same targets (log B_n linear in the "
             "level), each target's band widened by that target's own Adam plan's form error "
             "(the form extrapolated is Adam's, not the default forms')",
    "design": "pilots, held-out runs and targets copied from the first-round predictions file",
    "baselines": "McCandlish and the obvious rule copied from the first-round file (the same "
                 "numbers); on the several-update runs they stay at B, having no update count",
    "primary": "the per-target Adam form ('adam'); the joint fit ('adam_joint') is secondary",
    "contrasts": "over the 8 one-update held-out predictions: mean of |log(pred/true)| of the "
                 "Adam form minus the other's (negative: Adam closer). CI 1: Student-t over the "
                 "8 differences (7 dof, as in round one; optimistic, the predictions share "
                 "pilots and runs). CI 2: Student-t over the 4 targets' mean differences (3 "
                 "dof: a target's two batches share one fit). 'established' only where both "
                 "CIs exclude 0, else 'not established'",
    "aims": "median |error| at 8x <= 20%; median band factor (max(hi/med, med/lo)) <= 2",
}
ADAM_KEYS = ("adam", "adam_joint", "first_round_planner")  # the banded predictors
ALL_KEYS = ADAM_KEYS + ("mccandlish", "obvious_rule")


def predict_adam(first: str, out: str) -> dict:
    """The Adam form's predictions on the first round's design (its predictions file)."""
    pre, sw, b_p, lr = earlier_round(first, out)
    runs = sw["runs"]
    m_of = {r: float(runs[r]["batch"]) / int(runs[r]["updates_per_batch"])
            for r in pre["held_out"] + pre["off_design"]}
    plans, alone, texts = [], [], []
    for t in pre["targets"]:
        n_p = [t["pilot_samples"][r] for r in pre["pilots"]]
        pl, by_m = plan_pilots(b_p, lr, n_p, set(m_of.values()), f"pilots at {t['target']}",
                               "adam")
        plans.append(pl.to_json())
        alone.append(by_m)
        texts.append(f"gsm8k>={t['target']}")
    joint = levels.joint_plan(texts, plans, predict=sorted(set(m_of.values())), level=LEVEL)
    targets = []
    for t, pj, by_m, row in zip(pre["targets"], plans, alone, joint["targets"]):
        jm = {p["batch"]: p["progress_samples"] for p in row["predictions"]}
        preds = []
        for p in t["predictions"]:
            m = m_of[p["run"]]
            preds.append({**{k: p[k] for k in ("run", "batch", "x_largest_pilot",
                                               "updates_per_batch", "off_design")},
                          "per_update_batch": m,
                          "adam": {"median": by_m[m]["median"], "band": by_m[m]["ci"]},
                          "adam_joint": {"median": jm[m]["median"], "band": jm[m]["ci"]},
                          "first_round_planner": p["planner"],
                          "mccandlish": p["mccandlish"], "obvious_rule": p["obvious_rule"]})
        targets.append({"target": t["target"], "pilot_samples": t["pilot_samples"],
                        "adam_fit": {"why": pj["fit"]["progress"]["why"],
                                     "critical_batch": pj["critical_batch"],
                                     "form_error_curvature":
                                         pj["fit"]["progress_form_error"]["curvature"]},
                        "joint_noise_scale": row["noise_scale"], "predictions": preds})
    doc = {"sweep": pre["sweep"], "first_round": os.path.basename(first),
           "pilots": pre["pilots"], "held_out": pre["held_out"],
           "off_design": pre["off_design"], "level": LEVEL, "options": ADAM_OPTIONS,
           "joint": joint["joint"], "skipped_targets": pre["skipped_targets"],
           "targets": targets}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


def paired_cis(a: list, b: list, groups: list) -> dict:
    """|log a| - |log b| (a, b: predicted / true): Student-t 95% CIs over the pairs and over
    the groups' mean differences; 'not established' unless both exclude 0."""
    d = np.abs(np.log(a)) - np.abs(np.log(b))
    g = np.array([d[[i for i, x in enumerate(groups) if x == k]].mean()
                  for k in dict.fromkeys(groups)])
    out = {"mean": float(d.mean()), "n": int(d.size), "groups": int(g.size)}
    for name, v in (("ci_pairs", d), ("ci_groups", g)):
        half = t_quantile(0.975, v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
        out[name] = [float(v.mean()) - half, float(v.mean()) + half]
    out["reading"] = ("Adam closer" if max(out["ci_pairs"][1], out["ci_groups"][1]) < 0 else
                      "the other closer" if min(out["ci_pairs"][0], out["ci_groups"][0]) > 0
                      else "not established")
    return out


def score_banded(pre: dict, sw: dict, keys: tuple, banded: tuple, fields: tuple) -> tuple:
    """(rows, those in design with a truth, summary per horizon): each held-out run's truth
    (steps x batch), every predictor's error, each banded one's coverage and width factor."""
    rows = []
    for t in pre["targets"]:
        for p in t["predictions"]:
            s = sw["steps"][(p["run"], t["target"])]
            row = {k: p[k] for k in fields}
            row["target"], row["truth"] = t["target"], None if s is None else s * p["batch"]
            if s is not None:
                for k in keys:
                    med = p[k]["median"] if k in banded else p[k]
                    row[f"{k}_error"] = med / row["truth"] - 1
                for k in banded:
                    lo, hi = p[k]["band"]
                    row[f"{k}_in_band"] = bool((lo or 0) <= row["truth"] <= (hi or math.inf))
                    row[f"{k}_band_factor"] = _width(p[k]["band"], p[k]["median"])
            rows.append(row)
    ok = [r for r in rows if r["truth"] is not None and not r["off_design"]]
    summary = {}
    for x in sorted({r["x_largest_pilot"] for r in ok}):
        at = [r for r in ok if r["x_largest_pilot"] == x]
        summary[f"{x:g}x"] = {"n": len(at), **{
            f"median_abs_{k}_error": float(np.median([abs(r[f"{k}_error"]) for r in at]))
            for k in keys}, **{
            f"{k}_coverage": sum(r[f"{k}_in_band"] for r in at) / len(at) for k in banded},
            **{f"{k}_median_band_factor": float(np.median([r[f"{k}_band_factor"] for r in at]))
               for k in banded}}
    return rows, ok, summary


def score_adam(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows, ok, summary = score_banded(pre, read_sweep(pre["sweep"]), ALL_KEYS, ADAM_KEYS, (
        "run", "batch", "updates_per_batch", "per_update_batch", "x_largest_pilot", "off_design"))
    ratio, groups = lambda k: [1 + r[f"{k}_error"] for r in ok], [r["target"] for r in ok]
    contrasts = {f"{a}_vs_{b}": paired_cis(ratio(a), ratio(b), groups)
                 for a in ("adam", "adam_joint")
                 for b in ("first_round_planner", "mccandlish", "obvious_rule")}
    contrasts["adam_joint_vs_adam"] = paired_cis(ratio("adam_joint"), ratio("adam"), groups)
    aims = {k: {"median_abs_error_8x_le_20pct": summary["8x"][f"median_abs_{k}_error"] <= 0.2,
                "median_band_factor_le_2": all(v[f"{k}_median_band_factor"] <= 2
                                               for v in summary.values())}
            for k in ("adam", "adam_joint")}
    doc = {"sweep": pre["sweep"], "predictions": os.path.basename(pred_path), "rows": rows,
           "summary": summary, "contrast_abs_log_error": contrasts, "aims": aims}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


COMMANDS = {"predict": predict, "score": score, "predict-adam": predict_adam,
            "score-adam": score_adam}


def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] not in COMMANDS:
        raise SystemExit(__doc__.split("\n\n")[1])
    COMMANDS[argv[0]](argv[1], argv[2])
    print(f"wrote {argv[2]}")


if __name__ == "__main__":
    main(sys.argv[1:])
