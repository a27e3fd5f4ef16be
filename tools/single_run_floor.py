"""What one run a batch allows on a real sweep: the seed-to-seed scatter of a clock, measured
where a public sweep ran several seeds a batch, and the held-out error that scatter alone
leaves a plan from one-run pilots scored against one run, the planner's Adam form being exact.
No JAX.

    python tools/single_run_floor.py scatter [SWEEP ...]   # default: every stored sweep with
                                                          # several runs at a batch
    python tools/single_run_floor.py floor [--sigma S] [--seeds K ...] [--draws N]
    python tools/single_run_floor.py predict-runs OUT.json SET.json ...  # one run's bands
    python tools/single_run_floor.py score-runs PREDICTIONS.json OUT.json

`scatter`: at every (batch, level of the sweep's design.json) where each of a batch's runs
crosses the level between two logged points (tools/real_curves.py's reading), the runs' log
clocks about their mean; sigma is the pooled standard deviation (dof: the runs less one per
cell), and `loo` the median |run / median of the batch's other runs - 1|.

`floor`: Monte Carlo (`--pilots`: other pilot batches). The true median clock is N(B) = sqrt(B (B + B_n)) / lr(B), lr ~ B^p
(the Adam form, pilot/adam.py, p 0 a fixed lr, 1/2 the sqrt rule), with the knee B_n at 1/4,
1 and 4 times the largest pilot; pilots at B_top / 4, B_top / 2 and B_top (a doubling apart),
K runs each, every run's clock the median's times exp(sigma Z); the planner's Adam form fitted
to the pilots' runs (pilot/forms.adam_clock, the plan's own median) predicts 2x and 8x the
largest pilot, scored against one run drawn the same way and against the true median. A
median known exactly, scored against one run, errs q with P(|exp(sigma Z) - 1| <= q) = 1/2
(`known_median_error`).

`predict-runs`: at every design and target of the pre-registered homework sets (tools/
real_curves.py predict-set), the planner's Adam-form plan again with one run's band
(twoclock/pilot/runband.py): measured from the pilots' seeds where a pilot batch has several,
else `--run-scatter` at the seeded sweeps' pooled scatter (`scatter`, written into the file).
Commit its file before `score-runs`, which scores each band against every held-out run's own
clock (a run that never reaches the target: a miss), beside the median's band against the
same runs."""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
import real_curves as rc  # noqa: E402
from score_real import write_once  # noqa: E402
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.pilot import api, bands, forms, runband  # noqa: E402
from twoclock.pilot.plan import PilotError  # noqa: E402
from twoclock.pilot.result import Rule  # noqa: E402

KNEES = (0.25, 1.0, 4.0)  # B_n over the largest pilot's batch
PILOTS, HELD = (0.25, 0.5, 1.0), (2.0, 8.0)  # over the largest pilot's batch


def seeded() -> list:
    """The stored sweeps with several runs at some batch."""
    out = []
    for name in sorted(os.listdir(rc.DATA)):
        if os.path.isfile(os.path.join(rc.DATA, name, "curves.csv")):
            _, runs = rc.read_curves(name)
            if any(len(rs) > 1 for rs in runs.values()):
                out.append(name)
    return out


def cells(meta: dict, runs: dict) -> list:
    """[log clocks of a batch's runs] at every (batch, level) that each of its runs (two or
    more) crosses between two logged points."""
    out = []
    for _, rs in sorted(runs.items()):
        if len(rs) < 2:
            continue
        for level in meta["levels"]:
            got = [rc.clock(r, f"{meta['metric']}>={level}") for r in rs]
            if all(n is not None and i > 0 for n, i in got):
                out.append(np.log([n for n, _ in got]))
    return out


def scatter_of(cs: list) -> dict:
    """{cells, dof, sigma: the pooled SD of log clocks about each cell's mean, loo: the median
    |run / median of its cell's other runs - 1|} of cells of log clocks."""
    sigma, dof = runband.pooled_sd(cs)
    loo = [abs(math.exp(c[k]) / float(np.median(np.exp(np.delete(c, k)))) - 1)
           for c in cs for k in range(c.size)]
    return {"cells": len(cs), "dof": dof, "sigma": sigma,
            "loo": float(np.median(loo)) if loo else None}


