"""How much of the practitioner design's 8x error is the form, one seed a batch, and the
evaluation grid (docs/plan.md, "A practitioner's sweep"): a model's practitioner pilots
simulated again with the engine's exact per-update clocks (no evaluation grid, no binomial
noise), 16 seeds a batch, the same seeds the design's runs use. Per rule it prints the seed
scatter of the pilots' log clocks, the Adam form fitted to all 48 clocks (its knee over the
largest pilot and its errors), and fitted to each seed's three (one seed a batch: the median
|error| and the median signed error over the 16), scored against the held-out answers of a
practitioner run (`plan_calibration.py --design practitioner --progress-form adam --out
FOLDER`), whose own errors on designs 0 to 15 (the same seeds) add the evaluation grid and
noise.

    python tools/one_seed_bias.py FOLDER/plan_calibration.json MODEL [MODEL ...]
"""
import argparse
import json
import os
import sys
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from twoclock.pilot import forms, runband  # noqa: E402
from twoclock.pilot.result import Rule  # noqa: E402

SEEDS = 16


def scatter(N_PxS) -> float:
    """The pooled SD of log clocks about each pilot batch's mean (runs that never arrived,
    0 or below, left out; dof: the runs less one a batch)."""
    return runband.pooled_sd(np.log(n[n > 0]) for n in np.asarray(N_PxS, np.float64))[0]


def analyse(pilots, lrs, N_PxS, held, truth: dict, p: float) -> dict:
    """The Adam form on every run and on each seed's pilots: {knee: B_n over the largest pilot
    (None: beyond), all: {batch: error}, one: {batch: (median |error|, median error)}} against
    truth {batch: the median clock or None}. A run that never arrived (0) is left out, as
    `scatter` leaves it, and a seed with one among its pilots gets no one-seed fit."""
    B, lr, H = (np.asarray(v, np.float64) for v in (pilots, lrs, held))
    S, ok = N_PxS.shape[1], N_PxS > 0
    rule = Rule(p, float(lr[0]), float(B[0]), 0)
    at = lambda v: np.repeat(v, S)[ok.ravel()]
    fit = forms.adam_clock(at(B), N_PxS[ok], at(lr), np.ones(int(ok.sum())), rule).fit
    err = lambda pred: {float(h): (None if not truth.get(float(h)) else
                                   float(x / truth[float(h)] - 1)) for h, x in zip(H, pred)}
    one = {float(h): [] for h in H}
    for s in (s for s in range(S) if ok[:, s].all()):
        e = err(np.exp(forms.adam_clock(B, N_PxS[:, s], lr, np.ones(B.size), rule
                                        ).fit.log_median(H)))
        for h, v in e.items():
            if v is not None:
                one[h].append(v)
    bn = fit.noise_scale
    return {"knee": None if bn is None else bn / float(B[-1]),
            "all": err(np.exp(fit.log_median(H))),
            "one": {h: (float(np.median(np.abs(v))), float(np.median(v))) for h, v in one.items()
                    if v}}


def simulate(name: str, rule: str) -> tuple:
    """(pilots, each pilot's lr, the engine's exact clocks pilot x seed, held-out batches)."""
    from twoclock import OptimConfig  # noqa: PLC0415 (JAX: only when simulating)
    from twoclock.models import MODELS  # noqa: PLC0415
    from twoclock.studies.plan_check import entry  # noqa: PLC0415
    from twoclock.studies.planner import practitioner as pr  # noqa: PLC0415
    m, e = MODELS[name], entry(MODELS[name])
    pilots, held = pr.batches(m)
    o = replace(OptimConfig(name="adam"), lr_rule=rule)
    N, lrs = [], []
    for b in pilots:
        res = pr.simulate(m, m.config(), o, b, e.lr0, SEEDS, int(e.budget), None, True,
                          every=None)
        N.append(np.asarray(res.prog_n[0, 0], np.float64))
        lrs.append(float(res.lrs_BxL[0, 0]))
    return pilots, lrs, np.array(N), held


def main(argv) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("answers", help="a practitioner run's plan_calibration.json")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args(argv)
    with open(a.answers, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    print("| model | rule | seed scatter | knee B_n / B_top | 48 runs: 2x, 8x | one seed "
          "(exact clocks): 2x, 8x, median abs. (signed) | the design: 8x, median abs. (signed) "
          "|\n|---|---|---|---|---|---|---|")
    pct = lambda v: "-" if v is None else f"{v:+.1%}"
    for name in a.models:
        for rule in ("fixed", "sqrt"):
            mine = [r for r in rows if r["model"] == name and r["rule"] == rule]
            if not mine:
                raise SystemExit(f"{a.answers}: no rows for {name} under the {rule} rule")
            truth = {float(r["batch"]): r["measured"] for r in mine}
            pilots, lrs, N, held = simulate(name, rule)
            got = analyse(pilots, lrs, N, held, truth, {"fixed": 0.0, "sqrt": 0.5}[rule])
            d8 = [r["rel_error"] for r in mine if r["times_largest_pilot"] == 8
                  and r.get("rel_error") is not None and r["seed"] < SEEDS]  # the same seeds
            one = ", ".join(f"{v[0]:.1%} ({v[1]:+.1%})" for v in got["one"].values())
            knee = "beyond" if got["knee"] is None else f"{got['knee']:.2f}"
            design = "-" if not d8 else \
                f"{np.median(np.abs(d8)):.1%} ({np.median(d8):+.1%})"
            print(f"| {name} | {rule} | {scatter(N):.3f} | {knee} | "
                  + ", ".join(pct(v) for v in got["all"].values())
                  + f" | {one} | {design} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
