"""Wall-clock time to target against batch, for several learning-rate rules.

Samples to target (from a sweep per rule) divided by the end-to-end throughput of an RLVR
step (`twoclock.analysis.throughput`), normalised to the smallest batch with the first rule. A run
whose failure clock fires before its target counts as never reaching it. Marks the critical
generation batch (the throughput knee) and the critical training batch (where samples to
target grow by 1 + delta, first rule), and the optimum (the fastest median).
"""
from dataclasses import dataclass, replace
import time

import numpy as np

from twoclock.analysis import clocks, results
from twoclock.analysis.switch import reached_first
from twoclock.analysis.throughput import ThroughputModel
from twoclock.config import (DELTA, LR_RULES, SweepConfig, param, require, require_choice,
                             require_positive)
from twoclock.engine.sweep import run_sweep
from twoclock.studies.protocol import Engine, Study, StudyDefaults, SweepView, nested, per_model

# each model's defaults here (flags given win); a model not listed is not offered the study
DEFAULTS = {"quadratic": StudyDefaults(sweep=dict(batches=(8, 16, 32, 64, 128, 256), seeds=16,
                                                  budget=100_000, n_ckpt=16))}


@dataclass(frozen=True)
class Config(SweepView):
    """The rules compared and how time is counted; the sweep's grid is its batches x (lr0,)."""
    SCRIPT = "time_to_target.py"
    DEFAULTS = DEFAULTS
    SKIP_OPTIM = ("lr_rule",)
    lr_rules: tuple = param(("sqrt", "fixed"), "learning-rate rules to compare: fixed | sqrt | "
                                               "linear")
    delta: float = param(DELTA, "critical training batch: N_prog(B)/N_prog(B_min) >= 1 + delta")
    responses_per_sample: float = param(32.0, "real responses one simulated sample stands for")
    sweep: SweepConfig = nested(SweepConfig(lr0s=(1e-2,)), "sweep", rename={"lr0s": "lr0"},
                                scalar=("lr0s",), help={"lr0s": "base learning rate at b0"})
    throughput: ThroughputModel = nested(ThroughputModel(), "throughput model")

    def __post_init__(self):
        require(len(self.lr_rules) > 0, "lr_rules", "a non-empty list", self.lr_rules)
        for r in self.lr_rules:
            require_choice("lr_rules", r, LR_RULES)
        require(len(set(self.lr_rules)) == len(self.lr_rules), "lr_rules", "distinct values",
                self.lr_rules)
        require(self.delta > 0, "delta", "> 0", self.delta)
        require_positive("responses_per_sample", self.responses_per_sample)


def defaults(model):
    """The model's time-to-target defaults (`DEFAULTS`; None: not offered)."""
    return per_model(DEFAULTS, model)


def rows(res, rule: str, lr0: float, thr, idx) -> list:
    """One entry per batch of a one-lr0 sweep: seconds to target, throughput, both clocks."""
    out = []
    for i, b in enumerate(res.batches):
        p_S, f_S = res.prog_n[i, 0], res.fail_n[i, 0]
        per_s = float(thr.throughput(b))
        t = clocks.summarize(np.where(reached_first(p_S, f_S), p_S, 0) / per_s, idx=idx)
        out.append({
            "batch": int(b), "lr_rule": rule, "lr": float(res.lrs_BxL[i, 0]), "lr0": lr0,
            "time_to_target": {**t, "unit": "seconds"},
            "throughput": {"samples_per_second": per_s,
                           "responses_per_second": per_s * thr.responses_per_sample},
            "progress_samples": clocks.summarize(p_S, idx=idx),
            "failure_samples": clocks.summarize(f_S, idx=idx),
        })
    return out


def summary(runs: list, rules, delta: float, res_first, idx) -> dict:
    """The reference time (smallest batch, first rule), the optimum and the critical
    training batch (first rule's progress clocks)."""
    b_min = min(r["batch"] for r in runs)
    ref = next(r for r in runs if r["lr_rule"] == rules[0]
               and r["batch"] == b_min)["time_to_target"]["median"]
    done = [r for r in runs if r["time_to_target"]["median"] is not None]
    best = min(done, key=lambda r: r["time_to_target"]["median"]) if done else None
    crit = clocks.critical_batch(list(res_first.batches), res_first.prog_n[:, 0], delta=delta,
                                 idx=idx)
    return {"optimum": None if best is None else {"lr_rule": best["lr_rule"],
                                                  "batch": best["batch"]},
            "reference_seconds": ref, "critical_training_batch": crit["batch"],
            "critical_training_batch_ci": crit["ci"]}


