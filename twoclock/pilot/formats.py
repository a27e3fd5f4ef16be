"""The files trainers write, read as they are: a directory of TensorBoard runs, Hugging Face /
TRL `trainer_state.json` files, verl's JSON Lines file logger (their metric names: pilot.presets).
Rules: docs/plan.md, "Trainers' own files".

Each is read into a Table: runs of steps, each step's logged values by key. `rows` turns a Table
into the rows the reader checks (pilot.reader): a run's `batch` is --batch RUN=B, else a logged
`batch` key (one value per run), else what the file records (TrainerState's train_batch_size);
its `lr` is --lr RUN=LR, else the peak of its logged learning rate (the configured lr of a
warmup or decay schedule); `samples` is a logged `samples` key when there is one, else step x
batch. What a file lacks is asked for by the flag in one line, as are bad files.

A directory holding trainer_state.json (a TRL output folder) is read from it, and the
TensorBoard events below it only for the trainer's settings (the `args` text); TensorBoard files
are read by pilot.tbfiles (the `tensorboard` package, an optional extra). A run's batch: pilot.
batches. Every JSON text is parsed by pilot.limits (bounded depth and width).
"""
from dataclasses import dataclass
import json
import math
import os
import re

from twoclock.pilot import batches, limits, tbfiles, updates
from twoclock.pilot.plan import PilotError

RESERVED = ("run", "batch", "lr", "samples")


@dataclass(frozen=True)
class Step:
    place: int     # index into Table.places: where it was read (file and line, or event)
    step: object   # the trainer's step as logged
    values: dict   # key -> raw value


@dataclass(frozen=True)
class TRun:
    name: str
    steps: tuple
    batch: object = None     # trainer_state.json's train_batch_size, if recorded
    settings: object = None  # the trainer's settings {key: value} (args text, hparams)
    source: str = ""         # the file or directory the run was read from


@dataclass(frozen=True)
class Table:
    kind: str      # "TensorBoard", "trainer_state.json", "verl file logger"
    path: str
    runs: tuple
    places: tuple  # "FILE line N" / "FILE event K (step S)"


def read_text(path: str, newline: str | None = None) -> str:
    """A file's text (a UTF-8 BOM dropped), or PilotError naming it; newline as for open()."""
    try:
        with open(path, encoding="utf-8-sig", newline=newline) as f:
            return f.read()
    except OSError as e:
        raise PilotError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise PilotError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


# ------------------------------------------------------------------ trainer_state.json (HF, TRL)
def _state(text: str, path: str):
    """The TrainerState object of a trainer_state.json text, or None when it is not one (a
    JSON Lines file: its first line is a whole object without 'log_history')."""
    named = os.path.basename(path) == "trainer_state.json"
    if not text.lstrip().startswith("{"):
        if named:
            raise PilotError(f"{path}: not a Trainer's trainer_state.json (a JSON object)")
        return None
    first = text.lstrip().split("\n", 1)[0]
    try:
        alone = limits.loads(first, path)
    except PilotError:
        alone = None
    if not named and not (alone is None or isinstance(alone, dict) and "log_history" in alone):
        return None
    if not named:
        try:
            obj = limits.loads(text, path)
        except PilotError:
            return None  # a JSON Lines file, perhaps with a bad line: the reader names it
    else:
        obj = limits.loads(text, path, "; a truncated trainer_state.json?")
    if not isinstance(obj, dict) or "log_history" not in obj:
        if named:
            raise PilotError(f"{path}: no 'log_history' (not a Trainer's trainer_state.json)")
        return None
    if not isinstance(obj["log_history"], list) or \
            not all(isinstance(e, dict) for e in obj["log_history"]):
        raise PilotError(f"{path}: 'log_history' must be a list of objects")
    return obj


