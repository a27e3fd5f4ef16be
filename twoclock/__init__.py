"""twoclock: two-clock simulations of batch scaling in RL with verifiable rewards."""
__version__ = "0.1.0"
from twoclock.config import OptimConfig, QuadraticConfig, SweepConfig, require
from twoclock.trace import Trace
from twoclock.sweep import MODELS, ModelSpec, SweepResult, run_sweep
from twoclock import quadratic  # registers the "quadratic" model
from twoclock import clocks, scaling, theory
from twoclock import bandit, objectives  # registers the "bandit" model
from twoclock import phase, schedule, throughput  # batch schedules, wall-clock, phase diagrams

from twoclock.bandit import BanditConfig
from twoclock.store import Store

__all__ = ["OptimConfig", "QuadraticConfig", "BanditConfig", "SweepConfig", "Trace", "MODELS",
           "ModelSpec", "SweepResult", "run_sweep", "Store", "require",
           "quadratic", "bandit", "objectives", "clocks", "scaling", "theory", "schedule",
           "throughput", "phase"]
