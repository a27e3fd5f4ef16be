"""The regime map of the drift-threshold hypothesis in the policy model (docs/regimes.md): for
which tasks does the failure clock stay flat in batch under the square-root rule?

A cell is one difficulty level: the deployment regime of the damage study
(`twoclock.studies.damage_study`, whose cells, per-seed numbers and answers this study reuses)
with the warm-up stopped at another held-out accuracy (`--levels`: the initial pass rate),
run under the sqrt rule at the sweep's batches and seeds for the longest budget (`--budget`).
Each shorter budget (`--budgets`) is the same runs cut at that many responses (update t draws
fold_in(key, t), so a shorter run is the longer one's first updates): its answers are worked
out from the truncated checkpoints and clocks, not run again. Per cell and budget: every clock's
batch exponent with its paired bootstrap CI (progress; the harm clocks damage and deficit; the
reward-invisible walk, null), the drift at each harm crossing over B_min's, and the share of
mixed-reward groups along the run (`mixed_path`).

A finished cell is written at once to OUT/regime_map_cells/<cell>-<config hash>.json, and read
back instead of run again with the same config, so an interrupted map resumes cell by cell (and,
within a cell, from the engine's store under --store); `--cells` runs some of them. The report
shows the cells done and missing, beside the predictions committed before the map ran
(docs/preregistered/regimes_predictions.json).
"""
import dataclasses
import hashlib
import json
import os
import time
from types import SimpleNamespace

import numpy as np

from twoclock.analysis import results
from twoclock.atomic import atomic_write, dumps
from twoclock.clock import NEVER
from twoclock.config import SweepConfig, param, require
from twoclock.models.policy import DEPLOY
from twoclock.models.policy.dynamics import setup
from twoclock.studies import damage_study as ds
from twoclock.studies.assemble import run_cells
from twoclock.studies.protocol import CellsView, Engine, Study, nested
from twoclock.studies.regime_report import figure, report

MODELS = ("policy",)
# run order: the easiest and the hardest first, so a partial map spans the range
LEVELS = (0.3, 0.1, 0.2)
WALK, HARM = "null", ds.HARM
SWEEP = SweepConfig(batches=(64, 256, 1024), lr0s=(1e-4,), seeds=16, budget=8192, seed=0)
PATH_POINTS = 32  # responses at which the mixed share's path is read, log-spaced
# read beside the package (a checkout); an installed copy without docs/ reports none
PREDICTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "docs", "preregistered", "regimes_predictions.json")


def cell_name(level: float) -> str:
    return f"acc{level:g}"


@dataclasses.dataclass(frozen=True)
class Config(CellsView):
    """The map's cells: difficulty levels x budgets, at the sweep's batches and seeds."""
    SCRIPT = "regime_map.py"
    PRESETS = {"quick": ("levels 0.3 and 0.1, batches 64 and 256, 2 seeds, 2048 responses",
                         {"levels": (0.3, 0.1), "budgets": (1024,), "sweep": {
                             "batches": (64, 256), "seeds": 2, "budget": 2048}})}
    levels: tuple = param(LEVELS, "difficulty levels: the held-out accuracy at which the "
                                  "warm-up stops (the initial pass rate), in run order")
    cells: tuple = param(("all",), "the levels to run now (e.g. 0.1 0.3), or all")
    budgets: tuple = param((2048,), "shorter response budgets, answered from the longest run "
                                     "(--budget) cut there")
    end_b: float = param(DEPLOY["warmup"].end_b, "warm-up: fraction of labels ending in END_B")
    damage_drop: float = param(0.03, "harm: deploy accuracy drop (damage below its peak, "
                                     "deficit against the reference's END_A share)")
    sweep: SweepConfig = nested(SWEEP, "study", rename={"lr0s": "lr0"}, skip=("n_ckpt",),
                                scalar=("lr0s",), help={
                                    "batches": "batches in responses", "seeds": "seeds per cell",
                                    "budget": "responses per run (the longest budget)",
                                    "seed": "base PRNG seed",
                                    "lr0s": "base learning rate at b0 (sqrt rule)"})

    def __post_init__(self):
        require(len(self.levels) > 0 and len(set(self.levels)) == len(self.levels) and all(
            isinstance(v, float) and 0 < v < 1 for v in self.levels), "levels",
            "distinct warm-up accuracies in (0, 1)", self.levels)
        names = {cell_name(v) for v in self.levels} | {f"{v:g}" for v in self.levels}
        require(self.cells == ("all",) or (len(self.cells) > 0 and set(self.cells) <= names),
                "cells", "all, or some of the levels " + ", ".join(f"{v:g}" for v in
                                                                   self.levels), self.cells)
        require(all(isinstance(r, int) and 1 <= r < self.budget for r in self.budgets),
                "budgets", f"integers in [1, budget {self.budget})", self.budgets)
        # the damage study checks seeds, batches, end_b and damage_drop
        self.damage(self.levels[0])

    def damage(self, level: float) -> ds.Config:
        """The damage study's config of one cell (sqrt rule), its RMS test at every budget."""
        del level  # the level is the model config's (`model_config`)
        return ds.Config(rules=("sqrt",), end_b=self.end_b, damage_drop=self.damage_drop,
                         fixed_responses=self.all_budgets, sweep=self.sweep)

    @property
    def all_budgets(self) -> tuple:
        return tuple(sorted({*self.budgets, self.budget}))

    def todo(self) -> tuple:
        if self.cells == ("all",):
            return self.levels
        return tuple(v for v in self.levels if cell_name(v) in self.cells
                     or f"{v:g}" in self.cells)

    def as_dict(self, max_lanes: int) -> dict:
        return {"levels": self.levels, "budgets": self.all_budgets, "batches": self.batches,
                "seeds": self.seeds, "lr0": self.lr0, "rule": "sqrt", "end_b": self.end_b,
                "damage_drop": self.damage_drop, "seed": self.seed, "max_lanes": max_lanes}

    def output_name(self, model, given) -> str:
        """regime_map[_quick]."""
        del model
        return "regime_map" + ("_quick" if "quick" in given else "")

    def check(self, model, base, opt) -> None:
        for level in self.levels:
            self.damage(level).check(model, model_config(base, level), opt)


