"""Pre-registered check of the floor-aware Adam form (docs/plan.md, "Adam's progress form"): with
the noise floor taken out (twoclock.pilot.adam.floor_levels), does the planner's 8x clock near
the floor come closer than the plain form's, and within the 15% goal?

    python tools/adam_floor.py predict OUT.json   # mean field only; refuses an existing OUT
    python tools/adam_floor.py score PREDICTIONS.json OUT.json   # simulates, 32 seeds a batch
    python tools/adam_floor.py seen   # mean field at the regime map's cells (lr0 0.01, 0.03)
    python tools/adam_floor.py decompose   # the default cell: momentum and the floor, simulated
    python tools/adam_floor.py optimizer   # the default cell's gap along beta1 and beta2
    python tools/adam_floor.py headstart   # the floor and momentum's head start out together

Both plan each cell (the quadratic model's defaults but the cell's, Adam, a fixed lr, lr0 at b0
8) from pilots at B 8, 16, 32 and predict B 128 and 256 (4x, 8x):
- plain: the Adam form (fit_adam, sharpness fitted) on the pilots' clocks at the target;
- floor-aware: each pilot's plateau a_r read from its run's tail, phi fitted to them
  (floor_scale, optimum 0), the predicted run's floor a* = phi lr / sqrt(B*), and the form fitted
  to the pilots' clocks at a_r + (target - a*) (floor_levels);
- linear, the no-theory baseline: the largest pilot's clock times B* / 32.
`predict` does this on mean-field Adam's expected loss (no seeds: adam_progress's recursion, to
its plateau) and writes each method's 8x error against mean field's own clock. Commit its file
before running `score`, which does it on the simulation: 32 seeds a batch, a pilot's plateau the
median over seeds of its last quarter of checkpoints (8000 / lr0 samples), its clocks the
engine's crossings of the shifted level, the truth the median clock at B* (4000 / lr0 samples),
with 300 paired resamples of the seeds for each contrast's CI.
"""
import dataclasses
import json
import math
import os
import sys

import numpy as np

from twoclock.atomic import atomic_write
from twoclock.pilot import adam

PILOTS, PREDICT, S = (8, 16, 32), (128, 256), 32
# Cells no simulation of this method had seen when the predictions were written: the default
# spectrum at lrs 0.02 to 0.04 and targets 0.03 to 0.1, a narrower spectrum with its knee moved
# up (alpha 0.5, sigma 3), a wider one (alpha 2), one coordinate. The decision rule, fixed with
# them (RULE).
CELLS = [
    {"target": 0.05, "lr0": 0.02, "model": {}},
    {"target": 0.07, "lr0": 0.03, "model": {}},
    {"target": 0.03, "lr0": 0.02, "model": {}},
    {"target": 0.03, "lr0": 0.01, "model": {}},
    {"target": 0.1, "lr0": 0.04, "model": {}},
    {"target": 0.07, "lr0": 0.01, "model": {"alpha": 0.5, "sigma": 3.0}},
    {"target": 0.05, "lr0": 0.03, "model": {"alpha": 2.0}},
    {"target": 0.05, "lr0": 0.03, "model": {"dim": 1, "sigma": 3.6}},
]
RULE = ("the floor-aware form beats the plain one where the paired 95% CI of |aware 8x error| - "
        "|plain 8x error| lies below 0, and overall where the t 95% CI of its mean over the cells "
        "does; each method meets the planner's goal at a cell where |8x error| <= 0.15; mean "
        "field's predicted aware 8x error holds where it lies in the measured error's 95% CI")


