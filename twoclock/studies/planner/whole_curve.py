"""The whole curve of a practitioner's log: its target and more levels of the same metric, each
a fraction of the way back to where the pilots start, planned jointly with the Adam form
(twoclock/pilot/levels.py; with sharp, one knee's sharpness fitted over the levels: `plan.py
--fit-knee`; docs/plan.md, "A practitioner's sweep")."""
import csv

import numpy as np

from twoclock.pilot import api, erosion, levels
from twoclock.pilot.conditions import parse_condition
from twoclock.pilot.plan import PilotError
from twoclock.pilot.reader import read_logs

FRACTIONS = (0.15, 0.3)  # the levels, as fractions of the way back to the pilots' start


def level_texts(target: str, first_R, fractions) -> str:
    """The target and the levels T + f (v0 - T), v0 the median of the runs' first logged values,
    as one several-target --progress argument (the target first)."""
    c = parse_condition(target, "--progress")
    v0 = float(np.median(first_R))
    if (v0 - c.threshold) * (1.0 if c.op in ("<=", "<") else -1.0) <= 0:
        raise PilotError(f"--progress {target!r}: the runs' median first logged value {v0:.6g} "
                         "already meets the target: no levels lie between it and the target")
    vals = [c.threshold + f * (v0 - c.threshold) for f in fractions]
    return " ".join([target] + [f"{c.metric}{c.op}{v:.6g}" for v in vals])


def first_values(path: str, metric: str) -> list:
    """Each run's first logged value of `metric` in a log CSV."""
    first = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            first.setdefault(row["run"], float(row[metric]))
    return list(first.values())


def plan_both(path: str, target: str, fractions, held, sharp: bool = False,
              **reading) -> tuple:
    """(the target's plan alone, its row of the joint fit): each {batch: progress band}, or the
    refusal's line in place of a plan. The target's plan is made once and serves both (the
    joint fit is refused with it); sharp: the joint fit fits the knee's sharpness too;
    reading: the planner's options for reading the log (smoothing, eval_items)."""
    metric = parse_condition(target, "--progress").metric
    bands_of = lambda rows: {p["batch"]: p["progress_samples"] for p in rows}
    try:
        plans = [adam_plan(path, target, held, **reading)]
    except PilotError as err:
        return str(err), str(err)
    alone = bands_of(plans[0]["predictions"])
    try:  # the levels (their refusal: the joint fit's), planned each alone
        texts = levels.split_targets(level_texts(target, first_values(path, metric), fractions))
        plans += [adam_plan(path, t, held, **reading) for t in texts[1:]]
    except PilotError as err:
        return alone, str(err)
    return alone, bands_of(levels.joint_plan(texts, plans, list(held), sharp=sharp)[
        "targets"][0]["predictions"])


def turns_back(path: str, target: str) -> bool:
    """Whether a design's logged progress metric turns back (pilot/erosion.py), as
    `--progress-form auto` reads it: then auto plans the target alone with the default forms."""
    c = parse_condition(target, "--progress")
    return erosion.test(read_logs(path, (c.metric,), None).runs, c.metric, c.op).turns_back


def adam_plan(path: str, text: str, held, **reading) -> dict:
    """One target's plan of a design's log: the Adam form, progress only (the study's own);
    reading: plan_logs' smoothing and eval_items."""
    return api.plan_logs(path, text, [], predict=list(held), progress_form="adam",
                         **reading).to_json()


__all__ = ["FRACTIONS", "level_texts", "first_values", "plan_both", "turns_back", "adam_plan"]
