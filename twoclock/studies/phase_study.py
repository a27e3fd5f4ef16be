"""Phase diagram over (batch, lr0): which clock wins where, in each model.

Sweeps batch x lr0 x seed per model and turns each sweep into a panel (`twoclock.phase`):
the margin N_fail - N_prog (medians) and the fraction of seeds that reach the target
before the failure clock. The quadratic panel also carries the theory's boundary
N_fail = N_prog (Adam failure clock and mean-field progress clock); the bandit has no
closed-form boundary. The defaults lower both failure thresholds (quadratic: 0.2 instead of
1.0; bandit: drift threshold 0.5 instead of 2) so that the boundary crosses the grid.
"""
from dataclasses import dataclass
import time

import numpy as np

from twoclock import results
from twoclock.config import SweepConfig, param, require, require_int
from twoclock.models import MODELS, bandit
from twoclock.phase import phase_panel, quadratic_boundary
from twoclock.sweep import run_sweep

BANDIT_CLOCKS = ("fail_n", "collapse_n")


@dataclass(frozen=True)
class PhaseStudy:
    """Which models, the bandit's grid (the quadratic's is a SweepConfig) and the theory grid."""
    models: tuple = param(("quadratic", "bandit"), "quadratic and/or bandit")
    bandit_batches: tuple = param((64, 128, 256, 512, 1024), "bandit batches (responses)")
    bandit_lr0s: tuple = param((0.01, 0.02, 0.04), "bandit base learning rates")
    bandit_budget: int = param(100_000, "bandit response budget per run")
    bandit_drift_threshold: float = param(0.5, "bandit collapse threshold on the drift statistic "
                                               "(its headline uses 2; 0.5 puts the boundary "
                                               "N_fail = N_prog inside the batch range)")
    bandit_clock: str = param("fail_n", "bandit failure clock: fail_n (drift threshold) | "
                                        "collapse_n", choices=BANDIT_CLOCKS)
    theory_points: int = param(9, "theory grid points per axis (quadratic boundary)")

    def __post_init__(self):
        for m in self.models:
            require(m in MODELS, "models", "quadratic and/or bandit", m)
        require(self.bandit_clock in BANDIT_CLOCKS, "bandit_clock", "fail_n or collapse_n",
                self.bandit_clock)
        require(isinstance(self.theory_points, int) and 2 <= self.theory_points <= 1000,
                "theory_points", "an integer in [2, 1000]", self.theory_points)


QUADRATIC_SWEEP = dict(batches=(8, 16, 32, 64, 128, 256),
                       lr0s=(2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2), seeds=8, budget=30_000, n_ckpt=8)
QUADRATIC_MODEL = dict(drift_threshold=0.2)


def bandit_grid(study: PhaseStudy, sweep: SweepConfig) -> tuple:
    """(BanditConfig, SweepConfig) of the bandit panel: the study's batches, lr0s, budget and
    drift threshold, the quadratic sweep's seeds; ValueError for a batch it cannot split."""
    cfg = bandit.BanditConfig(drift_threshold=study.bandit_drift_threshold)
    grid = SweepConfig(batches=tuple(study.bandit_batches), lr0s=tuple(study.bandit_lr0s),
                       seeds=sweep.seeds, budget=study.bandit_budget, seed=sweep.seed,
                       n_ckpt=sweep.n_ckpt)
    for b in grid.batches:
        cfg.prompts(b)
    return cfg, grid


def run(qcfg, opt, sweep: SweepConfig, study: PhaseStudy, quiet: bool = False) -> dict:
    """Every requested panel as a JSON-ready dict; sweep is the quadratic's grid."""
    t0 = time.perf_counter()
    panels, configs = [], {}
    if "quadratic" in study.models:
        res = run_sweep("quadratic", qcfg, opt, sweep, quiet=quiet)
        panel = phase_panel(res, "quadratic model (NQM)")
        if opt.name == "adam" and not qcfg.rotate:  # the theory's boundary assumes both
            grid = lambda v: np.geomspace(min(v), max(v), study.theory_points)
            panel["theory"] = quadratic_boundary(qcfg, opt, grid(sweep.batches),
                                                 grid(sweep.lr0s), sweep.budget)
        panels.append(panel)
        configs["quadratic"] = results.config_dict(model=qcfg, sweep=sweep)
    if "bandit" in study.models:
        bcfg, bsweep = bandit_grid(study, sweep)
        res = run_sweep("bandit", bcfg, opt, bsweep, quiet=quiet)
        panels.append(phase_panel(res, "bandit (RLVR)", unit=bandit.MODEL.unit,
                                  batch_unit=bandit.MODEL.batch_unit,
                                  fail_key=study.bandit_clock))
        configs["bandit"] = results.config_dict(model=bcfg, sweep=bsweep,
                                                failure_clock=study.bandit_clock)
    return {"schema": results.SCHEMA, "panels": panels,
            "config": {**configs, **results.config_dict(optimizer=opt)},
            "versions": results.versions(), "seconds": time.perf_counter() - t0}


def report(out: dict) -> str:
    """Per panel: margin and fraction reaching the target first, lr0 rows x batch columns."""
    lines = []
    for p in out["panels"]:
        lines.append(f"{p['title']}: margin N_fail - N_prog ({p['unit']}; '>' = failure "
                     f"censored) / fraction of seeds reaching the target first")
        lines.append("lr0 \\ B  " + "".join(f"{b:>14}" for b in p["batches"]))
        for j, lr0 in enumerate(p["lr0s"]):
            cells = [f"{'>' if m is None else format(m, '.0f'):>8} {f:>5.2f}"
                     for m, f in zip(p["margin"][j], p["reached_first"][j])]
            lines.append(f"{lr0:<9.4g}" + "".join(cells))
    return "\n".join(lines)


__all__ = ["PhaseStudy", "QUADRATIC_SWEEP", "QUADRATIC_MODEL", "bandit_grid", "run", "report"]
