"""When the ratio clip starts to bind, from the clipped share of tokens the pilots logged.

A trainer logs the share of tokens (or samples) on the clipped branch of PPO's min (TRL:
`clip_ratio/region_mean`, verl: `actor/pg_clipfrac`). The share grows with how far one rollout
batch moves the policy, lr(B) times the optimizer steps per rollout batch: at a fixed number of
minibatches x epochs that is lr(B) alone; with a fixed minibatch size (steps ~ B) it is
lr(B) B. Each run's share is its mean over the logged points up to its progress clock (the part
of the run a plan is about); log share is fitted as a line in the log of the move, and the
batch where it passes `bind` (a few percent: where this project's models show clipping start
to delay the drift clocks, docs/plan.md) follows in closed form under the pilots' lr rule.
The line is used only as far as it was checked: within REACH times the pilots' moves and up to
REACH times the largest share a pilot logged (docs/plan.md); past that, no share and no onset.
"""
import math

import numpy as np

from twoclock.pilot import fit as pf

STEPS = ("fixed", "per_batch")  # minibatches x epochs the same at every B, or ~ B
# the line's checked reach: on the policy model's clipping cells the line through the shares at
# moves 1 and 4 put the share at move 16 at 7.7% (4.4x the larger share), 1.9x the 4.07%
# measured; at move 64 at 34%, 4.8x the 7.1% measured (docs/plan.md, docs/policy.md)
REACH = 4.0
_TOL = 1e-9  # a batch at the reach's edge, up to rounding, is within it


def _share(run, metric: str, until: float) -> float | None:
    s, v = run.samples_R, run.metrics[metric]
    ok = np.isfinite(v) & (s <= until)
    return float(np.mean(v[ok])) if ok.any() else None


def clip_onset(runs, prog, metric: str, bind: float, pred_B, rule, steps: str = "fixed",
               level: float = 0.95) -> dict:
    """The clipped share per pilot run, its fit against the move per rollout batch, the share
    predicted at pred_B, and the batch where it passes `bind` (None: it does not grow);
    rule: the plan's learning-rate rule (result.Rule)."""
    s = rule.p + (1.0 if steps == "per_batch" else 0.0)  # d log move / d log B
    log_move = lambda b, lr: math.log(lr) + (math.log(b) if steps == "per_batch" else 0.0)
    per_run = []
    for r, c in zip(runs, prog):
        if not c.timed:  # never reached, or met at the first logged point: no clock to read at
            continue
        f = _share(r, metric, c.samples)
        per_run.append({"run": r.name, "batch": r.batch, "share": f,
                        "log_move": log_move(r.batch, r.lr)})
    out = {"metric": metric, "bind": bind, "steps": steps, "runs": per_run, "slope": None,
           "predictions": [], "binds_at": None, "reach": None, "curve": None}
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
    lr_of = rule.lr
    now = max(p["share"] for p in per_run if p["share"] is not None)
    # the reach: moves within REACH of the pilots', where the line stays below REACH x now
    cap = min(1.0, REACH * now)  # a share: at most 1
    lo, hi = float(x.min()) - math.log(REACH), float(x.max()) + math.log(REACH)
    if b > 0:
        hi = min(hi, (math.log(cap) - a) / b)
    elif b < 0:
        lo = max(lo, (math.log(cap) - a) / b)
    within = lambda lm: lo - _TOL * (1 + abs(lo)) <= lm <= hi + _TOL * (1 + abs(hi))
    share = lambda lm: min(cap, math.exp(a + b * lm)) if within(lm) else None
    out["predictions"] = [{"batch": float(B), "share": share(log_move(B, lr_of(B)))}
                          for B in pred_B]
    # log share = a + b (c0 + s log B), c0 the move's intercept in log B
    c0 = log_move(1.0, lr_of(1.0))
    batch_of = lambda lm: math.exp((lm - c0) / s)
    out["reach"] = {"share": cap, "move_factor": REACH,
                    "batches": [batch_of(lo), batch_of(hi)] if s > 0 and hi >= lo else None}
    line_at = None
    if b > 0 and s > 0:
        line_at = batch_of((math.log(bind) - a) / b)
        out["binds_at"] = line_at if within((math.log(bind) - a) / b) else None
    if out["reach"]["batches"] is not None:  # the line over the pilots and its reach
        Bs = np.geomspace(min(p["batch"] for p in pos), out["reach"]["batches"][1], 32)
        pts = [(B, share(log_move(B, lr_of(B)))) for B in Bs.tolist()]
        pts = [(B, f) for B, f in pts if f is not None]
        out["curve"] = {"batch": [B for B, _ in pts], "share": [f for _, f in pts]}
    slope = f"log share vs log move slope {b:.3g} [{b - t * se:.3g}, {b + t * se:.3g}]"
    if out["binds_at"] is not None:
        out["reading"] = (f"{metric} passes {bind:g} at B ~ {line_at:.0f} (pilots up to "
                          f"{now:.3g}; {slope})")
    elif line_at is not None:
        out["reading"] = (f"{metric}: the line passes {bind:g} at B ~ {line_at:.3g}, past its "
                          f"checked reach ({REACH:g}x the pilots' move per rollout, shares up to "
                          f"{cap:.3g}; pilots up to {now:.3g}; {slope}): no onset predicted")
    else:
        out["reading"] = (f"{metric} does not grow with the move per rollout (slope {b:.3g}): "
                          "no batch where it binds")
    return out


def reach_note(co: dict) -> str:
    """The printout's note on the predicted shares left out (''  where none is)."""
    if co["reach"] is None or all(p["share"] is not None for p in co["predictions"]):
        return ""
    r = co["reach"]
    where = "" if r["batches"] is None else \
        f"B {r['batches'][0]:.3g} to {r['batches'][1]:.3g}, "
    return (f" (-: past the line's checked reach, {where}shares up to {r['share']:.3g}: "
            f"{r['move_factor']:g}x the pilots' move and largest share, docs/plan.md)")


__all__ = ["STEPS", "REACH", "clip_onset", "reach_note"]
