"""twoclock: two-clock simulations of batch scaling in RL with verifiable rewards."""
from twoclock.runtime import unrolled_threefry_on_cpu

UNROLLED_THREEFRY = unrolled_threefry_on_cpu()  # before anything is compiled; same bits, faster
from twoclock import clocks, objectives, planner, scaling, schedule, stages, throughput
from twoclock.config import OptimConfig, SweepConfig, require
from twoclock.model import Dynamics, Model, RunState
from twoclock.models import MODELS, bandit, quadratic
from twoclock.models.bandit import BanditConfig
from twoclock.models.quadratic import QuadraticConfig, theory
from twoclock.store import Store
from twoclock.sweep import SweepResult, run_sweep
from twoclock.trace import Trace
from twoclock.version import __version__

__all__ = ["__version__", "OptimConfig", "QuadraticConfig", "BanditConfig", "SweepConfig",
           "Trace", "MODELS", "Model", "Dynamics", "RunState", "SweepResult", "run_sweep",
           "Store", "require", "quadratic", "bandit", "objectives", "clocks", "scaling",
           "theory", "schedule", "planner", "stages", "throughput"]
