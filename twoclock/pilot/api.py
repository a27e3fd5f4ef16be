"""The Python entry of the log planner: `twoclock.plan_logs(source, progress, failures)`, what
`experiments/plan.py --logs` runs, on a file or on a table already in memory.

    import twoclock
    plan = twoclock.plan_logs(table, "heldout_acc>=0.75", ["kl>=1.5"], predict=[512, 1024])
    plan.critical_batch.batch, plan.recommendation["constant"], plan.to_json()  # = plan.json

Numpy and the standard library only (no JAX, no pandas needed).
"""
from twoclock.pilot import updates as upd
from twoclock.pilot.conditions import parse_per_run
from twoclock.pilot.logs import logs_plan
from twoclock.pilot.result import LogsPlan


def _items(given) -> list:
    """{KEY: VALUE} as the command line's ['KEY=VALUE', ...] (the same checks); a list of such
    strings as it is."""
    if hasattr(given, "items"):
        return [f"{k}={v}" for k, v in given.items()]
    return list(given or ())


def plan_logs(source, progress: str, failures=(), *, predict=None, margin: float = 0.1,
              level: float = 0.95, smoothing: str | None = None, columns=None,
              clip: str | None = None, clip_bind: float = 0.02, clip_steps: str = "fixed",
              forms=None, preset: str | None = None, batch=None, lr=None,
              batch_from_name: str | None = None, samples_from_step: str | None = None,
              restarts: str = "refuse", updates=None,
              progress_form: str | None = None, predict_rule=None,
              eval_items: int | None = None, floor_out: float | None = None,
              run_scatter: float | None = None) -> LogsPlan:
    """Plan from the curves pilot runs logged: find each run's clocks, fit them, predict and
    recommend (docs/plan.md); the flags of `plan.py --logs`, by name.

    source: a log file (CSV, JSON Lines) or a trainer's own files (a TensorBoard directory,
      trainer_state.json, verl's .jsonl); or a table in memory, one row per logged step: a
      mapping {column: sequence} or a pandas DataFrame, with the columns a CSV log has (run,
      batch, lr, samples, the metrics), checked as a CSV is (errors name 'table row N').
    progress: the target, e.g. 'heldout_acc>=0.75'.
    failures: failure conditions, e.g. ['kl>=1.5', 'heldout_acc<=peak-0.1'] (one string: one;
      none: a progress-only plan, docs/plan.md).
    predict: batches to predict and plan over (default: the pilot batches), each B, or for
      runs that take K optimizer updates per rollout batch (B, K) or 'B:K' (--predict B:K;
      a K other than the pilots' needs progress_form 'adam'; B alone: K = 1 with it, the
      pilots' K without; docs/plan.md, "Updates per rollout batch").
    margin: fraction of the failure clock that must be left at the target; level: of the bands.
    smoothing: 'ema:T' or 'window:W' (samples), 'quad:N' (N logged points); columns: {NAME:
      COLUMN}, e.g. {'samples': 'train/num_samples'}; clip: the logged clipped-share metric
      (clip_bind: the share that binds; clip_steps: 'fixed' or 'per_batch'); forms: {CONDITION:
      'power' | 'coupled' | 'knee'}; preset ('trl', 'verl', 'openrlhf'), batch and lr ({RUN
      or glob: value}), batch_from_name (a regular expression on run names), samples_from_step
      (a step column: samples = step x batch), restarts ('refuse' or 'keep-last'), updates ({RUN or
      glob: K}, optimizer updates per rollout batch): how runs are read (docs/plan.md);
      progress_form: 'adam', the progress form that reads each run's lr and K (pilots with
      unequal K need it); predict_rule: with it, the rule to predict under, 'P[:LR0@B0]'
      (--predict-rule) or (p, lr0, b0) (default: the rule most pilots share); eval_items: the
      items each evaluation of the progress metric (a share in [0, 1]) scores, whose binomial
      noise is the progress band's crossing noise where larger than the residuals' (docs/plan.md;
      the joint fit of several targets takes it too);
      floor_out: the progress metric's optimum (0 for a loss, 1 for an accuracy): take Adam's
      noise floor out of the progress clock, each run's plateau read from its logged tail
      (needs progress_form 'adam'; docs/plan.md, "Adam's progress form"); run_scatter: the
      SD of one run's log clock about its batch's, for one run's band (`run_band`; default:
      measured where a pilot batch has two or more runs; docs/plan.md, "One run's band").

    Returns a LogsPlan (twoclock.pilot.result): its to_json() is the plan.json the command
    writes (docs/results.md names every key). Bad input: PilotError (a ValueError), one line.
    """
    failures = [failures] if isinstance(failures, str) else list(failures)
    reading = {k: v for k, v in (("preset", preset),
                                 ("batch", parse_per_run(_items(batch), "--batch")),
                                 ("lr", parse_per_run(_items(lr), "--lr")),
                                 ("batch_from_name", batch_from_name),
                                 ("samples_from_step", samples_from_step),
                                 ("updates", upd.parse(_items(updates)))) if v}
    return logs_plan(source, progress, failures, predict=predict, margin=margin, level=level,
                     smoothing=smoothing, columns=_items(columns), clip=clip,
                     clip_bind=clip_bind, clip_steps=clip_steps, forms=_items(forms),
                     restarts=restarts, progress_form=progress_form,
                     predict_rule=predict_rule, eval_items=eval_items, floor_out=floor_out,
                     run_scatter=run_scatter,
                     **reading)


__all__ = ["plan_logs", "LogsPlan"]
