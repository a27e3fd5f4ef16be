"""TensorBoard runs as pilot.formats reads them: every directory holding *tfevents* files is a
run, named by its path, except a directory of `SummaryWriter.add_hparams` (torch writes it as
`<run>/<time.time()>/`), whose hparams go to the run above it. A run's scalars by step; its
settings: the Hugging Face `args` text summary (TensorBoardCallback's `add_text("args", ...)`)
and the hparams. Every record is decoded here: a bad one is a PilotError naming the file and
the record. Needs the `tensorboard` package (an optional extra), imported only here."""
import math
import os

from twoclock.pilot import limits
from twoclock.pilot.plan import PilotError

# twoclock installs from its repository (README): the extra is named from the clone's root
EXTRA = "pip install -e '.[tensorboard]' (from the twoclock folder), or pip install tensorboard"
ARGS_TAGS = ("args/text_summary", "args")  # tensorboardX / torch, tf.summary.text


def _modules(path: str):
    try:
        from tensorboard.backend.event_processing import event_file_loader
        from tensorboard.compat.proto import event_pb2
        from tensorboard.plugins.hparams import plugin_data_pb2
        from tensorboard.util import tensor_util
    except ImportError:
        raise PilotError(f"{path}: TensorBoard event files need the tensorboard extra: "
                         f"{EXTRA}") from None
    return event_file_loader, event_pb2, plugin_data_pb2, tensor_util


def event_dirs(root: str) -> dict:
    """{directory: [event files]}: every directory under root holding *tfevents* files."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs.sort()
        ev = sorted(f for f in files if "tfevents" in f)
        if ev:
            out[d] = [os.path.join(d, f) for f in ev]
    return out


def _records(loader, fpath: str):
    """(index, raw bytes, bytes read so far) of each whole, checksummed record."""
    read, k = 0, 0
    it = iter(loader.RawEventFileLoader(fpath).Load())
    while True:
        try:
            raw = next(it)
        except StopIteration:
            return
        except Exception as e:  # the reader's own failure, named instead of raised
            raise PilotError(f"{fpath}: unreadable after record {k} ({type(e).__name__})") \
                from None
        read += len(raw) + 16  # length, its crc, the event, its crc
        k += 1
        yield k, raw, read


class _Dir:
    """What one directory's event files hold."""

    def __init__(self):
        self.by_step, self.at, self.hparams, self.args = {}, {}, None, None


def _text(v, tensor_util, where):
    try:
        arr = tensor_util.make_ndarray(v.tensor)
        raw = arr.reshape(-1)[0] if arr.size else b""
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    except Exception as e:
        raise PilotError(f"{where}: tag {v.tag!r} is not a readable text tensor "
                         f"({type(e).__name__})") from None


def _read(d: str, files: list, places: list, restarts: str) -> _Dir:
    loader, event_pb2, plugin_data_pb2, tensor_util = _modules(d)
    out, scalar_tags = _Dir(), set()
    for fpath in files:
        size, read, k = os.path.getsize(fpath), 0, 0
        for k, raw, read in _records(loader, fpath):
            try:
                ev = event_pb2.Event.FromString(raw)
            except Exception as e:  # a checksummed record that is no Event
                raise PilotError(f"{fpath} record {k}: not a TensorBoard Event "
                                 f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
                                 ) from None
            if not ev.HasField("summary"):
                continue
            where = f"{fpath} event {k} (step {ev.step})"
            limits.too_many_keys(len(ev.summary.value), where, "values in one event")
            vals = {}
            for v in ev.summary.value:
                plugin = v.metadata.plugin_data.plugin_name
                if plugin == "scalars":
                    scalar_tags.add(v.tag)
                elif plugin == "hparams":
                    try:
                        hp = plugin_data_pb2.HParamsPluginData.FromString(
                            v.metadata.plugin_data.content)
                    except Exception as e:
                        raise PilotError(f"{where}: hparams plugin data that does not decode "
                                         f"({type(e).__name__})") from None
                    out.hparams = out.hparams or {}
                    for name, val in hp.session_start_info.hparams.items():
                        kind = val.WhichOneof("kind")
                        out.hparams[name] = getattr(val, kind) if kind else None
                    continue
                elif plugin == "text" and v.tag in ARGS_TAGS:
                    try:
                        got = limits.loads(_text(v, tensor_util, where), f"{where}, args text")
                    except PilotError:
                        got = None  # a text summary named args that is not the trainer's
                    if isinstance(got, dict):
                        out.args = got
                    continue
                if v.HasField("simple_value"):
                    vals[v.tag] = float(v.simple_value)
                elif v.HasField("tensor") and v.tag in scalar_tags:
                    try:
                        arr = tensor_util.make_ndarray(v.tensor)
                    except Exception as e:
                        raise PilotError(f"{where}: tag {v.tag!r} is not a readable tensor "
                                         f"({type(e).__name__})") from None
                    if arr.size == 1 and arr.dtype.kind in "fiub":
                        vals[v.tag] = float(arr.reshape(()))
            if not vals:
                continue
            places.append(where)
            row = out.by_step.setdefault(ev.step, {})
            for tag, x in vals.items():
                if tag in row and row[tag] != x and not (math.isnan(x) and math.isnan(row[tag])) \
                        and restarts != "keep-last":
                    raise PilotError(
                        f"{where}: tag {tag!r} logged twice at step {ev.step} ({x:g} here, "
                        f"{row[tag]:g} at {places[out.at[ev.step]]}): a restarted run? keep one "
                        "copy of its steps, or --restarts keep-last for the later one")
                row[tag] = x  # keep-last: the later record (files in name order) wins
            out.at.setdefault(ev.step, len(places) - 1)
        if read != size:
            raise PilotError(f"{fpath}: truncated or corrupt after event {k} (byte {read} of "
                             f"{size} is where the last whole, checksummed record ends)")
    return out


def _above(d: str, read: dict, root: str):
    """The nearest directory above d (up to root) that is a run, or None."""
    up = d
    while up != root and os.path.dirname(up) != up:
        up = os.path.dirname(up)
        if up in read:
            return up
    return None


def runs(root: str, dirs: dict, places: list, restarts: str = "refuse"):
    """[(name, directory, {step: {tag: value}}, {step: place}, settings)] of the runs under
    root: an add_hparams directory (hparams and scalars at one step at most, below a run with
    scalars) is merged into the nearest run above it: its hparams join the run's settings, its
    scalars (add_hparams' metric_dict, one summary value each) are not steps."""
    read = {d: _read(d, f, places, restarts) for d, f in sorted(dirs.items())}
    # add_hparams' sub-folder: hparams and scalars at one step at most (its metric_dict), below
    # a run with scalars; tf.summary's hparams runs (many steps, under a config-only root) stay
    into = {d: _above(d, read, root) for d, got in read.items()
            if got.hparams is not None and len(got.by_step) <= 1}
    into = {d: up for d, up in into.items() if up is not None and read[up].by_step}
    merged = {}
    for d, up in into.items():
        merged.setdefault(up, {}).update(read[d].hparams)
    out = []
    for d, got in read.items():
        if d in into:
            continue  # an add_hparams sub-folder, read into its run
        settings = {**(got.args or {}), **(got.hparams or {}), **merged.get(d, {})} or None
        rel = os.path.relpath(d, root)
        name = os.path.basename(os.path.abspath(root)) if rel == "." else \
            rel.replace(os.sep, "/")
        out.append((name, d, got.by_step, got.at, settings))
    return out


__all__ = ["EXTRA", "event_dirs", "runs"]
