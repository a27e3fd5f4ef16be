"""Known-answer check of planning from logs: simulate pilots, write their curves as a log file,
plan from the file alone, and score the predictions at 4x and 8x the largest pilot against
runs simulated there (their clocks read from their own logged curves, as a user would, and
the engine's per-update clocks where the engine has one).
"""
import csv
import math
import time

import numpy as np

from twoclock.analysis.clocks import median_ci
from twoclock.atomic import atomic_write, check_file
from twoclock.pilot import clocks as pc, logs as pl, reader, report
from twoclock.pilot.conditions import parse_condition


def log_conditions(model, cfg) -> tuple:
    """(progress condition, failure conditions) on the metrics a model checkpoints.

    The first two reproduce the engine's clocks: progress_frac at the model's progress target
    (twoclock.model.progress_target) and drift at the config's drift_threshold, unless the
    model's plan-check entry (`twoclock.studies.plan_check.PILOTS`) gives its own
    `log_conditions(cfg)` (the bandit adds KL and
    entropy, the policy model logs held-out accuracy, KL, entropy and the null drift).
    """
    from twoclock.studies.plan_check import entry as plan_entry  # noqa: PLC0415
    entry = plan_entry(model)
    if entry is not None and entry.log_conditions is not None:
        return entry.log_conditions(cfg)
    from twoclock.model import progress_target  # noqa: PLC0415 (twoclock.model imports JAX)
    if not hasattr(cfg, "drift_threshold"):
        raise ValueError(f"--logs: model {model.name!r} has no drift_threshold in its config; "
                         "give it log_conditions in twoclock.studies.plan_check.PILOTS")
    return (f"progress_frac<={progress_target(model, cfg):.9g}",
            (f"drift>={cfg.drift_threshold:g}",))


# runs a chunk: 64 seeds of the policy model at B 1024 in one chunk took 9.7 GiB (estimated;
# 11.9 GB peak), 16 take a quarter, so the default check fits a 16 GiB machine
MAX_LANES = 16
# seeds a pilot batch and a held-out batch run by default (the calibration's held-out seeds too:
# a random walk's clock needs 64, its 16-seed medians range over 2.4x)
PILOT_SEEDS, HELDOUT_SEEDS = 8, 64


def simulate(model, cfg, opt, batches, lr0: float, seeds: int, budget: int, n_ckpt: int,
             seed: int = 0, keep=None, quiet: bool = True):
    """One run_sweep over every batch, all seeds, with n_ckpt checkpoints per run, in chunks
    of at most MAX_LANES runs."""
    from twoclock.engine.sweep import run_sweep  # noqa: PLC0415 (JAX: only when simulating)
    sweep = sweep_config(batches, lr0, seeds, budget, n_ckpt, seed)
    return run_sweep(model, cfg, opt, sweep, quiet=quiet, keep=keep, max_lanes=MAX_LANES)


def conditions(model, cfg) -> tuple:
    """(progress, failures, their parsed Conditions, the metrics they read) of a model's logs
    (`log_conditions`)."""
    progress, failures = log_conditions(model, cfg)
    conds = [parse_condition(progress, "--progress")] + \
        [parse_condition(f, "--failure") for f in failures]
    return progress, failures, conds, list(dict.fromkeys(c.metric for c in conds))


def sweep_config(batches, lr0: float, seeds: int, budget: int, n_ckpt: int, seed: int = 0):
    """The SweepConfig `simulate` runs."""
    from twoclock.config import SweepConfig  # noqa: PLC0415
    return SweepConfig(batches=tuple(int(b) for b in batches), lr0s=(lr0,), seeds=seeds,
                       budget=budget, seed=seed, n_ckpt=n_ckpt)


def write_logs(res, batches, seeds, metrics, path: str, prefix: str = "") -> int:
    """The runs' checkpoints as a log CSV (run, batch, lr, samples, metrics...), written
    atomically; rows written."""
    n = 0

    def write(f):
        nonlocal n
        w = csv.writer(f)
        w.writerow(["run", "batch", "lr", "samples", *metrics])
        for b in batches:
            i = list(res.batches).index(b)
            ck, lr = res.ckpt[i], float(res.lrs_BxL[i, 0])
            for s in seeds:
                for j, smp in enumerate(ck["samples"][0, s]):
                    w.writerow([f"{prefix}B{b}-s{s}", f"{b:g}", f"{lr:.8g}", f"{int(smp)}",
                                *(f"{float(ck[m][0, s, j]):.6g}" for m in metrics)])
                    n += 1
    atomic_write(path, write)
    return n


