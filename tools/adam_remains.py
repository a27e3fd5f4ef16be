"""Pre-registered check of what remains of the Adam form's exponent gap once the noise floor and
momentum's head start are taken out (docs/history/plan_notes.md, "The default cell's exponent:
the floor and the head start out together"): at the default cell the reading is that what
remains is momentum beyond a constant head start and the spread of the curvatures.

    python tools/adam_remains.py predict OUT.json   # the claims and mean field (never over OUT)
    python tools/adam_remains.py score PREDICTIONS.json OUT.json   # simulates, 32 seeds a batch
    python tools/adam_remains.py onecoordinate   # momentum's exact saving on one coordinate

The reading's consequences, on cells no run had seen (CELLS), each at beta1 0 and 0.9, the
quadratic model under a fixed lr, pilots B 8, 16, 32, the exponent 128 -> 256 (8x):
- with one curvature (alpha 0) and no momentum the floor-aware form's exponent is right: its
  gap (form - simulated) has a paired 95% CI holding 0;
- with one curvature and beta1 0.9 the form with both corrections is still too slow-growing: its
  gap's CI lies below 0 (momentum beyond a constant head start);
- on the default spectrum the floor-aware form at beta1 0, and the form with both corrections at
  beta1 0.9, lie below (the spread of the curvatures).
The no-theory reading, that the plain form needs no correction, predicts the plain form's gap CI
holding 0 in every row. Mean field's gaps (adam_floor.plan on mean-field Adam's expected loss)
are written beside the claims as the quantitative prediction: one holds where the measured gap's
paired CI holds it.

`score` simulates each row as tools/adam_floor.py does (simulate: the pilots to their plateaus,
their crossings of the shifted levels, the truth at B 128 and 256, 32 seeds each), the
simulated exponent from the truth's seed medians, each method's from its predictions at 128 and
256, with 200 joint resamples of the seeds for every paired CI.
"""
import json
import math
import os
import sys

import numpy as np

from twoclock.atomic import atomic_write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/
import adam_floor as af  # noqa: E402

CELLS = [
    {"name": "isotropic, sigma 3", "target": 0.05, "lr0": 0.01,
     "model": {"alpha": 0.0, "sigma": 3.0}},
    {"name": "isotropic, sigma 4.5", "target": 0.07, "lr0": 0.003,
     "model": {"alpha": 0.0, "sigma": 4.5}},
    {"name": "default spectrum", "target": 0.07, "lr0": 0.003, "model": {}},
]
BETA1 = (0.0, 0.9)
METHODS = ("plain", "aware", "plain_head", "aware_head")


def claims() -> list:
    """(cell, beta1, method, where): the reading's predicted side of 0 for each gap's CI."""
    out = []
    for c in CELLS:
        iso = c["model"].get("alpha") == 0.0
        out.append({"cell": c["name"], "beta1": 0.0, "method": "aware",
                    "where": "holds 0" if iso else "below 0"})
        out.append({"cell": c["name"], "beta1": 0.9, "method": "aware_head", "where": "below 0"})
    return out


RULE = ("a claim holds where the paired 95% CI of its gap (the method's exponent 128 -> 256 minus "
        "the simulated one) lies on its side: 'holds 0' where the CI holds 0, 'below 0' where it "
        "lies below; the baseline (the plain form needs no correction) holds where the plain "
        "form's CI holds 0; mean field's gap holds where that CI holds it")


def head(beta1: float, target: float) -> float:
    """Momentum's head start by hand for one coordinate: beta1 / (1 - beta1) x the e-folds of
    the distance to the target, (1/2) ln(1 / target) (tests/pilot/test_adam_momentum.py)."""
    return beta1 / (1.0 - beta1) * 0.5 * math.log(1.0 / target)