def scatter(sweeps) -> dict:
    """{sweep: scatter_of its cells, 'pooled': over them all}."""
    out, every = {}, []
    for name in sweeps:
        cs = cells(*rc.read_curves(name))
        out[name] = scatter_of(cs)
        every += cs
    out["pooled"] = scatter_of(every)
    return out


def known_median_error(sigma: float) -> float:
    """q with P(|exp(sigma Z) - 1| <= q) = 1/2, Z standard normal: the median |error| of the
    true median against one run (bisection; 0.6745 sigma for small sigma)."""
    if sigma <= 0:
        return 0.0
    phi = lambda x: 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
    f = lambda q: phi(math.log1p(q) / sigma) - phi(math.log1p(-q) / sigma) - 0.5
    lo, hi = 0.0, 1.0 - 1e-12
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def floor(sigma: float, knee: float, seeds: int = 1, p: float = 0.0, draws: int = 400,
          seed: int = 0, pilots=PILOTS) -> dict:
    """{(times, truth): median |error|} of the Adam form fitted to `seeds` runs at each pilot
    (batches over the largest, the last 1), predicting HELD x the largest pilot; truth 'run'
    (one run) or 'median' (`floor` in the module's docstring; B_top 1, knee = B_n / B_top)."""
    rng = np.random.default_rng(seed)
    N = lambda b: np.sqrt(b * (b + knee)) / b ** p
    B, H = np.repeat(np.array(pilots, np.float64), seeds), np.array(HELD)
    err = {(t, w): [] for t in HELD for w in ("run", "median")}
    for _ in range(draws):
        obs = N(B) * np.exp(sigma * rng.standard_normal(B.size))
        fit = forms.adam_clock(B, obs, B ** p, np.ones(B.size), Rule(p, 1.0, 1.0, 0)).fit
        pred = np.exp(fit.log_median(H))
        run = N(H) * np.exp(sigma * rng.standard_normal(H.size))
        for t, m, r, n in zip(HELD, pred, run, N(H)):
            err[(t, "run")].append(abs(m / r - 1))
            err[(t, "median")].append(abs(m / n - 1))
    return {k: float(np.median(v)) for k, v in err.items()}


def floor_table(sigma: float, seeds=(1, 4), draws: int = 400, pilots=PILOTS) -> list:
    """Rows (seeds, knee, |error| 2x and 8x against one run and the median), a fixed lr (the
    sqrt rule leaves the same errors: the form divides each run's lr out)."""
    rows = []
    for k in seeds:
        for knee in KNEES:
            f = floor(sigma, knee, k, 0.0, draws, pilots=pilots)
            rows.append((k, knee, f[(2.0, "run")], f[(8.0, "run")], f[(2.0, "median")],
                         f[(8.0, "median")]))
    return rows


def predict_runs(out: str, sets) -> dict:
    """One run's bands at every design and target of the predictions files `sets`."""
    write_once(out)
    sigma = scatter(seeded())["pooled"]["sigma"]
    sweeps = []
    for path in sets:
        with open(path, encoding="utf-8") as f:
            for sw in json.load(f)["sweeps"]:
                meta, runs = rc.read_curves(sw["sweep"])
                designs = []
                for d in sw["designs"]:
                    tab = rc.table(runs, d["pilots"], meta["metric"])
                    seeds = any(len(runs[float(b)]) > 1 for b in d["pilots"])
                    targets = []
                    for t in d["targets"]:
                        try:
                            plan = api.plan_logs(tab, t["target"], [], predict=d["held_out"],
                                                 progress_form="adam",
                                                 run_scatter=None if seeds else sigma).to_json()
                        except PilotError as e:
                            targets.append({"target": t["target"], "refused": str(e)})
                            continue
                        targets.append({"target": t["target"], "predictions": {
                            str(p["batch"]): {"median": p["progress_samples"]["median"],
                                              "band": p["progress_samples"]["ci"],
                                              "run_band": p["run_band"]["ci"],
                                              "scatter": p["run_band"]["scatter"],
                                              "dof": p["run_band"]["dof"]}
                            for p in plan["predictions"]}})
                    designs.append({"name": d["name"], "pilots": d["pilots"],
                                    "held_out": d["held_out"], "targets": targets})
                sweeps.append({"sweep": sw["sweep"], "designs": designs})
    doc = {"what": "one run's 95% band (twoclock/pilot/runband.py) at every design and target "
                   "of the pre-registered homework sets", "sets": list(sets),
           "run_scatter_given": sigma,
           "run_scatter_source": "the seeded homework sweeps' pooled SD of log clocks "
                                 "(tools/single_run_floor.py scatter), given to the sweeps "
                                 "whose pilots have one run a batch",
           "sweeps": sweeps}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


