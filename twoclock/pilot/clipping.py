"""When the ratio clip starts to bind, from the clipped share of tokens the pilots logged.

A trainer logs the share of tokens (or samples) on the clipped branch of PPO's min (TRL:
`clip_ratio/region_mean`, verl: `actor/pg_clipfrac`). The share grows with how far one rollout
batch moves the policy, lr(B) times the optimizer steps per rollout batch: at a fixed number of
minibatches x epochs that is lr(B) alone; with a fixed minibatch size (steps ~ B) it is
lr(B) B. Each run's share is its mean over the logged points up to its progress clock (the part
of the run a plan is about); log share is fitted as a line in the log of the move, and the
batch where it passes `bind` (a few percent: where this project's models show clipping start
to delay the drift clocks, docs/plan.md) follows in closed form under the pilots' lr rule.
"""
import math

import numpy as np

from twoclock.config import scaled_lr
from twoclock.pilot import fit as pf

STEPS = ("fixed", "per_batch")  # minibatches x epochs the same at every B, or ~ B


def _share(run, metric: str, until: float) -> float | None:
    s, v = run.samples_R, run.metrics[metric]
    ok = np.isfinite(v) & (s <= until)
    return float(np.mean(v[ok])) if ok.any() else None


def clip_onset(runs, prog, metric: str, bind: float, pred_B, rule: dict, steps: str = "fixed",
               level: float = 0.95) -> dict:
    """The clipped share per pilot run, its fit against the move per rollout batch, the share
    predicted at pred_B, and the batch where it passes `bind` (None: it does not grow)."""
    s = rule["p"] + (1.0 if steps == "per_batch" else 0.0)  # d log move / d log B
    log_move = lambda b, lr: math.log(lr) + (math.log(b) if steps == "per_batch" else 0.0)
    per_run = []
    for r, c in zip(runs, prog):
        if not c.crossed:
            continue
        f = _share(r, metric, c.samples)
        per_run.append({"run": r.name, "batch": r.batch, "share": f,
                        "log_move": log_move(r.batch, r.lr)})
    out = {"metric": metric, "bind": bind, "steps": steps, "runs": per_run, "slope": None,
           "predictions": [], "binds_at": None}
    pos = [p for p in per_run if p["share"] is not None and p["share"] > 0]
    if len({p["batch"] for p in pos}) < 2:
        top = max((p["share"] or 0.0 for p in per_run), default=0.0)
        out["reading"] = (f"{metric}: at most {top:.3g} in the pilots, at fewer than two "
                          "batches above 0: no trend to extrapolate")
        return out
    x = np.array([p["log_move"] for p in pos])
    y = np.log([p["share"] for p in pos])
    A = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    dof = max(x.size - 2, 1)
    s2 = float(np.sum((y - A @ coef) ** 2)) / dof
    se = math.sqrt(s2 * np.linalg.pinv(A.T @ A)[1, 1])
    t = pf.t_quantile((1 + level) / 2, dof)
    a, b = float(coef[0]), float(coef[1])
    out["slope"] = {"value": b, "ci": [b - t * se, b + t * se]}
    lr_of = lambda B: scaled_lr(rule["lr0"], B, rule["b0"], rule["p"])
    out["predictions"] = [{"batch": float(B),  # a share: at most 1
                           "share": min(1.0, math.exp(a + b * log_move(B, lr_of(B))))}
                          for B in pred_B]
    # log share = a + b (c0 + s log B), c0 the move's intercept in log B
    c0 = log_move(1.0, lr_of(1.0))
    if b > 0 and s > 0:
        out["binds_at"] = math.exp(((math.log(bind) - a) / b - c0) / s)
    now = max(p["share"] for p in per_run if p["share"] is not None)
    out["reading"] = (
        f"{metric} passes {bind:g} at B ~ {out['binds_at']:.0f} (pilots up to {now:.3g}; "
        f"log share vs log move slope {b:.3g} [{b - t * se:.3g}, {b + t * se:.3g}])"
        if out["binds_at"] is not None else
        f"{metric} does not grow with the move per rollout (slope {b:.3g}): no batch where "
        "it binds")
    return out


__all__ = ["STEPS", "clip_onset"]
