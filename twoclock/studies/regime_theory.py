"""The regime map's theory (docs/regimes.md), stated before its cells run: the reward-invisible
walk advances only in groups whose rewards differ, so under the sqrt rule (variance per
response in a moving group the same at every batch) its variance after R responses at batch B
is c x A_B(R), A_B(R) the responses spent in mixed-reward groups by R. The mixed share's path
is set by progress: at batch B it is B_min's stretched by s_B = N_prog(B) / N_prog(B_min),
A_B(R) = s_B A_1(R / s_B). A clock that fires when the walk's variance reaches a level fires
where A_B(N_B) = A*, and so
    d log N / d log s = 1 - mbar(u) / m(u),  u = N / s,
mbar the mean share up to u, m the share at u: flat where the share is constant, later at the
larger batch (positive exponent) where it is still rising (a hard task learning to solve its
prompts), sooner (negative) where it is falling (an easy task saturating). NumPy only.

`python -m twoclock.studies.regime_theory CELLS_DIR OUT.json` writes the predictions from a
pilot run of the map (its per-level mixed share at B_min and accuracy path per batch)."""
import json
import math
import os
import sys

import numpy as np

from twoclock.analysis.clocks import censored
from twoclock.analysis.mixed import mean_p_mix

# calibration, from the damage study's measured sqrt cell (docs/policy.md, "The harmful
# drift"): RMS END_B log-odds shift 0.559 at 16 384 responses at B 64, with 10 064 responses
# spent in mixed-reward groups by then: variance per mixed response
VAR_PER_ACTIVE = 0.559 ** 2 / 10_064
NULL_LEVEL = 0.3       # the null clock: |shift| >= 0.3 (PolicyConfig.null_threshold)
DEFICIT_SHIFT = 0.38   # the shift at the deficit's crossing, mid of 0.32-0.44 (docs/policy.md)
FLAT = 0.1             # |predicted exponent| below this: "flat"


def two_sided_survival(z: float) -> float:
    """P(max_{t <= 1} |W_t| < z) for a standard Brownian motion (the series of the two-sided
    first passage)."""
    k = np.arange(0, 60)
    return float(4 / math.pi * np.sum((-1.0) ** k / (2 * k + 1) * np.exp(
        -(2 * k + 1) ** 2 * math.pi ** 2 / (8 * z * z))))


def median_variance(level: float, two_sided: bool) -> float:
    """The walk variance at which half the seeds have crossed |W| (or W) >= level."""
    if not two_sided:  # P(max W >= a) = 2 (1 - Phi(a / sqrt(v))) = 1/2: a / sqrt(v) = 0.6745
        return (level / 0.6744897501960817) ** 2
    lo, hi = 0.1, 10.0  # z = level / sqrt(v), survival rising in z
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if two_sided_survival(mid) < 0.5 else (lo, mid)
    return (level / (0.5 * (lo + hi))) ** 2


def active(r, m):
    """A(R): responses in mixed-reward groups, the trapezoid of the share path from 0 (the
    share at 0 taken as the first point's)."""
    r, m = np.r_[0.0, np.asarray(r, float)], np.r_[m[0], np.asarray(m, float)]
    return r, np.r_[0.0, np.cumsum(np.diff(r) * 0.5 * (m[1:] + m[:-1]))]


def clock_at(r, m, s: float, a_star: float) -> float:
    """N with s A_1(N / s) = a_star (inf where the path's end does not reach it)."""
    rr, A = active(r, m)
    if s * A[-1] < a_star:
        return math.inf
    return s * float(np.interp(a_star / s, A, rr))


def stretch(path: dict) -> dict:
    """s_B: the responses batch B takes to the midpoint of the accuracy gain every batch
    reaches (the pilot's mean held-out accuracy path), over B_min's; the progress clock itself
    may lie past a short budget."""
    bs = sorted(path, key=int)
    a0 = path[bs[0]]["acc"][0]
    mid = a0 + 0.5 * (min(max(path[b]["acc"]) for b in bs) - a0)

    def first(b):
        r, a = np.asarray(path[b]["responses"]), np.asarray(path[b]["acc"])
        k = int(np.argmax(a >= mid))
        if k == 0:
            return float(r[0])
        return float(np.interp(mid, [a[k - 1], a[k]], [r[k - 1], r[k]]))
    n = {b: first(b) for b in bs}
    return {b: n[b] / n[bs[0]] for b in bs}


def extend(r, m, R: float):
    """B_min's share path carried on to R responses at its last measured share (the theory's
    one extrapolation past a run's end: the share neither rises nor falls further)."""
    r, m = list(map(float, r)), list(map(float, m))
    if R > r[-1]:
        r, m = r + [float(R)], m + [m[-1]]
    return r, m


def exponent(batches, Ns) -> float | None:
    N = np.asarray(Ns, float)
    if not np.all(np.isfinite(N)):
        return None
    return float(np.polyfit(np.log(batches), np.log(N), 1)[0])


