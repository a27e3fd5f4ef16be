"""A run's batch (responses per logged step) from what is there, in this order (docs/plan.md,
"Trainers' own files"): --batch RUN=B (the run's name, else a glob: 'grpo_bs64*=64'); a
logged `batch` key; the trainer's settings (the Hugging Face `args` text or `add_hparams`
hparams in TensorBoard: `from_settings`); trainer_state.json's `train_batch_size`; the run's
name read by --batch-from-name 'bs(\\d+)'. --lr RUN=LR takes globs the same way."""
import fnmatch
import math
import re

from twoclock.pilot import limits
from twoclock.pilot.plan import PilotError

GLOB = "*?["


def check_given(given: dict, names, flag: str, path: str):
    """Every --batch / --lr key names a run or is a glob matching one; PilotError otherwise."""
    for key, v in given.items():
        hit = key in names if not any(c in key for c in GLOB) else \
            any(fnmatch.fnmatchcase(n, key) for n in names)
        if not hit:
            raise PilotError(f"{flag} {key}={v:g}: no run {key!r} in {path} (runs: "
                             f"{limits.listing(names)})")


def per_run(given: dict, name: str, flag: str):
    """The value --batch / --lr gives run `name`: its own key, else the globs matching it (all
    with one value); None when none does."""
    given = given or {}
    if name in given:
        return given[name]
    hits = {k: v for k, v in given.items() if any(c in k for c in GLOB)
            and fnmatch.fnmatchcase(name, k)}
    if len(set(hits.values())) > 1:
        raise PilotError(f"{flag}: run {name!r} matches " + " and ".join(
            f"{k}={v:g}" for k, v in hits.items()) + "; give it its own value")
    return next(iter(hits.values()), None)


def name_pattern(pattern):
    """--batch-from-name's compiled regular expression (None when not given)."""
    if pattern is None:
        return None
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise PilotError(f"--batch-from-name {pattern!r}: not a regular expression ({e})") \
            from None
    if rx.groups > 1:
        raise PilotError(f"--batch-from-name {pattern!r}: at most one group (the batch), got "
                         f"{rx.groups}")
    return rx


def from_name(rx, name: str):
    """The batch a run's name gives (the pattern's group, else its whole match), or None."""
    m = rx.search(name) if rx is not None else None
    if m is None:
        return None
    raw = m.group(rx.groups)
    v = float(raw) if re.fullmatch(r"\d+(\.\d*)?(e\d+)?", raw) else 0.0
    if not v > 0:
        raise PilotError(f"--batch-from-name {rx.pattern!r}: run {name!r} gives {raw!r}, not a "
                         "batch > 0")
    return v


def setting(s: dict, key: str):
    """A trainer setting as a finite number > 0, or None (absent, not a number, a bool)."""
    v = s.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and \
        math.isfinite(v) and v > 0 else None


def from_settings(settings):
    """(batch or None, why not) from a trainer's settings {key: value}:
    - TRL's GRPOConfig (its `args` text): responses per generation (rollout) batch =
      per-device batch x processes x steps_per_generation (per optimizer step: x gradient
      accumulation instead; the two are equal unless steps_per_generation is set apart, and
      pilot.updates reads the updates per generation batch); processes = generation_batch_size
      / (per-device batch x steps_per_generation), the only place the text records them;
    - verl's config, where logged: data.train_batch_size (prompts) x actor_rollout_ref.rollout.n
      (responses per prompt) per rollout, verl's step.
    Hugging Face args without generation_batch_size record no processes: (None, why)."""
    if not settings:
        return None, ""
    s = {k.replace("/", "."): v for k, v in settings.items()}
    prompts, n = setting(s, "data.train_batch_size"), setting(s, "actor_rollout_ref.rollout.n")
    if prompts and n:
        return prompts * n, ""
    per, acc = setting(s, "per_device_train_batch_size"), setting(s, "gradient_accumulation_steps")
    gen, spg = setting(s, "generation_batch_size"), setting(s, "steps_per_generation")
    if per is None:
        return None, ""
    acc = acc or 1.0
    if gen and spg:
        procs = gen / (per * spg)
        if procs < 1 or procs != round(procs):
            raise PilotError(f"generation_batch_size {gen:g} is not per_device_train_batch_size "
                             f"{per:g} x steps_per_generation {spg:g} x a number of processes")
        return per * procs * spg, ""
    return None, (f"its args give per_device_train_batch_size {per:g} and "
                  f"gradient_accumulation_steps {acc:g} but not the processes (the batch is "
                  f"{per:g} x processes x {acc:g})")


__all__ = ["check_given", "per_run", "name_pattern", "from_name", "from_settings"]
