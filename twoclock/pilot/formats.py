"""The files trainers write, read as they are: a directory of TensorBoard runs, Hugging Face /
TRL `trainer_state.json` files, verl's JSON Lines file logger (their metric names: pilot.presets).
Rules: docs/plan.md, "Trainers' own files".

Each is read into a Table: runs of steps, each step's logged values by key. `rows` turns a Table
into the rows the reader checks (pilot.reader): a run's `batch` is --batch RUN=B, else a logged
`batch` key (one value per run), else what the file records (TrainerState's train_batch_size);
its `lr` is --lr RUN=LR, else the peak of its logged learning rate (the configured lr of a
warmup or decay schedule); `samples` is a logged `samples` key when there is one, else step x
batch. What a file lacks is asked for by the flag in one line, as are bad files.

TensorBoard files are read by the `tensorboard` package (an optional extra), imported only here
and only when a directory of event files is read.
"""
from dataclasses import dataclass
import json
import math
import os
import re

from twoclock.pilot.plan import PilotError

EXTRA = "pip install 'twoclock[tensorboard]'"
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
    batch: object = None  # what the file records, if anything


@dataclass(frozen=True)
class Table:
    kind: str      # "TensorBoard", "trainer_state.json", "verl file logger"
    path: str
    runs: tuple
    places: tuple  # "FILE line N" / "FILE event K (step S)"


def unique_keys(where: str):
    """json.loads' object_pairs_hook: a dict, PilotError when a key appears twice."""
    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise PilotError(f"{where}: key {k!r} appears twice in one object")
            out[k] = v
        return out
    return pairs


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
        alone = json.loads(first)
    except json.JSONDecodeError:
        alone = None
    if not named and not (alone is None or isinstance(alone, dict) and "log_history" in alone):
        return None
    try:
        obj = json.loads(text, object_pairs_hook=unique_keys(path))
    except json.JSONDecodeError as e:
        if not named:
            return None  # a JSON Lines file, perhaps with a bad line: the reader names it
        raise PilotError(f"{path} line {e.lineno}: not JSON ({e.msg}, column {e.colno}); a "
                         "truncated trainer_state.json?") from None
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


def _state_run(path: str, text: str, obj, places: list) -> TRun:
    """One run from a trainer_state.json (obj: its parsed object, None to parse `text`)."""
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
    return TRun(_run_name(path), tuple(steps), obj.get("train_batch_size"))


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
                return json.loads(line, object_pairs_hook=unique_keys(f"{path} line {ln}"))
            except json.JSONDecodeError:
                return None
    return None


def _verl_run(path: str, text: str, places: list) -> TRun:
    steps = []
    for ln, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {ln}"
        try:
            obj = json.loads(line, object_pairs_hook=unique_keys(where))
        except json.JSONDecodeError as e:
            raise PilotError(f"{where}: not JSON ({e.msg}, column {e.colno}); a truncated "
                             "last line? (verl's file logger writes one object per step)") \
                from None
        if not _is_verl(obj):
            raise PilotError(f"{where}: not a verl file logger line (expected "
                             '{"step": N, "data": {...}})')
        places.append(where)
        steps.append(Step(len(places) - 1, obj["step"], obj["data"]))
    return TRun(os.path.splitext(os.path.basename(path))[0], tuple(steps))


# ------------------------------------------------------------------ TensorBoard
def _tensorboard(path: str):
    try:
        from tensorboard.backend.event_processing import event_file_loader
        from tensorboard.compat.proto import event_pb2
        from tensorboard.util import tensor_util
    except ImportError:
        raise PilotError(f"{path}: TensorBoard event files need the tensorboard extra: "
                         f"{EXTRA}") from None
    return event_file_loader, event_pb2, tensor_util