def plan(clock, floors, lr0: float, target: float, head: float = 0.0) -> dict:
    """The three methods' clocks at PREDICT. clock(b, level) -> the pilot's clock(s) at batch b
    crossing `level` (an array: the runs pooled); floors: the pilots' plateaus. head: momentum's
    head start in updates (tests/pilot/test_adam_momentum.py), added to every pilot's clock
    (head x b samples) before the Adam forms' fits and taken off their predictions after."""
    B = np.array(PILOTS, np.float64)

    def fit(levels):
        N = [np.atleast_1d(clock(b, lv)) + head * b for b, lv in zip(PILOTS, levels)]
        Bp = np.concatenate([np.full(n.size, b) for b, n in zip(B, N)])
        return adam.fit_adam(Bp, np.concatenate(N), np.full(Bp.size, lr0), np.ones(Bp.size),
                             0.0, lr0, 8.0, sharp=True)

    at = np.array(PREDICT, np.float64)
    plain = np.exp(fit([target] * len(PILOTS)).log_median(at)) - head * at
    phi = adam.floor_scale(floors, B, np.full(B.size, lr0))
    aware = []
    for b in PREDICT:
        a_pred = float(adam.floor_at(phi, b, lr0))
        levels = adam.floor_levels(target, floors, a_pred)
        aware.append(math.nan if levels is None else
                     float(np.exp(fit(levels).log_median(np.array([float(b)])))[0]) - head * b)
    largest = float(np.median(np.atleast_1d(clock(PILOTS[-1], target))))
    return {"plain": plain.tolist(), "aware": aware,
            "linear": [largest * b / PILOTS[-1] for b in PREDICT], "phi": phi}


def _config(cell: dict):
    from twoclock import OptimConfig, QuadraticConfig
    return (QuadraticConfig(target=cell["target"], **cell["model"]),
            OptimConfig(name="adam", lr_rule="fixed", **cell.get("opt", {})))


def _cross(loss, level: float, b: float):
    i = np.flatnonzero(loss <= level)
    if not i.size:
        return math.nan
    t = int(i[0])
    if t == 0:
        return 0.0
    before, after = loss[t - 1] - level, loss[t] - level
    return float(b * (t - 1 + before / (before - after)))


