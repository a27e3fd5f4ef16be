"""The headline command: sweep batch x lr0 x seed, print both clocks, write JSON and a figure."""
import argparse
import importlib
import os
import sys
import time

from twoclock.config import OptimConfig, SweepConfig


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input as one line and exit code 2 (no usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(prog: str, message: str):
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


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
    from twoclock import results
    path = ns.json or os.path.join(ns.out, f"{name}.json")
    results.write_json(path, out)
    print(text)
    print(f"wrote {path}")
    if figure is not None and not ns.no_figure:
        from twoclock.figures_style import save
        print("figure: " + ", ".join(save(figure(out), os.path.join(ns.out, name))))
    return path


def add_sweep_args(p) -> None:
    g = p.add_argument_group("sweep")
    g.add_argument("--batches", type=int, nargs="+", help="batch sizes (space-separated)")
    g.add_argument("--lr0", type=float, nargs="+", help="base learning rates at batch b0")
    g.add_argument("--b0", type=float, default=8.0, help="reference batch of the LR rule")
    g.add_argument("--lr-rule", default="sqrt", help="fixed | sqrt | linear")
    g.add_argument("--optimizer", default="adam", help="sgd | momentum | adam")
    g.add_argument("--b1", type=float, default=0.9)
    g.add_argument("--b2", type=float, default=0.999)
    g.add_argument("--eps", type=float, default=1e-8)
    g.add_argument("--momentum", type=float, default=0.9, help="heavy-ball coefficient")
    g.add_argument("--malladi", action="store_true",
                   help="sqrt-rule companions: 1-beta -> k(1-beta), eps -> eps/sqrt(k)")
    g.add_argument("--seeds", type=int, help="seeds per (batch, lr0)")
    g.add_argument("--budget", type=int, help="sample budget per run")
    g.add_argument("--seed", type=int, default=0, help="base PRNG seed")
    g.add_argument("--n-ckpt", type=int, default=128, help="checkpoints recorded per run")
    g.add_argument("--delta", type=float, default=0.2,
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


def model_defaults(spec) -> dict:
    """A model module's DEFAULT_SWEEP (batches, lr0s, seeds, budget), if it defines one."""
    return dict(getattr(importlib.import_module(spec.make_run.__module__), "DEFAULT_SWEEP", {}))


def build(argv, prog="critical_batch.py"):
    """Parse argv into (spec, model_cfg, opt, sweep, ns); ValueError for invalid values."""
    import twoclock  # noqa: F401  (registers the models)
    from twoclock.sweep import MODELS

    pre = OneLineParser(prog=prog, add_help=False)
    pre.add_argument("--model", default="quadratic")
    known, _ = pre.parse_known_args(argv)
    if known.model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(sorted(MODELS))} (got {known.model!r})")
    spec = MODELS[known.model]
    p = OneLineParser(prog=prog, description=__doc__)
    p.add_argument("--model", default="quadratic", help=" | ".join(sorted(MODELS)))
    add_sweep_args(p)
    spec.add_args(p.add_argument_group(f"{spec.name} model"))
    ns = p.parse_args(argv)
    d = {**{f: getattr(SweepConfig(), f) for f in ("batches", "lr0s", "seeds", "budget")},
         **model_defaults(spec)}
    sweep = SweepConfig(
        batches=tuple(ns.batches or d["batches"]), lr0s=tuple(ns.lr0 or d["lr0s"]),
        seeds=ns.seeds if ns.seeds is not None else d["seeds"],
        budget=ns.budget if ns.budget is not None else d["budget"],
        seed=ns.seed, n_ckpt=ns.n_ckpt)
    opt = OptimConfig(name=ns.optimizer, lr_rule=ns.lr_rule, b0=ns.b0, b1=ns.b1, b2=ns.b2,
                      eps=ns.eps, momentum=ns.momentum, malladi=ns.malladi)
    model_cfg = spec.config_from_args(ns)
    if not (0 < ns.delta):
        raise ValueError(f"delta must be > 0 (got {ns.delta!r})")
    if ns.max_lanes is not None and ns.max_lanes < 1:
        raise ValueError(f"max_lanes must be an integer >= 1 (got {ns.max_lanes!r})")
    return spec, model_cfg, opt, sweep, ns


def main(argv=None, prog="critical_batch.py") -> int:
    argv = sys.argv[1:] if argv is None else argv
    from twoclock.runtime import setup
    setup()
    try:
        spec, model_cfg, opt, sweep, ns = build(argv, prog)
    except ValueError as e:
        fail(prog, str(e))
    import jax
    if ns.distributed:
        jax.distributed.initialize(ns.coordinator, ns.num_processes, ns.process_id)
    if ns.x64:
        jax.config.update("jax_enable_x64", True)
    from twoclock import plotting, report, results
    from twoclock.store import Store
    from twoclock.sweep import DEFAULT_MAX_LANES, run_sweep

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
    if spec.annotate is not None:
        spec.annotate(model_cfg, opt, sweep, res, runs, crit)
    module = importlib.import_module(spec.make_run.__module__)
    if hasattr(module, "describe_batch"):
        for r in runs:
            r.update(module.describe_batch(model_cfg, r["batch"]))
    out = {
        "model": spec.name, "unit": spec.unit, "runs": runs, "critical_batch": crit,
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
