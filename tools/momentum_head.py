"""Pre-registered check: momentum's head start read by each run's own length, under the sqrt rule
(docs/history/plan_notes.md, "Momentum's head start by the run's length").

    python tools/momentum_head.py predict OUT.json   # mean field's numbers (never over OUT)
    python tools/momentum_head.py score PREDICTIONS.json OUT.json   # simulates, 32 seeds a batch
    python tools/momentum_head.py seen   # the default cell under both rules (exploratory)

Under the sqrt rule a run at 8x the largest pilot takes some 15 updates, about the 1 / (1 -
beta1) = 10 that Adam's first moment averages over, and the Adam form's exponent at 8x falls
below the simulated one (tests/pilot/test_adam_form.py). A constant head start (beta1 / (1 -
beta1) x the e-folds C to the target) cannot be taken out there: it exceeds the run. The
updates momentum saves on one noiseless coordinate, by its exact recursion with Adam's
bias-corrected first moment, depend on the run's length: H(u0) for a run of u0 updates without
momentum (tools/adam_remains.py, one_coordinate_saving; 13.37 at 229 updates, tending to
kappa C = 13.48 on long runs, less on short ones).

Methods, each on the quadratic model (Adam, the sqrt rule, lr0 at b0 8), pilots B 8, 16, 32, the
Adam form (fit_adam, sharpness fitted) predicting B 128 and 256:
- plain: the form on the pilots' clocks as they are;
- run: each pilot run's u = N / b updates taken to u0 with u0 - H(u0) = u, the form fitted to
  u0 b, each prediction's u0 brought back to u0 - H(u0);
- held (the no-theory baseline): the largest pilot's median clock held in samples, the sqrt
  rule's premise.
`predict` applies them to mean-field Adam's clocks (no seeds) and writes each method's 8x error
and exponent gap (form - simulated, 128 -> 256) as predicted; commit it before `score`, which
simulates each cell (32 seeds a batch) and measures the same with 200 joint resamples of the
seeds for each paired CI.
"""
import functools
import json
import math
import os
import sys

import numpy as np

from twoclock.atomic import atomic_write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/
from adam_remains import one_coordinate_saving  # noqa: E402

PILOTS, PREDICT, S, B0 = (8, 16, 32), (128, 256), 32, 8.0
BATCHES = PILOTS + (64,) + PREDICT
# Cells no run of this method had seen when the predictions were written (the default cell,
# target 0.05 at lr0 0.01 and beta1 0.9, was seen): other targets, lrs and beta1, the sqrt rule.
CELLS = [
    {"target": 0.1, "lr0": 0.01, "beta1": 0.9},
    {"target": 0.05, "lr0": 0.02, "beta1": 0.9},
    {"target": 0.07, "lr0": 0.005, "beta1": 0.9},
    {"target": 0.05, "lr0": 0.01, "beta1": 0.8},
    {"target": 0.05, "lr0": 0.01, "beta1": 0.95},
]
RULE = ("at each cell the run-length head start beats the plain form where the paired 95% CI of "
        "|log(1 + 8x error)| run - plain lies below 0, and its exponent where the CI of |gap| "
        "run - plain does (gap: the form's exponent 128 -> 256 minus the simulated one); the "
        "reading predicts both at every cell; mean field's number for a method holds where that "
        "method's measured CI (its 8x error, its gap) holds it")


@functools.lru_cache(maxsize=None)
def head_curve(beta1: float, target: float):
    """H(u0) on a geometric grid of run lengths (2 to 20000 updates), interpolated in log u0."""
    grid = np.geomspace(2.0, 2e4, 241)
    h = np.array([one_coordinate_saving(float(u), beta1, target) for u in grid])
    return lambda u0: np.interp(np.log(u0), np.log(grid), h)


def without_momentum(u, beta1: float, target: float):
    """u0 with u0 - H(u0) = u (updates to the target without momentum), elementwise."""
    H, u = head_curve(beta1, target), np.asarray(u, np.float64)
    u0 = u + H(u + 1.0)
    for _ in range(100):  # H's slope is small (at most about 0.05): a contraction
        u0 = u + H(u0)
    return u0


def with_momentum(u0, beta1: float, target: float):
    return np.asarray(u0, np.float64) - head_curve(beta1, target)(u0)


