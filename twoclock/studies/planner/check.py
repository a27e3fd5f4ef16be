"""Known-answer check of the planner: pilot runs simulated by twoclock itself at a few small
batches, planned, and compared with the simulated clocks at held-out larger batches."""
import csv
import math

import numpy as np

from twoclock.analysis import clocks
from twoclock.atomic import check_file
from twoclock.config import OptimConfig, require
from twoclock.pilot import plan as pilot, report
from twoclock.studies.planner import logs_check


def sweep(model, model_cfg, opt: OptimConfig, batches, lr0: float, seeds: int,
          budget: int, seed: int = 0, keep=None, quiet: bool = True):
    """One short run_sweep over every batch (pilots and held-out), all seeds (quiet: without
    the sweep's estimate line and progress bar)."""
    cfg = logs_check.sweep_config(batches, lr0, seeds, budget, 8, seed)
    from twoclock.engine.sweep import run_sweep  # noqa: PLC0415 (JAX: only when simulating)
    return run_sweep(model, model_cfg, opt, cfg, quiet=quiet, keep=keep)


def pilot_runs(res, opt: OptimConfig, pilot_batches, n_seeds: int, budget: int) -> pilot.PilotRuns:
    """One row per (pilot batch, seed) for the first n_seeds seeds; runs that never reached the
    target are left out (a real pilot would be rerun longer), failures censored at budget."""
    rows = []
    for b in pilot_batches:
        i = list(res.batches).index(b)
        for s in range(n_seeds):
            p, f = float(res.prog_n[i, 0, s]), float(res.fail_n[i, 0, s])
            if p > 0:
                rows.append((b, float(res.lrs_BxL[i, 0]), p, f if f > 0 else math.inf, s))
    require(len({r[0] for r in rows}) >= 3, "pilot runs", ">= 3 batches that reached the target",
            len(rows))
    B, lr, pr, fa, sd = (np.array(c) for c in zip(*rows))
    return pilot.PilotRuns(B.astype(float), lr.astype(float), pr.astype(float),
                           fa.astype(float), np.full(len(rows), float(budget)),
                           np.full(len(rows), math.nan), tuple(str(s) for s in sd),
                           source=f"simulated pilots, lr0 {opt.lr_rule} rule")


def write_csv(runs: pilot.PilotRuns, path: str) -> None:
    """The pilot runs as a plan.py CSV (failure empty when the run did not fail)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["batch", "lr", "progress_samples", "failure_samples", "budget", "seed"])
        for b, l, p, fa, bu, s in zip(runs.batch_R, runs.lr_R, runs.prog_R, runs.fail_R,
                                      runs.budget_R, runs.seed_R):
            w.writerow([f"{b:g}", f"{l:.6g}", f"{p:g}", "" if math.isinf(fa) else f"{fa:g}",
                        "" if math.isinf(bu) else f"{bu:g}", s])


def heldout(res, plan: pilot.Plan, heldout_batches) -> list:
    """Per held-out batch: the simulated median over all seeds (the answer), the plan's
    prediction with its band, relative error and whether the band covers the answer."""
    preds = {p.batch: p for p in plan.predictions}
    out = []
    for b in heldout_batches:
        i = list(res.batches).index(b)
        row = {"batch": b}
        for key, arr in (("progress_samples", res.prog_n), ("failure_samples", res.fail_n)):
            true = clocks.summarize(arr[i, 0])["median"]
            pr = getattr(preds[float(b)], key)
            err = None if (true is None or pr["median"] is None) else pr["median"] / true - 1
            cover = None if err is None else bool(
                (pr["ci"][0] or 0) <= true <= (pr["ci"][1] or math.inf))
            row[key] = {"simulated": true, "predicted": pr["median"], "ci": pr["ci"],
                        "rel_error": err, "covered": cover}
        out.append(row)
    return out


def check(model, model_cfg, opt: OptimConfig, lr0: float, pilot_batches, heldout_batches,
          pilot_seeds: int = 4, seeds: int = 16, budget: int = 200_000, csv_path=None,
          keep=None, quiet: bool = True) -> dict:
    """Simulate, plan from the pilots, score the held-out predictions (csv_path checked
    first: refused before simulating where it cannot be written)."""
    if csv_path is not None:
        check_file(csv_path, "--csv")
    res = sweep(model, model_cfg, opt, sorted(set(pilot_batches) | set(heldout_batches)), lr0,
                seeds, budget, keep=keep, quiet=quiet)
    runs = pilot_runs(res, opt, pilot_batches, pilot_seeds, budget)
    if csv_path is not None:
        write_csv(runs, csv_path)
    plan = pilot.plan(runs, predict=list(heldout_batches))
    return {"model": model.name, "lr0": lr0, "pilot_batches": list(pilot_batches),
            "pilot_seeds": pilot_seeds, "seeds": seeds, "budget": budget,
            "critical_batch": plan.critical_batch.to_json(),
            "progress_form": plan.fit.progress.to_json(),
            "failure_exponent": plan.failure_exponent.to_json(),
            "heldout": heldout(res, plan, heldout_batches),
            "simulation_seconds": res.seconds}





def table(out: dict) -> str:
    """The held-out errors as text."""
    cb = out["critical_batch"]
    lines = [f"{out['model']}: pilots at B = {', '.join(map(str, out['pilot_batches']))} "
             f"({out['pilot_seeds']} seeds each), lr0 = {out['lr0']:g}; answers: medians of "
             f"{out['seeds']} seeds",
             f"progress form: {out['progress_form']['form']}; critical batch "
             f"{cb['batch'] if cb['batch'] is None else round(cb['batch'], 1)} "
             f"[{', '.join('-' if v is None else f'{v:.1f}' for v in cb['ci'])}]",
             f"failure exponent: {out['failure_exponent']['value']}",
             f"{'batch':>6} {'clock':>9} {'simulated':>10} {'predicted':>10} {'95% band':>20} "
             f"{'error':>7} covered"]
    for r in out["heldout"]:
        for key, name in (("progress_samples", "progress"), ("failure_samples", "failure")):
            lines.append(report.scored(f"{r['batch']:>6} {name:>9}", r[key], 10, "simulated"))
    return "\n".join(lines)


__all__ = ["sweep", "pilot_runs", "write_csv", "heldout", "check", "table"]
