"""What K optimizer updates per rollout batch cost: `python experiments/updates_cost.py`.

A run that splits each rollout batch of B = K m responses into K minibatches of m, one update
each (verl's ppo_mini_batch_size, TRL's steps_per_generation), makes K updates of m fresh
samples per batch. The planner reads it as K one-update runs at m (m = B / K,
`twoclock/pilot/adam.py`); the later minibatches are, though, off-policy by up to K - 1
updates, and the ratio clip stops a sample once its ratio has left the band. Per lr0 and clip,
on the bandit under a fixed lr: the progress clock of (B = K m, K) for each K, and its cost
N(K m, K) / N(m, 1) with a paired bootstrap CI over seeds (1: m = B / K holds); beside it the
one-update run at the same rollout batch, N(K m, 1) / N(m, 1) (the cost if the K updates were
worth one), and the clip fraction of the K runs' samples with a nonzero advantage.
"""
from dataclasses import dataclass, replace
import time

import numpy as np

from twoclock.analysis import results
from twoclock.analysis.clocks import bootstrap_indices, summarize
from twoclock.analysis.paired import ratio_ci
from twoclock.config import NUMBER_OR_NONE, OptimConfig, SweepConfig, option, param, require
from twoclock.config import require_int
from twoclock.engine.sweep import run_sweep
from twoclock.studies.protocol import Engine, Study

MODELS = ("bandit",)  # the clip's mechanism is the bandit's (its theory: models/bandit)


@dataclass(frozen=True)
class Config:
    """The grid: samples per update m, update counts K, lr0s and clips, seeds."""
    SCRIPT = "updates_cost.py"
    SKIP_MODEL = ("clip_low", "clip_high", "minibatches", "epochs")  # the grid sets them
    SKIP_OPTIM = ("lr_rule",)  # a fixed lr: K runs and the one-update runs at one lr
    per_update: int = param(64, "m: responses per update (a minibatch)")
    updates: tuple = option((1, 2, 4, 8, 32), "K: updates per rollout batch (1 required)",
                            type=int, nargs="+")
    lr0s: tuple = option((0.02, 0.05, 0.1), "fixed learning rates", type=float, nargs="+")
    clips: tuple = option((0.2, None), "clip eps values; 'none' = unclipped", type=NUMBER_OR_NONE,
                          nargs="+")
    seeds: int = param(16, "seeds per cell")
    budget: int = param(400_000, "responses of the one-update runs at m")
    budget_factor: float = param(3.0, "a run's budget at B = K m: this x K x the slowest "
                                      "seed's one-update clock at m (responses)")

    def __post_init__(self):
        require_int("per_update", self.per_update)
        require(len(self.updates) > 0 and all(isinstance(k, int) and k >= 1
                                              for k in self.updates) and 1 in self.updates,
                "updates", "integers >= 1, 1 among them", self.updates)
        require(len(self.lr0s) > 0 and all(x > 0 for x in self.lr0s), "lr0s",
                "positive numbers", self.lr0s)
        require(len(self.clips) > 0, "clips", "at least one eps or 'none'", self.clips)
        for name in ("updates", "lr0s", "clips"):  # a repeat would print its rows twice
            v = getattr(self, name)
            require(len(set(v)) == len(v), name, "distinct values", v)
        require_int("seeds", self.seeds, lo=2)
        require_int("budget", self.budget, lo=self.per_update)
        require(self.budget_factor >= 1, "budget_factor", ">= 1", self.budget_factor)

    def check(self, model, base, opt=None) -> None:
        """ValueError naming the parameter before anything runs: every (B, K) a batch the
        model accepts (P = K m / G prompts in K minibatches: m a multiple of G) and every clip
        valid."""
        del model, opt
        require(self.per_update % base.group == 0, "per_update",
                f"a multiple of the group G = {base.group} (whole prompts per minibatch)",
                self.per_update)
        for k in self.updates:
            replace(base, minibatches=k).prompts(k * self.per_update)
        for c in self.clips:
            replace(base, clip_low=c, clip_high=None)


def _clock(model, cfg, opt, batch: int, lr0: float, seeds: int, budget: int, quiet, keep):
    """(per-seed progress clocks, mean clip fraction over nonzero-advantage samples)."""
    res = run_sweep(model, cfg, opt, SweepConfig(batches=(batch,), lr0s=(lr0,), seeds=seeds,
                                                 budget=budget, n_ckpt=64),
                    quiet=quiet, keep=keep)
    return (np.asarray(res.prog_n[0, 0], np.float64),
            float(np.mean(res.ckpt[0]["clip_frac_active"][0])))