def _methods(clock, floors, lr0: float, target: float, beta1: float) -> dict:
    """Each method's predictions at adam_floor.PREDICT (128, 256)."""
    out = {}
    for suffix, h in (("", 0.0), ("_head", head(beta1, target))):
        p = af.plan(clock, floors, lr0, target, head=h)
        out["plain" + suffix], out["aware" + suffix] = p["plain"], p["aware"]
    return out


def _exp(pair) -> float:
    return math.log2(pair[1] / pair[0])


def meanfield(cell: dict, beta1: float) -> dict:
    """Mean-field Adam's exponent 128 -> 256 and each method's on its own clocks."""
    curves, floors = af.meanfield_curves(dict(cell, opt={"beta1": beta1}))
    m = _methods(lambda b, lv: af._cross(curves[b], lv, b), floors, cell["lr0"], cell["target"],
                 beta1)
    truth = _exp([af._cross(curves[b], cell["target"], b) for b in af.PREDICT])
    return {"simulated": truth, "gap": {k: _exp(v) - truth for k, v in m.items()}}


def predict(out: str) -> dict:
    if os.path.exists(out):
        raise SystemExit(f"{out} exists: a new prediction goes to a new file")
    rows = [dict(c, beta1=b1, meanfield=meanfield(c, b1)) for c in CELLS for b1 in BETA1]
    doc = {"what": "the Adam form's exponent gap 128 -> 256 under a fixed lr, quadratic model, "
                   "pilots 8 16 32, with the floor and momentum's head start taken out "
                   "(tools/adam_remains.py)", "rule": RULE, "claims": claims(), "rows": rows}
    atomic_write(out, lambda fh: json.dump(doc, fh, indent=1))  # never a half-written file
    return doc


def _gaps(sim: dict, cell: dict, beta1: float, s) -> dict:
    clock = lambda b, lv: sim["clocks"][(b, float(lv))][s]
    m = _methods(clock, sim["floors"], cell["lr0"], cell["target"], beta1)
    truth = _exp(np.median(sim["truth"][:, s], axis=1))
    return {"simulated": truth, **{k: _exp(v) - truth for k, v in m.items()}}


def score(pred_path: str, out: str, resamples: int = 200) -> dict:
    with open(pred_path) as fh:
        pre = json.load(fh)
    rng = np.random.default_rng(0)
    rows = []
    for r in pre["rows"]:
        cell = {k: r[k] for k in ("name", "target", "lr0", "model")}
        sim = af.simulate(dict(cell, opt={"beta1": r["beta1"]}))
        af.check_reached(sim, cell)
        got = _gaps(sim, cell, r["beta1"], np.arange(af.S))
        draws = [_gaps(sim, cell, r["beta1"], rng.integers(0, af.S, af.S))
                 for _ in range(resamples)]
        ci = {k: [float(x) for x in np.percentile([d[k] for d in draws], [2.5, 97.5])]
              for k in got}
        mf = r["meanfield"]["gap"]
        rows.append({**cell, "beta1": r["beta1"], "floors": sim["floors"].tolist(),
                     "measured": got, "ci": ci,
                     "meanfield_holds": {k: bool(ci[k][0] <= mf[k] <= ci[k][1]) for k in mf}})
        # each finished row kept at once: a crash later loses no simulation done
        atomic_write(out + ".partial", lambda fh: json.dump(rows, fh, indent=1))
    verdicts = []
    for c in pre["claims"]:
        row = next(x for x in rows if x["name"] == c["cell"] and x["beta1"] == c["beta1"])
        lo, hi = row["ci"][c["method"]]
        held = lo <= 0 <= hi if c["where"] == "holds 0" else hi < 0
        verdicts.append({**c, "gap": row["measured"][c["method"]], "ci": [lo, hi],
                         "holds": bool(held)})
    doc = {"predictions": pred_path, "rule": pre["rule"], "rows": rows, "claims": verdicts,
           "claims_held": sum(v["holds"] for v in verdicts), "n_claims": len(verdicts),
           "baseline_held": sum(bool(x["ci"]["plain"][0] <= 0 <= x["ci"]["plain"][1])
                                for x in rows),
           "meanfield_held": {k: sum(x["meanfield_holds"][k] for x in rows) for k in METHODS},
           "n_rows": len(rows)}
    atomic_write(out, lambda fh: json.dump(doc, fh, indent=1))  # never a half-written file
    os.remove(out + ".partial")
    return doc


