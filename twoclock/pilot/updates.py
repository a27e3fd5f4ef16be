"""A run's optimizer updates per rollout batch, K = mini-batches x epochs (docs/plan.md,
"Updates per rollout batch"), from what is there: a logged `updates` column, or `minibatches`
and `epochs` columns (K = their product; either alone with the other taken as 1); `--updates
RUN=K` (the run's name, else a glob, as --batch); the trainer's own settings where it writes
them:
- verl: data.train_batch_size / actor_rollout_ref.actor.ppo_mini_batch_size (both in prompts;
  verl multiplies the mini-batch by actor_rollout_ref.rollout.n itself) x
  actor_rollout_ref.actor.ppo_epochs; its logged step is one rollout batch;
- TRL's GRPOConfig: num_iterations x steps_per_generation / gradient_accumulation_steps; its
  logged step is one optimizer update, K of them per generation batch.
Sources that disagree are refused in one line naming the run; none of them: K = 1."""
import math

from twoclock.pilot import batches
from twoclock.pilot.plan import PilotError
from twoclock.pilot.predict import ADAM

COLUMNS = ("updates", "minibatches", "epochs")  # the columns that give K
FLAG = "--updates"


def _count(v) -> float | None:
    """v as a whole number >= 1, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v) if v >= 1 and v == round(v) else None


def parse(items) -> dict:
    """['b64=4', 'grpo_*=2', ...] (--updates) -> {run or glob: K}; PilotError (one line) for
    anything but RUN=K with K a whole number >= 1, or a run given twice."""
    out = {}
    for item in items or ():
        run, sep, raw = item.rpartition("=")
        try:
            k = _count(float(raw))
        except ValueError:
            k = None
        if not sep or not run.strip() or k is None:
            raise PilotError(f"{FLAG} {item!r}: expected RUN=K with K a whole number >= 1, the "
                             f"optimizer updates per rollout batch (e.g. {FLAG} b64=4)")
        if run.strip() in out:
            raise PilotError(f"{FLAG} {item!r}: run {run.strip()!r} is already given "
                             f"{out[run.strip()]:g}")
        out[run.strip()] = k
    return out


def from_settings(settings) -> tuple:
    """(K or None, logged steps per rollout batch, what gave K) from a trainer's settings
    {key: value} (pilot.batches reads the batch from the same); PilotError where they give a
    K that is not a whole number."""
    if not settings:
        return None, 1.0, ""
    s = {k.replace("/", "."): v for k, v in settings.items()}
    prompts = batches.setting(s, "data.train_batch_size")
    mini = batches.setting(s, "actor_rollout_ref.actor.ppo_mini_batch_size")
    if prompts and mini:  # verl: one logged step per rollout batch
        epochs = batches.setting(s, "actor_rollout_ref.actor.ppo_epochs") or 1.0
        k = _count(prompts / mini * epochs)
        if k is None or prompts % mini:
            raise PilotError(f"data.train_batch_size {prompts:g} is not a whole number of "
                             f"actor_rollout_ref.actor.ppo_mini_batch_size {mini:g}")
        return k, 1.0, (f"verl: data.train_batch_size {prompts:g} / ppo_mini_batch_size "
                        f"{mini:g} x ppo_epochs {epochs:g}")
    iters, spg = batches.setting(s, "num_iterations"), batches.setting(s, "steps_per_generation")
    if iters is None and spg is None:
        return None, 1.0, ""
    acc = batches.setting(s, "gradient_accumulation_steps") or 1.0
    spg = spg or acc  # TRL's default: one generation batch per optimizer step
    k = _count((iters or 1.0) * spg / acc)
    if k is None or spg % acc:
        raise PilotError(f"steps_per_generation {spg:g} is not a whole number of "
                         f"gradient_accumulation_steps {acc:g}")
    return k, k, (f"TRL: num_iterations {iters or 1:g} x steps_per_generation {spg:g} / "
                  f"gradient_accumulation_steps {acc:g}")


def from_row(get, where) -> float | None:
    """K from one row's `updates` or `minibatches` x `epochs` cells (get(column) -> the parsed
    value or None; where(column) names the cell); None where the row has none of them."""
    u, m, e = (get(c) for c in COLUMNS)
    for c, v in zip(COLUMNS, (u, m, e)):
        if v is not None and _count(v) is None:
            raise PilotError(f"{where(c)}: must be a whole number >= 1 (got {v:g})")
    if u is None and m is None and e is None:
        return None
    k = (m or 1.0) * (e or 1.0)
    if u is not None and (m is not None or e is not None) and u != k:
        raise PilotError(f"{where('updates')}: updates {u:g} but minibatches x epochs = {k:g}; "
                         "give one")
    return u if u is not None else k


def resolve(name: str, given: dict) -> float:
    """A run's K from {source: K or None} (the column, --updates, the settings): the one they
    agree on, 1 where none gives it; PilotError naming the run where they disagree."""
    got = {src: k for src, k in given.items() if k is not None}
    if len(set(got.values())) > 1:
        raise PilotError(f"run {name!r}: updates per rollout batch disagree: " + "; ".join(
            f"{src} gives {k:g}" for src, k in got.items()) + "; give one")
    return next(iter(got.values()), 1.0)


def flag_value(given: dict, name: str):
    """What --updates gives run `name` (its own key, else the globs matching it), or None."""
    return batches.per_run(given, name, FLAG)


def check_mixed(runs, accounted: bool = False) -> None:
    """PilotError (one line, naming the runs) where the pilots' K differ and the progress form
    does not account for K (accounted: the Adam form, which reads each run's K, is chosen):
    samples to a target at K updates per batch are not those at one, so the default forms
    cannot fit such pilots like for like."""
    ks = sorted({r.updates for r in runs})
    if len(ks) < 2 or accounted:
        return
    by = "; ".join(f"K {k:g}: " + ", ".join(r.name for r in runs if r.updates == k) for k in ks)
    raise PilotError(f"{FLAG}: the pilots take different optimizer updates per rollout batch "
                     f"({by}) and the default progress forms do not account for K: plan runs "
                     f"with one K, or use {ADAM}")


def summary(rows) -> str | None:
    """The report's line of the runs' K (plan.json's runs[]: run, updates), None where every
    run takes one update per rollout batch."""
    if all(r.get("updates", 1) == 1 for r in rows):
        return None
    return "optimizer updates per rollout batch (K): " + ", ".join(
        f"{r['run']} {r['updates']:g}" for r in rows)


__all__ = ["COLUMNS", "FLAG", "parse", "from_settings", "from_row",
           "resolve", "flag_value", "check_mixed", "summary"]
