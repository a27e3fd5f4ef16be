"""Read a trainer's per-step log of pilot runs (CSV or JSON Lines, or a trainer's own files:
pilot.formats) into runs, refusing bad rows and cells in one line that names the line and the
column (rules: twoclock.pilot.logs)."""
import csv
from dataclasses import dataclass
import io
import math
import os

import numpy as np

from twoclock.pilot import batches, formats, limits, memory, presets, updates as upd
from twoclock.pilot.plan import MAX_BATCH, PilotError

REQUIRED = ("run", "batch", "lr", "samples")
OPTIONAL = ("seconds_per_update",)  # median per run, the step time the plan's throughput uses
_OR_FLAG = {"batch": ", or give --batch RUN=B or --batch-from-name REGEX",
            "samples": ", or read a step column with --samples-from-step COLUMN"}


@dataclass(frozen=True)
class Run:
    """One pilot run's logged rows, sorted by samples; metrics[name]: values (nan: not logged)."""
    name: str
    batch: float
    lr: float
    line_R: np.ndarray     # the file's line number of each row (after merging: the first)
    samples_R: np.ndarray
    metrics: dict
    seconds_per_update: float = math.nan
    updates: float = 1.0  # optimizer updates per rollout batch (pilot.updates)


@dataclass(frozen=True)
class Logs:
    source: str
    header: tuple  # column names after --col mapping
    runs: tuple
    places: tuple = ()  # a trainer's files: where row `line` was read (formats.Table.places)

    def where(self, line: int) -> str:
        """'PATH line N' (a CSV / JSON Lines file), or the file and line or event of row N."""
        return _where(self.source, self.places, line)


def _where(path: str, places: tuple, line: int) -> str:
    return places[line] if places else f"{path} line {line}"


