"""Batch schedule against constant batches: measure, plan the switch, simulate, compare.

Measures both clocks at a small batch B1 and a large batch B2 (one sweep), plans the switch
B1 -> B2 with `twoclock.analysis.switch.plan_switch` under a wall-clock throughput model, simulates
the planned schedule and a grid of switch points (`twoclock.engine.schedule.run_schedule`), and
reports samples and hours to target for constant B1, constant B2 and the schedule. A run
whose failure clock fires before its target counts as never reaching it.

Each model's defaults (`DEFAULTS`) lower its failure threshold so that the
failure clock falls between the two batches' progress clocks, after the target at B1 but
before it at B2: otherwise nothing fails first and no schedule is needed. The quadratic
model's threshold goes from 1.0 to 0.2, the bandit's drift threshold from 2 to 0.4.
"""
from dataclasses import dataclass
import math
import sys
import time

import numpy as np

from twoclock.analysis import clocks, results
from twoclock.analysis.report import fmt_samples
from twoclock.analysis.switch import Clocks, curve_remaining, plan_switch, reached_first, seconds_to
from twoclock.analysis.throughput import ThroughputModel
from twoclock.config import (CARRY_MODES, Schedule, SweepConfig, param, require, require_carry,
                             require_int, require_positive)
from twoclock.engine.schedule import run_schedule
from twoclock.engine.sweep import run_sweep
from twoclock.model import Model, progress_target
from twoclock.studies.protocol import Engine, Study, StudyDefaults, SweepView, nested, per_model

# each model's defaults here (flags given win); a model not listed is not offered the study
DEFAULTS = {
    # the failure threshold from 1.0 to 0.2, so that failure falls between the two targets
    "quadratic": StudyDefaults(study=dict(responses_per_sample=32.0),
                               sweep=dict(batches=(8, 256), lr0s=(1e-2,), seeds=16,
                                          budget=20_000, n_ckpt=64),
                               model=dict(drift_threshold=0.2)),
    # the drift threshold from 2 to 0.4, so that failure falls between the two batches' targets
    "bandit": StudyDefaults(study=dict(responses_per_sample=1.0),
                            sweep=dict(batches=(64, 1024), lr0s=(0.02,), seeds=16,
                                       budget=40_000, n_ckpt=64),
                            model=dict(drift_threshold=0.4)),
}
OBJECTIVES = ("seconds", "samples")
PLANNERS = ("curves", "fractions")


@dataclass(frozen=True)
class Config(SweepView):
    """What the schedule study compares and how it plans; its sweep's grid is (B1, B2) x
    (lr0,), the batches given as --batch-small and --batch-large."""
    SCRIPT = "schedule.py"
    DEFAULTS = DEFAULTS
    margin: float = param(0.1, "failure-clock fraction that must remain at the target")
    fail_quantile: float = param(0.2, "the planner uses this quantile of the per-seed failure "
                                      "clocks")
    objective: str = param("seconds", "seconds | samples", choices=OBJECTIVES)
    planner: str = param("curves", "curves (equal-progress hand-over from the measured curves) "
                                   "| fractions", choices=PLANNERS)
    carry: str = param("rescale", "optimizer state at the switch: rescale | carry | reset",
                       choices=CARRY_MODES)
    switches: int = param(7, "switch points in the measured grid")
    responses_per_sample: float = param(32.0, "real responses one simulated sample stands for")
    sweep: SweepConfig = nested(
        SweepConfig(batches=(8, 256), lr0s=(1e-2,)), "schedule", rename={"lr0s": "lr0"},
        scalar=("lr0s",), split={"batches": ("batch_small", "batch_large")},
        help={"batch_small": "B1, the batch before the switch",
              "batch_large": "B2, the batch after the switch",
              "lr0s": "base learning rate at b0"})
    throughput: ThroughputModel = nested(ThroughputModel(), "throughput model")

    def __post_init__(self):
        # the sweep checked its values; the study needs two batches, the smaller first
        b = self.sweep.batches
        require(len(b) == 2, "batches", "two values (batch_small, batch_large)", b)
        require(b[0] < b[1], "batch_large", f"> batch_small ({b[0]})", b[1])
        require(len(self.sweep.lr0s) == 1, "lr0", "one value", self.sweep.lr0s)
        require(0 <= self.margin < 1, "margin", "in [0, 1)", self.margin)
        require(0 < self.fail_quantile <= 0.5, "fail_quantile", "in (0, 0.5]",
                self.fail_quantile)
        require(self.objective in OBJECTIVES, "objective", "seconds or samples", self.objective)
        require(self.planner in PLANNERS, "planner", "curves or fractions", self.planner)
        require_carry(self.carry)
        require_int("switches", self.switches, lo=2)
        require_positive("responses_per_sample", self.responses_per_sample)


