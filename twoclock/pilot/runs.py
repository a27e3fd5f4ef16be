"""A runs CSV read into pilot runs (twoclock/pilot/plan.py plans from them): one row per pilot
run; columns batch, lr, progress_samples, failure_samples (empty when the run did not fail) and
optionally budget, seconds_per_update, seed, updates (optimizer updates per rollout batch, K; 1
when absent). Anything wrong is refused in one line naming the row and column (PilotError).
"""
import csv
from dataclasses import dataclass
import math

import numpy as np

from twoclock.pilot import predict as pp

REQUIRED = ("batch", "lr", "progress_samples", "failure_samples")
OPTIONAL = ("budget", "seconds_per_update", "seed", "updates")
MAX_BATCH = pp.MAX_BATCH  # a batch is a count of samples (floats hold every integer to 2^53)
OUTLIER = 1e6  # a pilot batch this many times from the median batch is refused as a typo


class PilotError(ValueError):
    """Bad pilot-run input; the message is one line naming the row and column."""


@dataclass(frozen=True)
class PilotRuns:
    """Pilot runs as arrays over runs R; inf = did not fail / no budget, nan = no step time."""
    batch_R: np.ndarray
    lr_R: np.ndarray
    prog_R: np.ndarray
    fail_R: np.ndarray
    budget_R: np.ndarray
    spu_R: np.ndarray
    seed_R: tuple
    source: str = "runs"
    # K: optimizer updates per rollout batch (None: 1 for every run). The hook for readers that
    # know it (a trainer's settings, --updates); only the Adam form reads it (pilot/adam.py)
    updates_R: np.ndarray | None = None
    crossing_var_R: np.ndarray | None = None  # each clock's variance in log (evalnoise.py)
    # [R, 2]: the logged samples either side of each crossing (pilot/envelope.py's anchor)
    bracket_R: np.ndarray | None = None
    # the batch of every run that never reached the target (logs only): a batch's measured
    # median counts them as later than any arrival
    never_B: tuple = ()

    def updates(self) -> np.ndarray:
        """K per run (1 where not given)."""
        return np.ones_like(self.batch_R) if self.updates_R is None else self.updates_R

    def censor_R(self) -> np.ndarray:
        """Where a run that did not fail is known to survive to: its budget, or at least
        until it reached the target."""
        return np.where(np.isfinite(self.budget_R), self.budget_R, self.prog_R)


def _number(raw: str, where: str, empty_ok: bool):
    s = raw.strip()
    if s == "" and empty_ok:
        return None
    try:
        v = float(s)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise PilotError(f"{where}: must be a finite number > 0"
                         f"{' or empty' if empty_ok else ''} (got {raw!r})")
    return v


def read_runs(path: str) -> PilotRuns:
    """Read and validate a pilot-run CSV; PilotError (one line) for anything wrong."""
    try:  # utf-8-sig: a byte-order mark (as Excel writes) is not part of the first column
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise PilotError(f"{path}: cannot read ({e.strerror})") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise PilotError(f"{path}: not a readable CSV ({e})") from None
    if not rows:
        raise PilotError(f"{path}: empty file (expected a header with {', '.join(REQUIRED)})")
    head = [h.strip() for h in rows[0]]
    for i, h in enumerate(head):
        if h and head.index(h) != i:  # which of two columns is meant? refuse, never guess
            raise PilotError(f"{path} line 1: column {h!r} appears twice (columns "
                             f"{head.index(h) + 1} and {i + 1})")
    for col in REQUIRED:
        if col not in head:
            raise PilotError(f"{path} line 1: missing column {col!r} (header: {','.join(head)})")
    ix = {c: head.index(c) for c in REQUIRED + OPTIONAL if c in head}
    cols = {c: [] for c in ("batch", "lr", "progress_samples", "failure_samples", "budget",
                            "seconds_per_update", "updates")}
    seeds = []
    for ln, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue  # blank line
        if len(row) != len(head):
            raise PilotError(f"{path} line {ln}: {len(row)} fields, the header has {len(head)}")
        get = lambda c, empty_ok: (None if c not in ix else
                                   _number(row[ix[c]], f"{path} line {ln}, column {c}", empty_ok))
        vals = {"batch": get("batch", False), "lr": get("lr", False),
                "progress_samples": get("progress_samples", False),
                "failure_samples": get("failure_samples", True), "budget": get("budget", True),
                "seconds_per_update": get("seconds_per_update", True),
                "updates": get("updates", True)}
        if vals["batch"] > MAX_BATCH:
            raise PilotError(f"{path} line {ln}, column batch: must be at most 2^53, a count "
                             f"of samples (got {row[ix['batch']].strip()!r})")
        bud = vals["budget"]
        for c in ("progress_samples", "failure_samples"):
            if bud is not None and vals[c] is not None and vals[c] > bud:
                raise PilotError(f"{path} line {ln}, column {c}: {vals[c]:g} is later than "
                                 f"the run's budget {bud:g}")
        for c, v in vals.items():
            cols[c].append(math.inf if v is None and c in ("failure_samples", "budget")
                           else (1.0 if c == "updates" else math.nan) if v is None else v)
        seeds.append(row[ix["seed"]].strip() if "seed" in ix else "")
    if not seeds:
        raise PilotError(f"{path}: no runs below the header")
    a = {c: np.array(v, np.float64) for c, v in cols.items()}
    mid = float(np.median(a["batch"]))
    far = np.flatnonzero((a["batch"] > OUTLIER * mid) | (a["batch"] < mid / OUTLIER))
    if far.size:  # one such run would set the fit's critical batch (28 -> 3e29 for B = 1e30)
        i = int(far[np.argmax(np.abs(np.log(a["batch"][far] / mid)))])
        raise PilotError(f"{path}: batch {a['batch'][i]:g} (run {i + 1}) is more than "
                         f"{OUTLIER:g} times from the median batch {mid:g}; a typo? (pilots that "
                         "far apart are refused)")
    return PilotRuns(a["batch"], a["lr"], a["progress_samples"], a["failure_samples"],
                     a["budget"], a["seconds_per_update"], tuple(seeds), source=path,
                     updates_R=a["updates"] if "updates" in ix else None)
