"""Two shapes a real GRPO sweep shows, in each model (docs/shapes.md): the critical batch
against the target under the sqrt rule, and the samples-to-target exponent against batch under
a fixed learning rate, each beside Adam's noise-scale theory.

Per model two cells (resumable from the engine's store under --store): the sqrt rule at lr0,
and a fixed lr, the sqrt rule's at the smallest batch (the same start), each with a checkpoint
at every update of the smallest batch. From the sqrt cell: the progress clock at `levels`
targets evenly spaced along the progress metric (from the start to the model's target), each
target's critical batch with a bootstrap CI over seeds, and the noise scale along the path at
the smallest batch (`path`). From the fixed cell: d log N / d log B between adjacent batches
at the model's target, with a paired CI, beside 1/2 + B / (2 (B + B_n)).
"""
import csv
from dataclasses import dataclass, field, replace
import math
import os
import time

import numpy as np

from twoclock.analysis import clocks, results
from twoclock.config import DELTA, OptimConfig, param, require, require_int
from twoclock.studies.assemble import run_cells
from twoclock.studies.protocol import Engine, Study, StudyDefaults, per_model
from twoclock.studies.shapes import curves, path
from twoclock.studies.shapes.report import report

# each model's defaults here; a model not listed is not offered the study. The budgets hold
# the fixed rule's largest batch to the target; checkpoints: every update of the smallest batch
DEFAULTS = {
    "quadratic": StudyDefaults(sweep=dict(batches=(8, 16, 32, 64, 128, 256), lr0s=(1e-2,),
                                          seeds=16, budget=40_000)),
    "bandit": StudyDefaults(sweep=dict(batches=(64, 128, 256, 512, 1024), lr0s=(0.02,),
                                       seeds=8, budget=60_000)),
    # the policy is the slow one (about 150 responses a second on 2 shared cores): three
    # batches, 4 seeds, and the target 0.5 (the model's own is 0.6) so that the fixed rule's
    # largest batch reaches it within 4096 responses
    "policy": StudyDefaults(sweep=dict(batches=(64, 128, 256), lr0s=(1e-4,), seeds=4,
                                       budget=4096),
                            model=dict(noise_every=512, target=0.5)),
}
SHARED = ("seeds", "seed")
# the checkpointed noise scales along the progress direction: the bandit's skill block, the
# policy's held-out accuracy (a model that records neither, the quadratic, gets its exact one:
# `path.quadratic_path`)
NOISE_DIRS = ("skill", "acc")
# the real sweep's shape (OLMo-2 1B on math with verl, one update per rollout batch, fixed lr;
# twoclock/data/real/cbs_rlvr_olmo2_1b/, whose README gives each number's source): its authors'
# McCandlish fits, the critical batch in rollouts against the accuracy target (nb_2e3_cell19_fit)
REAL_CRITICAL = {0.40: 325, 0.45: 1096, 0.50: 914, 0.55: 836, 0.60: 1364, 0.65: 3541}
REAL_SWEEP = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "data",
                          "real", "cbs_rlvr_olmo2_1b", "steps_to_target.csv")
REAL_RANGE = (1024, 8192)
EVERY = 25  # its evaluations: every 25 steps, none at step 0
RESOLVED = 3  # a crossing at evaluation k is known to within 1/k of its steps: used from k = 3