def run(model, model_cfg, opt, study: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """One sweep per rule; the result as a JSON-ready dict."""
    del engine  # (no store)
    t0 = time.perf_counter()
    sweep = replace(study.sweep, batches=tuple(sorted(study.batches)))
    thr = study.throughput.scaled(study.responses_per_sample)
    idx = clocks.bootstrap_indices(sweep.seeds)
    runs, first, opts = [], None, {}
    for rule in study.lr_rules:
        opts[rule] = replace(opt, lr_rule=rule)
        res = run_sweep(model, model_cfg, opts[rule], sweep, quiet=quiet, keep=keep)
        first = res if first is None else first
        runs += rows(res, rule, study.lr0, thr, idx)
    rules = list(study.lr_rules)
    return {
        "schema": results.SCHEMA, "model": model.name, "runs": runs, "lr_rules": rules,
        **summary(runs, rules, study.delta, first, idx),
        "critical_generation_batch": thr.critical_gen_batch(),
        "config": results.config_dict(model=model_cfg, optimizer=opts[rules[0]], sweep=sweep,
                                      lr_rules=rules, delta=study.delta, throughput=thr.model,
                                      responses_per_sample=thr.responses_per_sample),
        "versions": results.versions(), "seconds": time.perf_counter() - t0,
    }


def report(out: dict) -> str:
    """One row per (rule, batch), the two critical batches, the optimum and the rules' ratio."""
    ref, rules = out["reference_seconds"], out["lr_rules"]
    lines = [f"{'batch':>6} {'rule':>6} {'samples to target':>18} {'throughput':>12} "
             f"{'hours':>8} {'normalised':>10}"]
    for r in sorted(out["runs"], key=lambda r: (r["lr_rule"] != rules[0], r["batch"])):
        t = r["time_to_target"]["median"]
        p = r["progress_samples"]["median"]
        lines.append(f"{r['batch']:>6} {r['lr_rule']:>6} "
                     f"{'>budget' if p is None else format(p, '.0f'):>18} "
                     f"{r['throughput']['samples_per_second'] * 3600:>10.0f}/h "
                     f"{'never' if t is None else format(t / 3600, '.2f'):>8} "
                     f"{'-' if t is None or ref is None else format(t / ref, '.3f'):>10}")
    ct = out["critical_training_batch"]
    first = min((r for r in out["runs"] if r["lr_rule"] == rules[0]), key=lambda r: r["batch"])
    if first["progress_samples"]["median"] is None:  # no reference to slow down from
        said = "not measured (the smallest batch did not reach the target in most seeds)"
    else:
        said = "none in range" if ct is None else format(ct, ".1f")
    lines.append(f"critical generation batch {out['critical_generation_batch']:.1f}, critical "
                 f"training batch {said}")
    if out["optimum"]:
        lines.append(f"optimum: {out['optimum']['lr_rule']} LR at B={out['optimum']['batch']}")
    by = {(r["lr_rule"], r["batch"]): r["time_to_target"]["median"] for r in out["runs"]}
    if "fixed" in rules and "sqrt" in rules:
        ratios = [f"B={b}: {by[('fixed', b)] / by[('sqrt', b)]:.2f}"
                  for (rule, b) in sorted(by) if rule == "fixed"
                  and by[("fixed", b)] and by.get(("sqrt", b))]
        lines.append("fixed-LR / sqrt-LR time at the same batch: " + (", ".join(ratios) or
                     "none (no batch where both rules reached the target)"))
    return "\n".join(lines)


def figure(out: dict):
    """Hours to target against batch per rule; without a reference time to normalise by, why
    there is none (a str)."""
    from twoclock.figures.style import time_to_target_figure
    if out["reference_seconds"] is not None:
        return time_to_target_figure(out)
    reach = (f"reached the target (in most seeds, before failing) within the budget of "
             f"{out['config']['sweep']['budget']} samples")
    rule, b_min = out["lr_rules"][0], min(r["batch"] for r in out["runs"])
    if all(r["time_to_target"]["median"] is None for r in out["runs"]):
        return f"no batch {reach}"
    return (f"the smallest batch under the {rule} rule (B={b_min}), whose time all times are "
            f"normalised by, never {reach}")


__all__ = ["Config", "DEFAULTS", "figure", "defaults", "rows", "summary", "run", "report"]


STUDY = Study("time_to_target", Config, run, report, figure)