def predict_cell(cell: dict, budgets, pass_rates=None, G: int = 8, extend_to=None) -> dict:
    """The predictions of one cell from its pilot (its longest budget's B_min mixed path and
    every batch's progress clocks): per budget {clock: exponent or None (censored)}, N_B and
    the flat call. extend_to: carry B_min's path on to that many responses (`extend`), for a
    budget longer than the run the predictions read."""
    longest = cell["budgets"][str(max(int(b) for b in cell["budgets"]))]
    per, path = longest["per_seed"], longest["mixed_path"]
    bs = sorted(per, key=int)
    prog = {b: float(np.median(censored(per[b]["progress"]))) for b in bs}
    s = stretch(path)
    r, m = path[bs[0]]["responses"], path[bs[0]]["share"]
    if extend_to is not None:
        r, m = extend(r, m, extend_to)
    stars = {"null": median_variance(NULL_LEVEL, True) / VAR_PER_ACTIVE,
             "deficit": median_variance(DEFICIT_SHIFT, False) / VAR_PER_ACTIVE}
    out = {"inputs": {"pilot_progress_median": prog, "s_B": s,
                      "mixed_share_B_min": dict(zip(map(int, r), m)),
                      "active_star": stars}}
    if pass_rates is not None:
        out["inputs"]["reference_p_mix"] = mean_p_mix(pass_rates, G)
        out["inputs"]["reference_mean_pass_rate"] = float(np.mean(pass_rates))
    for R in budgets:
        row = {"exponent": {}, "N": {}, "flat": {}}
        for clock, a in stars.items():
            Ns = [clock_at(r, m, s[b], a) for b in bs]
            Ns = [n if n <= R else math.inf for n in Ns]
            e = exponent([int(b) for b in bs], Ns)
            row["exponent"][clock] = e
            row["N"][clock] = {b: (None if math.isinf(n) else n) for b, n in zip(bs, Ns)}
            row["flat"][clock] = None if e is None else abs(e) < FLAT
        row["exponent"]["damage"] = None  # the theory gives no number: progress hides it
        out[str(R)] = row
    return out


def main(argv=None) -> int:
    """python -m twoclock.studies.regime_theory CELLS_DIR OUT.json [CELL=PASS_RATES.npy ...]:
    the predictions from a pilot's finished cells (OUT/regime_map_cells of a regime_map run at
    a few seeds), with each cell's reference pass rates where given. --budgets=R1,R2: predict at
these budgets too, B_min's path carried past its end at its last share (`extend`)."""
    cells_dir, out_path, *rest = argv if argv is not None else sys.argv[1:]
    opts = dict(x.removeprefix("--").split("=") for x in rest if x.startswith("--"))
    rate_files = dict(x.split("=") for x in rest if not x.startswith("--"))
    extra = [int(x) for x in opts.get("budgets", "").split(",") if x]
    extend_to = max(extra) if extra else None
    preds = {"theory": __doc__.split("\n\n")[0], "flat_if_abs_exponent_below": FLAT,
             "baseline": "exponent 0 in every cell (the drift-threshold hypothesis)",
             "calibration": {"var_per_active_response": VAR_PER_ACTIVE,
                             "source": "docs/policy.md, damage study sqrt cell, B 64: RMS 0.559 "
                                       "at 16384 responses, 10064 in mixed groups"},
             "thresholds": {"null": NULL_LEVEL, "deficit_shift": DEFICIT_SHIFT},
             "reading": "per cell and budget: exponent None with N None = the median is "
                        "predicted past the budget at every batch (censored); damage None = "
                        "no number (progress hides it); the map runs 16 seeds from base seed "
                        "0, the pilot 2 from base seed 1",
             "cells": {}}
    for name in sorted(os.listdir(cells_dir)):
        with open(os.path.join(cells_dir, name)) as f:
            cell = json.load(f)
        key = name.removesuffix(".json").split("-")[0]  # <cell>-<config hash>.json
        pr = np.load(rate_files[key]) if key in rate_files else None
        budgets = sorted({int(b) for b in cell["budgets"]} | set(extra))
        preds["cells"][key] = predict_cell(cell, budgets, pr, extend_to=extend_to)
        preds["cells"][key]["pilot_seconds"] = cell["seconds"]
    with open(out_path, "w") as f:
        json.dump(preds, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def path_check(cell: dict) -> dict:
    """The mechanism's one assumption on a cell's own runs: the responses in mixed groups by
    each budget at every batch, measured, against s_B A_1(R / s_B) from B_min's path and s_B."""
    longest = cell["budgets"][str(max(int(b) for b in cell["budgets"]))]
    path = longest["mixed_path"]
    bs = sorted(path, key=int)
    s = stretch(path)
    rr, A = active(path[bs[0]]["responses"], path[bs[0]]["share"])
    out = {}
    for R in sorted(int(b) for b in cell["budgets"]):
        row = {}
        for b in bs:
            r = np.asarray(path[b]["responses"])
            got = float(np.interp(R, r, path[b]["active"])) if R <= r[-1] else None
            want = s[b] * float(np.interp(R / s[b], rr, A))
            row[b] = {"measured": got, "predicted": want, "s_B": s[b]}
        out[str(R)] = row
    return out
