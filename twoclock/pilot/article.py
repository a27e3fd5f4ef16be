"""The published GRPO time-to-target table as pilot runs, and the plan's reading of it.

Source: "When Do Larger Batches Help Scale LLM Reinforcement Learning?" (Tencent Hy Team),
data and column meanings in twoclock/data/README.md. The table is relative to P = 128; the
absolute scale (122.88K responses, 357 s per 1024-response step) is the one
twoclock/analysis/throughput.py calibrates its GRPO defaults to, so it is taken from there.
"""
import csv
import math
import os

import numpy as np

from twoclock.analysis import throughput as tp
from twoclock.pilot.plan import PilotRuns

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                    "grpo_time_to_target.csv")
REF_PROMPTS = 128
REF_RESPONSES = 122_880                          # responses to target at P = 128
REF_STEP_SECONDS = tp.GRPO_STEP_SECONDS_REF   # 11.90 h / 120 steps of 1024 responses
REF_BATCH = tp.GRPO_REF_BATCH                 # 1024 responses = 128 prompts x 8


def published(path: str = DATA) -> list:
    """The table's rows: dicts with ints for prompts/G, floats (None when not published)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    num = lambda s: None if s.strip() == "" else float(s)
    return [{"prompts": int(r["prompts"]), "responses_per_prompt": int(r["responses_per_prompt"]),
             "lr_rule": r["lr_rule"], "time_to_target": num(r["time_to_target"]),
             "responses_to_target": num(r["responses_to_target"]),
             "throughput": num(r["throughput"])} for r in published_rows(rows)]


def published_rows(rows):
    return [r for r in rows if r["prompts"].strip()]


def article_runs(path: str = DATA) -> PilotRuns:
    """Pilot runs from the rows that publish responses-to-target: batch in responses, lr
    relative to the P = 128 learning rate (absolute values are not published), step seconds
    from the throughput. No run collapsed, so failure is censored at the target."""
    rows = [r for r in published(path) if r["responses_to_target"] is not None]
    B = np.array([r["prompts"] * r["responses_per_prompt"] for r in rows], np.float64)
    lr = np.array([math.sqrt(r["prompts"] / REF_PROMPTS) if r["lr_rule"] == "sqrt" else 1.0
                   for r in rows])
    prog = np.array([r["responses_to_target"] * REF_RESPONSES for r in rows])
    spu = np.array([REF_STEP_SECONDS * (b / REF_BATCH) / r["throughput"]
                    for b, r in zip(B, rows)])
    n = len(rows)
    return PilotRuns(B, lr, prog, np.full(n, math.inf), np.full(n, math.inf), spu,
                     ("",) * n, source="grpo_time_to_target.csv (published table)")


def predict_batches(path: str = DATA) -> list:
    """Every published batch, in responses."""
    return sorted({r["prompts"] * r["responses_per_prompt"] for r in published(path)})


def reading(result, path: str = DATA) -> dict:
    """Planned vs published time-to-target (both relative to P = 128) on the sqrt rule, and
    the planned optimum in prompts, from a plan (pilot.plan's Plan)."""
    est = {e.batch: e for e in result.estimates}
    ref = est[float(REF_BATCH)]
    t = lambda e: e.progress * e.seconds_per_sample
    rows = []
    for r in published(path):
        b = float(r["prompts"] * r["responses_per_prompt"])
        if r["lr_rule"] != "sqrt" or b not in est:
            continue
        rows.append({"prompts": r["prompts"], "batch": b, "published": r["time_to_target"],
                     "planned": t(est[b]) / t(ref), "source": est[b].source})
    best = result.recommendation.constant
    return {"rows": rows, "optimum_prompts": None if best is None else
            best["batch"] / REF_BATCH * REF_PROMPTS,
            "published_optimum_prompts": min((r for r in rows if r["published"] is not None),
                                             key=lambda r: r["published"])["prompts"]}


__all__ = ["DATA", "published", "article_runs", "predict_batches", "reading"]
