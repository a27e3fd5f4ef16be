"""twoclock: two-clock simulations of batch scaling in RL with verifiable rewards.

Importing twoclock loads nothing heavy: each name below is imported when first used, so
`twoclock.analysis` and `twoclock.pilot` work without JAX. The packages:

- core: `config`, `model` (the Model interface), `trace`, `scaling` (lr rules and optimizers),
  `objectives` (advantages, clipped surrogates, KL), `atomic` (atomic writes, strict JSON);
- `models`: one package per model and the registry `MODELS`;
- `engine`: runs, sweeps and schedules (JAX), the results store;
- `analysis`: clocks, result files, tables, the switch planner, the throughput model (no JAX);
- `pilot`: from pilot runs or their logs to a plan (no JAX; `plan_logs(source, progress,
  failures)` plans from a log file or a table in memory); `studies`; `figures`; `cli`.
"""
import importlib

from twoclock.version import __version__

_EXPORTS = {
    "OptimConfig": "twoclock.config", "SweepConfig": "twoclock.config",
    "require": "twoclock.config", "Schedule": "twoclock.config",
    "Model": "twoclock.model", "Dynamics": "twoclock.model", "RunState": "twoclock.model",
    "Trace": "twoclock.trace",
    "MODELS": "twoclock.models",
    "QuadraticConfig": "twoclock.models.quadratic", "BanditConfig": "twoclock.models.bandit",
    "theory": "twoclock.models.quadratic",
    "SweepResult": "twoclock.engine.result", "run_sweep": "twoclock.engine.sweep",
    "run_schedule": "twoclock.engine.schedule", "Store": "twoclock.engine.store",
    "plan_logs": "twoclock.pilot.api", "LogsPlan": "twoclock.pilot.result",
}
_PACKAGES = ("config", "model", "trace", "scaling", "objectives", "atomic", "models", "engine",
             "analysis", "pilot", "studies", "figures", "cli")

__all__ = ["__version__", *_EXPORTS, *_PACKAGES]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _PACKAGES or name in ("quadratic", "bandit"):
        mod = "twoclock.models." + name if name in ("quadratic", "bandit") else "twoclock." + name
        return importlib.import_module(mod)
    raise AttributeError(f"module 'twoclock' has no attribute {name!r}")