def _entry_lines(text: str, entries: list):
    """Each log_history entry's line in the file (save_to_json writes them one per indented
    block), or None when they cannot be found unambiguously."""
    m = re.search(r'\n  "log_history": \[', text)
    if m is None:
        return None
    dec, pos, line, out = json.JSONDecoder(), m.end(), text.count("\n", 0, m.end()) + 1, []
    for e in entries:
        while pos < len(text) and text[pos] in " \t\r\n,":
            line += text[pos] == "\n"
            pos += 1
        try:
            got, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            return None
        if got != e:
            return None
        out.append(line)
        line += text.count("\n", pos, end)
        pos = end
    return out


def _run_name(path: str) -> str:
    """A trainer_state.json's run: its directory, or above a checkpoint-N directory."""
    d = os.path.dirname(os.path.abspath(path))
    if re.fullmatch(r"checkpoint-\d+", os.path.basename(d)):
        d = os.path.dirname(d)
    return os.path.basename(d)


def _state_run(path: str, text: str, obj, places: list, settings=None) -> TRun:
    """One run from a trainer_state.json (obj: its parsed object, None to parse `text`);
    settings: the trainer's args, from TensorBoard events beside it."""
    obj = _state(text, path) if obj is None else obj
    if obj is None:
        raise PilotError(f"{path}: not a Trainer's trainer_state.json (a JSON object with "
                         "'log_history')")
    lines = _entry_lines(text, obj["log_history"])
    steps = []
    for k, e in enumerate(obj["log_history"]):
        places.append(f"{path} line {lines[k]}" if lines else f"{path} log_history[{k}]")
        steps.append(Step(len(places) - 1, e.get("step"),
                          {c: v for c, v in e.items() if c != "step"}))
    return TRun(_run_name(path), tuple(steps), obj.get("train_batch_size"), settings, path)


def _latest_state(d: str):
    """A run directory's trainer_state.json: its own, else its last checkpoint's."""
    own = os.path.join(d, "trainer_state.json")
    if os.path.isfile(own):
        return own
    ck = [(int(n.split("-")[1]), n) for n in os.listdir(d)
          if re.fullmatch(r"checkpoint-\d+", n)
          and os.path.isfile(os.path.join(d, n, "trainer_state.json"))]
    return os.path.join(d, max(ck)[1], "trainer_state.json") if ck else None


# ------------------------------------------------------------------ verl's file logger
def _is_verl(obj) -> bool:
    """verl's FileLogger writes {"step": step, "data": {metric: value}} per line."""
    return isinstance(obj, dict) and set(obj) == {"step", "data"} and isinstance(obj["data"], dict)


def _first_object(text: str, path: str):
    for ln, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                return limits.loads(line, f"{path} line {ln}")
            except PilotError:
                return None
    return None


def _verl_run(path: str, text: str, places: list, name: str = None) -> TRun:
    steps = []
    for ln, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {ln}"
        obj = limits.loads(line, where, "; a truncated last line? (verl's file logger writes "
                           "one object per step)")
        if not _is_verl(obj):
            raise PilotError(f"{where}: not a verl file logger line (expected "
                             '{"step": N, "data": {...}})')
        places.append(where)
        steps.append(Step(len(places) - 1, obj["step"], obj["data"]))
    return TRun(name or os.path.splitext(os.path.basename(path))[0], tuple(steps), source=path)


def _verl_files(path: str):
    """[(run name, file)]: the directory's .jsonl files (named by their stems), else those of
    its sub-directories (verl's logger root, <root>/<project>/<experiment>.jsonl: named
    project/experiment)."""
    jl = sorted(n for n in os.listdir(path) if n.endswith(".jsonl"))
    if jl:
        return [(n[:-6], os.path.join(path, n)) for n in jl]
    out = []
    for sub in sorted(os.listdir(path)):
        d = os.path.join(path, sub)
        if os.path.isdir(d):
            out += [(f"{sub}/{n[:-6]}", os.path.join(d, n)) for n in sorted(os.listdir(d))
                    if n.endswith(".jsonl")]
    return out


