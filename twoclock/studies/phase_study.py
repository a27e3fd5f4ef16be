"""Phase diagram over (batch, lr0): which clock wins where, in each model.

Sweeps batch x lr0 x seed per model and turns each sweep into a panel (`twoclock.analysis.phase`):
the margin N_fail - N_prog (medians) and the fraction of seeds that reach the target
before the failure clock. A model whose theory gives the boundary N_fail = N_prog
(`Model.phase_boundary`: the quadratic's Adam failure clock against its mean-field progress
clock) adds it to its panel. Each model's grid and configuration come from its
`DEFAULTS` entry, whose defaults lower the failure threshold so that the
boundary crosses the grid (quadratic: 0.2 instead of 1.0; bandit: drift threshold 0.5
instead of 2).
"""
from dataclasses import dataclass, field
import time

import numpy as np

from twoclock.analysis import results
from twoclock.analysis.phase import phase_panel
from twoclock.config import SweepConfig, option, param, require
from twoclock.engine.sweep import run_sweep
from twoclock.model import Model
from twoclock.studies.protocol import Engine, Study, StudyDefaults, per_model

# each model's defaults here (flags given win); a model not listed is not offered the study
DEFAULTS = {
    # threshold 0.2 puts the boundary N_fail = N_prog inside the grid
    "quadratic": StudyDefaults(sweep=dict(batches=(8, 16, 32, 64, 128, 256),
                                          lr0s=(2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2), seeds=8,
                                          budget=30_000, n_ckpt=8),
                               model=dict(drift_threshold=0.2)),
    # drift threshold 0.5 (the headline's 2) puts the boundary N_fail = N_prog in the grid
    "bandit": StudyDefaults(study=dict(failure_clock="fail_n"),
                            sweep=dict(batches=(64, 128, 256, 512, 1024),
                                       lr0s=(0.01, 0.02, 0.04), seeds=8, budget=100_000,
                                       n_ckpt=8),
                            model=dict(drift_threshold=0.5)),
}
# the sweep fields a command line may set for every panel at once
SHARED = ("seeds", "seed", "n_ckpt")


@dataclass(frozen=True)
class Config:
    """Which models, the theory grid of a model's boundary, and the panels: (model, model
    config, SweepConfig[, failure clock]) each (the command line's; None: the model's
    defaults, `panel_setup`; no failure clock: the config's)."""
    SCRIPT = "phase_diagram.py"
    OUTPUT = "phase_diagram"
    DEFAULTS = DEFAULTS
    SHARED = SHARED
    models: tuple = param(("quadratic", "bandit"), "the models, one panel each")
    theory_points: int = param(9, "theory grid points per axis (a model's boundary)")
    failure_clock: str | None = option(None, "the panel's failure clock (a single --models "
                                             "entry): fail_n or one of the model's extra clocks",
                                       type=str)
    panels: tuple = field(default=(), metadata={"internal": True})

    def __post_init__(self):
        require(isinstance(self.theory_points, int) and 2 <= self.theory_points <= 1000,
                "theory_points", "an integer in [2, 1000]", self.theory_points)
        require(self.failure_clock is None or len(self.models) == 1, "--failure-clock",
                "given with a single --models entry", self.failure_clock)

    def check(self, model, model_cfg, opt) -> None:
        """Before any work: every panel's batches, and its failure clock (ValueError)."""
        del model, model_cfg, opt
        for m, cfg, sweep, clock in with_clocks(self):
            require(clock is None or clock in failure_clocks(m), "--failure-clock",
                    " or ".join(failure_clocks(m)), clock)
            panel_setup(m, cfg, sweep, clock)


def with_clocks(study: Config) -> list:
    """[(model, model config, SweepConfig, failure clock)] of study.panels, a panel without a
    failure clock of its own taking the study's."""
    return [(*p[:3], p[3] if len(p) > 3 else study.failure_clock) for p in study.panels]


def defaults(model: Model):
    """The model's phase defaults (`DEFAULTS`; None: not offered); its study part may name
    the panel's failure clock."""
    return per_model(DEFAULTS, model)


def failure_clocks(model: Model) -> tuple:
    """The clocks a panel may use as its failure clock: fail_n and the model's extra clocks."""
    return ("fail_n",) + tuple(f"{c}_n" for c in model.extra_clocks)


def panel_setup(model: Model, cfg=None, sweep: SweepConfig | None = None,
                failure_clock: str | None = None) -> tuple:
    """(model config, SweepConfig, failure clock) of a model's panel: the given ones, else its
    phase defaults; ValueError for a batch the model cannot split or an unknown clock."""
    d = defaults(model)
    require(d is not None, "models", "models with phase defaults", model.name)
    cfg = cfg if cfg is not None else model.config(**d.model)
    sweep = sweep if sweep is not None else SweepConfig(**d.sweep)
    clock = failure_clock or d.study.get("failure_clock", "fail_n")
    require(clock in failure_clocks(model), "failure_clock",
            " or ".join(failure_clocks(model)), clock)
    for b in sweep.batches:
        model.describe_batch(cfg, b)
    return cfg, sweep, clock


def panel(model: Model, cfg, opt, sweep: SweepConfig, failure_clock: str = "fail_n",
          theory_points: int = 9, quiet: bool = False, keep=None) -> dict:
    """One model's panel, with its theory boundary where the model has one."""
    res = run_sweep(model, cfg, opt, sweep, quiet=quiet, keep=keep)
    out = phase_panel(res, model.title or model.name, unit=model.unit,
                      batch_unit=model.batch_unit, fail_key=failure_clock)
    if model.phase_boundary is not None:
        grid = lambda v: np.geomspace(min(v), max(v), theory_points)
        theory = model.phase_boundary(cfg, opt, grid(sweep.batches), grid(sweep.lr0s),
                                      sweep.budget)
        if theory is not None:
            out["theory"] = theory
    return out


def run(model, model_cfg, opt, study: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """Every panel of study.panels as one JSON-ready dict (model and model_cfg: the single
    panel's, or None; the panels say which)."""
    del model, model_cfg, engine
    t0 = time.perf_counter()
    panels, configs = [], {}
    for m, mcfg, sweep, clock in with_clocks(study):
        mcfg, sweep, clock = panel_setup(m, mcfg, sweep, clock)
        panels.append(panel(m, mcfg, opt, sweep, clock, study.theory_points, quiet, keep))
        extra = {"failure_clock": clock} if "failure_clock" in defaults(m).study else {}
        configs[m.name] = results.config_dict(model=mcfg, sweep=sweep, **extra)
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


def figure(out: dict):
    """One heat map per panel (twoclock.figures.style.phase_figure)."""
    from twoclock.figures.style import phase_figure
    return phase_figure(out)


__all__ = ["Config", "DEFAULTS", "SHARED", "figure", "with_clocks", "defaults", "failure_clocks",
           "panel_setup", "panel", "run", "report"]


STUDY = Study("phase", Config, run, report, figure)
