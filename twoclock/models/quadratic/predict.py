"""The quadratic model's theory columns: what each result entry is predicted to measure."""
from twoclock.config import OptimConfig
from twoclock.models.quadratic import theory
from twoclock.models.quadratic.config import QuadraticConfig


def predict(cfg: QuadraticConfig, opt: OptimConfig, sweep, res, runs, crit) -> None:
    """Attach the theory's predictions to each run and critical batch (in place)."""
    del res
    drifts = cfg.drift_dim >= 1 and cfg.drift_bias > 0
    for r in runs:
        th = {}
        if opt.name == "adam":
            if drifts:
                pred = theory.adam_failure_samples(cfg, opt, r["lr0"], r["batch"])
                th["failure_samples"], th["failure_regime"] = pred["samples"], pred["regime"]
            if not cfg.rotate:  # the mean-field Adam recursion is per eigen-coordinate
                th["progress_samples"] = theory.adam_progress_samples(
                    cfg, opt, r["lr0"], r["batch"], budget=sweep.budget)
        else:
            t = theory.steps_to_target(cfg, opt, r["batch"], r["lr"], sweep.budget // r["batch"])
            th["progress_samples"] = t * r["batch"] if t else None
            if drifts and cfg.drift_stat == "mean":
                th["failure_samples"] = theory.linear_failure_samples(cfg, opt, r["lr0"],
                                                                      r["batch"])
        r["theory"] = th
    if opt.name == "adam" and not cfg.rotate:
        for cb in crit:
            cb["theory"] = theory.critical_batch_mechanism(cfg, opt, cb["lr0"])