def score_runs(pred_path: str, out: str) -> dict:
    """Each prediction's bands against every held-out run's own clock: rows and a summary by
    bucket (x the largest pilot) and by where the scatter came from."""
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows = []
    for sw in pre["sweeps"]:
        _, runs = rc.read_curves(sw["sweep"])
        for d in sw["designs"]:
            for t in d["targets"]:
                for b, p in t.get("predictions", {}).items():
                    for r in runs[float(b)]:
                        n, _ = rc.clock(r, t["target"])
                        inside = lambda lo_hi: n is not None and (lo_hi[0] or 0) <= n <= (
                            math.inf if lo_hi[1] is None else lo_hi[1])
                        rows.append({
                            "sweep": sw["sweep"], "design": d["name"], "target": t["target"],
                            "batch": float(b), "run": r["run"], "truth": n,
                            "x_largest_pilot": float(b) / d["pilots"][-1],
                            "measured": p["dof"] is not None,
                            "error": None if n is None else p["median"] / n - 1,
                            "run_band_covers": inside(p["run_band"]),
                            "band_covers": inside(p["band"]),
                            "run_band_width": bands.width({"median": p["median"],
                                                           "ci": p["run_band"]}),
                            "band_width": bands.width({"median": p["median"],
                                                       "ci": p["band"]})})
    groups = {"all": rows, "pilots' seeds": [r for r in rows if r["measured"]],
              "given": [r for r in rows if not r["measured"]]}
    groups.update({f"({lo:g}, {hi:g}]x": [r for r in rows if lo < r["x_largest_pilot"] <= hi]
                   for lo, hi in rc.BUCKETS})
    med = lambda v: float(np.median(v)) if v else None
    summ = {k: {"runs": len(v), "never": sum(r["truth"] is None for r in v),
                "run_band_coverage": sum(r["run_band_covers"] for r in v) / len(v) if v else None,
                "band_coverage": sum(r["band_covers"] for r in v) / len(v) if v else None,
                "run_band_median_width": med([r["run_band_width"] for r in v]),
                "band_median_width": med([r["band_width"] for r in v])}
            for k, v in groups.items()}
    doc = {"predictions": pred_path, "rows": rows, "summary": summ,
           "contrast": coverage_contrast(rows)}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


def coverage_contrast(rows, resamples: int = 2000, seed: int = 0) -> dict:
    """One run's band's coverage minus the median band's over the same runs, with a 95%
    percentile CI from resampling whole sweeps (the runs of a sweep share its pilots)."""
    by = {}
    for r in rows:
        by.setdefault(r["sweep"], []).append(int(r["run_band_covers"]) - int(r["band_covers"]))
    diffs = [np.array(v, np.float64) for v in by.values()]
    if not diffs:
        return {"difference": None, "ci": None, "sweeps": 0}
    est = float(np.concatenate(diffs).mean())
    rng = np.random.default_rng(seed)
    boot = [float(np.concatenate([diffs[i] for i in rng.integers(0, len(diffs), len(diffs))]
                                 ).mean()) for _ in range(resamples)]
    return {"difference": est, "ci": [float(x) for x in np.percentile(boot, [2.5, 97.5])],
            "sweeps": len(diffs)}


