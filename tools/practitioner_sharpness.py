"""The knee's sharpness for pilots that cannot fit it (one seed a batch), tuned on simulation
and scored on fresh practitioner designs (docs/plan.md, "A practitioner's sweep").

With one run a batch the Adam form's knee sharpness m is not fitted (fit.SHARPNESS_FROM) and
sits at 1, the sharpest knee the form has; a clock made of parts with different noise scales
turns more gradually. `tune` measures the knee where the pilots are many: each model's
practitioner pilots (its three smallest plan-check batches, both rules, lr0 at b0 8 as in the
design) simulated for SEEDS seeds from a stream the designs never use (TUNE_STREAM), their
engine clocks exact (per update, no evaluation grid, no binomial noise), Adam's form fitted to
each (model, rule)'s pooled runs with m fitted on fit.SHARPNESS. The prior is the median of
the six fitted m, taken to the grid's nearest point: `--sharpness` of plan.py and
plan_calibration.py.

    python tools/practitioner_sharpness.py tune [--seeds 16] [--json OUT.json]
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from twoclock.pilot import adam, fit as pf  # noqa: E402

TUNE_STREAM = 1  # the engine's base seed of the tuning runs (the designs': 0)
MODELS = ("quadratic", "bandit", "policy")
RULES = {"fixed": 0.0, "sqrt": 0.5}


def pilot_clocks(name: str, rule: str, seeds: int):
    """(pilot batches, their lrs, exact engine clocks batch x seed; 0: never) of a model's
    practitioner pilots under `rule`."""
    from twoclock import OptimConfig  # noqa: PLC0415 (JAX: only when simulating)
    from twoclock.models import MODELS as REGISTRY  # noqa: PLC0415
    from twoclock.studies.plan_check import entry  # noqa: PLC0415
    from twoclock.studies.planner import logs_check, practitioner  # noqa: PLC0415
    m = REGISTRY[name]
    e = entry(m)
    pilots, _ = practitioner.batches(m)
    res = logs_check.simulate(m, m.config(), OptimConfig(name="adam", lr_rule=rule), pilots,
                              e.lr0, seeds, int(e.budget), 2, seed=TUNE_STREAM)
    return (np.array(pilots, np.float64), np.asarray(res.lrs_BxL[:, 0], np.float64),
            np.asarray(res.prog_n[:, 0], np.float64), e.lr0)


def fitted_m(B, lr, n_BxS, p: float, lr0: float) -> dict:
    """Adam's form with its sharpness fitted to every run that reached the target."""
    S = n_BxS.shape[1]
    ok = n_BxS > 0
    Bs, lrs = np.repeat(B, S).reshape(n_BxS.shape), np.repeat(lr, S).reshape(n_BxS.shape)
    f = adam.fit_adam(Bs[ok], n_BxS[ok], lrs[ok], np.ones(int(ok.sum())), p, lr0, 8.0,
                      sharp=True)
    return {"m": f.m, "runs": int(ok.sum()), "never": int((~ok).sum()),
            "median_clocks": [float(np.median(np.where(r > 0, r, math.inf))) for r in n_BxS]}


def prior(ms) -> float:
    """The median of the fitted m, taken to the nearest point of fit.SHARPNESS (in log m)."""
    grid = np.array(pf.SHARPNESS)
    med = float(np.median(ms))
    return float(grid[np.argmin(np.abs(np.log(grid) - math.log(med)))])


def tune(seeds: int) -> dict:
    rows = []
    for name in MODELS:
        for rule, p in RULES.items():
            B, lr, n, lr0 = pilot_clocks(name, rule, seeds)
            rows.append({"model": name, "rule": rule, "pilots": B.tolist(),
                         **fitted_m(B, lr, n, p, lr0)})
            print(f"{name:<10} {rule:<6} m = {rows[-1]['m']:.4g} ({rows[-1]['runs']} runs, "
                  f"{rows[-1]['never']} never; median clocks "
                  + ", ".join(f"{c:.0f}" for c in rows[-1]["median_clocks"]) + ")", flush=True)
    return {"what": "the Adam form's knee sharpness fitted to each model's exact practitioner "
                    "pilot clocks (tools/practitioner_sharpness.py tune)",
            "seeds": seeds, "stream": TUNE_STREAM, "rows": rows,
            "median_m": float(np.median([r["m"] for r in rows])),
            "prior": prior([r["m"] for r in rows])}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune", help="fit m to each model's exact pilot clocks")
    t.add_argument("--seeds", type=int, default=16, help="runs a pilot batch (>= 2)")
    t.add_argument("--json", help="also write the rows and the prior here")
    a = ap.parse_args(argv)
    if a.seeds < 2:
        ap.error(f"--seeds: at least 2 (the sharpness needs repeats), got {a.seeds}")
    doc = tune(a.seeds)
    print(f"median m {doc['median_m']:.4g}; the prior (nearest grid point): {doc['prior']:.4g}")
    if a.json:
        from twoclock.atomic import atomic_write  # noqa: PLC0415
        atomic_write(a.json, lambda f: json.dump(doc, f, indent=1))


if __name__ == "__main__":
    main()