def real_exponent(path: str = REAL_SWEEP) -> dict:
    """The real sweep's fixed-lr exponent log(N(8192) / N(1024)) / log 8 of its one-update runs
    at each target both cross at their RESOLVED-th evaluation or later (a crossing at evaluation
    k lies in ((k - 1) 25, k 25] steps, so an earlier one barely bounds the exponent):
    {"range", "exponent": [min, max], "targets": {target: exponent}}."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["updates_per_batch"] == "1" and r["steps"]]
    lo, hi = REAL_RANGE
    n = {}
    for r in rows:
        if int(r["batch"]) in REAL_RANGE and int(r["steps"]) >= RESOLVED * EVERY:
            n.setdefault(r["target"], {})[int(r["batch"])] = int(r["steps"]) * int(r["batch"])
    per = {t: round(math.log(v[hi] / v[lo]) / math.log(hi / lo), 3)
           for t, v in sorted(n.items()) if len(v) == 2}
    return {"range": list(REAL_RANGE), "exponent": [min(per.values()), max(per.values())],
            "targets": per}


@dataclass(frozen=True)
class Config:
    """Which models, how many targets along the progress path, the critical batch's delta;
    the panels (model, model config, SweepConfig) are the command line's."""
    SCRIPT = "shapes.py"
    OUTPUT = "shapes"
    DEFAULTS = DEFAULTS
    SHARED = SHARED
    ENGINE_FLAGS = True
    MAX_LANES = 256  # runs per compiled chunk unless --max-lanes says otherwise
    FIXED_SWEEP = {"n_ckpt": "it records a checkpoint at every update of the smallest batch, "
                             "since each target's crossing is read between updates"}
    SKIP_OPTIM = ("lr_rule",)
    models: tuple = param(("quadratic", "bandit", "policy"), "the models, one panel each")
    levels: int = param(8, "targets along the progress path, the last the model's target")
    delta: float = param(DELTA, "critical batch: N(B) / N(B_min) >= 1 + delta")
    panels: tuple = field(default=(), metadata={"internal": True})

    def __post_init__(self):
        require_int("levels", self.levels, lo=2)
        require(self.levels <= 64, "levels", "an integer in [2, 64]", self.levels)
        require(0 < self.delta < 10, "delta", "in (0, 10)", self.delta)

    def check(self, model, model_cfg, opt) -> None:
        """Every panel's batches (ValueError) and at least three of them, before any work."""
        del model, model_cfg, opt
        for m, cfg, sweep in self.panels:
            require(len(sweep.batches) >= 3, "batches", "at least three distinct batches",
                    sweep.batches)
            # the sqrt rule at one lr0, the fixed rule at its lr at the smallest batch: a
            # second lr0 would be dropped unseen
            require(len(sweep.lr0s) == 1, "lr0", "one value (the sqrt rule's, at --b0)",
                    sweep.lr0s)
            for b in sweep.batches:
                m.describe_batch(cfg, b)


def defaults(model):
    """The model's shapes defaults (`DEFAULTS`; None: not offered)."""
    return per_model(DEFAULTS, model)