def meanfield_curves(cell: dict) -> tuple:
    """({batch: mean-field Adam's expected loss per update over L0, to its plateau} at PILOTS and
    PREDICT, the pilots' plateaus): the cell's clocks in the initial loss's units (target a
    fraction of it, as the engine's progress_frac)."""
    from twoclock.models.quadratic.adam_progress import _adam_meanfield
    from twoclock.models.quadratic.problem import initial_loss
    cfg, opt = _config(cell)
    lr0, L0 = cell["lr0"], initial_loss(cfg)
    curves = {b: _adam_meanfield(cfg, opt, lr0, float(b), int(round(6e5 / lr0) // b), None)[0]
              / L0 for b in PILOTS + PREDICT}
    return curves, np.array([curves[b][-1] for b in PILOTS])


def meanfield(cell: dict) -> dict:
    """Each method's 8x (and 4x) error against mean-field Adam's own clock."""
    curves, floors = meanfield_curves(cell)
    out = plan(lambda b, lv: _cross(curves[b], lv, b), floors, cell["lr0"], cell["target"])
    truth = [_cross(curves[b], cell["target"], b) for b in PREDICT]
    return {"truth": truth, "floors": floors.tolist(), **out,
            "error": {k: [p / t - 1 for p, t in zip(out[k], truth)]
                      for k in ("plain", "aware", "linear")}}


def predict(out: str) -> dict:
    if os.path.exists(out):
        raise SystemExit(f"{out} exists: a new prediction goes to a new file")
    doc = {"what": "the 8x (B 256) error of the plain and the floor-aware Adam form and of linear "
                   "scaling, quadratic model, fixed lr, pilots 8 16 32 (tools/adam_floor.py)",
           "rule": RULE, "cells": [dict(cell, predicted=meanfield(cell)) for cell in CELLS]}
    atomic_write(out, lambda fh: json.dump(doc, fh, indent=1))  # never a half-written file
    return doc


def plateaus(res, n: int) -> np.ndarray:
    """[batch] each of a sweep's n batches' plateau: the median over seeds of its run's mean
    over the last quarter of its 128 checkpoints."""
    return np.median([res.ckpt[i]["progress_frac"][0, :, -32:].mean(axis=1) for i in range(n)],
                     axis=1)


def simulate(cell: dict) -> dict:
    """The cell's per-seed clocks: the pilots' plateaus, their crossings of every level the two
    methods ask for, and the truth at PREDICT."""
    from twoclock import SweepConfig, run_sweep
    from twoclock.models import MODELS
    cfg, opt = _config(cell)
    lr0, target = cell["lr0"], cell["target"]

    def sweep(batches, level, budget):
        return run_sweep(MODELS["quadratic"], dataclasses.replace(cfg, target=level), opt,
                         SweepConfig(batches=batches, lr0s=(lr0,), seeds=S, budget=budget,
                                     n_ckpt=128), quiet=True)

    long = sweep(PILOTS, target, round(8000 / lr0))
    floors = plateaus(long, len(PILOTS))
    clocks = {(b, target): long.prog_n[i, 0, :] for i, b in enumerate(PILOTS)}
    phi = adam.floor_scale(floors, np.array(PILOTS, np.float64), np.full(len(PILOTS), lr0))
    for b in PREDICT:
        levels = adam.floor_levels(target, floors, float(adam.floor_at(phi, b, lr0)))
        for p, lv in zip(PILOTS, levels):
            clocks[(p, float(lv))] = sweep((p,), float(lv), round(4000 / lr0)).prog_n[0, 0, :]
    truth = sweep(PREDICT, target, round(4000 / lr0)).prog_n[:, 0, :]
    return {"floors": floors, "clocks": clocks, "truth": truth}


def check_reached(sim: dict, cell: dict) -> None:
    """Refuse a simulated cell (simulate) any of whose runs never reached its level."""
    unreached = sum(int((v <= 0).sum()) for v in sim["clocks"].values())
    unreached += int((sim["truth"] <= 0).sum())
    if unreached:
        raise SystemExit(f"{cell}: {unreached} runs never reached their level; raise the budget")


def _errors(sim: dict, cell: dict, s) -> dict:
    clock = lambda b, lv: sim["clocks"][(b, float(lv))][s]
    out = plan(clock, sim["floors"], cell["lr0"], cell["target"])
    truth = np.median(sim["truth"][:, s], axis=1)
    return {k: [p / t - 1 for p, t in zip(out[k], truth)] for k in ("plain", "aware", "linear")}


def score(pred_path: str, out: str, resamples: int = 300) -> dict:
    from twoclock.pilot.fit import t_quantile
    with open(pred_path) as fh:
        pre = json.load(fh)
    rng = np.random.default_rng(0)
    rows = []
    for c in pre["cells"]:
        sim = simulate(c)
        check_reached(sim, c)
        err = _errors(sim, c, np.arange(S))
        draws = [_errors(sim, c, rng.integers(0, S, S)) for _ in range(resamples)]
        ci = lambda f: [float(x) for x in np.percentile([f(d) for d in draws], [2.5, 97.5])]
        p = c["predicted"]["error"]["aware"][-1]
        aware_ci = ci(lambda d: d["aware"][-1])
        rows.append({"target": c["target"], "lr0": c["lr0"], "model": c["model"],
                     "floors": sim["floors"].tolist(), "truth": np.median(sim["truth"], axis=1)
                     .tolist(), "error": err, "aware_ci": aware_ci,
                     "contrast": abs(err["aware"][-1]) - abs(err["plain"][-1]),
                     "contrast_ci": ci(lambda d: abs(d["aware"][-1]) - abs(d["plain"][-1])),
                     "predicted_aware": p,
                     "prediction_holds": bool(aware_ci[0] <= p <= aware_ci[1]),
                     "goal": {k: bool(abs(err[k][-1]) <= 0.15) for k in err}})
        # each finished cell kept at once: a crash later loses no simulation done
        atomic_write(out + ".partial", lambda fh: json.dump(rows, fh, indent=1))
    d = np.array([r["contrast"] for r in rows])
    half = t_quantile(0.975, d.size - 1) * float(d.std(ddof=1)) / math.sqrt(d.size)
    doc = {"predictions": pred_path, "rule": pre["rule"], "cells": rows,
           "contrast": {"what": "mean over cells of |aware 8x error| - |plain 8x error|, t 95% "
                                "CI", "mean": float(d.mean()),
                        "ci": [float(d.mean() - half), float(d.mean() + half)]},
           "goal": {k: sum(r["goal"][k] for r in rows) for k in ("plain", "aware", "linear")},
           "aware_beats_plain": sum(bool(r["contrast_ci"][1] < 0) for r in rows),
           "prediction_holds": sum(r["prediction_holds"] for r in rows), "n": len(rows)}
    atomic_write(out, lambda fh: json.dump(doc, fh, indent=1))  # never a half-written file
    os.remove(out + ".partial")
    return doc


if __name__ == "__main__":
    if sys.argv[1:2] == ["predict"] and len(sys.argv) == 3:
        for r in predict(sys.argv[2])["cells"]:
            e = r["predicted"]["error"]
            print(r["target"], r["lr0"], r["model"] or "default",
                  {k: f"{v[-1]:+.4f}" for k, v in e.items()})
    elif sys.argv[1:2] == ["score"] and len(sys.argv) == 4:
        d = score(sys.argv[2], sys.argv[3])
        for r in d["cells"]:
            e = r["error"]
            print(f"| {r['target']:g} | {r['lr0']:g} | {r['model'] or 'default'} | "
                  f"{r['floors'][0] / r['target']:.3f} | {e['plain'][-1]:+.1%} | "
                  f"{e['aware'][-1]:+.1%} | {e['linear'][-1]:+.1%} | {r['contrast']:+.4f} "
                  f"[{r['contrast_ci'][0]:+.4f}, {r['contrast_ci'][1]:+.4f}] | "
                  f"{r['predicted_aware']:+.1%} | {'yes' if r['prediction_holds'] else 'no'} |")
        c = d["contrast"]
        print(f"aware beats plain at {d['aware_beats_plain']}/{d['n']} cells; goal met: "
              f"{d['goal']}; mean contrast {c['mean']:+.4f} [{c['ci'][0]:+.4f}, "
              f"{c['ci'][1]:+.4f}]; mean field's aware error in CI {d['prediction_holds']}/"
              f"{d['n']}")
    elif sys.argv[1:] == ["seen"]:  # exponents 128 -> 256 and 8x errors, in mean field
        for target, lr0 in ((0.3, 0.01), (0.2, 0.01), (0.1, 0.01), (0.07, 0.01), (0.05, 0.01),
                            (0.05, 0.03)):
            m = meanfield({"target": target, "lr0": lr0, "model": {}})
            exp = {k: math.log2(m[k][1] / m[k][0]) for k in ("truth", "plain", "aware")}
            print(target, lr0, " ".join(f"{k} exponent {v:.4f}" for k, v in exp.items()),
                  " ".join(f"{k} 8x error {m['error'][k][-1]:+.4f}" for k in ("plain", "aware")))
    elif sys.argv[1:] == ["decompose"]:  # the default cell's exponent, beta1 0.9 and 0
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from tests.pilot.test_adam_form import quadratic_exponents
        print("| beta1 | simulated 128 -> 256 [95% CI] | plain form | floor-aware form |")
        for b1 in (0.9, 0.0):
            cell = {"target": 0.05, "lr0": 0.01, "model": {}, "opt": {"beta1": b1}}
            sim = simulate(cell)
            out = plan(lambda b, lv: sim["clocks"][(b, float(lv))], sim["floors"], 0.01, 0.05)
            q = quadratic_exponents("fixed", beta1=b1)
            e = {k: math.log2(out[k][1] / out[k][0]) for k in ("plain", "aware")}
            print(f"| {b1:g} | {q['sim'][-1]:.4f} [{q['ci'][0][-1]:.4f}, {q['ci'][1][-1]:.4f}] | "
                  f"{e['plain']:.4f} | {e['aware']:.4f} |")
    elif sys.argv[1:] == ["optimizer"]:  # the plain form's gap along Adam's two betas
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from tests.pilot.test_adam_form import quadratic_exponents
        print("| beta1 | beta2 | simulated 128 -> 256 [95% CI] | plain form | form - simulated |")
        for b1, b2 in ((0.9, 0.9), (0.9, 0.99), (0.9, 0.999), (0.9, 0.9999), (0.0, 0.999),
                       (0.0, 0.9999), (0.5, 0.999), (0.99, 0.999)):
            q = quadratic_exponents("fixed", beta1=b1, beta2=b2)
            print(f"| {b1:g} | {b2:g} | {q['sim'][-1]:.4f} [{q['ci'][0][-1]:.4f}, "
                  f"{q['ci'][1][-1]:.4f}] | {q['form'][-1]:.4f} | "
                  f"{q['form'][-1] - q['sim'][-1]:+.4f} |")
        # the plateaus (each run's last quarter, 25000 updates at B 256) against the floor law
        from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
        from twoclock.models import MODELS
        batches = (8, 16, 32, 64, 128, 256)
        for b1 in (0.9, 0.0):
            res = run_sweep(MODELS["quadratic"], QuadraticConfig(target=0.05),
                            OptimConfig(name="adam", lr_rule="fixed", beta1=b1),
                            SweepConfig(batches=batches, lr0s=(0.01,), seeds=S,
                                        budget=6_400_000, n_ckpt=128), quiet=True)
            print(f"beta1 {b1:g}: plateau x sqrt(B) at B {', '.join(map(str, batches))}: "
                  + ", ".join(f"{t * math.sqrt(b):.4f}"
                              for t, b in zip(plateaus(res, len(batches)), batches)))
    elif sys.argv[1:] == ["headstart"]:  # both known corrections at once, and two controls
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from tests.pilot.test_adam_form import quadratic_exponents
        print("| cell | beta1 | simulated 128 -> 256 [95% CI] | plain | floor-aware | head start"
              " out | both out | 8x error: plain, both out |")
        for name, lr0, model in (("default", 0.01, {}), ("isotropic (alpha 0, sigma 3.6)",
                                 0.01, {"alpha": 0.0, "sigma": 3.6}), ("lr0 0.001", 0.001, {})):
            for b1 in (0.9, 0.0):
                cell = {"target": 0.05, "lr0": lr0, "model": model, "opt": {"beta1": b1}}
                sim, q = simulate(cell), quadratic_exponents("fixed", beta1=b1, lr0=lr0, **model)
                # by hand for one coordinate: beta1 / (1 - beta1) x the e-folds to the target
                head = b1 / (1 - b1) * 0.5 * math.log(1 / cell["target"])
                e, err, truth = {}, {}, np.median(sim["truth"][-1])
                for h in (0.0, head):
                    out = plan(lambda b, lv: sim["clocks"][(b, float(lv))], sim["floors"], lr0,
                               cell["target"], head=h)
                    e[h] = [math.log2(out[k][1] / out[k][0]) for k in ("plain", "aware")]
                    err[h] = [out[k][1] / truth - 1 for k in ("plain", "aware")]
                print(f"| {name} | {b1:g} | {q['sim'][-1]:.4f} [{q['ci'][0][-1]:.4f}, "
                      f"{q['ci'][1][-1]:.4f}] | {e[0.0][0]:.4f} | {e[0.0][1]:.4f} | "
                      f"{e[head][0]:.4f} | {e[head][1]:.4f} | {err[0.0][0]:+.1%}, "
                      f"{err[head][1]:+.1%} |")
    else:
        raise SystemExit(__doc__)
