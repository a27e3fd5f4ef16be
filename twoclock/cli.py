"""The headline command: sweep batch x lr0 x seed, print both clocks, write JSON and a figure.

Also what every experiment shares: one-line errors (exit 2), the output flags, `check_outputs`
(paths checked before simulating), `guard` (the end-of-run safety net) and `publish`.
"""
import argparse
from contextlib import contextmanager
import os
import sys
import time

import jax

from twoclock import plotting, report, results, safety
from twoclock.codegen import CODEGENS
from twoclock.config import OptimConfig, SweepConfig, require, require_int, require_positive
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


def json_path(ns, name: str) -> str:
    return ns.json or os.path.join(ns.out, f"{name}.json")


def check_outputs(ns, name: str, prog: str | None = None) -> None:
    """Before simulating: exit 2 with one line unless the JSON path, the figure folder (unless
    --no-figure) and the store folder (where used) can be written."""
    prog = prog or os.path.basename(sys.argv[0])
    try:
        safety.check_file(json_path(ns, name), "--json" if ns.json else f"--out ({name}.json)")
        if not ns.no_figure:
            safety.check_folder(ns.out, "--out")
            for ext in ("pdf", "png"):
                safety.check_file(os.path.join(ns.out, f"{name}.{ext}"), "the figure")
        if hasattr(ns, "no_store") and not ns.no_store:  # the store: --store, or OUT/store
            safety.check_folder(ns.store or os.path.join(ns.out, "store"),
                                "--store" if ns.store else "--out (its store/)")
    except safety.Refused as e:
        fail(prog, str(e))


@contextmanager
def guard(ns, name: str, prog: str):
    """Around everything from the first simulation to publish: outputs checked first (exit 2);
    a sweep refused before simulating exits 2 with one line; any failure after simulating
    saves the clocks to OUT/name.partial.json and exits 3 with one line (twoclock.safety)."""
    check_outputs(ns, name, prog)
    with safety.rescue(prog, json_path(ns, name), fallback=(ns.out,)):
        yield


def publish(ns, name: str, out: dict, text, figure=None) -> str:
    """Print text (a string, or text(out)), write out as strict JSON to ns.json (default
    OUT/name.json), print the path, and unless --no-figure draw figure(out) to
    OUT/name.{pdf,png}. The JSON is written even if text(out) fails (which is then raised).
    Returns the JSON path."""
    path = json_path(ns, name)
    safety.note_result(out)
    table_error = None
    try:
        print(text(out) if callable(text) else text, flush=True)
    except Exception as e:  # the results matter more than their table: write them, then raise
        table_error = e
    results.write_json(path, out)
    safety.note_written(path)
    print(f"wrote {path}", flush=True)
    if table_error is not None:
        raise table_error
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
                   help=f"runs per compiled chunk (default {DEFAULT_MAX_LANES}); smaller uses "
                        "less memory")
    o.add_argument("--codegen", choices=CODEGENS, default="auto",
                   help="XLA's CPU code generator: quick compiles faster and runs slower than "
                        "fused; auto picks quick for a short sweep whose numbers it leaves "
                        "unchanged (default auto)")
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


# what jax.distributed.initialize() can read the coordinator, count and index from
CLUSTER_ENV = ("SLURM_JOB_ID", "OMPI_MCA_orte_hnp_uri", "TPU_WORKER_HOSTNAMES",
               "KUBERNETES_SERVICE_HOST")
DISTRIBUTED = ("coordinator", "num_processes", "process_id")


