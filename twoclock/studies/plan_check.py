"""Known-answer check of the planner (experiments/plan_check.py): simulate pilot runs at a few
small batches, plan from them, and score the predictions at held-out larger batches
(`twoclock.studies.planner.check`); with `logs`, plan from the pilots' logged curves alone
(`twoclock.studies.planner.logs_check`). Each model's pilots are its `PILOTS` entry
(`PlanCheck`)."""
from dataclasses import dataclass
import os
from typing import Callable, NamedTuple

from twoclock.atomic import Refused
from twoclock.config import option, param, require, require_int
from twoclock.models.bandit import log_conditions as bandit_logs
from twoclock.models.policy import log_conditions as policy_logs
from twoclock.studies.planner import check as pilot_check, logs_check
from twoclock.studies.protocol import Engine, Study, StudyDefaults, per_model


class PlanCheck(NamedTuple):
    """A model's known-answer check of the planner: the pilots' lr0, pilot batches, held-out
    batches and budget; log_conditions(cfg) -> (progress condition, failure conditions) on its
    checkpoint names, where the engine's clocks alone are not what a trainer logs."""
    lr0: float
    pilots: tuple
    heldout: tuple
    budget: int
    log_conditions: Callable | None = None


PILOTS = {
    "quadratic": PlanCheck(lr0=1e-2, pilots=(8, 16, 32, 64), heldout=(128, 256),
                           budget=200_000),
    "bandit": PlanCheck(lr0=0.02, pilots=(64, 128, 256), heldout=(512, 1024), budget=100_000,
                        log_conditions=bandit_logs),
    "policy": PlanCheck(lr0=1e-4, pilots=(32, 64, 128), heldout=(512, 1024), budget=16_384,
                        log_conditions=policy_logs),
}
MODELS = tuple(PILOTS)  # the models with pilots to check


def entry(model) -> PlanCheck | None:
    """The model's plan-check entry (None: it has no pilots to check)."""
    return per_model(PILOTS, model)


def defaults(model):
    """Offered for the models with pilots to check (`PILOTS`)."""
    return None if entry(model) is None else StudyDefaults()


@dataclass(frozen=True)
class Config:
    """How many pilot and held-out seeds, and whether the plan is made from logs."""
    SCRIPT = "plan_check.py"
    DESCRIPTION = __doc__.split("\n")[0]
    DEFAULTS = staticmethod(defaults)
    pilot_seeds: int | None = option(None, "pilot runs per pilot batch (default 4; with --logs "
                                           "8)", type=int)
    seeds: int | None = option(None, "seeds behind the held-out answers (default 16; with "
                                     "--logs 64)", type=int)
    csv: str | None = option(None, "also write the simulated pilot runs to this CSV", type=str)
    logs: str | None = option(None, "plan from the pilots' logged curves, written to FILE "
                                    "(default OUT/plan_check_MODEL_logs.csv)", type=str,
                              nargs="?", const="", metavar="FILE")
    n_ckpt: int = param(512, "with --logs: logged points per run")
    pilots: tuple | None = option(None, "with --logs: the pilot batches (default the model's "
                                        "three smallest); held out at 4x and 8x the largest",
                                  type=int, nargs="+", metavar="B")

    def __post_init__(self):
        require_int("--n-ckpt", self.n_ckpt, lo=2)
        if self.pilot_seeds is not None:
            require_int("--pilot-seeds", self.pilot_seeds)
        if self.seeds is not None:
            require_int("--seeds", self.seeds)
        if self.pilots is not None:
            require(self.logs is not None, "--pilots", "given with --logs (the CSV check "
                    "uses the model's own pilots)", list(self.pilots))

    def output_name(self, model, given) -> str:
        del given
        return f"plan_check_{model.name}" + ("" if self.logs is None else "_logs")


def _given(**flags) -> dict:
    """The flags given (not None): the others take the check's own defaults."""
    return {k: v for k, v in flags.items() if v is not None}


def run(model, model_cfg, opt, cfg: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """The check's result; a pilot setting the planner refuses exits 2 (`Refused`)."""
    s = entry(model)
    try:
        if cfg.logs is not None:
            path = cfg.logs or os.path.join(engine.out, f"{cfg.output_name(model, ())}.csv")
            return logs_check.check(model, model_cfg, opt, n_ckpt=cfg.n_ckpt, logs_path=path,
                                    keep=keep, quiet=quiet, **_given(
                                        pilot_seeds=cfg.pilot_seeds, heldout_seeds=cfg.seeds,
                                        pilots=cfg.pilots))
        return pilot_check.check(model, model_cfg, opt, s.lr0, s.pilots, s.heldout,
                                 budget=s.budget, csv_path=cfg.csv, keep=keep, quiet=quiet,
                                 **_given(pilot_seeds=cfg.pilot_seeds, seeds=cfg.seeds))
    except ValueError as e:
        raise Refused(str(e)) from None


def report(out: dict) -> str:
    """The planner's errors at the held-out batches, as a table."""
    return logs_check.table(out) if "log_file" in out else pilot_check.table(out)


STUDY = Study("plan_check", Config, run, report, models=MODELS)