def _event_files(root: str) -> dict:
    """{run directory: [event files]}: every directory holding *tfevents* files is a run."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs.sort()
        ev = sorted(f for f in files if "tfevents" in f)
        if ev:
            out[d] = [os.path.join(d, f) for f in ev]
    return out


def _tb_run(root: str, d: str, files: list, places: list) -> TRun:
    """One run's scalars by step, from the records TensorBoard's reader checksums."""
    loader, event_pb2, tensor_util = _tensorboard(root)
    by_step, at, scalar_tags = {}, {}, set()
    for fpath in files:
        size, read, k = os.path.getsize(fpath), 0, 0
        for raw in loader.RawEventFileLoader(fpath).Load():
            read += len(raw) + 16  # length, its crc, the event, its crc
            k += 1
            ev = event_pb2.Event.FromString(raw)
            if not ev.HasField("summary"):
                continue
            vals = {}
            for v in ev.summary.value:
                if v.metadata.plugin_data.plugin_name:
                    if v.metadata.plugin_data.plugin_name == "scalars":
                        scalar_tags.add(v.tag)
                if v.HasField("simple_value"):
                    vals[v.tag] = float(v.simple_value)
                elif v.HasField("tensor") and v.tag in scalar_tags:
                    arr = tensor_util.make_ndarray(v.tensor)
                    if arr.size == 1:
                        vals[v.tag] = float(arr.reshape(()))
            if not vals:
                continue
            places.append(f"{fpath} event {k} (step {ev.step})")
            row = by_step.setdefault(ev.step, {})
            for tag, x in vals.items():
                if tag in row and row[tag] != x and not (math.isnan(x) and math.isnan(row[tag])):
                    raise PilotError(
                        f"{places[-1]}: tag {tag!r} logged twice at step {ev.step} ({x:g} here, "
                        f"{row[tag]:g} at {places[at[ev.step]]}): a restarted run? keep one "
                        "copy of its steps")
                row[tag] = x
            at.setdefault(ev.step, len(places) - 1)
        if read != size:
            raise PilotError(f"{fpath}: truncated or corrupt after event {k} (byte {read} of "
                             f"{size} is where the last whole, checksummed record ends)")
    rel = os.path.relpath(d, root)
    name = os.path.basename(os.path.abspath(root)) if rel == "." else rel.replace(os.sep, "/")
    return TRun(name, tuple(Step(at[s], s, by_step[s]) for s in by_step))


# ------------------------------------------------------------------ dispatch
def read_dir(path: str) -> Table:
    """A directory: TensorBoard runs (every directory holding event files), else run
    directories holding trainer_state.json, else verl file logger *.jsonl files (one per run)."""
    places: list = []
    ev = _event_files(path)
    if ev:  # a run without scalars (an hparams sub-run, text only) is no pilot: left out
        runs = tuple(r for r in (_tb_run(path, d, f, places) for d, f in sorted(ev.items()))
                     if r.steps)
        if not runs:
            raise PilotError(f"{path}: TensorBoard event files without scalars")
        return Table("TensorBoard", path, runs, tuple(places))
    own = _latest_state(path)
    subs = sorted(n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)))
    states = [own] if own else [s for s in (_latest_state(os.path.join(path, n)) for n in subs)
                                if s]
    if states:
        return Table("trainer_state.json", path, tuple(_state_run(s, read_text(s), None, places)
                                                       for s in states), tuple(places))
    jl = sorted(n for n in os.listdir(path) if n.endswith(".jsonl"))
    if jl:
        runs = []
        for n in jl:
            p = os.path.join(path, n)
            runs.append(_verl_run(p, read_text(p), places))
        return Table("verl file logger", path, tuple(runs), tuple(places))
    raise PilotError(f"{path}: a directory without TensorBoard event files (*tfevents*), "
                     "trainer_state.json or verl .jsonl logs in it")


def read_file(path: str, text: str):
    """A trainer's own file as a Table, or None for a CSV / JSON Lines file of rows."""
    places: list = []
    if "tfevents" in os.path.basename(path):
        d = os.path.dirname(os.path.abspath(path))
        return Table("TensorBoard", path, (_tb_run(d, d, [path], places),), tuple(places))
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


def rows(table: Table, columns: dict, batch=None, lr=None):
    """(header, rows, columns left) from a Table: rows [(place, {column: raw})] with run, batch,
    lr, samples filled in; `columns` consumed where they name a run's batch, lr or samples."""
    batch, lr = batch or {}, lr or {}
    names = [r.name for r in table.runs]
    for flag, given in (("--batch", batch), ("--lr", lr)):
        for run, v in given.items():
            if run not in names:
                raise PilotError(f"{flag} {run}={v:g}: no run {run!r} in {table.path} (runs: "
                                 f"{', '.join(names)})")
    src = {name: col for col, name in columns.items() if name in RESERVED}
    if "run" in src:
        raise PilotError(f"--col run={src['run']}: the runs in {table.kind} files are named "
                         "by their files and directories")
    keys = dict.fromkeys(k for r in table.runs for s in r.steps for k in s.values)
    if "run" in keys and "run" not in columns:
        raise PilotError(f"{table.path}: a logged key 'run' clashes with the runs' names; read it "
                         "as another name with --col NAME=run")
    for name in ("batch", "lr", "samples"):
        src.setdefault(name, name)
    out = []
    for r in table.runs:
        here = lambda s: table.places[s.place]
        b = batch.get(r.name)
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
        if b is None and r.batch is not None:
            b = _number(r.batch, f"{table.path}: run {r.name!r}", "train_batch_size must be > 0",
                        lambda v: v > 0)
        if b is None:
            raise PilotError(f"{table.path}: run {r.name!r}: the {table.kind} records no batch;"
                             f" give --batch {r.name}=B (responses per update)")
        peak = lr.get(r.name)
        if peak is None:
            got = [_number(s.values[src["lr"]], f"{here(s)}, column {src['lr']}",
                           "a learning rate must be a finite number >= 0", lambda v: v >= 0)
                   for s in r.steps if s.values.get(src["lr"]) is not None]
            peak = max(got, default=0.0)
            if not peak > 0:
                raise PilotError(f"{table.path}: run {r.name!r} logs no learning rate "
                                 f"{'> 0 ' if got else ''}(column {src['lr']!r}); give --lr "
                                 f"{r.name}=LR or --preset, or --col lr=COLUMN")
        for s in r.steps:
            row = {k: v for k, v in s.values.items() if k not in (src["batch"], src["lr"])}
            if src["samples"] in keys:
                row["samples"] = s.values.get(src["samples"])
            else:
                row["samples"] = b * _number(s.step, here(s), "the step must be a number >= 0",
                                             lambda v: v >= 0)
            row.update(run=r.name, batch=b, lr=peak)
            out.append((s.place, row))
    head = RESERVED + tuple(k for k in keys if k not in RESERVED and k not in src.values())
    return head, out, {c: n for c, n in columns.items() if n not in RESERVED}


__all__ = ["EXTRA", "RESERVED", "Table", "read_dir", "read_file", "rows", "unique_keys"]