def check_distributed(ns) -> None:
    """ValueError unless the distributed flags are coherent."""
    flag = lambda f: "--" + f.replace("_", "-")
    given = [f for f in DISTRIBUTED if getattr(ns, f) is not None]
    if not ns.distributed:
        require(not given, flag(given[0]) if given else "", "given with --distributed",
                getattr(ns, given[0]) if given else None)
        return
    missing = [flag(f) for f in DISTRIBUTED if getattr(ns, f) is None]
    if missing and not any(v in os.environ for v in CLUSTER_ENV):
        raise ValueError(f"--distributed needs {', '.join(missing)} (no SLURM, Open MPI, TPU "
                         "or Kubernetes cluster is detected to supply them)")
    if ns.coordinator is not None:
        host, _, port = ns.coordinator.rpartition(":")
        require(bool(host) and port.isdigit() and 0 < int(port) < 65536, "--coordinator",
                "HOST:PORT with a port in 1..65535", ns.coordinator)
    if ns.num_processes is not None:
        require_int("--num-processes", ns.num_processes)
    if ns.process_id is not None:
        n = ns.num_processes
        require(ns.process_id >= 0 and (n is None or ns.process_id < n), "--process-id",
                "in [0, --num-processes)" if n else "an integer >= 0", ns.process_id)


def build(argv, prog="critical_batch.py"):
    """Parse argv into (model, model_cfg, opt, sweep, ns); ValueError for invalid values."""
    model = model_from_argv(argv, prog)
    p = OneLineParser(prog=prog, description=__doc__)
    add_sweep_args(p, model)
    ns = p.parse_args(argv)
    sweep = config_from_flags(ns, SweepConfig, defaults=model.default_sweep)
    opt = config_from_flags(ns, OptimConfig)
    model_cfg = model_config(ns, model, sweep.batches)
    require_positive("delta", ns.delta)
    if ns.max_lanes is not None:
        require_int("max_lanes", ns.max_lanes)
    if ns.resume and ns.no_store:
        raise ValueError("--resume reuses chunks from the store: drop --no-store")
    if ns.store and ns.no_store:
        raise ValueError(f"--store {ns.store} and --no-store contradict each other")
    check_distributed(ns)
    return model, model_cfg, opt, sweep, ns


def main(argv=None, prog="critical_batch.py") -> int:
    setup()
    spec, model_cfg, opt, sweep, ns = parsed(prog, lambda a: build(a, prog), argv)
    name = f"critical_batch_{spec.name}"
    check_outputs(ns, name, prog)
    if ns.distributed:
        try:
            jax.distributed.initialize(ns.coordinator, ns.num_processes, ns.process_id)
        except Exception as e:  # unreachable coordinator, a clash of ids, ...
            fail(prog, f"--distributed: could not join the run ({safety.one_line(e)})")
    if ns.x64:
        jax.config.update("jax_enable_x64", True)

    t0 = time.perf_counter()
    max_lanes = ns.max_lanes or DEFAULT_MAX_LANES
    store = None
    if not ns.no_store:
        key_cfg = results.config_dict(model_name=spec.name, model=model_cfg, optimizer=opt,
                                      sweep=sweep, x64=ns.x64, max_lanes=max_lanes,
                                      devices=jax.device_count(),
                                      twoclock=results.versions()["twoclock"],
                                      # auto gives the numbers of fused (or of quick, where
                                      # those are the same); a forced choice has its own store
                                      **({} if ns.codegen == "auto" else
                                         {"codegen": ns.codegen}))
        store = Store(ns.store or os.path.join(ns.out, "store"), spec.name, key_cfg)
    with guard(ns, name, prog):
        res = run_sweep(spec.name, model_cfg, opt, sweep, quiet=ns.quiet, store=store,
                        resume=ns.resume, max_lanes=max_lanes,
                        analysis_bytes=results.analysis_bytes(sweep), codegen=ns.codegen)
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
        text = lambda o: (f"{report.clock_table(o)}\n{report.critical_table(o)}\n\n"
                          f"simulated {res.prog_n.size} runs in {res.seconds:.1f} s "
                          f"(padding {100 * res.padded_fraction:.2f}% of useful updates)")
        publish(ns, name, out, text, lambda o: plotting.clocks_vs_batch_figure(o, unit=spec.unit))
    return 0
