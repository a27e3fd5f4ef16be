"""The headline command: sweep batch x lr0 x seed, print both clocks, write JSON and a figure."""
import argparse
import os
import sys
import time

import jax

from twoclock import plotting, report, results
from twoclock.config import OptimConfig, SweepConfig
from twoclock.figures_style import save
from twoclock.flags import add_config_flags, config_from_flags
from twoclock.models import MODELS, get as get_model
from twoclock.runtime import setup
from twoclock.store import Store
from twoclock.sweep import DEFAULT_MAX_LANES, run_sweep


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input as one line and exit code 2 (no usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(prog: str, message: str):
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


def parsed(prog: str, parse, argv=None):
    """parse(argv) (default: the command line), a ValueError turned into a one-line error
    naming the parameter and exit code 2, before anything is simulated."""
    try:
        return parse(sys.argv[1:] if argv is None else argv)
    except ValueError as e:
        fail(prog, str(e))


def add_output_args(p, name: str):
    """--out, --json, --no-figure, --quiet: the output flags every experiment shares."""
    o = p.add_argument_group("output")
    o.add_argument("--out", default="results", help="folder for the JSON and the figure")
    o.add_argument("--json", help=f"JSON path (default OUT/{name}.json)")
    o.add_argument("--no-figure", action="store_true")
    o.add_argument("--quiet", action="store_true", help="no progress output")
    return o


def publish(ns, name: str, out: dict, text: str, figure=None) -> str:
    """Write out atomically to ns.json (default OUT/name.json), print text and the path, and
    unless --no-figure draw figure(out) to OUT/name.{pdf,png}. Returns the JSON path."""
    path = ns.json or os.path.join(ns.out, f"{name}.json")
    results.write_json(path, out)
    print(text)
    print(f"wrote {path}")
    if figure is not None and not ns.no_figure:
        print("figure: " + ", ".join(save(figure(out), os.path.join(ns.out, name))))
    return path


def add_model_flags(p, model, defaults: dict | None = None, skip_optim=()) -> None:
    """--model and the optimizer's and the model's flags (generated from their configs);
    defaults: the model-config defaults of this command, where they differ from the config's."""
    p.add_argument("--model", default="quadratic", help=" | ".join(MODELS))
    add_config_flags(p.add_argument_group("optimizer"), OptimConfig, rename={"name": "optimizer"},
                     skip=skip_optim)
    add_config_flags(p.add_argument_group(f"{model.name} model"), model.config, defaults=defaults)


def model_config(ns, model, batches, defaults: dict | None = None):
    """The model's config from its flags, checked against every batch it will run (a batch the
    bandit cannot split into P x G fails here, before any simulation)."""
    cfg = config_from_flags(ns, model.config, defaults=defaults)
    for b in batches:
        model.describe_batch(cfg, b)
    return cfg


def add_sweep_args(p, model) -> None:
    """The sweep, optimizer and model flags (generated from their configs) and the engine's."""
    add_config_flags(p.add_argument_group("sweep"), SweepConfig, rename={"lr0s": "lr0"},
                     defaults=model.default_sweep)
    add_model_flags(p, model)
    p.add_argument("--delta", type=float, default=0.2,
                   help="critical batch: N_prog(B)/N_prog(B_min) >= 1 + delta")
    o = add_output_args(p, "critical_batch_MODEL")
    o.add_argument("--x64", action="store_true", help="simulate in float64")
    o.add_argument("--store", default=None,
                   help="results store folder (default OUT/store); finished chunks live there")
    o.add_argument("--no-store", action="store_true", help="keep nothing between runs")
    o.add_argument("--resume", action="store_true",
                   help="reuse the finished chunks of an interrupted identical sweep")
    o.add_argument("--max-lanes", type=int, default=None,
                   help="runs per compiled chunk (default 16384); smaller uses less memory")
    o.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() first (multi-host runs; on a "
                        "SLURM/TPU/MPI cluster the three flags below are auto-detected)")
    o.add_argument("--coordinator", help="HOST:PORT of process 0 (with --distributed)")
    o.add_argument("--num-processes", type=int, help="number of processes (with --distributed)")
    o.add_argument("--process-id", type=int, help="this process's index (with --distributed)")


def model_from_argv(argv, prog: str):
    """The Model named by --model (default quadratic), read before the other flags."""
    pre = OneLineParser(prog=prog, add_help=False)
    pre.add_argument("--model", default="quadratic")
    known, _ = pre.parse_known_args(argv)
    return get_model(known.model)


def build(argv, prog="critical_batch.py"):
    """Parse argv into (model, model_cfg, opt, sweep, ns); ValueError for invalid values."""
    model = model_from_argv(argv, prog)
    p = OneLineParser(prog=prog, description=__doc__)
    add_sweep_args(p, model)
    ns = p.parse_args(argv)
    sweep = config_from_flags(ns, SweepConfig, defaults=model.default_sweep)
    opt = config_from_flags(ns, OptimConfig)
    model_cfg = model_config(ns, model, sweep.batches)
    if not (0 < ns.delta):
        raise ValueError(f"delta must be > 0 (got {ns.delta!r})")
    if ns.max_lanes is not None and ns.max_lanes < 1:
        raise ValueError(f"max_lanes must be an integer >= 1 (got {ns.max_lanes!r})")
    return model, model_cfg, opt, sweep, ns


def main(argv=None, prog="critical_batch.py") -> int:
    setup()
    spec, model_cfg, opt, sweep, ns = parsed(prog, lambda a: build(a, prog), argv)
    if ns.distributed:
        jax.distributed.initialize(ns.coordinator, ns.num_processes, ns.process_id)
    if ns.x64:
        jax.config.update("jax_enable_x64", True)

    t0 = time.perf_counter()
    max_lanes = ns.max_lanes or DEFAULT_MAX_LANES
    store = None
    if not ns.no_store:
        key_cfg = results.config_dict(model_name=spec.name, model=model_cfg, optimizer=opt,
                                      sweep=sweep, x64=ns.x64, max_lanes=max_lanes,
                                      devices=jax.device_count(),
                                      twoclock=results.versions()["twoclock"])
        store = Store(ns.store or os.path.join(ns.out, "store"), spec.name, key_cfg)
    res = run_sweep(spec.name, model_cfg, opt, sweep, quiet=ns.quiet, store=store,
                    resume=ns.resume, max_lanes=max_lanes)
    extras = tuple(k for k in res.extra if k.endswith("_n"))
    runs = results.run_entries(res, opt, extra_summaries=extras)
    crit = results.critical_batches(res, delta=ns.delta)
    spec.predict(model_cfg, opt, sweep, res, runs, crit)
    for r in runs:
        r.update(spec.describe_batch(model_cfg, r["batch"]))
    out = {
        "schema": results.SCHEMA, "model": spec.name, "unit": spec.unit, "runs": runs,
        "critical_batch": crit,
        "config": results.config_dict(model=model_cfg, optimizer=opt, sweep=sweep,
                                      delta=ns.delta, x64=ns.x64),
        "versions": results.versions(),
        "seconds": {"simulation": res.seconds, "total": time.perf_counter() - t0},
        "padded_fraction": res.padded_fraction,
        "store": None if store is None else {"path": store.path, "key": store.key,
                                             "reused_chunks": res.reused_chunks},
    }
    if jax.process_index() != 0:  # multi-host: process 0 reports and writes
        return 0
    text = (f"{report.clock_table(out)}\n{report.critical_table(out)}\n\n"
            f"simulated {res.prog_n.size} runs in {res.seconds:.1f} s "
            f"(padding {100 * res.padded_fraction:.2f}% of useful updates)")
    publish(ns, f"critical_batch_{spec.name}", out, text,
            lambda o: plotting.clocks_vs_batch_figure(o, unit=spec.unit))
    return 0