def check_fits(model, cfg, opt, grids) -> None:
    """Refused, before anything is simulated, unless every grid (batches, lr0, seeds, budget,
    n_ckpt) of `simulate` fits in memory: a second sweep refused after the first has run
    would throw that one away."""
    import jax  # noqa: PLC0415 (JAX: only where simulating)
    from twoclock.engine import sweep  # noqa: PLC0415
    from twoclock.model import shapes_only  # noqa: PLC0415
    program_cfg = cfg if model.knobs is None else model.knobs(cfg)[0]  # as run_sweep sees it
    with shapes_only():
        for g in grids:
            sweep.check_fits(model, program_cfg, opt, sweep_config(*g), MAX_LANES,
                             jax.device_count())


def crossings_seen(path: str, metrics, conds) -> None:
    """PilotError where the planner would refuse the log file's clocks, as it reads them
    (pilot.logs.logs_plan): a run past the progress target (conds[0]) at its first logged
    point is a bound (0, first point], refused only where fewer than three pilot batches then
    give a clock (pilot.logs.check_reached); a run meeting a failure condition at its first
    logged point is refused (no crossing to time). Checked on the pilots before the held-out
    runs are simulated."""
    logs = reader.read_logs(path, tuple(metrics))
    pl.check_reached(logs, pl.bounded(logs, pc.clocks(logs, conds[0], first_ok=True)), conds[0])
    for c in conds[1:]:
        pc.clocks(logs, c, need_one=False)


def _median(x):
    """Median with censored runs (inf) counted as later; None when it is censored."""
    m = float(np.median(np.asarray(x, np.float64)))
    return m if math.isfinite(m) else None


def _score(pred: dict, true):
    if true is None or pred["median"] is None:
        return {"measured": true, "predicted": pred["median"], "ci": pred["ci"],
                "rel_error": None, "covered": None}
    lo, hi = pred["ci"]
    return {"measured": true, "predicted": pred["median"], "ci": pred["ci"],
            "rel_error": pred["median"] / true - 1,
            "covered": bool((lo or 0) <= true <= (hi if hi is not None else math.inf))}


def verdict(row: dict) -> str | None:
    """The accuracy goal judged against the answer's own 95% CI, not its median alone:
    "within" when the prediction is within report.GOAL of every answer in the CI, "outside"
    when of none, "open" otherwise (not established); None when the answer or the prediction
    is censored (no error to judge)."""
    d = row["vs_logged"]
    p, ci = d["predicted"], row.get("measured_ci")
    if d["rel_error"] is None:
        return None
    lo, hi = (0.0, math.inf) if not ci else (ci[0] or 0.0, math.inf if ci[1] is None else ci[1])
    # the answers a with |p / a - 1| <= GOAL
    w_lo, w_hi = p / (1 + report.GOAL), p / (1 - report.GOAL)
    if w_lo <= lo and hi <= w_hi:
        return "within"
    return "outside" if hi < w_lo or lo > w_hi else "open"


def goal(rows) -> dict:
    """{"within" | "outside" | "open": [{batch, clock, rel_error, answer_ci_rel}]}: each scored
    prediction under its verdict (answer_ci_rel: the answer's CI relative to it)."""
    out = {"within": [], "outside": [], "open": []}
    for r in rows:
        v = verdict(r)
        if v is not None:
            d = r["vs_logged"]
            out[v].append({"batch": r["batch"], "clock": r["clock"], "rel_error": d["rel_error"],
                           "answer_ci_rel": [None if c is None else c / d["measured"] - 1
                                             for c in (r.get("measured_ci") or (None, None))]})
    return out


