"""A public batch sweep (twoclock/data/real/) as the real-sweep scorers read it
(tools/score_real.py, tools/score_real_envelope.py), and what they score beside the planner:
the sweep's runs and steps to each target, its design (pilots, held-out and several-update
runs), and the two no-planner baselines refitted on the pilots (McCandlish; the obvious rule).
No JAX."""
import csv
import json
import math
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "twoclock", "data", "real")
N_PILOTS = 3
GRID = 4001  # B_noise grid of the McCandlish fit, log-spaced over B_min e^-4 .. B_max e^8


def _rows(path: str) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def read_sweep(sweep: str) -> dict:
    """A sweep's runs and its steps to each target (steps None: not reached)."""
    folder = os.path.join(DATA, sweep)
    if not os.path.isdir(folder):
        raise SystemExit(f"sweep: no folder {sweep!r} under twoclock/data/real "
                         f"(have: {', '.join(sorted(os.listdir(DATA)))})")
    runs = {r["run"]: r for r in _rows(os.path.join(folder, "runs.csv"))}
    steps = {}
    for r in _rows(os.path.join(folder, "steps_to_target.csv")):
        steps[(r["run"], r["target"])] = int(r["steps"]) if r["steps"].strip() else None
    with open(os.path.join(folder, "design.json"), encoding="utf-8") as f:
        meta = json.load(f)
    return {"runs": runs, "steps": steps, "meta": meta}


def design(sw: dict) -> tuple[list[str], list[str], list[str]]:
    """Pilots (the N_PILOTS smallest one-update batches), held-out one-update runs, and the
    runs with several updates per batch (off-design: the planner has no update count)."""
    one = sorted((r for r in sw["runs"].values() if int(r["updates_per_batch"]) == 1),
                 key=lambda r: float(r["batch"]))
    pilots = [r["run"] for r in one[:N_PILOTS]]
    held = [r["run"] for r in one[N_PILOTS:]]
    multi = sorted((r["run"] for r in sw["runs"].values() if int(r["updates_per_batch"]) > 1),
                   key=lambda n: float(sw["runs"][n]["batch"]))
    return pilots, held, multi


def mccandlish_fit(B, N) -> dict:
    """N = N_min (1 + B / B_noise), least squares in log N: N_min in closed form for each B_noise
    on a log grid; the best B_noise (an end of the grid: no knee within reach)."""
    B, N = np.asarray(B, float), np.asarray(N, float)
    grid = np.geomspace(B.min() * math.exp(-4), B.max() * math.exp(8), GRID)
    shape = np.log1p(B[None, :] / grid[:, None])                     # (grid, runs)
    log_nmin = np.mean(np.log(N)[None, :] - shape, axis=1)
    sse = np.sum((np.log(N)[None, :] - shape - log_nmin[:, None]) ** 2, axis=1)
    i = int(np.argmin(sse))
    return {"n_min": float(math.exp(log_nmin[i])), "b_noise": float(grid[i]),
            "sse_log": float(sse[i]), "at_grid_edge": i in (0, GRID - 1)}


def mccandlish_predict(fit: dict, b: float) -> float:
    return fit["n_min"] * (1 + b / fit["b_noise"])


def obvious_rule(b_pilot: float, n_pilot: float, b: float, p: float) -> float:
    """The seen clock scaled by the rule: samples ~ B^(1 - p) when steps do not change."""
    return n_pilot * (b / b_pilot) ** (1 - p)