def defaults(model: Model):
    """The model's schedule defaults (`DEFAULTS`; None: not offered)."""
    return per_model(DEFAULTS, model)


def measured_clocks(batch: int, prog_S, fail_S, fail_quantile: float) -> Clocks:
    """A batch's clocks for the planner: the median progress clock and a low quantile of the
    failure clock (censored runs count as +inf)."""
    f = clocks.censored(fail_S)
    return Clocks(batch, float(np.median(clocks.censored(prog_S))),
                  float(np.quantile(f, fail_quantile, method="lower")))


def median_curve(ckpt) -> dict:
    """The first lr0's median progress and drift curves over seeds, against samples."""
    return {"samples": np.asarray(ckpt["samples"])[0, 0].tolist(),
            "progress_frac": np.median(ckpt["progress_frac"][0], axis=0).tolist(),
            "drift": np.median(ckpt["drift"][0], axis=0).tolist()}


def summarize_run(kind, label, sched: Schedule, prog_S, fail_S, seconds_per_sample,
                  idx) -> dict:
    """Both clocks and the hours to target (never, where the failure clock fired first)."""
    ok = reached_first(prog_S, fail_S)
    secs = seconds_to(np.where(ok, prog_S, 0), sched, seconds_per_sample)
    return {"kind": kind, "label": label, "batch1": sched.batch1, "batch2": sched.batch2,
            "switch": int(sched.switch), "progress_samples": clocks.summarize(prog_S, idx=idx),
            "failure_samples": clocks.summarize(fail_S, idx=idx),
            "reached_first": float(ok.mean()),
            "hours": clocks.summarize(secs / 3600.0, idx=idx)}