def check(model, cfg, opt, pilot_seeds: int = PILOT_SEEDS, heldout_seeds: int = HELDOUT_SEEDS,
          n_ckpt: int = 512, logs_path: str = "pilot_logs.csv", heldout_path: str | None = None,
          pilots=None, keep=None, quiet: bool = True) -> dict:
    """Simulate pilots (`pilots`, by default the 3 smallest of the model's plan_check pilot
    batches; at its lr0 and budget) and held-out runs at 4x and 8x the largest, plan from the
    pilot log file alone, and score every clock at the held-out batches."""
    from twoclock.config import require, require_int  # noqa: PLC0415
    require_int("--pilot-seeds", pilot_seeds, 1)
    require_int("--seeds", heldout_seeds, 1)
    require_int("--n-ckpt", n_ckpt, 2)
    from twoclock.studies.plan_check import entry as plan_entry  # noqa: PLC0415
    s = plan_entry(model)
    require(s is not None, "--model", "a model with a plan-check entry", model.name)
    lr0, budget = s.lr0, int(s.budget)
    for b in pilots or ():
        require_int("--pilots", b)
    pilot_batches = tuple(sorted(s.pilots)[:3] if pilots is None else sorted(pilots))
    require(len(set(pilot_batches)) == len(pilot_batches) >= 3, "--pilots",
            "at least three distinct batches", list(pilot_batches))
    require(8 * max(pilot_batches) <= budget, "--pilots", f"batches whose 8x (the largest "
            f"held-out batch) fits the model's budget of {budget} samples: at most "
            f"{budget // 8}", list(pilot_batches))
    progress, failures, conds, metrics = conditions(model, cfg)
    top = max(pilot_batches)
    held = [4 * top, 8 * top]
    hpath = heldout_path or logs_path + ".heldout.csv"
    check_file(logs_path, "--logs")  # every output and both grids, before simulating
    check_file(hpath, "--logs (its .heldout.csv)")
    check_fits(model, cfg, opt, [(pilot_batches, lr0, pilot_seeds, budget, n_ckpt),
                                 (held, lr0, heldout_seeds, budget, n_ckpt)])
    t0 = time.perf_counter()
    # two sweeps, so that each batch runs only the seeds it is read at. A seed's keys do not
    # depend on how many seeds run beside it, so seed s is the same run; its floats are the
    # same bit for bit on the quadratic (tests/studies/test_calibration_cli.py) and within
    # about 1e-6 relative on the policy model, whose vectorised kernels round by lane count
    pres = simulate(model, cfg, opt, pilot_batches, lr0, pilot_seeds, budget, n_ckpt,
                    keep=keep, quiet=quiet)
    missing = [m for m in metrics if m not in pres.ckpt[0]]
    if missing:
        raise ValueError(f"--logs: model {model.name!r} checkpoints no {', '.join(missing)} "
                         f"(it has {', '.join(sorted(pres.ckpt[0]))}); give it "
                         "log_conditions in twoclock.studies.plan_check.PILOTS")
    rows = write_logs(pres, pilot_batches, range(pilot_seeds), metrics, logs_path)
    crossings_seen(logs_path, metrics, conds)  # before the held-out runs are simulated
    res = simulate(model, cfg, opt, held, lr0, heldout_seeds, budget, n_ckpt, keep=keep,
                   quiet=quiet)
    sim_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    plan = pl.plan_logs(logs_path, progress, list(failures), predict=held)
    plan_s = time.perf_counter() - t1
    # the answers: held-out runs' clocks from their own logged curves, and the engine's
    write_logs(res, held, range(heldout_seeds), metrics, hpath)
    hlogs = reader.read_logs(hpath, tuple(metrics))
    found = {c.text: pc.clocks(hlogs, c) for c in conds}
    engine = {conds[0].text: res.prog_n, conds[1].text: res.fail_n}  # the model's own clocks
    preds = {p["batch"]: p for p in plan["predictions"]}
    fpred = {f["condition"]: {p["batch"]: p["failure_samples"] for p in f["predictions"]}
             for f in plan["failures"]}
    out_rows = []
    for b in held:
        i = list(res.batches).index(b)
        for c in conds:
            pred = (preds[float(b)]["progress_samples"] if c is conds[0]
                    else fpred[c.text][float(b)])
            at = [k for k, r in enumerate(hlogs.runs) if r.batch == b]
            # the answer is itself a median of a few seeds: its own bootstrap 95% CI says
            # how close any prediction can be shown to be (a censored median is None)
            logged = median_ci([found[c.text][k].samples if found[c.text][k].crossed
                                else math.inf for k in at])
            row = {"batch": b, "times_largest_pilot": b // top, "clock": c.text,
                   "kind": "progress" if c is conds[0] else "failure",
                   "vs_logged": _score(pred, logged["median"]), "measured_ci": logged["ci"]}
            if c.text in engine:
                e = engine[c.text][i, 0]
                row["vs_engine"] = _score(pred, _median(np.where(e > 0, e, math.inf)))
            out_rows.append(row)
    scored = [r["vs_logged"] for r in out_rows if r["vs_logged"]["covered"] is not None]
    return {"model": model.name, "lr0": lr0, "lr_rule": opt.lr_rule, "budget": budget,
            "n_ckpt": n_ckpt, "pilot_batches": list(pilot_batches), "pilot_seeds": pilot_seeds,
            "heldout_batches": held, "heldout_seeds": heldout_seeds,
            "logging_interval_samples": {
                str(b): float(np.median(np.diff(r.ckpt[list(r.batches).index(b)]["samples"]
                                                [0, 0]))) for r in (pres, res) for b in r.batches},
            "progress": progress, "failures": list(failures), "log_file": logs_path,
            "log_rows": rows, "critical_batch": plan["critical_batch"],
            "progress_form": plan["fit"]["progress"]["form"],
            "failure_exponents": {f["condition"]: f["failure_exponent"]["value"]
                                  for f in plan["failures"]},
            "recommendation": plan["recommendation"]["constant"],
            "heldout": out_rows,
            "coverage": {"covered": sum(s["covered"] for s in scored), "scored": len(scored)},
            "goal": goal(out_rows), "simulation_seconds": sim_s, "plan_seconds": plan_s}


