"""The planner's bands calibrated on this project's models (`plan_calibration.py`).

Per model with a plan-check entry: simulate 16 seeds at four pilot batches (its three plan-check
pilots and half the smallest) and 64 at 4x and 8x the largest, write the curves as log files,
and plan from six pilot designs: 3 or 4 pilot batches, with seeds 0-7, 8-11 or 12-15 (8 seeds,
and two disjoint sets of 4). Every clock the model logs is scored at both held-out batches
against the median of the 64 held-out seeds' own logged clocks, at the levels 50%, 80% and 95%
(a random walk's clock needs them: 16 seeds' medians of the policy model's null drift at B 1024
range over 2.4x).

The simulated logs are kept beside the result, each written atomically, then a manifest
(written last) with the fingerprint of what made them (the configurations and the
simulation's source: twoclock/models, twoclock/engine and the core modules) and every log
file's sha256 and size; a later run with the same fingerprint whose files all match reads them
instead of simulating again. Any other fingerprint simulates anew, and a file missing, edited,
truncated or rewritten by another (interrupted) run is named in one line and simulated anew.
"""
import csv
import hashlib
import json
import math
import os
import sys
import time

import numpy as np

from twoclock.atomic import Refused, check_folder, verify_manifest, write_manifest
from twoclock.pilot import bands, clocks as pc, logs as pl, reader, report
from twoclock.pilot.plan import PilotError
from twoclock.studies.planner import logs_check

LEVELS = (0.5, 0.8, 0.95)
SEEDS = 16  # at the pilot batches
HELDOUT_SEEDS = logs_check.HELDOUT_SEEDS  # at the held-out batches: the answers
SEED_SETS = (("8 seeds", range(0, 8)), ("4 seeds (a)", range(8, 12)),
             ("4 seeds (b)", range(12, 16)))
MANIFEST = ".fingerprint.json"  # the fingerprint and the log files' checksums
CORE = ("config.py", "model.py", "trace.py", "objectives.py", "scaling.py", "atomic.py")


def _pilots(model):
    """The model's plan-check entry (`twoclock.studies.plan_check.PILOTS`)."""
    from twoclock.studies.plan_check import entry  # noqa: PLC0415 (the studies import this)
    return entry(model)