def cells(model, cfg, opt: OptimConfig, sweep) -> list:
    """[(rule, model config, OptimConfig, SweepConfig)]: the sqrt rule at lr0 and the fixed
    rule at the sqrt rule's lr at the smallest batch, a checkpoint at every update of it."""
    sq, fx = replace(opt, lr_rule="sqrt"), replace(opt, lr_rule="fixed")
    b_min = min(sweep.batches)
    sw = replace(sweep, batches=tuple(sorted(sweep.batches)), lr0s=sweep.lr0s[:1],
                 n_ckpt=max(1, sweep.budget // b_min))
    del model
    return [("sqrt", cfg, sq, sw),
            ("fixed", cfg, fx, replace(sw, lr0s=(float(sq.lr(sw.lr0s[0], b_min)),)))]


def progress_scale(model, cfg) -> tuple:
    """(target on the progress_frac scale, start accuracy or None): for a model whose target is
    an accuracy (progress_frac = (1 - acc) / (1 - acc0)), acc0 from its target's two scales."""
    if model.progress_target is None:
        return float(cfg.target), None
    pf = float(model.progress_target(cfg))
    return pf, float(1.0 - (1.0 - cfg.target) / pf)


def analyse(model, cfg, st: Config, res: dict, idx) -> dict:
    """One model's panel from its two cells' SweepResults: the critical-batch curve with the
    noise-scale path, and the fixed rule's local exponents with the theory's."""
    sq, fx = res["sqrt"], res["fixed"]
    batches = [int(b) for b in sq.batches]
    pf_t, acc0 = progress_scale(model, cfg)
    lv = curves.levels(1.0, pf_t, st.levels)
    prog = [np.stack([curves.crossings(sq.ckpt[i]["samples"][0], sq.ckpt[i]["progress_frac"][0],
                                       v, 1.0) for i in range(len(batches))]) for v in lv]
    crit = curves.critical_curve(batches, prog, st.delta, idx)
    med_min = [clocks.summarize(p[0], idx=idx)["median"] for p in prog]
    noise, pieces = path.noise_path(cfg, res["opt_sqrt"], sq, lv, med_min, NOISE_DIRS)
    w, bns = pieces["w"], pieces["b_noise"]
    rows = []
    for k, v in enumerate(lv):
        bn, n = noise[k]["b_noise"], noise[k]["pieces"]
        rows.append({"progress_frac": v, "accuracy": None if acc0 is None else 1 - v * (1 - acc0),
                     "samples_at_b_min": med_min[k], **{f"critical_{n}": crit[k][n]
                                                         for n in ("batch", "ci", "found")},
                     # the batches whose median run reached this target (the report's words)
                     "reached_batches": [b for b, m in zip(batches, np.median(
                         clocks.censored(prog[k]), axis=-1)) if np.isfinite(m)],
                     "noise": noise[k],
                     "theory_batch": None if bn is None else float(
                         curves.sqrt_rule_critical(batches[0], bn, st.delta)),
                     "theory_path_batch": None if n == 0 else _finite(curves.path_critical(
                         batches[0], w[:n], bns[:n], st.delta))})
    prog_fx = fx.prog_n[:, 0]
    ex = curves.local_exponents(batches, prog_fx, idx)
    last, n = noise[-1]["b_noise"], noise[-1]["pieces"]
    for e in ex:
        b1, b2 = e["batches"]
        e["theory_at_target"] = (None if last is None else
                                 float(curves.fixed_exponent_between(b1, b2, last)))
        e["theory_path"] = (None if n == 0 else
                            curves.path_exponent(b1, b2, batches[0], w[:n], bns[:n]))
    return {
        "model": model.name, "batches": batches, "unit": model.unit, "start_accuracy": acc0,
        "progress_label": model.progress_label, "critical": rows,
        "critical_rise_per_unit": curves.log_rise([r["critical_batch"] for r in rows],
                                                 [r["accuracy"] if acc0 is not None else
                                                  1 - r["progress_frac"] for r in rows]),
        "fixed": {"lr": float(fx.lrs_BxL[0, 0]), "exponents": ex,
                  "b_noise_at_target": last,
                  "progress_samples": [clocks.summarize(prog_fx[i], idx=idx)
                                       for i in range(len(batches))]},
        "sqrt_lrs": [float(v) for v in sq.lrs_BxL[:, 0]],
    }


def _finite(v: float):
    """v, or None where it is not finite (no critical batch by 1e12)."""
    return float(v) if np.isfinite(v) else None


def run(model, model_cfg, opt, st: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """Each model's two cells through the engine (resumable under engine.store), then its
    panel; the result as a JSON-ready dict."""
    del model, model_cfg
    t0 = time.perf_counter()
    out = {"schema": results.SCHEMA, "study": {"levels": st.levels, "delta": st.delta},
           "real": {"critical_batch": {str(k): v for k, v in REAL_CRITICAL.items()},
                    "fixed_exponent": real_exponent()}, "panels": [], "config": {}}
    for m, cfg, sweep in st.panels:
        todo = cells(m, cfg, opt, sweep)
        got, secs = {}, 0.0
        for name, _, opt_, sw, res, s in run_cells(
                m, todo, title=f"shapes {m.name}", store_root=engine.store,
                max_lanes=engine.max_lanes or Config.MAX_LANES, keep=keep, quiet=quiet,
                cell_key=lambda n, m=m: f"shapes_{m.name}_{n}"):
            got[name], got[f"opt_{name}"], secs = res, opt_, secs + s
        idx = clocks.bootstrap_indices(todo[0][3].seeds)
        panel = analyse(m, cfg, st, got, idx)
        panel["seconds"] = secs
        out["panels"].append(panel)
        out["config"][m.name] = results.config_dict(model=cfg, optimizer=todo[0][2],
                                                    sweep=todo[0][3])
    out["versions"], out["seconds"] = results.versions(), time.perf_counter() - t0
    return out


def figure(out: dict):
    """Both shapes per model (`twoclock.figures.shapes`)."""
    from twoclock.figures.shapes import shapes_figure
    return shapes_figure(out)


STUDY = Study("shapes", Config, run, report, figure, models=("quadratic", "bandit", "policy"))

__all__ = ["Config", "DEFAULTS", "REAL_CRITICAL", "real_exponent", "STUDY", "analyse", "cells",
           "defaults", "progress_scale", "run"]