def switch_grid(b1: int, hi: float, n: int, planned) -> list:
    """n switch points in [0, hi] rounded down to whole B1 updates, plus the planned one."""
    return sorted({int(s) // b1 * b1 for s in np.linspace(0, hi, n)} |
                  ({planned} if planned else set()))


def _fin(v):
    return None if v is None or not np.isfinite(v) else float(v)


def run(model: Model, model_cfg, opt, study: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """The whole study as a JSON-ready dict."""
    del engine  # (no store: the schedules' runs are short)
    (B1, B2), lr0 = study.batches, study.lr0
    sweep, thr = study.sweep, study.throughput.scaled(study.responses_per_sample)
    t0 = time.perf_counter()
    res = run_sweep(model, model_cfg, opt, sweep, quiet=quiet, keep=keep)
    idx = clocks.bootstrap_indices(sweep.seeds)
    small, large = (measured_clocks(res.batches[i], res.prog_n[i, 0], res.fail_n[i, 0],
                                    study.fail_quantile) for i in (0, 1))
    spp = lambda b: 1.0 / float(thr.throughput(b))
    remaining = None
    if study.planner == "curves":
        curve = lambda i: (res.ckpt[i]["samples"][0, 0],
                           np.median(res.ckpt[i]["progress_frac"][0], 0))
        remaining = curve_remaining(small, large, curve(0), curve(1))
    plan = plan_switch(small, large, spp, margin=study.margin, objective=study.objective,
                       remaining=remaining)
    switch = int(plan.best.switch) // B1 * B1 if plan.best.kind == "schedule" else None

    runs = []
    for i, (kind, b) in enumerate((("constant_small", B1), ("constant_large", B2))):
        runs.append(summarize_run(kind, f"constant B={b}", Schedule(b, b, 0), res.prog_n[i, 0],
                                  res.fail_n[i, 0], spp, idx))
        runs[-1]["curve"] = median_curve(res.ckpt[i])

    hi = small.n_prog if np.isfinite(small.n_prog) else sweep.budget / 2
    sweep_rows = []
    for S in switch_grid(B1, hi, study.switches, switch):
        sched = Schedule(B1, B2, S)
        out = run_schedule(model, model_cfg, opt, sched, [lr0], sweep.seeds, sweep.budget,
                           seed=sweep.seed, n_ckpt=sweep.n_ckpt, carry=study.carry,
                           keep=keep)
        row = summarize_run("schedule", f"B={B1} -> {B2} at {S}", sched, out["prog_n"][0],
                            out["fail_n"][0], spp, idx)
        sweep_rows.append({k: row[k] for k in ("switch", "progress_samples", "failure_samples",
                                                "reached_first", "hours")})
        if S == switch:
            runs.append({**row, "label": f"B={B1} -> {B2} (planned switch)",
                         "curve": median_curve(out["ckpt"])})
        if not quiet:
            print(f"[schedule] switch {S}: reached first {row['reached_first']:.2f}",
                  file=sys.stderr, flush=True)

    plan_d = {**plan.to_dict(), "switch_samples": switch,
              "clocks": {k: {"batch": c.batch, "n_prog": _fin(c.n_prog), "n_fail": _fin(c.n_fail)}
                         for k, c in (("small", small), ("large", large))}}
    for o in plan_d["options"] + [plan_d["best"]]:
        for k in ("samples", "seconds", "failure_fraction"):
            o[k] = _fin(o[k])
    return {
        "schema": results.SCHEMA, "model": model.name, "progress_label": model.progress_label,
        "runs": runs, "plan": plan_d, "switch_sweep": sweep_rows,
        "curve_target": progress_target(model, model_cfg),
        "config": results.config_dict(model=model_cfg, optimizer=opt, sweep=sweep,
                                      throughput=thr.model,
                                      responses_per_sample=thr.responses_per_sample,
                                      margin=study.margin, fail_quantile=study.fail_quantile,
                                      objective=study.objective, carry=study.carry, lr0=lr0,
                                      planner=study.planner, batch_small=B1, batch_large=B2),
        "versions": results.versions(), "seconds": time.perf_counter() - t0,
    }


def report(out: dict) -> str:
    """The plan, the three runs and the measured switch grid as text."""
    plan, c = out["plan"], out["plan"]["clocks"]
    num = lambda v, spec: ("never" if v is None or (isinstance(v, float) and math.isinf(v))
                           else format(v, spec))
    frac = lambda v: "-" if v is None else format(v, ".2f")
    clock = lambda b: (f"B={c[b]['batch']}: N_prog {num(c[b]['n_prog'], '.0f')}, N_fail "
                       f"{num(c[b]['n_fail'], '.0f')}")
    lines = [
        f"clocks (samples; N_prog median, N_fail {out['config']['fail_quantile']:.0%} quantile): "
        f"{clock('small')}; {clock('large')}",
        "plan ({} planner, margin {:.0%}):".format(out["config"]["planner"], plan["margin"]),
    ]
    for o in plan["options"]:
        lines.append(f"  {o['kind']:<15} switch {num(o['switch'], '.0f'):>8}  samples "
                     f"{num(o['samples'], '.0f'):>6}"
                     f"  hours {num(o['seconds'] and o['seconds'] / 3600, '.2f'):>6}"
                     f"  failure clock spent {frac(o['failure_fraction'])}"
                     f"  {'safe' if o['safe'] else 'UNSAFE'}")
    if not any(o["safe"] for o in plan["options"]):
        lines.append(f"  -> none is safe: the least risky is {plan['best']['kind']}")
    else:
        lines.append(f"  -> best: {plan['best']['kind']}" + (
            f" (run switching at {plan['switch_samples']:.0f} samples, a whole number of "
            f"updates at B={c['small']['batch']})" if plan["switch_samples"] else ""))
    lines += ["", f"{'run':<32} {'samples to target':>26} {'failure clock':>26} "
                  f"{'reach first':>11} {'hours to target':>22}"]
    fmt = lambda s, spec=".0f": fmt_samples(s, spec=spec, counts=True)
    for r in out["runs"]:
        lines.append(f"{r['label']:<32} {fmt(r['progress_samples']):>26} "
                     f"{fmt(r['failure_samples']):>26} {r['reached_first']:>11.2f} "
                     f"{fmt(r['hours'], '.2f'):>22}")
    lines += ["(hours count a run whose failure clock fires first as never reaching the target)",
              "", "switch grid (measured): " + "; ".join(
                  f"{r['switch']}: {r['reached_first']:.2f} reach, "
                  f"{num(r['hours']['median'], '.2f')}{'' if r['hours']['median'] is None else ' h'}"
                  for r in out["switch_sweep"])]
    return "\n".join(lines)


def figure(out: dict):
    """The three runs' curves and the switch grid (twoclock.figures.style.schedule_figure)."""
    from twoclock.figures.style import schedule_figure
    return schedule_figure(out)


__all__ = ["Config", "DEFAULTS", "figure", "defaults", "progress_target", "measured_clocks",
           "median_curve", "summarize_run", "switch_grid", "run", "report"]


STUDY = Study("schedule", Config, run, report, figure)
