"""A plan as typed records (what `twoclock.pilot.plan.plan` returns) and its JSON.

Each record is frozen; `to_json()` gives the dict plan.json holds, its keys in the order of the
fields. A band (at one batch: {median, ci}, and by_form for a failure clock's plausible forms)
and the recommendation's safe batch and schedule are JSON dicts already: forms.py and
analysis/switch.py build them, and nothing computes with them past the plan.
"""
from dataclasses import dataclass, fields
import math

from twoclock.config import scaled_lr

# plan.json's "schema" (both modes: Plan, LogsPlan): bumped when a key changes meaning or goes;
# docs/results.md, "plan.json", names every key and its unit
PLAN_SCHEMA = 1
# several targets at once (pilot/levels.py): a document of its own, each target's plan inside;
# a single target keeps PLAN_SCHEMA's plan.json unchanged
TARGETS_SCHEMA = PLAN_SCHEMA + 1


def to_json(value):
    """A record, or lists, tuples and dicts of them, as JSON-ready values (tuples as lists)."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


class Record:
    """A frozen dataclass whose JSON is its fields, in order."""

    def to_json(self) -> dict:
        return {f.name: to_json(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class Rule(Record):
    """The learning-rate rule lr = lr0 (B / b0)^p the on-rule runs share."""
    p: float
    lr0: float
    b0: float
    off_rule_runs: int

    def lr(self, B):
        return scaled_lr(self.lr0, B, self.b0, self.p)


@dataclass(frozen=True)
class Prediction(Record):
    """Both clocks at one batch, with their bands; hours where step times are known."""
    batch: float
    updates: float  # K, the optimizer updates per rollout batch the prediction is for
    lr: float
    progress_samples: dict
    failure_samples: dict
    no_failure_before: float | None  # a bound where fewer than two runs failed
    seconds_per_update: float | None
    hours_to_target: dict | None


@dataclass(frozen=True)
class Estimate(Record):
    """The clocks the recommendation uses at one candidate batch: the runs' medians where
    on-rule runs are, else the fits (both kept); failure inf where it never fails."""
    batch: float
    progress: float
    failure: float
    progress_fit: float
    failure_fit: float
    source: str  # "runs" or "fit"
    seconds_per_sample: float | None

    def to_json(self) -> dict:  # inf (never fails) -> null
        return {k: (None if isinstance(v, float) and math.isinf(v) else v)
                for k, v in super().to_json().items()}


@dataclass(frozen=True)
class Recommendation(Record):
    """The fastest safe constant batch and small-then-large schedule (dicts, or None when none
    is safe), the batches predicted to fail first, and the constant batch the fitted curves
    alone would pick."""
    objective: str  # "seconds" or "samples"
    margin: float
    constant: dict | None
    schedule: dict | None
    unsafe: tuple
    fit_only_constant: dict | None = None


@dataclass(frozen=True)
class CriticalBatch(Record):
    batch: float | None  # None: the progress clock is flat over the pilots
    ci: tuple


@dataclass(frozen=True)
class Exponent(Record):
    """The failure clock's power-law exponent q, its CI and what it says."""
    value: float | None
    ci: tuple
    reading: str


@dataclass(frozen=True)
class ProgressReport(Record):
    """The progress clock's form and fit."""
    form: str
    asymptote_exponent: float
    sharpness: float
    why: str
    sse_log: dict
    band_forms: tuple
    n_min: float
    dof: int
    delta: float


@dataclass(frozen=True)
class FailureReport(Record):
    """The failure clock's power law N_fail = f_ref (B / b_ref)^exponent."""
    f_ref: float
    b_ref: float
    exponent: float
    dof: int
    censored_active: int


@dataclass(frozen=True)
class FailureForm(Record):
    """The failure clock's form: chosen (by whom and why), the plausible ones, and each fitted
    form's parameters and form error (`forms`, flattened into the JSON by name)."""
    chosen: str
    plausible: tuple
    chosen_by: str
    why: str
    forms: dict

    def to_json(self) -> dict:
        return {"chosen": self.chosen, "plausible": to_json(self.plausible),
                "chosen_by": self.chosen_by, "why": self.why, **to_json(self.forms)}


@dataclass(frozen=True)
class Throughput(Record):
    gen_latency: float
    critical_gen_batch: float
    knee: float


@dataclass(frozen=True)
class Fit(Record):
    """What was fitted, and how the bands are made."""
    rule: Rule
    progress: ProgressReport
    progress_form_error: dict  # {curvature, left_out}
    failure: FailureReport | None
    failure_form: FailureForm | None
    throughput: Throughput | None
    level: float
    margin: float
    bands: str
    # the rule the pilots share, where --predict-rule predicts under another (else None)
    pilots_rule: Rule | None = None


@dataclass(frozen=True)
class Curves(Record):
    """The bands on a grid of batches, for the figure (failure None where no form fitted)."""
    batch: tuple
    progress_samples: tuple
    failure_samples: tuple | None


@dataclass(frozen=True)
class RunRow(Record):
    """One pilot run as the plan read it (failure None where it did not fail)."""
    batch: float
    lr: float
    progress_samples: float
    failure_samples: float | None
    on_rule: bool
    seed: str


@dataclass(frozen=True)
class Plan(Record):
    """The plan: predictions at the batches asked for, the recommendation, and the fits."""
    predictions: tuple
    critical_batch: CriticalBatch
    failure_exponent: Exponent
    recommendation: Recommendation
    fit: Fit
    curves: Curves
    estimates: tuple
    runs: tuple
    source: str
    article: dict | None = None  # the published table's reading (pilot.article), when planned on it

    def to_json(self) -> dict:
        out = {"schema": PLAN_SCHEMA, **super().to_json()}
        if self.article is None:
            del out["article"]
        return out


@dataclass(frozen=True)
class LogsPlan(Record):
    """A plan from logged curves (twoclock.plan_logs): the plan's fields, with each prediction,
    estimate and run row naming its earliest failure clock, then one entry per failure
    condition (`failures`: its own fit) and what was read (`logs`: curves, clocks)."""
    clip_onset: dict | None  # the batch where the logged clip share binds (--clip), or None
    predictions: tuple
    critical_batch: CriticalBatch
    failure_exponent: dict  # the plan's failure fit's exponent, and its "clock"
    recommendation: dict
    fit: Fit
    curves: Curves
    estimates: tuple
    runs: tuple
    source: str
    failures: tuple
    logs: dict
    progress_only: str | None = None  # with no failure condition: what the plan is then
    floor_out: dict | None = None  # --floor-out: the plateaus read and predicted (floorout)

    def to_json(self) -> dict:
        out = {"schema": PLAN_SCHEMA, **super().to_json()}
        for name in ("progress_only", "floor_out"):
            if out[name] is None:
                del out[name]
        return out


__all__ = ["to_json", "Record", "Rule", "Prediction", "Estimate", "Recommendation",
           "CriticalBatch", "Exponent", "ProgressReport", "FailureReport", "FailureForm",
           "Throughput", "Fit", "Curves", "RunRow", "Plan", "LogsPlan", "PLAN_SCHEMA"]
