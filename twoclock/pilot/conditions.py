"""What a plan from logs reads: conditions on a metric ('kl>=0.5'), `--col NAME=COLUMN` mappings,
`--batch RUN=B` / `--lr RUN=LR` values and `--smooth` settings, each parsed or refused in one
line."""
from dataclasses import dataclass
import math
import re

import numpy as np

from twoclock.pilot.plan import PilotError

_OPS = {">=": np.greater_equal, "<=": np.less_equal, ">": np.greater, "<": np.less}
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COND = re.compile(rf"^\s*([^<>=!\s](?:[^<>=!]*[^<>=!\s])?)\s*(>=|<=|>|<)\s*({_NUM})\s*$")


@dataclass(frozen=True)
class Condition:
    """metric op threshold, e.g. heldout_acc >= 0.7; `flag` is where it came from."""
    metric: str
    op: str
    threshold: float
    flag: str

    @property
    def text(self) -> str:
        return f"{self.metric}{self.op}{self.threshold:g}"

    def met(self, v):
        return _OPS[self.op](v, self.threshold)


def parse_condition(text: str, flag: str) -> Condition:
    """'kl>=0.5' -> Condition; PilotError (one line) for anything else ('kl>>0.5', 'kl=0.5')."""
    m = _COND.match(text)
    if m is None:
        raise PilotError(f"{flag} {text!r}: not a condition; expected METRIC>=X, METRIC<=X, "
                         "METRIC>X or METRIC<X (e.g. 'kl>=0.5')")
    return Condition(m.group(1), m.group(2), float(m.group(3)), flag)


def parse_columns(items) -> dict:
    """['samples=train/num_samples', ...] -> {file column: name}; PilotError when malformed."""
    out = {}
    for item in items or ():
        name, sep, col = item.partition("=")
        name, col = name.strip(), col.strip()
        if not sep or not name or not col:
            raise PilotError(f"--col {item!r}: expected NAME=COLUMN "
                             "(e.g. samples=train/num_samples)")
        if col in out:
            raise PilotError(f"--col {item!r}: column {col!r} is already mapped to {out[col]!r}")
        if name in out.values():  # which column is meant? refuse, never guess
            was = next(c for c, n in out.items() if n == name)
            raise PilotError(f"--col {item!r}: {name!r} is already read from column {was!r} "
                             f"(--col {name}={was}); give one --col per name")
        out[col] = name
    return out


def parse_per_run(items, flag: str) -> dict:
    """['b64=64', ...] (--batch, --lr) -> {run: value > 0}; PilotError when malformed."""
    out = {}
    for item in items or ():
        run, sep, raw = item.rpartition("=")
        run = run.strip()
        try:
            v = float(raw)
        except ValueError:
            v = math.nan
        if not sep or not run or not (math.isfinite(v) and v > 0):
            raise PilotError(f"{flag} {item!r}: expected RUN=VALUE with a number > 0 "
                             f"(e.g. {flag} b64={'64' if flag == '--batch' else '1e-6'})")
        if run in out:
            raise PilotError(f"{flag} {item!r}: run {run!r} is already given {out[run]:g}")
        out[run] = v
    return out


def parse_smooth(text):
    """'ema:2000' / 'window:4000' -> (kind, samples); None for None."""
    if text is None:
        return None
    kind, _, w = text.partition(":")
    try:
        width = float(w)
    except ValueError:
        width = math.nan
    # narrower than one sample smooths nothing (and a subnormal width overflows)
    if kind not in ("ema", "window") or not (math.isfinite(width) and width >= 1):
        raise PilotError(f"--smooth {text!r}: expected ema:T or window:W with T, W >= 1 "
                         "in samples")
    return kind, width


__all__ = ["Condition", "parse_condition", "parse_columns", "parse_per_run", "parse_smooth"]