# ------------------------------------------------------------------ TensorBoard
def _tb_runs(root: str, dirs: dict, places: list, restarts: str) -> list:
    out = []
    for name, d, by_step, at, settings in tbfiles.runs(root, dirs, places, restarts):
        if by_step:  # a run without scalars (text only) is no pilot: left out
            out.append(TRun(name, tuple(Step(at[s], s, by_step[s]) for s in by_step),
                            settings=settings, source=d))
    return out


def _inside(d: str, dirs: dict) -> dict:
    return {e: f for e, f in dirs.items() if e == d or e.startswith(d + os.sep)}


# ------------------------------------------------------------------ dispatch
def read_dir(path: str, restarts: str = "refuse") -> Table:
    """A directory: run directories holding trainer_state.json (the directory's own, else its
    sub-directories'; TensorBoard events below one give its settings, not its steps), and
    TensorBoard runs (every other directory holding event files); else verl file logger *.jsonl
    files (the directory's, else its sub-directories': verl's logger root)."""
    places: list = []
    path = os.path.normpath(path)
    ev = tbfiles.event_dirs(path)
    own = _latest_state(path)
    subs = sorted(n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)))
    states = [(path, own)] if own else [
        (os.path.join(path, n), s) for n in subs
        if (s := _latest_state(os.path.join(path, n)))]
    runs = []
    for d, s in states:
        inside = _inside(d, ev)
        got = _tb_runs(d, inside, [], "keep-last") if inside else []
        settings = next((r.settings for r in got if r.settings), None)
        runs.append(_state_run(s, read_text(s), None, places, settings))
        ev = {e: f for e, f in ev.items() if e not in inside}
    if ev:
        tb = _tb_runs(path, ev, places, restarts)
        if not tb and not runs:
            raise PilotError(f"{path}: TensorBoard event files without scalars")
        runs += tb
    if runs:
        kind = "trainer_state.json" if states else "TensorBoard"
        return Table(kind, path, tuple(runs), tuple(places))
    jl = _verl_files(path)
    if jl:
        return Table("verl file logger", path, tuple(
            _verl_run(p, read_text(p), places, name) for name, p in jl), tuple(places))
    raise PilotError(f"{path}: a directory without TensorBoard event files (*tfevents*), "
                     "trainer_state.json or verl .jsonl logs in it (or in its sub-directories)")


def read_file(path: str, text: str, restarts: str = "refuse"):
    """A trainer's own file as a Table, or None for a CSV / JSON Lines file of rows."""
    places: list = []
    if "tfevents" in os.path.basename(path):
        d = os.path.dirname(os.path.abspath(path))
        return Table("TensorBoard", path, tuple(_tb_runs(d, {d: [path]}, places, restarts)),
                     tuple(places))
    obj = _state(text, path)
    if obj is not None:
        return Table("trainer_state.json", path, (_state_run(path, text, obj, places),),
                     tuple(places))
    if _is_verl(_first_object(text, path)):
        return Table("verl file logger", path, (_verl_run(path, text, places),), tuple(places))
    return None


def _number(raw, where: str, what: str, ok) -> float:
    v = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else math.nan
    if not (math.isfinite(v) and ok(v)):
        raise PilotError(f"{where}: {what} (got {raw!r})")
    return v


def _batch(table: Table, r: TRun, batch: dict, src: dict, rx):
    """A run's batch, in the order of pilot.batches."""
    here = lambda s: table.places[s.place]
    b = batches.per_run(batch, r.name, "--batch")
    logged = [(s, s.values[src["batch"]]) for s in r.steps
              if s.values.get(src["batch"]) is not None]
    if b is None and logged:
        b = _number(logged[0][1], here(logged[0][0]), f"column {src['batch']}: must be a "
                    "batch > 0", lambda v: v > 0)
        for s, v in logged:
            if v != logged[0][1]:
                raise PilotError(f"{here(s)}, column {src['batch']}: run {r.name!r} has batch"
                                 f" {v!r} here and {logged[0][1]!r} at {here(logged[0][0])}: "
                                 "schedules are not pilots (one batch per run)")
    why = ""
    if b is None and r.settings:
        try:
            b, why = batches.from_settings(r.settings)
        except PilotError as e:
            raise PilotError(f"{r.source}: run {r.name!r}: {e}") from None
    if b is None and r.batch is not None and not why:
        b = _number(r.batch, f"{table.path}: run {r.name!r}", "train_batch_size must be > 0",
                    lambda v: v > 0)
    if b is None:
        b = batches.from_name(rx, r.name)
    if b is None:
        kind = "trainer_state.json" if r.source.endswith(".json") else table.kind
        raise PilotError(f"{table.path}: run {r.name!r}: the {kind} records no batch"
                         f"{' (' + why + ')' if why else ''}; give --batch {r.name}=B "
                         "(responses per logged step; RUN may be a glob), or --batch-from-name"
                         f" REGEX{' that matches it' if rx is not None else ''}")
    return b