def main(argv) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scatter", help="the seed-to-seed scatter of the seeded sweeps' clocks")
    s.add_argument("sweeps", nargs="*")
    f = sub.add_parser("floor", help="the error one-run pilots leave, the form exact")
    f.add_argument("--sigma", type=float, default=None,
                   help="the SD of a run's log clock (default: the seeded sweeps' pooled)")
    f.add_argument("--seeds", type=int, nargs="+", default=[1, 4])
    f.add_argument("--draws", type=int, default=400)
    f.add_argument("--pilots", type=float, nargs="+", default=list(PILOTS),
                   help="the pilot batches over the largest, ending at 1 (default 0.25 0.5 1)")
    pr = sub.add_parser("predict-runs", help="one run's bands on the homework sets")
    pr.add_argument("out")
    pr.add_argument("sets", nargs="+")
    sr = sub.add_parser("score-runs", help="score predict-runs' file against every run")
    sr.add_argument("predictions")
    sr.add_argument("out")
    a = ap.parse_args(argv)
    if a.cmd == "predict-runs":
        doc = predict_runs(a.out, a.sets)
        n = sum(len(t.get("predictions", {})) for sw in doc["sweeps"] for d in sw["designs"]
                for t in d["targets"])
        print(f"wrote {a.out}: {n} predictions over {len(doc['sweeps'])} sweeps; one-run pilots "
              f"given --run-scatter {doc['run_scatter_given']:.4g}")
        return
    if a.cmd == "score-runs":
        doc = score_runs(a.predictions, a.out)
        print("| runs | held-out runs | never reached | 95% coverage: one run's band, the "
              "median's | median width: one run's band, the median's |\n|---|---|---|---|---|")
        w = lambda x: "-" if x is None else ("open" if math.isinf(x) else f"x{x:.2f}")
        for k, v in doc["summary"].items():
            if v["runs"]:
                print(f"| {k} | {v['runs']} | {v['never']} | {v['run_band_coverage']:.1%}, "
                      f"{v['band_coverage']:.1%} | {w(v['run_band_median_width'])}, "
                      f"{w(v['band_median_width'])} |")
        c = doc["contrast"]
        if c["difference"] is not None:
            print(f"coverage, one run's band minus the median's: {c['difference']:+.1%} "
                  f"[{c['ci'][0]:+.1%}, {c['ci'][1]:+.1%}] (95% CI over {c['sweeps']} sweeps)")
        return
    if a.cmd == "scatter":
        res = scatter(a.sweeps or seeded())
        for name, r in res.items():
            sd = "-" if r["sigma"] is None else f"{r['sigma']:.3f}"
            lo = "-" if r["loo"] is None else f"{r['loo']:.1%}"
            print(f"{name}: {r['cells']} cells, dof {r['dof']}, sigma {sd}, one run against "
                  f"the median of the others {lo}")
        return
    if a.sigma is not None and not (0 <= a.sigma <= 2):
        raise SystemExit(f"--sigma: must be in [0, 2] (got {a.sigma:g})")
    if a.draws < 10 or min(a.seeds) < 1:
        raise SystemExit("--draws: at least 10; --seeds: at least 1 each")
    ps = sorted(a.pilots)
    if len(set(ps)) < 3 or ps[0] <= 0 or ps[-1] != 1:
        raise SystemExit(f"--pilots: three or more distinct batches in (0, 1], the largest 1 "
                         f"(got {' '.join(f'{x:g}' for x in a.pilots)})")
    sigma = scatter(seeded())["pooled"]["sigma"] if a.sigma is None else a.sigma
    print(f"sigma {sigma:.3f}: the median known exactly errs {known_median_error(sigma):.1%} "
          "against one run")
    print("| runs per pilot | B_n / B_top | 2x: one run | 8x: one run | 2x: the median | "
          "8x: the median |\n|---|---|---|---|---|---|")
    for r in floor_table(sigma, a.seeds, a.draws, ps):
        print(f"| {r[0]} | {r[1]:g} | " + " | ".join(f"{x:.1%}" for x in r[2:]) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
