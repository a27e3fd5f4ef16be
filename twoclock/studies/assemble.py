"""From a sweep to its result entries: the one assembly every study that reports clocks per
(batch, lr0) uses (the headline, the bandit's regimes, the policy study's cells)."""
from twoclock.analysis import results
from twoclock.config import DELTA


def assemble(model, model_cfg, opt, sweep, res, *, delta: float = DELTA, extra=None,
             describe: bool = True) -> tuple:
    """(runs, crit): one entry per (batch, lr0) with both clocks and the extra clocks `extra`
    (default: every extra clock of the result), the critical batch per lr0, the model's
    predictions added to both (`Model.predict`) and, with describe, what each batch is made
    of (`Model.describe_batch`)."""
    extra = tuple(k for k in res.extra if k.endswith("_n")) if extra is None else tuple(extra)
    runs = results.run_entries(res, opt, extra_summaries=extra)
    crit = results.critical_batches(res, delta=delta)
    model.predict(model_cfg, opt, sweep, res, runs, crit)
    if describe:
        for r in runs:
            r.update(model.describe_batch(model_cfg, r["batch"]))
    return runs, crit


def run_cells(model, todo, *, title: str, store_root, max_lanes: int, keep=None,
              quiet: bool = False, cell_key=lambda name: name):
    """Each cell (name, model config, OptimConfig, SweepConfig) of todo through run_sweep, in
    order, each resumable from its own store under store_root (None: no store), its key naming
    the cell as cell_key(name). Yields (name, cfg, opt, sweep, SweepResult, seconds)."""
    import time
    from twoclock.engine.store import Store  # the engine's home, looked up at call time
    from twoclock.engine.sweep import run_sweep
    t0 = time.perf_counter()
    for k, (name, cfg, opt, sweep) in enumerate(todo):
        if not quiet:
            print(f"[{title}] cell {k + 1}/{len(todo)}: {name} "
                  f"({time.perf_counter() - t0:.0f} s so far)")
        store = None
        if store_root is not None:
            store = Store(store_root, model.name, results.config_dict(
                model_name=model.name, model=cfg, optimizer=opt, sweep=sweep,
                study_cell=cell_key(name)))
        t = time.perf_counter()
        res = run_sweep(model, cfg, opt, sweep, quiet=quiet, store=store, resume=True,
                        max_lanes=max_lanes, keep=keep)
        yield name, cfg, opt, sweep, res, time.perf_counter() - t
