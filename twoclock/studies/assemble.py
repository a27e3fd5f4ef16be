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
