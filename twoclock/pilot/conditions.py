"""What a plan from logs reads: conditions on a metric ('kl>=0.5'), `--col NAME=COLUMN` mappings,
`--batch RUN=B` / `--lr RUN=LR` values and `--smooth` settings, each parsed or refused in one
line."""
from dataclasses import dataclass
import math
import re

import numpy as np

from twoclock.clock import Clock
from twoclock.pilot.forms import FAILURE_FORMS
from twoclock.pilot.plan import PilotError

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COND = re.compile(rf"^\s*([^<>=!\s](?:[^<>=!]*[^<>=!\s])?)\s*(>=|<=|>|<)\s*"
                   rf"(?:(peak)\s*-\s*|(trough)\s*\+\s*)?({_NUM})\s*$")


@dataclass(frozen=True)
class Condition:
    """metric op threshold, e.g. heldout_acc >= 0.7; or relative to the run's running extreme,
    heldout_acc <= peak - 0.1 (ref 'peak': a fall of 0.1 below the best so far) and
    loss >= trough + 0.5 (ref 'trough'); `flag` is where it came from."""
    metric: str
    op: str
    threshold: float
    flag: str
    ref: str | None = None

    @property
    def text(self) -> str:
        rel = {"peak": "peak-", "trough": "trough+"}.get(self.ref, "")
        return f"{self.metric}{self.op}{rel}{self.threshold:g}"

    def curve(self, v):
        """What the condition compares: the values, or their distance from the running peak
        (<= 0) or trough (>= 0)."""
        v = np.asarray(v, np.float64)
        if self.ref == "peak":
            return v - np.maximum.accumulate(v)
        if self.ref == "trough":
            return v - np.minimum.accumulate(v)
        return v

    @property
    def level(self) -> float:
        """The threshold on `curve`."""
        return -self.threshold if self.ref == "peak" else self.threshold

    @property
    def clock(self) -> Clock:
        """The clock this condition times, on `curve`'s values (`twoclock.clock`)."""
        return Clock(self.metric, self.op, self.level)

    def holds(self, curve):
        """The condition on values already passed through `curve`."""
        return self.clock.holds(curve)

    def met(self, v):
        return self.holds(self.curve(v))


def parse_condition(text: str, flag: str) -> Condition:
    """'kl>=0.5', 'heldout_acc<=peak-0.1' -> Condition; PilotError (one line) for anything
    else ('kl>>0.5', 'kl=0.5', 'acc>=peak-0.1': a fall is timed by <=, a rise by >=)."""
    m = _COND.match(text)
    if m is None:
        raise PilotError(f"{flag} {text!r}: not a condition; expected METRIC>=X, METRIC<=X, "
                         "METRIC>X, METRIC<X, METRIC<=peak-X or METRIC>=trough+X "
                         "(e.g. 'kl>=0.5', 'heldout_acc<=peak-0.1')")
    metric, op, peak, trough, x = m.groups()
    ref = "peak" if peak else ("trough" if trough else None)
    if ref is not None:
        want = "<" if ref == "peak" else ">"
        if not op.startswith(want) or not float(x) > 0:
            raise PilotError(f"{flag} {text!r}: a fall below the running peak is "
                             "METRIC<=peak-X and a rise above the running trough "
                             "METRIC>=trough+X, with X > 0")
    return Condition(metric, op, float(x), flag, ref)


def parse_failures(items) -> list:
    """['kl>=1.5', ...] (--failure) -> [Condition, ...] in the order given; PilotError (one
    line) for a condition given twice, as written or not ('kl>=1.5', 'kl >= 1.50'): each is
    fitted once."""
    out, seen = [], {}
    for text in items:
        c = parse_condition(text, "--failure")
        key = (c.metric, c.op, c.ref, c.threshold)
        if key in seen:
            what = ("given twice" if seen[key] == text else
                    f"the same condition as --failure {seen[key]!r}")
            raise PilotError(f"--failure {text!r}: {what}; give each failure condition once")
        seen[key] = text
        out.append(c)
    return out


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


def _keyed(items, read, again) -> dict:
    """{key: value} of ['KEY=VALUE', ...] split at the last '=': read(item, key, sep, value)
    gives (key, value) or raises PilotError; a key given twice raises again(item, key as
    written, its first value)."""
    out = {}
    for item in items or ():
        key, sep, raw = item.rpartition("=")
        k, v = read(item, key, sep, raw)
        if k in out:
            raise PilotError(again(item, key, out[k]))
        out[k] = v
    return out


def parse_per_run(items, flag: str) -> dict:
    """['b64=64', ...] (--batch, --lr) -> {run: value > 0}; PilotError when malformed."""
    def read(item, run, sep, raw):
        try:
            v = float(raw)
        except ValueError:
            v = math.nan
        if not sep or not run.strip() or not (math.isfinite(v) and v > 0):
            raise PilotError(f"{flag} {item!r}: expected RUN=VALUE with a number > 0 "
                             f"(e.g. {flag} b64={'64' if flag == '--batch' else '1e-6'})")
        return run.strip(), v
    return _keyed(items, read, lambda item, run, old:
                  f"{flag} {item!r}: run {run.strip()!r} is already given {old:g}")


def parse_forms(items, fcs) -> dict:
    """['drift>=0.3=power', ...] (--form) -> {failure condition's text: form}; PilotError
    where malformed, for a condition that is not a --failure, or given twice."""
    texts = [f.text for f in fcs]

    def read(item, cond, sep, form):
        if not sep or form not in FAILURE_FORMS:
            raise PilotError(f"--form {item!r}: expected CONDITION=FORM with FORM one of "
                             f"{', '.join(FAILURE_FORMS)} (e.g. --form 'drift>=0.3=power')")
        text = parse_condition(cond, "--form").text
        if text not in texts:
            raise PilotError(f"--form {item!r}: {cond!r} is not one of the --failure conditions "
                             f"({', '.join(texts)})")
        return text, form
    return _keyed(items, read, lambda item, cond, old:
                  f"--form {item!r}: {cond!r} already has the form {old!r}")


SMOOTHING = ("ema:T or window:W with T, W >= 1 in samples, or quad:N with N odd >= 5 logged "
             "points")


def parse_smooth(text):
    """'ema:2000' / 'window:4000' -> (kind, samples); 'quad:5' -> ('quad', 5) (points); None
    for None."""
    if text is None:
        return None
    kind, _, w = text.partition(":")
    try:
        width = float(w)
    except ValueError:
        width = math.nan
    # narrower than one sample smooths nothing (and a subnormal width overflows); a quadratic
    # through 3 points is the points themselves
    ok = math.isfinite(width) and width >= 1
    if kind == "quad":
        ok = ok and width.is_integer() and width >= 5 and width % 2 == 1
    if kind not in ("ema", "window", "quad") or not ok:
        raise PilotError(f"--smooth {text!r}: expected {SMOOTHING}")
    return kind, int(width) if kind == "quad" else width


__all__ = ["Condition", "parse_condition", "parse_columns", "parse_per_run", "parse_forms",
           "SMOOTHING", "parse_smooth"]