def one_coordinate_saving(updates0: float, beta1: float = 0.9, target: float = 0.05) -> float:
    """Updates momentum saves on one noiseless coordinate whose run without momentum takes
    `updates0` updates to the target: x_{t+1} = x_t - r m_hat_t, m_hat Adam's bias-corrected first
    moment of g = x, r set so that beta1 0 takes updates0 (crossings interpolated linearly)."""
    end = math.sqrt(target)  # the loss's target in the distance: e^-C, C = (1/2) ln(1 / target)

    def updates(r, b1):
        x, m, t = 1.0, 0.0, 0
        while True:
            t += 1
            m = b1 * m + (1 - b1) * x
            nxt = x - r * m / (1 - b1**t)
            if nxt <= end:
                return t - 1 + (x - end) / (x - nxt)
            x = nxt

    def plain(r):  # updates(r, 0) in closed form: x_t = (1 - r)^t
        t = max(1, math.ceil(math.log(end) / math.log1p(-r)))
        while (1 - r) ** t > end:
            t += 1
        while t > 1 and (1 - r) ** (t - 1) <= end:
            t -= 1
        x, nxt = (1 - r) ** (t - 1), (1 - r) ** t
        return t - 1 + (x - end) / (x - nxt)

    lo, hi = 1e-6, 0.5
    for _ in range(60):  # bisection on r: plain(r) falls with r
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if plain(mid) > updates0 else (lo, mid)
    return plain(lo) - updates(lo, beta1)


def _table(doc: dict, pre: dict) -> str:
    lines = ["| cell | beta1 | simulated | plain | floor-aware | head start out | both out |",
             "|---|---|---|---|---|---|---|"]
    for x, p in zip(doc["rows"], pre["rows"]):
        cells = [f"{x['measured'][k]:+.4f} [{x['ci'][k][0]:+.4f}, {x['ci'][k][1]:+.4f}] "
                 f"(mean field {p['meanfield']['gap'][k]:+.4f})" for k in METHODS]
        lines.append(f"| {x['name']} | {x['beta1']:g} | {x['measured']['simulated']:.4f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["predict"] and len(sys.argv) == 3:
        d = predict(sys.argv[2])
        for r in d["rows"]:
            print(r["name"], r["beta1"], {k: f"{v:+.4f}" for k, v in r["meanfield"]["gap"].items()})
    elif sys.argv[1:2] == ["score"] and len(sys.argv) == 4:
        d = score(sys.argv[2], sys.argv[3])
        with open(sys.argv[2]) as fh:
            print(_table(d, json.load(fh)))
        for v in d["claims"]:
            print(f"{v['cell']}, beta1 {v['beta1']:g}, {v['method']}: predicted {v['where']}, "
                  f"gap {v['gap']:+.4f} [{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}]: "
                  f"{'holds' if v['holds'] else 'fails'}")
        print(f"claims held {d['claims_held']} of {d['n_claims']}; the baseline (plain form, CI "
              f"holding 0) at {d['baseline_held']} of {d['n_rows']} rows; mean field's gap in "
              f"the CI: {d['meanfield_held']}")
    elif sys.argv[1:] == ["onecoordinate"]:
        # the default cell's runs without momentum take 229 updates at B 8 and 117 at B 256
        # (tests/pilot/test_adam_momentum.py)
        for u in (229, 180, 150, 130, 117):
            print(f"run of {u} updates without momentum: beta1 0.9 saves "
                  f"{one_coordinate_saving(u):.3f} (by hand, first order: {head(0.9, 0.05):.3f})")
    else:
        raise SystemExit(__doc__)