def _rows(path: str, text: str):
    """(format, header, [(line, {column: raw})]) from a CSV or JSON Lines file."""
    ext = os.path.splitext(path)[1].lower()
    jsonl = ext in (".jsonl", ".ndjson") or (ext != ".csv" and text.lstrip().startswith("{"))
    if jsonl:
        rows, header = [], {}
        for ln, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            obj = limits.loads(line, f"{path} line {ln}")
            if not isinstance(obj, dict):
                raise PilotError(f"{path} line {ln}: expected one JSON object per line")
            header.update(dict.fromkeys(obj))
            limits.too_many_keys(len(header), path, "distinct keys")
            rows.append((ln, obj))
        return "jsonl", tuple(header), rows
    try:
        table = list(csv.reader(io.StringIO(text)))
    except csv.Error as e:
        raise PilotError(f"{path}: not a readable CSV ({e})") from None
    if not table:
        raise PilotError(f"{path}: empty file (expected a header with {', '.join(REQUIRED)})")
    head = tuple(h.strip() for h in table[0])
    limits.too_many_keys(len(head), f"{path} line 1", "columns")
    twice = limits.first_repeat(head)
    if twice:  # which of two columns is meant? refuse, never guess
        j, i = twice
        raise PilotError(f"{path} line 1: column {head[i]!r} appears twice (columns "
                         f"{j + 1} and {i + 1})")
    rows = []
    for ln, row in enumerate(table[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(head):
            raise PilotError(f"{path} line {ln}: {len(row)} fields, the header has {len(head)}")
        rows.append((ln, dict(zip(head, row))))
    return "csv", head, rows


def _value(raw, where: str, positive: bool = False, zero_ok: bool = False):
    """A cell as a float; None when empty (not logged); PilotError naming `where` otherwise."""
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    if isinstance(raw, bool):
        v = math.nan
    elif isinstance(raw, (int, float)):
        v = float(raw)
    else:
        try:
            v = float(str(raw).strip())
        except ValueError:
            v = math.nan
    if not math.isfinite(v) or (positive and not (v > 0 or (zero_ok and v == 0))):
        need = ("a finite number >= 0" if zero_ok else "a finite number > 0") if positive \
            else "a finite number (or empty: not logged)"
        raise PilotError(f"{where}: must be {need} (got {raw!r})")
    return v


def _flags_on_rows(named, batch, lr, rx, samples_from_step, path):
    """What --batch, --lr, --batch-from-name, --samples-from-step fill in a CSV / JSON Lines log:
    only columns it lacks (its own columns decide where it has them)."""
    for flag, col, given in (("--batch", "batch", batch), ("--batch-from-name", "batch", rx),
                             ("--lr", "lr", lr), ("--samples-from-step", "samples",
                                                  samples_from_step)):
        if given and col in named:
            raise PilotError(f"{flag}: {path} has a {col!r} column, and a CSV or JSON Lines log "
                             f"gives each run's {col} in its columns (--col {col}=COLUMN); "
                             f"{flag} is for a log without one")
    return {c for c, on in (("batch", batch or rx), ("lr", lr), ("samples", samples_from_step))
            if on}


def _check_step_size(name, merged, where, col, batch):
    """Samples per logged step are at least the batch (each update consumes one): less means
    the column counts something else (steps). Checked on a column mapped as samples (--col
    samples=COLUMN), where a step column is the likely mistake."""
    s = np.array([r["samples"] for r in merged])
    d = np.diff(s)
    bad = np.flatnonzero(d < batch * (1 - 1e-9))
    if bad.size:
        i = int(bad[0])
        raise PilotError(f"{where(merged[i + 1]['line'])}, column {col}: run {name!r} gains "
                         f"{d[i]:g} samples since its previous logged step, fewer than its "
                         f"batch {batch:g} (an update consumes a batch): is {col!r} a step "
                         "count? read it with --samples-from-step COLUMN (samples = step x "
                         "batch)")


def read_logs(path: str, metrics=(), columns=None, preset=None, batch=None, lr=None,
              batch_from_name=None, samples_from_step=None, restarts="refuse",
              updates=None) -> Logs:
    """Read a log file, or a trainer's own files (pilot.formats: a directory of TensorBoard
    runs, trainer_state.json, verl's file logger); `metrics` are the columns the conditions read
    (parsed and checked). `preset` ('trl', 'verl', 'openrlhf') maps the trainer's metric names
    (presets.PRESETS) where --col (`columns`) does not; `batch` and `lr` ({run or glob:
    value}, --batch and --lr), `batch_from_name` (a regular expression on run names) set a
    run's batch and lr where the files do not (pilot.batches); `samples_from_step` (a CSV /
    JSON Lines column): samples = that step x batch; `restarts`: 'refuse' a run that logs one
    step twice with other values, or 'keep-last' (the later copy of each value).

    PilotError, one line naming the line and column, for: a missing run/batch/lr/samples column
    or a missing metric column; an empty or malformed cell; a run whose batch or lr changes; a
    run that logs one sample count twice with different values; a run that never logs a metric;
    samples per logged step below the batch.
    """
    if restarts not in ("refuse", "keep-last"):
        raise PilotError(f"--restarts: refuse or keep-last (got {restarts!r})")
    # path may be a table in memory (pilot.memory): read as a CSV of it, rows named 'table row N'
    held = None if memory.is_path(path) else memory.table_rows(path)
    path = memory.NAME if held else path
    table = None if held else formats.read_dir(path, restarts) if os.path.isdir(path) else None
    if table is None and not held:
        text = formats.read_text(path, newline="")  # csv reads its own line ends
        table = formats.read_file(path, text, restarts)
    rename = dict(columns or {})
    rx = batches.name_pattern(batch_from_name)
    if table is None:
        _, head, rows = _rows(path, text) if not held else ("csv", *held[:2])
        if preset is not None:  # a row's lr is its column's (--col lr=): schedules are refused
            rename = presets.preset_columns(preset, head, rename, skip=("lr",))
        places, top = ((), f"{path} line 1") if not held else (held[2], path)
    else:
        if samples_from_step:
            raise PilotError(f"--samples-from-step: {path} is a trainer's own files, whose "
                             "samples are already step x batch")
        places, top = table.places, path
        raw = tuple(dict.fromkeys(k for r in table.runs for st in r.steps for k in st.values))
        if preset is not None:
            rename = presets.preset_columns(preset, raw, rename)
        head, rows, rename = formats.rows(table, rename, batch, lr, rx)
    has = set(head)
    for col, name in rename.items():
        if col not in has:
            raise PilotError(f"{top}: --col {name}={col}: no column {col!r} "
                             f"(columns: {limits.listing(head)})")
    named = tuple(rename.get(h, h) for h in head)
    twice = limits.first_repeat(named)
    if twice:  # --col samples=step with a samples column as well
        j, i = twice
        raise PilotError(f"{top}: {named[i]!r} is read from two columns "
                         f"({head[j]!r} and {head[i]!r}); map one with --col")
    first = {n: i for i, n in enumerate(named)}
    fill = (_flags_on_rows(first, batch, lr, rx, samples_from_step, path) if table is None
            else set())
    if samples_from_step and samples_from_step not in has:
        raise PilotError(f"--samples-from-step {samples_from_step}: no column "
                         f"{samples_from_step!r} in {path} (columns: {limits.listing(head)})")
    for col in REQUIRED:
        if col not in first and col not in fill:
            raise PilotError(f"{top}: missing column {col!r} (columns: "
                             f"{limits.listing(named)}); map another with --col {col}=COLUMN"
                             + _OR_FLAG.get(col, "") * (table is None))
    for m in metrics:
        if m not in first:
            raise PilotError(f"{top}: no column {m!r} for the condition on it (columns: "
                             f"{limits.listing(named)})")
    back = {rename.get(h, h): h for h in head}
    if samples_from_step:
        back["samples"] = samples_from_step
    need = tuple(dict.fromkeys(tuple(metrics) + tuple(c for c in OPTIONAL if c in first)))
    kcols = [c for c in upd.COLUMNS if c in first]
    settings_k = {} if table is None else _settings_updates(table)
    if not rows:
        raise PilotError(f"{path}: no rows below the header" if table is None else
                         f"{path}: no logged steps")
    by_run: dict = {}
    filled: dict = {}  # (run, column) -> what --batch / --lr / --batch-from-name give it
    at = lambda ln: f"line {ln}" if not places else places[ln]  # another row: where it is
    for ln, row in rows:
        where = lambda c: f"{_where(path, places, ln)}, column {back.get(c, c)}"
        get = lambda c: row.get(back[c])
        raw_run = get("run")
        run = "" if raw_run is None else str(raw_run).strip()
        if run == "":
            raise PilotError(f"{where('run')}: empty run name")
        rec = {"line": ln}
        for c in ("batch", "lr"):
            if c in fill:
                if (run, c) not in filled:  # a run's, not a row's: worked out once
                    v = batches.per_run(batch if c == "batch" else lr, run, f"--{c}")
                    v = batches.from_name(rx, run) if v is None and c == "batch" else v
                    if v is None:
                        raise PilotError(f"{where('run')}: run {run!r} has no {c}: the log has "
                                         f"no {c} column and no --{c}" + (
                                             " or --batch-from-name" if c == "batch" else "")
                                         + " matches it")
                    filled[run, c] = v
                rec[c] = filled[run, c]
            else:
                rec[c] = _value(get(c), where(c), positive=True)
        rec["samples"] = _value(get("samples"), where("samples"), positive=True, zero_ok=True)
        for c in ("batch", "lr", "samples"):
            if rec[c] is None:
                raise PilotError(f"{where(c)}: empty (every row needs run, batch, lr, samples)")
        if rec["batch"] > MAX_BATCH:
            got = get("batch") if "batch" not in fill else rec["batch"]
            raise PilotError(f"{where('batch')}: must be at most 2^53, a count of samples "
                             f"(got {got!r})")
        if samples_from_step:
            rec["samples"] *= rec["batch"]
        for c in need:
            rec[c] = _value(get(c), where(c))
        rec["k"] = upd.from_row(lambda c: _value(get(c), where(c)) if c in kcols else None,
                                where) if kcols else None
        first_rec = by_run.setdefault(run, [])
        if first_rec and rec["k"] != first_rec[0]["k"]:
            c = "updates" if "updates" in kcols else kcols[0]
            raise PilotError(f"{where(c)}: run {run!r} has {_k(rec['k'])} updates per rollout "
                             f"batch here and {_k(first_rec[0]['k'])} at "
                             f"{at(first_rec[0]['line'])}: one K per run")
        for c in ("batch", "lr"):
            if first_rec and not math.isclose(rec[c], first_rec[0][c], rel_tol=1e-9):
                raise PilotError(f"{where(c)}: run {run!r} has {c} {rec[c]:g} here and "
                                 f"{first_rec[0][c]:g} at {at(first_rec[0]['line'])}: schedules "
                                 "are not pilots (one batch and lr per run)")
        first_rec.append(rec)
    batches.check_given(updates or {}, list(by_run), upd.FLAG, path)
    runs = []
    for name, recs in by_run.items():
        k = upd.resolve(name, {
            "column " + "/".join(back.get(c, c) for c in kcols): recs[0]["k"],
            upd.FLAG: upd.flag_value(updates, name),
            "the trainer's settings (" + settings_k.get(name, (None, ""))[1] + ")":
                settings_k.get(name, (None, ""))[0]})
        recs = sorted(recs, key=lambda r: r["samples"])  # stable: ties keep file order
        merged = [dict(recs[0])]
        for r in recs[1:]:
            last = merged[-1]
            if r["samples"] != last["samples"]:
                merged.append(dict(r))
                continue
            for c in need:
                if r[c] is not None and last[c] is not None and r[c] != last[c] \
                        and restarts != "keep-last":
                    raise PilotError(
                        f"{_where(path, places, r['line'])}, column {back['samples']}: samples not "
                        f"increasing within run {name!r}: {r['samples']:g} also at "
                        f"{at(last['line'])}, with {back[c]} {r[c]:g} there vs {last[c]:g} (a "
                        "restarted run? keep one copy of its steps, or --restarts keep-last)")
                if r[c] is not None and (last[c] is None or restarts == "keep-last"):
                    last[c] = r[c]  # keep-last: the later copy wins
        if back["samples"] != "samples" and not samples_from_step:  # --col samples=COLUMN
            _check_step_size(name, merged, lambda ln: _where(path, places, ln),
                             back["samples"], recs[0]["batch"] / k)
        for c in metrics:
            if all(r[c] is None for r in merged):
                raise PilotError(f"{_where(path, places, recs[0]['line'])}, column {back[c]}: run "
                                 f"{name!r} never logs {c!r} (every cell of it is empty)")
        spu = [r["seconds_per_update"] for r in merged
               if r.get("seconds_per_update") is not None]
        runs.append(Run(name, recs[0]["batch"], recs[0]["lr"],
                        np.array([r["line"] for r in merged]),
                        np.array([r["samples"] for r in merged], np.float64),
                        {c: np.array([math.nan if r[c] is None else r[c] for r in merged],
                                     np.float64) for c in metrics},
                        float(np.median(spu)) if spu else math.nan, k))
    return Logs(path, named, tuple(runs), places)


def _k(v) -> str:
    return "no" if v is None else f"{v:g}"


def _settings_updates(table) -> dict:
    """{run: (K, what gave it)} of a trainer's files whose settings give K (pilot.updates)."""
    out = {}
    for r in table.runs:
        try:
            k, _, why = upd.from_settings(r.settings)
        except PilotError as e:
            raise PilotError(f"{r.source}: run {r.name!r}: {e}") from None
        if k is not None:
            out[r.name] = (k, why)
    return out


__all__ = ["REQUIRED", "OPTIONAL", "Run", "Logs", "read_logs"]