def run(model, model_cfg, opt: OptimConfig, study: Config, *, keep=None, quiet: bool = True,
        engine: Engine = Engine()) -> dict:
    """Every (lr0, clip, K) cell: the K run at B = K m, and the one-update run at B."""
    del engine
    study.check(model, model_cfg)
    opt = replace(opt, lr_rule="fixed")
    t0, m, idx = time.perf_counter(), study.per_update, bootstrap_indices(study.seeds)
    cells = []
    for lr0 in study.lr0s:
        run_at = lambda clip, k, b, budget: _clock(
            model, replace(model_cfg, clip_low=clip, clip_high=None, epochs=1, minibatches=k),
            opt, b, lr0, study.seeds, budget, quiet, keep)
        # one update per rollout batch is on-policy (every ratio 1: no clip binds), so the
        # one-update runs, at m and at each B = K m, are run once for every clip
        base, _ = run_at(None, 1, m, study.budget)
        slow = float(np.max(np.where(base > 0, base, study.budget)))
        budgets = {k: int(study.budget_factor * k * slow) + 4 * k * m for k in study.updates}
        one = {k: base if k == 1 else run_at(None, 1, k * m, budgets[k])[0]
               for k in study.updates}
        for clip in study.clips:
            for k in study.updates:
                budget, n1 = budgets[k], one[k]
                nk, clipped = (base, 0.0) if k == 1 else run_at(clip, k, k * m, budget)
                cost, single = ratio_ci(nk, base, idx), ratio_ci(n1, base, idx)
                cells.append({
                    "lr0": lr0, "clip": clip, "updates": k, "batch": k * m, "budget": budget,
                    "progress_samples": summarize(nk, idx=idx),
                    "cost": cost, "one_update_cost": single,  # None: beyond the budget
                    "clip_frac_active": clipped,
                    "per_seed": {"k_updates": nk.tolist(), "one_update_at_batch": n1.tolist(),
                                 "one_update_at_m": base.tolist()}})
    return {"schema": results.SCHEMA, "model": model.name, "unit": model.unit, "cells": cells,
            "config": {**results.config_dict(model=model_cfg, optimizer=opt),
                       "per_update": m, "updates": list(study.updates),
                       "lr0s": list(study.lr0s), "clips": list(study.clips),
                       "seeds": study.seeds, "budget": study.budget,
                       "budget_factor": study.budget_factor},
            "seconds": time.perf_counter() - t0, "versions": results.versions()}


def _ci(c: dict) -> str:
    f = lambda v: "-" if v is None else f"{v:.2f}"
    return f"{f(c['median'])} [{f(c['ci'][0])}, {f(c['ci'][1])}]"


def report(out: dict) -> str:
    """A row per cell: the K run's cost over m = B / K, the one-update run's, the clip
    fraction."""
    m = out["config"]["per_update"]
    lines = [f"updates per rollout batch on the {out['model']}, fixed lr, m = {m} responses "
             f"per update, {out['config']['seeds']} seeds; cost = N(K m, K) / N(m, 1) "
             f"[95% paired bootstrap CI] (1: m = B / K holds); {out['seconds']:.0f} s",
             f"{'lr0':>6} {'clip':>5} {'K':>3} {'B':>5} {'N(B, K)':>9} {'cost':>20} "
             f"{'N(B, 1) / N(m, 1)':>20} {'clipped':>8}"]
    for c in out["cells"]:
        clip = "none" if c["clip"] is None else f"{c['clip']:g}"
        n = c["progress_samples"]["median"]
        lines.append(f"{c['lr0']:>6g} {clip:>5} {c['updates']:>3} {c['batch']:>5} "
                     f"{'-' if n is None else f'{n:.0f}':>9} {_ci(c['cost']):>20} "
                     f"{_ci(c['one_update_cost']):>20} {c['clip_frac_active']:>8.3f}")
    return "\n".join(lines)


def figure(out: dict):
    """The cost against K per lr0 and clip (twoclock/figures/updates_cost.py)."""
    from twoclock.figures.updates_cost import updates_cost_figure  # noqa: PLC0415
    return updates_cost_figure(out)


STUDY = Study("updates_cost", Config, run, report, figure, models=MODELS)