def table(out: dict) -> str:
    """The held-out errors as text."""
    cb = out["critical_batch"]
    lines = [f"{out['model']} from logs: pilots at B = "
             f"{', '.join(map(str, out['pilot_batches']))} ({out['pilot_seeds']} seeds each, "
             f"{out['log_rows']} logged rows in {out['log_file']}), lr0 = {out['lr0']:g}; "
             f"answers: medians of {out['heldout_seeds']} seeds",
             f"progress {out['progress']}: {out['progress_form']} form, critical batch "
             + ("none" if cb["batch"] is None else f"{cb['batch']:.1f}"),
             "failure exponents: " + ", ".join(f"{k}: {'-' if v is None else f'{v:.3g}'}"
                                               for k, v in out["failure_exponents"].items()),
             f"{'batch':>6} {'clock':<26} {'answer':>7} {'measured':>9} {'predicted':>9} "
             f"{'95% band':>20} {'error':>7} covered"]
    for r in out["heldout"]:
        for src in ("vs_logged", "vs_engine"):
            d = r.get(src)
            if d is None:
                continue
            what = "logs" if src == "vs_logged" else "engine"
            line = report.scored(f"{r['batch']:>6} {r['clock']:<26} {what:>7}", d, 9)
            if src == "vs_logged" and r.get("measured_ci") and d["rel_error"] is not None:
                lo, hi = r["measured_ci"]  # the answer's own 95% CI over its seeds
                line += (f"  (answer's CI [{'-' if lo is None else f'{lo:.0f}'}, "
                         f"{'>' if hi is None else f'{hi:.0f}'}])")
            lines.append(line)
    c = out["coverage"]
    lines.append(f"band coverage (vs the held-out runs' logs): {c['covered']}/{c['scored']}; "
                 f"simulation {out['simulation_seconds']:.1f} s, plan {out['plan_seconds']:.2f} s")
    lines.extend(goal_lines(out["goal"], out["heldout_seeds"]))
    return "\n".join(lines)


def goal_lines(g: dict, seeds: int) -> list:
    """The accuracy goal's verdicts, and the predictions outside it or open."""
    pct = f"{100 * report.GOAL:g}%"
    lines = [f"the {pct} goal against each answer's 95% CI: within {len(g['within'])}, outside "
             f"{len(g['outside'])}, open {len(g['open'])}"]

    def ci(r):
        return " / ".join("-" if v is None else f"{100 * v:+.0f}%" for v in r["answer_ci_rel"])
    for r in g["outside"]:
        lines.append(f"  outside at B {r['batch']} {r['clock']}: {100 * r['rel_error']:+.1f}%, "
                     f"and more than {pct} off every answer in its CI ({ci(r)})")
    for r in g["open"]:
        lines.append(f"  open at B {r['batch']} {r['clock']}: {100 * r['rel_error']:+.1f}%, but "
                     f"its answer ({seeds} seeds) is known only to {ci(r)}: more held-out seeds "
                     "(--seeds) narrow it")
    return lines


def example(path: str, model, seeds: int = 4) -> int:
    """Write twoclock/data/example_pilot_logs.csv from `model` (the bandit: its defaults but 2
    minibatches per rollout batch, so that the ratio clip can bind), pilots at B = 64, 128, 256
    (sqrt rule, lr0 0.02), `seeds` each, 128 checkpoints over 50 000 responses. Rows."""
    from twoclock import config  # noqa: PLC0415
    cfg = model.config(minibatches=2)
    res = simulate(model, cfg, config.OptimConfig(), (64, 128, 256), 0.02, seeds, 50_000, 128)
    return write_logs(res, (64, 128, 256), range(seeds),
                      ["heldout_acc", "kl", "entropy", "drift", "clip_frac"], path)


__all__ = ["log_conditions", "simulate", "sweep_config", "write_logs", "check_fits",
           "crossings_seen", "verdict", "goal", "check", "table",
           "goal_lines", "example"]