def batches(model) -> tuple:
    """(three pilots, four pilots, held-out batches) of a model's plan-check entry."""
    p3 = tuple(sorted(_pilots(model).pilots)[:3])
    p4 = (max(1, p3[0] // 2),) + p3
    return p3, p4, (4 * p3[-1], 8 * p3[-1])


def simulation_fingerprint(model, cfg, opt, n_ckpt: int) -> str:
    """sha256 of what the simulated logs depend on: configurations, batches, seeds, and the
    source of the simulation (models, engine, core modules)."""
    from twoclock.analysis import results  # noqa: PLC0415
    from twoclock.engine.store import PACKAGE_DIR, source_fingerprint  # noqa: PLC0415
    s = _pilots(model)
    _, p4, held = batches(model)
    h = hashlib.sha256(json.dumps(results.config_dict(
        model_name=model.name, model=cfg, optimizer=opt, lr0=s.lr0, budget=s.budget,
        batches=sorted(set(p4) | set(held)), seeds=SEEDS, heldout_seeds=HELDOUT_SEEDS,
        n_ckpt=n_ckpt), sort_keys=True,
        default=str).encode())
    for part in ("models", "engine"):
        h.update(source_fingerprint(os.path.join(PACKAGE_DIR, part)).encode())
    for name in CORE:
        with open(os.path.join(PACKAGE_DIR, name), "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _files(model, folder: str) -> tuple:
    """(the log files {pilots, heldout}, the manifest) of a model's simulated logs."""
    base = os.path.join(folder, f"plan_calibration_{model.name}")
    return {"pilots": base + "_pilots.csv", "heldout": base + "_heldout.csv"}, \
        base + MANIFEST


def cached_logs(model, cfg, opt, folder: str, n_ckpt: int = 512, quiet: bool = False) -> dict:
    """{kept, seconds, fingerprint}: which of a model's simulated log files (none, "pilots",
    or "pilots" and "heldout") can be read back, the seconds their simulation took, and the
    fingerprint of what would make them now (simulation_fingerprint). A file is read
    back only where the manifest has this fingerprint and the file's checksum and size
    (`twoclock.atomic.verify_manifest`); one missing, edited, truncated or rewritten by
    another run is named in one line (stderr), and simulated anew."""
    paths, stamp = _files(model, folder)
    fp = simulation_fingerprint(model, cfg, opt, n_ckpt)
    man, why = verify_manifest(stamp, fp, [paths["pilots"]])
    if man is None:
        if why:
            print(f"{model.name}: simulated logs not read back: {why}; simulating anew",
                  file=sys.stderr, flush=True)
        return {"kept": (), "seconds": None, "fingerprint": fp}
    held, why = verify_manifest(stamp, fp, [paths["heldout"]])
    if held is None:  # damaged: one line; never made (a run stopped after its pilots): quiet
        if os.path.basename(paths["heldout"]) in man["files"]:
            print(f"{model.name}: held-out logs not read back: {why}; simulating them anew",
                  file=sys.stderr, flush=True)
        elif not quiet:
            print(f"{model.name}: pilots' logs read back from {paths['pilots']} (same "
                  "fingerprint, checksum verified)")
        return {"kept": ("pilots",), "seconds": man.get("seconds"), "fingerprint": fp}
    if not quiet:
        print(f"{model.name}: simulated logs read back from {stamp[:-len(MANIFEST)]}_*.csv "
              "(same fingerprint, checksums verified)")
    return {"kept": ("pilots", "heldout"), "seconds": man.get("seconds"), "fingerprint": fp}


def simulated_logs(model, cfg, opt, folder: str, n_ckpt: int = 512, keep=None,
                   quiet: bool = False, found: dict | None = None) -> dict:
    """{pilots, heldout, seconds, reused, metrics}: the model's simulated log files in
    folder, read back where `cached_logs` (or found, its answer) allows, else made now:
    each written atomically, then the manifest (the fingerprint, the checksums of the files
    made so far), the pilots' before the held-out runs are simulated. The pilots are checked
    before the held-out runs are simulated: a run that meets a condition at its first logged
    point is refused (`logs_check.crossings_seen`: PilotError)."""
    found = found or cached_logs(model, cfg, opt, folder, n_ckpt, quiet)
    paths, stamp = _files(model, folder)
    conds, metrics = logs_check.conditions(model, cfg)[2:]
    if len(found["kept"]) == 2:
        return {**paths, "seconds": found["seconds"], "reused": True, "metrics": metrics}
    fp = found["fingerprint"]  # cached_logs' (the source tree hashed once)
    secs = (found["seconds"] or 0.0) if found["kept"] else 0.0
    for key, grid in zip(("pilots", "heldout"), grids(model, n_ckpt)):
        if key not in found["kept"]:
            t0 = time.perf_counter()
            res = logs_check.simulate(model, cfg, opt, *grid, keep=keep, quiet=quiet)
            logs_check.write_logs(res, grid[0], range(grid[2]), metrics, paths[key])
            secs += time.perf_counter() - t0
            done = [paths["pilots"]] if key == "pilots" else list(paths.values())
            write_manifest(stamp, fp, done, seconds=secs)  # last: what it lists is whole
        if key == "pilots":
            logs_check.crossings_seen(paths[key], metrics, conds)
    return {**paths, "seconds": secs, "reused": False, "metrics": metrics}


def grids(model, n_ckpt: int) -> list:
    """The two grids (batches, lr0, seeds, budget, n_ckpt) a model's calibration simulates."""
    s = _pilots(model)
    _, p4, held = batches(model)
    return [(p4, s.lr0, SEEDS, int(s.budget), n_ckpt),
            (held, s.lr0, HELDOUT_SEEDS, int(s.budget), n_ckpt)]


def _subset(path: str, out: str, keep_batches, seeds) -> None:
    """The rows of the runs at keep_batches with seeds in `seeds` (run names B{b}-s{s})."""
    want = {f"B{b}-s{s}" for b in keep_batches for s in seeds}
    with open(path, newline="") as f, open(out, "w", newline="") as g:
        r, w = csv.reader(f), csv.writer(g)
        w.writerow(next(r))
        for row in r:
            if row[0] in want:
                w.writerow(row)


def score_model(model, cfg, logs: dict, folder: str) -> list:
    """Every (design, held-out batch, clock) of a model: measured, and per level the
    prediction, band, error, coverage and half-width share."""
    p3, p4, held = batches(model)
    progress, failures, conds, _ = logs_check.conditions(model, cfg)
    hlogs = reader.read_logs(logs["heldout"], tuple(logs["metrics"]))
    truth = {}
    for c in conds:
        found = pc.clocks(hlogs, c)
        for b in held:
            at = [k for k, r in enumerate(hlogs.runs) if r.batch == b]
            m = float(np.median([found[k].samples if found[k].crossed else math.inf
                                 for k in at]))
            truth[(c.text, b)] = m if math.isfinite(m) else None
    rows = []
    for nb, bs in (("3 batches", p3), ("4 batches", p4)):
        for sname, seeds in SEED_SETS:
            path = os.path.join(folder, f"plan_calibration_{model.name}_design.csv")
            _subset(logs["pilots"], path, bs, seeds)
            plans = {lvl: pl.plan_logs(path, progress, list(failures), predict=list(held),
                                       level=lvl) for lvl in LEVELS}
            os.remove(path)
            first = plans[LEVELS[-1]]
            forms = {f["condition"]: (f["form"] or {}).get("chosen") for f in first["failures"]}
            for b in held:
                for c in conds:
                    row = {"model": model.name, "design": f"{nb}, {sname}",
                           "pilots": list(bs), "batch": b,
                           "times_largest_pilot": b // bs[-1], "clock": c.text,
                           "kind": "progress" if c is conds[0] else "failure",
                           "form": (first["fit"]["progress"]["form"] if c is conds[0]
                                    else forms.get(c.text)),
                           "measured": truth[(c.text, b)], "levels": {}}
                    for lvl, plan in plans.items():
                        row["levels"][str(lvl)] = bands.score(
                            _prediction(plan, c, conds, b), truth[(c.text, b)], "half_width",
                            bands.half_share)
                    rows.append(row)
    return rows


def _prediction(plan, c, conds, b) -> dict:
    if c is conds[0]:
        return next(p for p in plan["predictions"] if p["batch"] == b)["progress_samples"]
    f = next(f for f in plan["failures"] if f["condition"] == c.text)
    return next(p for p in f["predictions"] if p["batch"] == b)["failure_samples"]


def coverage(rows) -> list:
    """Per (model, clock kind) and in all: scored predictions, coverage at each level, and
    the median half-width share at 95%."""
    models = list(dict.fromkeys(r["model"] for r in rows)) + ["all"]
    groups = {(m, k): [] for m in models for k in ("progress", "failure", "all")}
    for r in rows:
        for key in ((r["model"], r["kind"]), (r["model"], "all"), ("all", r["kind"]),
                    ("all", "all")):
            groups[key].append(r)
    out = []
    for (model, kind), rs in groups.items():
        scored = [r for r in rs if r["levels"][str(LEVELS[-1])]["covered"] is not None]
        hw = [r["levels"][str(LEVELS[-1])]["half_width"] for r in scored]
        hw = [h for h in hw if h is not None]
        within = [abs(r["levels"][str(LEVELS[-1])]["rel_error"]) <= report.GOAL
                  for r in scored]
        out.append({"model": model, "kind": kind, "scored": len(scored),
                    "coverage": {str(lvl): (sum(r["levels"][str(lvl)]["covered"]
                                                for r in scored) / len(scored)
                                            if scored else None) for lvl in LEVELS},
                    "median_half_width": float(np.median(hw)) if hw else None,
                    "within_15pct": sum(within) / len(within) if within else None})
    return out


def calibrate(panels, opt, folder: str, n_ckpt: int = 512, keep=None, quiet: bool = False):
    """The calibration over panels (model, model config): rows and coverage."""
    rows, sims = [], {}
    # before any simulation: the folder, and every grid that is not read back
    check_folder(folder, "--out (the simulated logs)")
    found = [cached_logs(m, cfg, opt, folder, n_ckpt, quiet) for m, cfg in panels]
    for (m, cfg), f in zip(panels, found):
        logs_check.check_fits(m, cfg, opt, [g for k, g in zip(("pilots", "heldout"),
                                                               grids(m, n_ckpt))
                                            if k not in f["kept"]])
    for (m, cfg), f in zip(panels, found):
        try:
            logs = simulated_logs(m, cfg, opt, folder, n_ckpt, keep, quiet, f)
            sims[m.name] = {"seconds": logs["seconds"], "reused": logs["reused"],
                            "pilots": list(batches(m)[1]), "heldout": list(batches(m)[2]),
                            "log_files": [logs["pilots"], logs["heldout"]]}
            rows += score_model(m, cfg, logs, folder)
        except PilotError as e:  # settings the planner cannot time (one line, not a trace)
            raise Refused(f"{m.name}: {e}") from None
    return {"calibration": True, "levels": list(LEVELS), "seeds": SEEDS,
            "heldout_seeds": HELDOUT_SEEDS, "n_ckpt": n_ckpt,
            "simulations": sims, "rows": rows, "coverage": coverage(rows)}


def table(out: dict) -> str:
    """The coverage table, then every scored prediction at 95%."""
    lv = [str(v) for v in out["levels"]]
    lines = ["planner calibration: pilots from simulated logs, answers the medians of "
             f"{out.get('heldout_seeds', out['seeds'])} held-out seeds' logged clocks at 4x and "
             "8x the largest pilot",
             f"{'model':<10} {'clocks':<9} {'scored':>6} " + " ".join(
                 f"{'cov ' + str(round(100 * float(v))) + '%':>8}" for v in lv)
             + f" {'median half-width':>18} {'within 15%':>10}"]
    for c in out["coverage"]:
        cov = " ".join(f"{'-' if c['coverage'][v] is None else format(c['coverage'][v], '.2f'):>8}"
                       for v in lv)
        hw = "-" if c["median_half_width"] is None else f"{100 * c['median_half_width']:.1f}%"
        w = "-" if c["within_15pct"] is None else f"{c['within_15pct']:.2f}"
        lines.append(f"{c['model']:<10} {c['kind']:<9} {c['scored']:>6} {cov} {hw:>18} {w:>10}")
    lines.append(f"{'model':<10} {'design':<24} {'B':>5} {'clock':<26} {'form':<10} "
                 f"{'measured':>9} {'predicted':>9} {'95% band':>20} {'error':>7} in")
    for r in out["rows"]:
        d = r["levels"][lv[-1]]
        head = (f"{r['model']:<10} {r['design']:<24} {r['batch']:>5} {r['clock']:<26} "
                f"{str(r['form']):<10}")
        if d["rel_error"] is None:
            lines.append(f"{head} censored or not fitted")
            continue
        band = "[" + ", ".join("-" if v is None else f"{v:.0f}" for v in d["ci"]) + "]"
        lines.append(f"{head} {r['measured']:>9.0f} {d['predicted']:>9.0f} {band:>20} "
                     f"{100 * d['rel_error']:>+6.1f}% {'yes' if d['covered'] else 'no'}")
    return "\n".join(lines)


__all__ = ["LEVELS", "SEED_SETS", "batches", "simulation_fingerprint", "cached_logs",
           "simulated_logs", "grids",
           "score_model", "coverage", "calibrate", "table"]
