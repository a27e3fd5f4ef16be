"""The quadratic model's theory columns: what each result entry is predicted to measure.

Every prediction names its method in `theory.method` (key -> method):
- "first-passage": the median over seeds of the first crossing of the noisy clock, from the exact
  Gaussian law of the iterates (SGD / momentum progress; a saddle-point marginal and a copula
  with the loss's correlation at every lag), or of the drift (Adam failure: its exact step law,
  a Brownian first passage monitored once per update);
- "exact": the first update where the expected loss meets the target (exact moments);
- "mean-field": mean-field Adam (deterministic preconditioner), or a mean drift;
- "mean-field first-passage": the first-passage clock of mean-field Adam's Gaussian iterates.

Bounds. Every search is bounded by the sweep's budget (the failure clock's by 4 budgets or
2^16 updates, whichever is more, so a censored run still gets its prediction where it lies
close). The progress theory's work is
dim x updates per run (a NumPy or JAX recursion over every coordinate, in memory bounded by
first_passage.PassageStream); above THEORY_MAX_WORK that theory is skipped, its value null, its
method "skipped" and the reason under theory["skipped"].
"""
from twoclock.analysis import clocks
from twoclock.config import OptimConfig
from twoclock.models.quadratic import theory
from twoclock.models.quadratic.config import QuadraticConfig


THEORY_MAX_WORK = 2**27  # dim x updates of one run's progress theory: ~5-10 s on one core
FAILURE_BUDGETS = 4  # the failure clock's search: up to 4 budgets' worth of updates ...
FAILURE_MIN_UPDATES = 2**16  # ... and at least this many (~1.5 s)


def too_big(cfg, updates: int) -> str | None:
    """Why the progress theory of a run of `updates` updates is skipped, or None."""
    work = cfg.dim * int(updates)
    if work <= THEORY_MAX_WORK:
        return None
    return (f"dim {cfg.dim} x {int(updates)} updates = {work:.3g} exceeds the theory's "
            f"{THEORY_MAX_WORK:.3g} (twoclock.models.quadratic.predict.THEORY_MAX_WORK)")


def _skip(th: dict, method: dict, key: str, reason: str) -> None:
    th[key], method[key], th["skipped"] = None, "skipped", reason


def _adam_run(cfg, opt, sweep, r, drifts) -> dict:
    th, method = {}, {}
    if drifts:
        pred = theory.adam_failure_samples(
            cfg, opt, r["lr0"], r["batch"],
            max_updates=max(FAILURE_MIN_UPDATES, FAILURE_BUDGETS * sweep.budget // r["batch"]))
        th["failure_samples"], th["failure_regime"] = pred["samples"], pred["regime"]
        method["failure_samples"] = pred["method"]
    reason = too_big(cfg, sweep.budget // r["batch"])
    if reason and not cfg.rotate:
        _skip(th, method, "progress_samples", reason)
    elif not cfg.rotate:  # the mean-field Adam recursion is per eigen-coordinate
        n = theory.adam_progress_samples(cfg, opt, r["lr0"], r["batch"], budget=sweep.budget)
        method["progress_samples"] = "mean-field"
        if n is None:  # E[L] never meets the target: the runs cross through fluctuations only
            n = theory.adam_progress_passage(cfg, opt, r["lr0"], r["batch"], budget=sweep.budget)
            method["progress_samples"] = "mean-field first-passage"
        th["progress_samples"] = n
    return {**th, "method": method}


def _linear_run(cfg, opt, sweep, r, drifts) -> dict:
    B, steps = r["batch"], sweep.budget // r["batch"]
    reason = too_big(cfg, steps)
    if reason:
        th, method = {}, {}
        _skip(th, method, "progress_samples", reason)
        _skip(th, method, "progress_samples_mean", reason)
        if drifts and cfg.drift_stat == "mean":
            th["failure_samples"] = theory.linear_failure_samples(cfg, opt, r["lr0"], B)
            method["failure_samples"] = "mean-field"
        return {**th, "method": method}
    t = theory.median_steps(cfg, opt, B, r["lr"], steps)
    t_mean = theory.steps_to_target(cfg, opt, B, r["lr"], steps)
    th = {"progress_samples": t * B if t else None,
          "progress_samples_mean": t_mean * B if t_mean else None}
    method = {"progress_samples": "first-passage", "progress_samples_mean": "exact"}
    if drifts and cfg.drift_stat == "mean":
        th["failure_samples"] = theory.linear_failure_samples(cfg, opt, r["lr0"], B)
        method["failure_samples"] = "mean-field"
    return {**th, "method": method}


def predict(cfg: QuadraticConfig, opt: OptimConfig, sweep, res, runs, crit) -> None:
    """Attach the theory's predictions to each run and critical batch (in place)."""
    del res
    drifts = cfg.drift_dim >= 1 and cfg.drift_bias > 0
    run_theory = _adam_run if opt.name == "adam" else _linear_run
    for r in runs:
        r["theory"] = run_theory(cfg, opt, sweep, r, drifts)
    if opt.name == "adam" and not cfg.rotate:
        # its searches run from B0 within the sweep's budget (adam_progress: `budget`)
        budget = sweep.budget
        reason = too_big(cfg, budget // max(1, int(opt.b0)))
        for cb in crit:
            cb["theory"] = ({"mechanism": None, "batch": None, "method": "skipped",
                             "curvature": None, "saturation": None, "skipped": reason}
                            if reason else theory.critical_batch_mechanism(cfg, opt, cb["lr0"],
                                                                   budget=budget))
    elif opt.name != "adam":
        for cb in crit:  # the rule the measurement uses, applied to the first-passage clocks
            rows = sorted((r for r in runs if r["lr0"] == cb["lr0"]), key=lambda r: r["batch"])
            pred = [[r["theory"]["progress_samples"] or 0] for r in rows]
            est = clocks.critical_batch([r["batch"] for r in rows], pred)["batch"]
            cb["theory"] = {"mechanism": "curvature", "batch": est, "method": "first-passage",
                            "curvature": theory.critical_batch_curvature(cfg, opt, cb["lr0"]),
                            "saturation": None}
