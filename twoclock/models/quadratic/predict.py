"""The quadratic model's theory columns: what each result entry is predicted to measure.

Every prediction names its method in `theory.method` (key -> method):
- "first-passage": the median over seeds of the first crossing of the noisy clock, from the exact
  Gaussian law of the iterates (SGD / momentum progress; a saddle-point marginal and a copula
  with the loss's correlation at every lag), or of the drift (Adam failure: its exact step law,
  a Brownian first passage monitored once per update);
- "exact": the first update where the expected loss meets the target (exact moments);
- "mean-field": mean-field Adam (deterministic preconditioner), or a mean drift;
- "mean-field first-passage": the first-passage clock of mean-field Adam's Gaussian iterates.
"""
from twoclock.analysis import clocks
from twoclock.config import OptimConfig
from twoclock.models.quadratic import theory
from twoclock.models.quadratic.config import QuadraticConfig


def _adam_run(cfg, opt, sweep, r, drifts) -> dict:
    th, method = {}, {}
    if drifts:
        pred = theory.adam_failure_samples(cfg, opt, r["lr0"], r["batch"])
        th["failure_samples"], th["failure_regime"] = pred["samples"], pred["regime"]
        method["failure_samples"] = pred["method"]
    if not cfg.rotate:  # the mean-field Adam recursion is per eigen-coordinate
        n = theory.adam_progress_samples(cfg, opt, r["lr0"], r["batch"], budget=sweep.budget)
        method["progress_samples"] = "mean-field"
        if n is None:  # E[L] never meets the target: the runs cross through fluctuations only
            n = theory.adam_progress_passage(cfg, opt, r["lr0"], r["batch"], budget=sweep.budget)
            method["progress_samples"] = "mean-field first-passage"
        th["progress_samples"] = n
    return {**th, "method": method}


def _linear_run(cfg, opt, sweep, r, drifts) -> dict:
    B, steps = r["batch"], sweep.budget // r["batch"]
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
        for cb in crit:
            cb["theory"] = theory.critical_batch_mechanism(cfg, opt, cb["lr0"])
    elif opt.name != "adam":
        for cb in crit:  # the rule the measurement uses, applied to the first-passage clocks
            rows = sorted((r for r in runs if r["lr0"] == cb["lr0"]), key=lambda r: r["batch"])
            pred = [[r["theory"]["progress_samples"] or 0] for r in rows]
            est = clocks.critical_batch([r["batch"] for r in rows], pred)["batch"]
            cb["theory"] = {"mechanism": "curvature", "batch": est, "method": "first-passage",
                            "curvature": theory.critical_batch_curvature(cfg, opt, cb["lr0"]),
                            "saturation": None}