def methods(clocks: dict, lr: dict, cell: dict) -> dict:
    """Each method's clocks at PREDICT from the pilots' runs: clocks[b] and lr[b] at PILOTS."""
    from twoclock.pilot import adam
    b1, target, lr0 = cell["beta1"], cell["target"], cell["lr0"]
    Bp = np.concatenate([np.full(np.size(clocks[b]), float(b)) for b in PILOTS])
    N = np.concatenate([np.atleast_1d(clocks[b]) for b in PILOTS]).astype(np.float64)
    lrs = np.concatenate([np.full(np.size(clocks[b]), lr[b]) for b in PILOTS])
    at = np.array(PREDICT, np.float64)

    def fit(n):
        return adam.fit_adam(Bp, n, lrs, np.ones(Bp.size), 0.5, lr0, B0, sharp=True)

    plain = np.exp(fit(N).log_median(at))
    u0 = np.exp(fit(without_momentum(N / Bp, b1, target) * Bp).log_median(at)) / at
    run = with_momentum(u0, b1, target) * at
    held = np.full(at.size, float(np.median(np.atleast_1d(clocks[PILOTS[-1]]))))
    return {"plain": plain.tolist(), "run": run.tolist(), "held": held.tolist()}


def _exp(pair) -> float:
    return math.log2(pair[1] / pair[0])


def _config(cell: dict):
    from twoclock import OptimConfig, QuadraticConfig
    return (QuadraticConfig(target=cell["target"]),
            OptimConfig(name="adam", lr_rule="sqrt", beta1=cell["beta1"]))


def meanfield(cell: dict) -> dict:
    """Each method's 8x error and exponent gap on mean-field Adam's clocks."""
    from twoclock.models.quadratic.adam_progress import adam_progress_samples
    cfg, opt = _config(cell)
    n = {b: adam_progress_samples(cfg, opt, cell["lr0"], b, budget=round(6e5 / cell["lr0"]))
         for b in PILOTS + PREDICT}
    lr = {b: float(opt.lr(cell["lr0"], float(b))) for b in PILOTS}
    m = methods({b: n[b] for b in PILOTS}, lr, cell)
    truth = [n[b] for b in PREDICT]
    return score_of(m, truth)


def score_of(m: dict, truth) -> dict:
    return {"error": {k: v[-1] / truth[-1] - 1 for k, v in m.items()},
            "gap": {k: _exp(v) - _exp(truth) for k, v in m.items() if k != "held"},
            "simulated": _exp(truth)}


def predict(out: str) -> dict:
    if os.path.exists(out):
        raise SystemExit(f"{out} exists: a new prediction goes to a new file")
    doc = {"what": "the Adam form's 8x error and exponent gap under the sqrt rule with momentum's "
                   "head start read by each run's length (tools/momentum_head.py), quadratic "
                   "model, pilots 8 16 32", "rule": RULE,
           "cells": [dict(c, predicted=meanfield(c)) for c in CELLS]}
    atomic_write(out, lambda fh: json.dump(doc, fh, indent=1))  # never a half-written file
    return doc


def simulate(cell: dict) -> tuple:
    """(clocks [batch, seed] at BATCHES, lr at each batch) for the cell, 32 seeds a batch."""
    from twoclock import SweepConfig, run_sweep
    from twoclock.models import MODELS
    cfg, opt = _config(cell)
    res = run_sweep(MODELS["quadratic"], cfg, opt,
                    SweepConfig(batches=BATCHES, lr0s=(cell["lr0"],), seeds=S,
                                budget=round(2000 / cell["lr0"]), n_ckpt=128), quiet=True)
    return np.asarray(res.prog_n[:, 0, :], np.float64), np.asarray(res.lrs_BxL[:, 0])


def _measured(N, lr, cell, s) -> dict:
    i = {b: BATCHES.index(b) for b in BATCHES}
    m = methods({b: N[i[b], s] for b in PILOTS}, {b: lr[i[b]] for b in PILOTS}, cell)
    return score_of(m, [np.median(N[i[b], s]) for b in PREDICT])


