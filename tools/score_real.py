"""Score the planner on public batch sweeps (twoclock/data/real/), pre-registered: no JAX.

    python tools/score_real.py predict SWEEP OUT.json   # pilots only; refuses an existing OUT
    python tools/score_real.py score PREDICTIONS.json OUT.json

`predict` reads only the pilots' rows of a sweep (the three smallest batches with one update per
rollout batch), and writes, for every target they all reach after their first evaluation, the
planner's prediction with its 95% band (twoclock.pilot.plan on the pilots' clocks, forms as they
are) at every held-out batch, beside two baselines refitted on the same pilots:
- McCandlish: N = N_min (1 + B / B_noise) in samples, least squares in log N;
- the obvious rule: the largest pilot's clock scaled by (B / B_pilot)^(1 - p), lr ~ B^p.
Commit its file before running `score`. `score` reads the held-out truths and writes each
prediction's error, whether the band covers the truth, and the band's width. Method and
numbers: docs/real_runs.md.
"""
import csv
import json
import math
import os
import sys

import numpy as np

from twoclock.pilot.fit import t_quantile
from twoclock.pilot.plan import PilotError, PilotRuns, plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "twoclock", "data", "real")
N_PILOTS = 3
LEVEL = 0.95
GRID = 4001  # B_noise grid of the McCandlish fit, log-spaced over B_min e^-4 .. B_max e^8


def _rows(path: str) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def read_sweep(sweep: str) -> dict:
    """A sweep's runs and its steps to each target (steps None: not reached)."""
    folder = os.path.join(DATA, sweep)
    if not os.path.isdir(folder):
        raise SystemExit(f"sweep: no folder {sweep!r} under twoclock/data/real "
                         f"(have: {', '.join(sorted(os.listdir(DATA)))})")
    runs = {r["run"]: r for r in _rows(os.path.join(folder, "runs.csv"))}
    steps = {}
    for r in _rows(os.path.join(folder, "steps_to_target.csv")):
        steps[(r["run"], r["target"])] = int(r["steps"]) if r["steps"].strip() else None
    with open(os.path.join(folder, "design.json"), encoding="utf-8") as f:
        meta = json.load(f)
    return {"runs": runs, "steps": steps, "meta": meta}


def design(sw: dict) -> tuple[list[str], list[str], list[str]]:
    """Pilots (the N_PILOTS smallest one-update batches), held-out one-update runs, and the
    runs with several updates per batch (off-design: the planner has no update count)."""
    one = sorted((r for r in sw["runs"].values() if int(r["updates_per_batch"]) == 1),
                 key=lambda r: float(r["batch"]))
    pilots = [r["run"] for r in one[:N_PILOTS]]
    held = [r["run"] for r in one[N_PILOTS:]]
    multi = sorted((r["run"] for r in sw["runs"].values() if int(r["updates_per_batch"]) > 1),
                   key=lambda n: float(sw["runs"][n]["batch"]))
    return pilots, held, multi


def mccandlish_fit(B, N) -> dict:
    """N = N_min (1 + B / B_noise), least squares in log N: N_min in closed form for each B_noise
    on a log grid; the best B_noise (an end of the grid: no knee within reach)."""
    B, N = np.asarray(B, float), np.asarray(N, float)
    grid = np.geomspace(B.min() * math.exp(-4), B.max() * math.exp(8), GRID)
    shape = np.log1p(B[None, :] / grid[:, None])                     # (grid, runs)
    log_nmin = np.mean(np.log(N)[None, :] - shape, axis=1)
    sse = np.sum((np.log(N)[None, :] - shape - log_nmin[:, None]) ** 2, axis=1)
    i = int(np.argmin(sse))
    return {"n_min": float(math.exp(log_nmin[i])), "b_noise": float(grid[i]),
            "sse_log": float(sse[i]), "at_grid_edge": i in (0, GRID - 1)}


def mccandlish_predict(fit: dict, b: float) -> float:
    return fit["n_min"] * (1 + b / fit["b_noise"])


def obvious_rule(b_pilot: float, n_pilot: float, b: float, p: float) -> float:
    """The seen clock scaled by the rule: samples ~ B^(1 - p) when steps do not change."""
    return n_pilot * (b / b_pilot) ** (1 - p)


def _targets(sw: dict) -> list[str]:
    return sorted({t for _, t in sw["steps"]}, key=float)


def predict(sweep: str, out: str) -> dict:
    if os.path.exists(out):
        raise SystemExit(f"{out}: exists; predictions are written once (pick a new path)")
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
        pilot_runs = PilotRuns(np.array(b_p), np.array(lr), np.array(n_p, float),
                               np.full(len(b_p), np.inf), np.full(len(b_p), np.inf),
                               np.full(len(b_p), np.nan), ("",) * len(b_p),
                               source=f"{sweep} pilots at {t}")
        try:
            pl = plan(pilot_runs, predict=B_out, level=LEVEL)
        except PilotError as e:
            skipped[t] = f"planner refused: {e}"
            continue
        mc = mccandlish_fit(b_p, n_p)
        by_b = {pr.batch: pr.progress_samples for pr in pl.predictions}
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
    """The band's half-width as a factor: max(hi / median, median / lo)."""
    return max(band[1] / median, median / band[0])


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


def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] not in ("predict", "score"):
        raise SystemExit(__doc__.split("\n\n")[1])
    (predict if argv[0] == "predict" else score)(argv[1], argv[2])
    print(f"wrote {argv[2]}")


if __name__ == "__main__":
    main(sys.argv[1:])
