"""The headline study (experiments/critical_batch.py): sweep batch x lr0 x seed, both clocks
per (batch, lr0), the critical batch per lr0 and the model's theory columns."""
from dataclasses import dataclass
import time

import jax

from twoclock.analysis import report as tables, results
from twoclock.atomic import Refused, one_line
from twoclock.config import DELTA, SweepConfig, param, require_positive
from twoclock.engine.runtime import check_devices
from twoclock.engine.store import Store
from twoclock.engine.sweep import DEFAULT_MAX_LANES, run_sweep
from twoclock.figures import critical_batch as plotting
from twoclock.studies.assemble import assemble
from twoclock.studies.protocol import Engine, Study, StudyDefaults, nested


def defaults(model) -> StudyDefaults:
    """Every model takes part, with its own grid."""
    return StudyDefaults(sweep=model.default_sweep)


@dataclass(frozen=True)
class Config:
    """The grid (each model's `default_sweep` unless flags say otherwise) and the critical
    batch's threshold."""
    SCRIPT = "critical_batch.py"
    DESCRIPTION = ("Both clocks against batch size: sweep batch x lr0 x seed, print both "
                   "clocks, write JSON and a figure.")
    DEFAULTS = staticmethod(defaults)
    ENGINE_FLAGS = True
    sweep: SweepConfig = nested(SweepConfig(), "sweep", rename={"lr0s": "lr0"})
    delta: float = param(DELTA, "critical batch: N_prog(B)/N_prog(B_min) >= 1 + delta")

    def __post_init__(self):
        require_positive("delta", self.delta)

    @property
    def batches(self) -> tuple:
        return self.sweep.batches

    def output_name(self, model, given) -> str:
        del given
        return f"critical_batch_{model.name}"


def _join(engine: Engine) -> None:
    """Join a multi-host run, check the devices and the float type, before simulating."""
    if engine.distributed is not None:
        try:
            jax.distributed.initialize(*engine.distributed)
        except Exception as e:  # unreachable coordinator, a clash of ids, ...
            raise Refused(f"--distributed: could not join the run ({one_line(e)})") from None
    check_devices()
    if engine.x64:
        jax.config.update("jax_enable_x64", True)


def run(model, model_cfg, opt, cfg: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict | None:
    """The headline result; None on the processes of a multi-host run other than 0."""
    _join(engine)
    sweep = cfg.sweep
    t0 = time.perf_counter()
    max_lanes = engine.max_lanes or DEFAULT_MAX_LANES
    store = None
    if engine.store is not None:
        key_cfg = results.config_dict(model_name=model.name, model=model_cfg, optimizer=opt,
                                      sweep=sweep, x64=engine.x64, max_lanes=max_lanes,
                                      devices=jax.device_count(),
                                      twoclock=results.versions()["twoclock"],
                                      # auto gives the numbers of fused (or of quick, where
                                      # those are the same); a forced choice has its own store
                                      **({} if engine.codegen == "auto" else
                                         {"codegen": engine.codegen}))
        store = Store(engine.store, model.name, key_cfg)
    res = run_sweep(model, model_cfg, opt, sweep, quiet=quiet, store=store,
                    resume=engine.resume, max_lanes=max_lanes,
                    analysis_bytes=results.analysis_bytes(sweep), codegen=engine.codegen,
                    keep=keep)
    # the clocks on disk before the theory, whose memory and time grow with the model
    if jax.process_index() == 0:  # (multi-host: process 0 writes)
        engine.save_ahead("stopped after simulating, before the theory and the report finished")
    runs, crit = assemble(model, model_cfg, opt, sweep, res, delta=cfg.delta)
    if jax.process_index() != 0:  # multi-host: process 0 reports and writes
        return None
    return {
        "schema": results.SCHEMA, "model": model.name, "unit": model.unit, "runs": runs,
        "critical_batch": crit,
        "config": results.config_dict(model=model_cfg, optimizer=opt, sweep=sweep,
                                      delta=cfg.delta, x64=engine.x64),
        "versions": results.versions(),
        "seconds": {"simulation": res.seconds, "total": time.perf_counter() - t0},
        "padded_fraction": res.padded_fraction,
        "store": None if store is None else {"path": store.path, "key": store.key,
                                             "reused_chunks": res.reused_chunks},
    }


def report(out: dict) -> str:
    """Both clocks per (batch, lr0), the critical batches, and what the simulation cost."""
    n = len(out["runs"]) * out["config"]["sweep"]["seeds"]
    return (f"{tables.clock_table(out)}\n{tables.critical_table(out)}\n\n"
            f"simulated {n} runs in {out['seconds']['simulation']:.1f} s "
            f"(padding {100 * out['padded_fraction']:.2f}% of useful updates)")


def figure(out: dict):
    """Both clocks against batch, one panel per lr0 (twoclock.figures.critical_batch)."""
    return plotting.clocks_vs_batch_figure(out, unit=out["unit"])


STUDY = Study("headline", Config, run, report, figure)