def measure(cell: dict, rng, resamples: int = 200) -> dict:
    """The cell simulated: each run's updates at BATCHES, the methods' scores on every seed, and
    their percentile 95% CIs and the run-minus-plain contrasts over `resamples` joint resamples
    of the seeds (drawn from rng)."""
    N, lr = simulate(cell)
    if (N <= 0).any():
        raise SystemExit(f"{cell}: {int((N <= 0).sum())} runs never reached the target")
    got = _measured(N, lr, cell, np.arange(S))
    draws = [_measured(N, lr, cell, rng.integers(0, S, S)) for _ in range(resamples)]
    pct = lambda f: [float(x) for x in np.percentile([f(d) for d in draws], [2.5, 97.5])]
    le = lambda d, k: abs(math.log1p(d["error"][k]))
    return {**cell, "updates": (np.median(N, axis=1) / np.array(BATCHES)).tolist(),
            "measured": got,
            "ci": {"error": {k: pct(lambda d, k=k: d["error"][k]) for k in got["error"]},
                   "gap": {k: pct(lambda d, k=k: d["gap"][k]) for k in got["gap"]}},
            "contrast": {"error": pct(lambda d: le(d, "run") - le(d, "plain")),
                         "gap": pct(lambda d: abs(d["gap"]["run"]) - abs(d["gap"]["plain"]))}}


def score(pred_path: str, out: str, resamples: int = 200) -> dict:
    with open(pred_path) as fh:
        pre = json.load(fh)
    rng = np.random.default_rng(0)
    rows = []
    for c in pre["cells"]:
        row = measure({k: c[k] for k in ("target", "lr0", "beta1")}, rng, resamples)
        ci, p = row["ci"], c["predicted"]
        row["run_beats_plain"] = {k: bool(v[1] < 0) for k, v in row["contrast"].items()}
        row["meanfield_holds"] = {f"{part} {k}": bool(ci[part][k][0] <= p[part][k]
                                                      <= ci[part][k][1])
                                  for part in ("error", "gap") for k in ci[part]}
        rows.append(row)
        # each finished cell kept at once: a crash later loses no simulation done
        atomic_write(out + ".partial", lambda fh: json.dump(rows, fh, indent=1))
    doc = {"predictions": pred_path, "rule": pre["rule"], "cells": rows, "n": len(rows),
           "run_beats_plain": {k: sum(r["run_beats_plain"][k] for r in rows)
                               for k in ("error", "gap")},
           "meanfield_holds": sum(sum(r["meanfield_holds"].values()) for r in rows),
           "meanfield_numbers": sum(len(r["meanfield_holds"]) for r in rows)}
    atomic_write(out, lambda fh: json.dump(doc, fh, indent=1))  # never a half-written file
    os.remove(out + ".partial")
    return doc


def _print_rows(rows):
    print("| target | lr0 | beta1 | updates at 8x | simulated | gap: plain, run [95% CI] | "
          "8x error: plain, run, held | run - plain: abs log error, abs gap [95% CI] |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        m, ci, c = r["measured"], r["ci"], r["contrast"]
        print(f"| {r['target']:g} | {r['lr0']:g} | {r['beta1']:g} | {r['updates'][-1]:.1f} | "
              f"{m['simulated']:.4f} | {m['gap']['plain']:+.4f}, {m['gap']['run']:+.4f} "
              f"[{ci['gap']['run'][0]:+.4f}, {ci['gap']['run'][1]:+.4f}] | "
              f"{m['error']['plain']:+.1%}, {m['error']['run']:+.1%}, {m['error']['held']:+.1%}"
              f" | {c['error'][0]:+.4f} to {c['error'][1]:+.4f}, {c['gap'][0]:+.4f} to "
              f"{c['gap'][1]:+.4f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["predict"] and len(sys.argv) == 3:
        for c in predict(sys.argv[2])["cells"]:
            p = c["predicted"]
            print(c["target"], c["lr0"], c["beta1"], {k: f"{v:+.4f}" for k, v in p["gap"].items()},
                  {k: f"{v:+.1%}" for k, v in p["error"].items()})
    elif sys.argv[1:2] == ["score"] and len(sys.argv) == 4:
        d = score(sys.argv[2], sys.argv[3])
        _print_rows(d["cells"])
        print(f"run beats plain: 8x error at {d['run_beats_plain']['error']} of {d['n']} cells, "
              f"the exponent at {d['run_beats_plain']['gap']} of {d['n']}; mean field's numbers "
              f"in their CIs: {d['meanfield_holds']} of {d['meanfield_numbers']}")
    elif sys.argv[1:] == ["seen"]:  # the default cell, the one seen before the predictions
        _print_rows([measure({"target": 0.05, "lr0": 0.01, "beta1": 0.9},
                             np.random.default_rng(0))])
    else:
        raise SystemExit(__doc__)