def model_config(base, level: float):
    """The policy config of a difficulty level: its warm-up stops at held-out accuracy level."""
    return dataclasses.replace(base, warmup=dataclasses.replace(base.warmup, acc=level))


def truncated(res, R: int):
    """The sweep result as if every run had stopped at R responses (whole updates): the
    checkpoints after it dropped, a clock crossed after it censored (NEVER)."""
    ckpt, prog = [], np.array(res.prog_n, np.float64)
    extra = {k: np.array(v, np.float64) for k, v in res.extra.items()}
    for i, b in enumerate(res.batches):
        reach = b * (R // b)
        keep = np.asarray(res.ckpt[i]["samples"])[0, 0] <= reach
        ckpt.append({k: np.asarray(v)[..., keep] for k, v in res.ckpt[i].items()})
        for arr in (prog, *extra.values()):
            arr[i][arr[i] > reach] = NEVER
    return SimpleNamespace(batches=res.batches, ckpt=ckpt, prog_n=prog, extra=extra,
                           lrs_BxL=res.lrs_BxL)


def mixed_path(res, R: int) -> dict:
    """{batch: {responses, acc, share, active}}: the held-out accuracy, the share of mixed-reward
    groups (1 - the share of zero-advantage groups) and the responses spent in them so far,
    means over seeds, read at
    PATH_POINTS log-spaced response counts up to R (each from the update around it)."""
    grid = np.unique(np.geomspace(min(res.batches), R, PATH_POINTS).round())
    out = {}
    for i, b in enumerate(res.batches):
        s = np.asarray(res.ckpt[i]["samples"][0], np.float64)          # [S, C]
        m = 1.0 - np.asarray(res.ckpt[i]["zero_adv_frac"][0], np.float64)
        acc = np.asarray(res.ckpt[i]["heldout_acc"][0], np.float64)
        active = np.cumsum(m * np.diff(s, prepend=0.0, axis=-1), axis=-1)
        g = grid[grid <= s[0, -1]]
        out[str(b)] = {"responses": g.tolist(),
                       "acc": np.mean([np.interp(g, s[k], acc[k]) for k in range(len(s))],
                                      axis=0).tolist(),
                       "share": np.mean([np.interp(g, s[k], m[k]) for k in range(len(s))],
                                        axis=0).tolist(),
                       "active": np.mean([np.interp(g, np.r_[0.0, s[k]], np.r_[0.0, active[k]])
                                          for k in range(len(s))], axis=0).tolist()}
    return out


def cell_answers(st: Config, res, start: dict, lanes: int) -> dict:
    """{budget: {per_seed, answers, mixed_path}} of one cell's sweep, every shorter budget from
    the longest run cut there."""
    out = {}
    for R in st.all_budgets:
        r = res if R == st.budget else truncated(res, R)
        sub = dataclasses.replace(st.damage(0.5), fixed_responses=tuple(
            x for x in st.all_budgets if x <= R), sweep=dataclasses.replace(st.sweep, budget=R))
        per = ds.per_seed(sub, r, start)
        ans = ds.answers(sub.as_dict(lanes), {"sqrt": {"per_seed": per}})["sqrt"].json()
        out[str(R)] = {"per_seed": per, "answers": ans, "mixed_path": mixed_path(r, R)}
    return out


def cell_config(st: Config, base, level: float) -> tuple:
    """(model config, OptimConfig, SweepConfig, the three as the cell's JSON records them)."""
    (_, cfg, opt, sweep), = ds.cells(st.damage(level), model_config(base, level))
    return cfg, opt, sweep, json.loads(dumps(results.config_dict(model=cfg, optimizer=opt,
                                                                 sweep=sweep)))


def cell_file(out_dir: str, level: float, config: dict) -> str:
    """OUT/regime_map_cells/<cell>-<hash of its config>.json: a run with other seeds, batches
    or budget (--quick) keeps its own file beside the map's."""
    digest = hashlib.sha256(dumps(config).encode()).hexdigest()[:12]
    return os.path.join(out_dir, "regime_map_cells", f"{cell_name(level)}-{digest}.json")


def load_cell(path: str, config: dict):
    """A finished cell's JSON if it is there and was run with this config, else None."""
    try:
        with open(path) as f:
            cell = json.load(f)
    except (OSError, ValueError):
        return None
    return cell if cell.get("config") == config else None


def run(model, base, opt, st: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """Each cell to do, read back when finished before, else run (resumable from the engine's
    store) and written at once; then every finished cell of the map, done or not this time."""
    del opt
    lanes, t0 = st.lanes(engine), time.perf_counter()
    out = {"schema": results.SCHEMA, "study": st.as_dict(lanes),
           "predictions": read_predictions(), "cells": {}}
    for k, level in enumerate(st.levels):
        cfg, opt_, sweep, conf = cell_config(st, base, level)
        path = cell_file(engine.out, level, conf)
        cell = load_cell(path, conf)
        if cell is None and level in st.todo():
            if not quiet:
                print(f"[regime map] level {k + 1} of {len(st.levels)}: {cell_name(level)} "
                      f"({time.perf_counter() - t0:.0f} s so far)", flush=True)
            for name, cfg, opt_, sweep, res, secs in run_cells(
                    model, [(cell_name(level), cfg, opt_, sweep)], title="regime map",
                    store_root=engine.store, max_lanes=lanes, keep=keep, quiet=quiet,
                    cell_key=lambda n: f"regime_{n}"):
                ref = setup(cfg).start
                start = {"acc": ref["acc"], "deploy": ref["deploy"]}
                cell = {"level": level, "start": start, "lr": float(res.lrs_BxL[0, 0]),
                        "seconds": secs, "config": conf,
                        "budgets": cell_answers(st, res, start, lanes)}
                os.makedirs(os.path.dirname(path), exist_ok=True)
                atomic_write(path, lambda f, c=cell: f.write(dumps(c)))
        if cell is not None:
            out["cells"][cell_name(level)] = cell
    out["missing"] = [cell_name(v) for v in st.levels if cell_name(v) not in out["cells"]]
    out["seconds"] = time.perf_counter() - t0
    return out


def read_predictions(path: str = PREDICTIONS):
    """The pre-registered predictions (None where the file is not there), with the later
    file's budgets (`<name>_<budget>.json`, e.g. the 32 768-response cell's) added to each
    cell where the first file has no such budget."""
    try:
        with open(path) as f:
            preds = json.load(f)
    except OSError:
        return None
    stem, folder = os.path.basename(path).removesuffix(".json"), os.path.dirname(path)
    for name in sorted(os.listdir(folder)):
        budget = name.removeprefix(stem + "_").removesuffix(".json")
        if name.startswith(stem + "_") and budget.isdigit():
            with open(os.path.join(folder, name)) as f:
                later = json.load(f)
            for cell, p in later.get("cells", {}).items():
                if budget in p:
                    preds["cells"].setdefault(cell, {}).setdefault(budget, p[budget])
    return preds


STUDY = Study("regime_map", Config, run, report, figure, models=MODELS)
