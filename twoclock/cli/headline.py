"""The headline command: sweep batch x lr0 x seed, print both clocks, write JSON and a figure."""
import os
import time

import jax

from twoclock.analysis import report, results
from twoclock.atomic import Refused, one_line
from twoclock.cli.common import (OneLineParser, add_model_flags, add_output_args, check_outputs,
                                 fail, guard, model_config, model_from_argv, parsed, publish)
from twoclock.cli.flags import add_config_flags, config_from_flags
from twoclock.config import DELTA, OptimConfig, SweepConfig, require, require_int, require_positive
from twoclock.engine.layout import CODEGENS
from twoclock.engine.runtime import check_devices, setup
from twoclock.engine.store import Store
from twoclock.engine.sweep import DEFAULT_MAX_LANES, run_sweep
from twoclock.figures import critical_batch as plotting


def add_sweep_args(p, model) -> None:
    """The sweep, optimizer and model flags (generated from their configs) and the engine's."""
    add_config_flags(p.add_argument_group("sweep"), SweepConfig, rename={"lr0s": "lr0"},
                     defaults=model.default_sweep)
    add_model_flags(p, model)
    p.add_argument("--delta", type=float, default=DELTA,
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
            fail(prog, f"--distributed: could not join the run ({one_line(e)})")
    try:
        check_devices()
    except Refused as e:
        fail(prog, str(e))
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
    with guard(ns, name, prog) as rescue:
        res = run_sweep(spec, model_cfg, opt, sweep, quiet=ns.quiet, store=store,
                        resume=ns.resume, max_lanes=max_lanes,
                        analysis_bytes=results.analysis_bytes(sweep), codegen=ns.codegen,
                        keep=rescue.keep)
        # the clocks on disk before the theory, whose memory and time grow with the model
        if jax.process_index() == 0:  # (multi-host: process 0 writes)
            rescue.save_ahead("stopped after simulating, before the theory and the report "
                              "finished")
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
        publish(ns, name, out, text, lambda o: plotting.clocks_vs_batch_figure(o, unit=spec.unit),
                rescue=rescue)
    return 0
