"""The learning-rate rule lr = lr0 (B / b0)^p most pilot runs share, inferred from their
batches and lrs (numpy only; the plan fits its clocks on the runs on the rule)."""
import itertools
import math

import numpy as np

from twoclock.config import RULE_EXPONENT, require

RULE_TOL = 0.01  # a run is on the rule when its lr is within 1% of lr0 (B / b0)^p
ALL_PAIRS_UP_TO = 256  # infer_rule tries every pair of runs up to this many runs
MAX_CANDIDATES = 64  # ... and beyond, this many of the most common pairwise exponents


def infer_rule(batch_R, lr_R) -> dict:
    """The learning-rate rule lr = lr0 (B / b0)^p most runs share (b0 the smallest batch).

    Candidates are the exponents between every pair of runs plus 0, 1/2, 1; a run is on a rule
    when its lr is within RULE_TOL of it. Off-rule runs (a fixed-LR control) are kept out of
    the clock fits: the fit forms hold for one rule at a time.
    """
    lb, ll = np.log(batch_R), np.log(lr_R)
    cands = {0.0, 0.5, 1.0} | _exponents(lb, ll)
    best = None
    for p in sorted(cands):
        dev = ll - p * lb
        on = np.abs(dev - np.median(dev)) <= RULE_TOL
        if not on.any():
            continue
        score = (int(on.sum()), len(np.unique(lb[on])), -abs(p - 0.5))
        if best is None or score > best[0]:
            best = (score, p, on)
    _, p, on = best
    b0 = float(batch_R[on].min())
    lr0 = float(np.exp(np.median(ll[on] - p * (lb[on] - math.log(b0)))))
    return {"p": p, "lr0": lr0, "b0": b0, "on_rule": on}


def _exponents(lb, ll) -> set:
    """Candidate exponents: between every pair of runs up to ALL_PAIRS_UP_TO runs; beyond, in
    linear time, between each run and its neighbours in batch order (1, 2, 4, ... 64 apart)
    and the runs at the smallest and largest batch, keeping the MAX_CANDIDATES most common
    (the rule most runs share is among them)."""
    n = lb.size
    if n <= ALL_PAIRS_UP_TO:
        return {round(float((ll[i] - ll[j]) / (lb[i] - lb[j])), 6)
                for i, j in itertools.combinations(range(n), 2) if lb[i] != lb[j]}
    order = np.argsort(lb, kind="stable")
    b, l = lb[order], ll[order]
    pairs = [(b[k:], l[k:], b[:-k], l[:-k]) for k in (1, 2, 4, 8, 16, 32, 64) if k < n]
    pairs += [(b, l, np.full(n, b[0]), np.full(n, l[0])), (b, l, np.full(n, b[-1]),
                                                           np.full(n, l[-1]))]
    slopes = []
    for b1, l1, b2, l2 in pairs:
        d = b1 != b2
        slopes.append(np.round((l1[d] - l2[d]) / (b1[d] - b2[d]), 6))
    values, counts = np.unique(np.concatenate(slopes), return_counts=True)
    top = values[np.argsort(-counts, kind="stable")[:MAX_CANDIDATES]]
    return {float(v) for v in top}


def parse_rule(text: str) -> tuple:
    """'P[:LR0@B0]' (--predict-rule) -> (p, lr0 or None, b0 or None); ValueError naming
    --predict-rule."""
    head, _, anchor = text.partition(":")
    try:
        p = RULE_EXPONENT[head] if head in RULE_EXPONENT else float(head)
        lr0, b0 = (float(x) for x in anchor.split("@")) if anchor else (None, None)
    except ValueError:
        p = math.nan
    require(math.isfinite(p) and -2 <= p <= 2 and (not anchor or (
        math.isfinite(lr0) and lr0 > 0 and math.isfinite(b0) and b0 > 0)), "--predict-rule",
        "P[:LR0@B0]: P in [-2, 2] or fixed, sqrt, linear; LR0 and B0 > 0", text)
    return p, lr0, b0


def anchored(predict_rule, batch_R, lr_R):
    """A prediction rule (p, lr0, b0) from --predict-rule's text or (p, lr0 or None, b0 or
    None), anchored where not given at the pilots' own rule (infer_rule); None stays None."""
    if predict_rule is None:
        return None
    p, lr0, b0 = parse_rule(predict_rule) if isinstance(predict_rule, str) else predict_rule
    if lr0 is None:
        found = infer_rule(batch_R, lr_R)
        lr0, b0 = found["lr0"], found["b0"]
    return p, lr0, b0


__all__ = ["RULE_TOL", "infer_rule", "parse_rule", "anchored"]