def _steps_per_batch(r: TRun) -> float:
    """Logged steps per rollout batch of a run, from its settings (pilot.updates)."""
    try:
        return updates.from_settings(r.settings)[1]
    except PilotError as e:
        raise PilotError(f"{r.source}: run {r.name!r}: {e}") from None


def rows(table: Table, columns: dict, batch=None, lr=None, rx=None):
    """(header, rows, columns left) from a Table: rows [(place, {column: raw})] with run, batch,
    lr, samples filled in; `columns` consumed where they name a run's batch, lr or samples; rx:
    --batch-from-name's compiled pattern (batches.name_pattern)."""
    batch, lr = batch or {}, lr or {}
    names = [r.name for r in table.runs]
    seen = {}
    for r in table.runs:
        if r.name in seen:
            raise PilotError(f"{table.path}: two runs are named {r.name!r} ({seen[r.name]} and "
                             f"{r.source}); point --logs at one of them, or rename one")
        seen[r.name] = r.source
    for flag, given in (("--batch", batch), ("--lr", lr)):
        batches.check_given(given, names, flag, table.path)
    src = {name: col for col, name in columns.items() if name in RESERVED}
    if "run" in src:
        raise PilotError(f"--col run={src['run']}: the runs in {table.kind} files are named "
                         "by their files and directories")
    keys = dict.fromkeys(k for r in table.runs for s in r.steps for k in s.values)
    limits.too_many_keys(len(keys), table.path, "distinct keys")
    if "run" in keys and "run" not in columns:
        raise PilotError(f"{table.path}: a logged key 'run' clashes with the runs' names; read it "
                         "as another name with --col NAME=run")
    for name in ("batch", "lr", "samples"):
        src.setdefault(name, name)
    out = []
    for r in table.runs:
        here = lambda s: table.places[s.place]
        b = _batch(table, r, batch, src, rx)
        peak = batches.per_run(lr, r.name, "--lr")
        if peak is None:
            got = [_number(s.values[src["lr"]], f"{here(s)}, column {src['lr']}",
                           "a learning rate must be a finite number >= 0", lambda v: v >= 0)
                   for s in r.steps if s.values.get(src["lr"]) is not None]
            peak = max(got, default=0.0)
            if not peak > 0:
                raise PilotError(f"{table.path}: run {r.name!r} logs no learning rate "
                                 f"{'> 0 ' if got else ''}(column {src['lr']!r}); give --lr "
                                 f"{r.name}=LR or --preset, or --col lr=COLUMN")
        per = _steps_per_batch(r)  # TRL logs each of a generation batch's K updates
        for s in r.steps:
            row = {k: v for k, v in s.values.items() if k not in (src["batch"], src["lr"])}
            if src["samples"] in keys:
                row["samples"] = s.values.get(src["samples"])
            else:
                row["samples"] = b / per * _number(s.step, here(s), "the step must be a number "
                                                   ">= 0", lambda v: v >= 0)
            row.update(run=r.name, batch=b, lr=peak)
            out.append((s.place, row))
    head = RESERVED + tuple(k for k in keys if k not in RESERVED and k not in src.values())
    return head, out, {c: n for c, n in columns.items() if n not in RESERVED}


__all__ = ["RESERVED", "Table", "read_dir", "read_file", "rows"]
