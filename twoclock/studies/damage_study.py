"""The harmful drift the reward cannot see (docs/policy.md, "The harmful drift"): does the policy
get damaged at a fixed amount of reward-invisible drift, and is that clock flat in batch under
the square-root rule, as the drift-threshold hypothesis says?

The deployment regime (`twoclock.models.policy.DEPLOY`): the warm-up ends `end_b` of its labels
in END_B, the train verifier accepts either end token, and a deployment grader accepts END_A
only, so a move of the END_B log-odds towards END_B costs deploy accuracy and no reward. Per
learning-rate rule (sqrt, and fixed at the sqrt rule's lr at the smallest batch) one sweep over
the batches, every update a checkpoint, gives per seed: the progress clock, the damage clock
(deploy accuracy `damage_drop` below its running peak), the null clock (|shift| >= 0.3), the
deficit clock (`deficit`: deploy accuracy lost against the reference's END_A share reaches
`damage_drop`; worked out here from the checkpoints, interpolated as the engine's clocks are),
the signed END_B log-odds shift at each harm clock's crossing and at fixed numbers of
responses. The answers, each with a paired bootstrap 95% CI over seeds:

1. how many seeds reach each clock, per batch, and each clock's median;
2. N(B) / N(B_min) of each harm clock, the share of seeds it reaches against B_min's, and every
   clock's batch exponent;
3. the drift at each harm clock's crossing per batch and its ratio to B_min (the hypothesis: 1);
4. the fixed-response RMS test: the slope of log RMS(shift at R responses) on log B, beside the
   mean shift and the responses spent in groups whose rewards differ by then;
5. the margin N_harm / N_prog per batch.

`PREDICTIONS` is what the noise-walk theory says before any cell runs
(docs/preregistered/damage_predictions.json); `report` prints it beside each measurement. The
deficit clock was defined after the runs, so nothing was predicted for it.
"""
import dataclasses
import time
from typing import NamedTuple

import numpy as np

from twoclock.analysis import results
from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.analysis.paired import (exponent_ci, finite_or_none, nanmed, paired_ci, ratio_ci,
                                      rms_slope_ci)
from twoclock.clock import Clock, reached, seed_crossings
from twoclock.config import SweepConfig, param, require, require_fraction, require_int
from twoclock.models.policy import DEPLOY, WarmupConfig
from twoclock.models.policy.dynamics import setup
from twoclock.studies.assemble import run_cells
from twoclock.studies.policy_study.cells import rules as lr_rules
from twoclock.studies.protocol import CellsView, Engine, Study, nested

MODELS = ("policy",)
RULES = ("sqrt", "fixed")
ENGINE_CLOCKS = {"progress": None, "damage": "damage_n", "null": "null_n"}
# the deficit clock is worked out here from the per-update checkpoints (`deficit`)
CLOCKS = (*ENGINE_CLOCKS, "deficit")
HARM = ("damage", "deficit")  # the two harm clocks: a drop below the peak, and the deficit

# The noise-walk theory, stated before the runs. With Adam the step per update is about lr in
# every noise-dominated coordinate whatever the batch (Adam divides the noise's scale out), so a
# reward-invisible coordinate walks with variance ~ lr^2 per update: lr^2 R / B after R
# responses. The sqrt rule (lr^2 ~ B) makes that R alone: the RMS shift at fixed R, the damage
# clock and the drift at damage are flat in B. The fixed rule makes it R / B: the RMS falls as
# B^-1/2 and a fixed drift takes R ~ B responses. A drive towards END_B (a signal, not noise)
# would instead move the shift like progress does.
# A one-sided damage of a walk with no drive is a first passage: the share of seeds damaged by
# R responses is the same at every batch under the sqrt rule, and about half by the time the
# walk's RMS is the barrier (2 (1 - Phi(a / RMS))), so a median can stay censored.
PREDICTIONS = {
    "theory": "noise walk of the END_B log-odds under Adam (variance lr^2 R / B)",
    "sqrt": {"damage_exponent": 0.0, "rms_slope": 0.0, "drift_at_damage_ratio": 1.0,
             "damaged_share_difference": 0.0},
    "fixed": {"damage_exponent": 1.0, "rms_slope": -0.5, "drift_at_damage_ratio": 1.0},
}


# the cells' grid: batches x one lr0 x seeds (each cell sets its lr0 and checkpoints)
SWEEP = SweepConfig(batches=(64, 256, 1024), lr0s=(1e-4,), seeds=16, budget=32_768, seed=0)
QUICK_OVERRIDES = {"sweep": {"batches": (64, 1024), "seeds": 4, "budget": 8192},
                   "rules": ("sqrt",), "fixed_responses": (4096,)}
PRESETS = {"quick": ("batches 64 and 1024, 4 seeds, 8192 responses, sqrt rule only",
                     QUICK_OVERRIDES)}


@dataclasses.dataclass(frozen=True)
class Config(CellsView):
    """The study's cells: batches, seeds, budget, the learning rate and the deployment regime."""
    SCRIPT = "damage_study.py"
    PRESETS = PRESETS
    rules: tuple = param(RULES, "learning-rate rules: sqrt | fixed")
    end_b: float = param(DEPLOY["warmup"].end_b, "warm-up: fraction of labels ending in END_B "
                                                 "(the form the deployment grader rejects)")
    damage_drop: float = param(0.03, "damage: deploy accuracy drop below its running peak")
    fixed_responses: tuple = param((4096, 16_384), "responses at which the RMS test reads the "
                                                   "shift")
    sweep: SweepConfig = nested(SWEEP, "study", rename={"lr0s": "lr0"}, skip=("n_ckpt",),
                                scalar=("lr0s",), help={
                                    "batches": "batches in responses", "seeds": "seeds per cell",
                                    "budget": "responses per run", "seed": "base PRNG seed",
                                    "lr0s": "base learning rate at b0 (the fixed rule runs the "
                                            "sqrt rule's lr at the smallest batch)"})

    def __post_init__(self):
        # the batches, lr0, seeds, budget and seed are the sweep's, checked there
        require(self.seeds >= 2, "seeds", "an integer >= 2", self.seeds)
        require(len(self.batches) >= 2, "batches", "at least two distinct batches >= 1",
                self.batches)
        require(0 < self.end_b < 1, "end_b", "in (0, 1)", self.end_b)
        require_fraction("damage_drop", self.damage_drop)
        require(len(self.rules) > 0 and set(self.rules) <= set(RULES), "rules",
                "some of " + ", ".join(RULES), self.rules)
        require(len(self.fixed_responses) > 0 and all(
            isinstance(r, int) and 1 <= r <= self.budget for r in self.fixed_responses),
            "fixed_responses", f"integers in [1, budget {self.budget}]", self.fixed_responses)

    def as_dict(self, max_lanes: int) -> dict:
        """The study as its JSON records it: flat, in the order of its first results, with
        the engine's runs per compiled chunk."""
        return {"batches": self.batches, "seeds": self.seeds, "budget": self.budget,
                "lr0": self.lr0, "rules": self.rules, "end_b": self.end_b,
                "damage_drop": self.damage_drop, "fixed_responses": self.fixed_responses,
                "seed": self.seed, "max_lanes": max_lanes}

    def check(self, model, base, opt) -> None:
        """Every cell's configs and batches, and the fixed responses within what every run
        reaches (ValueError), before any cell runs."""
        del opt
        for _, cfg, _, sweep in cells(self, base):
            for b in sweep.batches:
                model.describe_batch(cfg, b)
        # the shift is read at each fixed response count between the checkpoints around it:
        # past the shortest run's last one it would be that checkpoint's, read as later
        self.require_reached("fixed_responses", max(self.fixed_responses),
                             self.fixed_responses)

    def output_name(self, model, given) -> str:
        """damage_study[_quick]."""
        del model
        return "damage_study" + ("_quick" if "quick" in given else "")


def cells(st: Config, base) -> list:
    """[(rule, model config, OptimConfig, SweepConfig)]: the deployment regime under each rule,
    a checkpoint at every update of the longest run."""
    cfg = dataclasses.replace(base, warmup=WarmupConfig(**{
        **dataclasses.asdict(base.warmup), "end_b": st.end_b}),
        fail_stat="damage", damage_drop=st.damage_drop)
    n_ckpt = st.budget // min(st.batches)
    out = []
    for rule in st.rules:
        opt, lr0 = lr_rules(st)[rule]
        out.append((rule, cfg, opt, dataclasses.replace(st.sweep, lr0s=(lr0,),
                                                        n_ckpt=max(1, n_ckpt))))
    return out


def at_responses(samples_SxC, x_SxC, n_S) -> np.ndarray:
    """[S] x read at n_S responses (per seed; nan where n is nan), linear between the
    checkpoints around it, from x = 0 at 0 responses (every run starts at the reference)."""
    s = np.asarray(samples_SxC, np.float64)
    x = np.asarray(x_SxC, np.float64)
    n = np.broadcast_to(np.asarray(n_S, np.float64), s.shape[:1])
    out = np.full(s.shape[0], np.nan)
    for i in range(s.shape[0]):
        if np.isfinite(n[i]):
            out[i] = np.interp(n[i], np.r_[0.0, s[i]], np.r_[0.0, x[i]])
    return out


def first_crossing(samples_SxC, x_SxC, level: float) -> np.ndarray:
    """[S] responses at which x first reaches level (NEVER: not in the budget), the shared
    crossing of every clock (`twoclock.clock`), from x = 0 at 0 responses (the reference, where
    the deficit is 0: met there, a level <= 0, is no crossing)."""
    return seed_crossings(samples_SxC, x_SxC, Clock("deficit", ">=", level), 0.0)


def deficit(acc_SxC, deploy_SxC, start: dict) -> np.ndarray:
    """The deploy accuracy lost to the end token: acc x (deploy / acc at the reference) -
    deploy, i.e. what the deployment grader would accept had the END_A share of correct
    answers stayed the reference's, minus what it accepts. 0 at the reference; unlike a drop
    below the running peak, progress does not hide it."""
    return (np.asarray(acc_SxC, np.float64) * (start["deploy"] / start["acc"])
            - np.asarray(deploy_SxC, np.float64))


def per_seed(st: Config, res, start: dict) -> dict:
    """{batch: {clock: [S] responses (NEVER: not reached), shift_at_<clock>, shift_at_<R>,
    final_*}}: every per-seed number the answers are worked out from, so they can be again
    from the JSON. start: the reference policy's held-out {acc, deploy}."""
    out = {}
    for i, b in enumerate(res.batches):
        ck = res.ckpt[i]
        s_SxC, shift_SxC = np.asarray(ck["samples"][0]), np.asarray(ck["null"][0])
        clocks = {k: np.asarray(res.prog_n[i, 0] if key is None else res.extra[key][i, 0],
                                np.float64) for k, key in ENGINE_CLOCKS.items()}
        d_SxC = deficit(ck["heldout_acc"][0], ck["deploy_acc"][0], start)
        clocks["deficit"] = first_crossing(s_SxC, d_SxC, st.damage_drop)
        row = {k: v.tolist() for k, v in clocks.items()}
        for k in HARM:
            at = np.where(reached(clocks[k]), clocks[k], np.nan)
            row[f"shift_at_{k}"] = at_responses(s_SxC, shift_SxC, at).tolist()
        # responses in groups whose rewards differ (a zero advantage moves nothing) by then
        active_SxC = np.cumsum((1.0 - np.asarray(ck["zero_adv_frac"][0], np.float64))
                               * np.diff(s_SxC, prepend=0.0, axis=-1), axis=-1)
        for r in st.fixed_responses:
            at_r = np.full(len(s_SxC), r)
            row[f"shift_at_{r}"] = at_responses(s_SxC, shift_SxC, at_r).tolist()
            row[f"active_at_{r}"] = at_responses(s_SxC, active_SxC, at_r).tolist()
        row.update(final_shift=shift_SxC[:, -1].tolist(), final_deficit=d_SxC[:, -1].tolist(),
                   final_acc=np.asarray(ck["heldout_acc"][0][:, -1]).tolist(),
                   final_deploy=np.asarray(ck["deploy_acc"][0][:, -1]).tolist(),
                   peak_deploy=np.asarray(ck["deploy_peak"][0][:, -1]).tolist())
        out[str(b)] = row
    return out


class Answers(NamedTuple):
    """One rule's answers, by the question of the module's docstring they answer (each a
    {clock or R: {batch: value}}, or the other way round, as the JSON has them). `json()` gives
    the file's keys, "1_reached", "2_ratio", ...; `from_json` reads them back."""
    reached: dict                   # 1: seeds that reach each clock, per batch
    median: dict                    # 1: each clock's censored median [CI], per batch
    ratio: dict                     # 2: N(B) / N(B_min) of each harm clock
    exponent: dict                  # 2: every clock's batch exponent
    damaged_share_difference: dict  # 2: share of seeds reached, minus B_min's
    drift_at: dict                  # 3: drift at each harm clock's crossing
    drift_ratio: dict               # 3: ... over B_min's
    towards_end_b: dict             # 3: seeds whose drift at the crossing is towards END_B
    rms_slope: dict                 # 4: slope of log RMS shift at R responses on log B
    rms: dict                       # 4: RMS shift at R responses
    mean_shift: dict                # 4: mean shift at R responses
    active_responses: dict          # 4: responses in groups with a nonzero advantage by R
    margin: dict                    # 5: N_harm / N_prog

    QUESTION = (1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5)  # per field, its number in the JSON key

    def json(self) -> dict:
        return {f"{q}_{k}": v for q, (k, v) in zip(self.QUESTION, self._asdict().items())}

    @classmethod
    def from_json(cls, d: dict) -> "Answers":
        return cls(**{k.split("_", 1)[1]: v for k, v in d.items()})


def answers(st: dict, cells_out: dict) -> dict:
    """{rule: Answers} from the cells' per-seed numbers (st: the study as a dict, as in the
    JSON)."""
    require_int("the study's seeds", st["seeds"], lo=2)
    idx = bootstrap_indices(st["seeds"])
    b0 = str(min(st["batches"]))
    out = {}
    for rule, cell in cells_out.items():
        per = cell["per_seed"]
        bs = sorted(per, key=int)
        nanratio = lambda a, c: nanmed(a) / nanmed(c)
        out[rule] = Answers(
            reached={b: {k: int(np.sum(reached(per[b][k]))) for k in CLOCKS} for b in bs},
            median={b: {k: median_ci(censored(per[b][k]), idx=idx) for k in CLOCKS}
                    for b in bs},
            ratio={k: {b: ratio_ci(per[b][k], per[b0][k], idx) for b in bs if b != b0}
                   for k in HARM},
            exponent={k: exponent_ci(per, k, idx) for k in CLOCKS},
            damaged_share_difference={k: {b: paired_ci(
                lambda x, y: np.mean(reached(x), axis=-1) - np.mean(reached(y), axis=-1),
                per[b][k], per[b0][k], idx=idx) for b in bs if b != b0} for k in HARM},
            drift_at={k: {b: paired_ci(nanmed, per[b][f"shift_at_{k}"], idx=idx,
                                       undefined=np.nan) for b in bs} for k in HARM},
            drift_ratio={k: {b: paired_ci(nanratio, per[b][f"shift_at_{k}"],
                                          per[b0][f"shift_at_{k}"], idx=idx, undefined=np.nan)
                             for b in bs if b != b0} for k in HARM},
            towards_end_b={k: {b: int(np.sum(np.asarray(per[b][f"shift_at_{k}"]) > 0))
                               for b in bs} for k in HARM},
            rms_slope={str(r): rms_slope_ci(per, f"shift_at_{r}", idx)
                       for r in st["fixed_responses"]},
            rms={str(r): {b: finite_or_none(np.sqrt(np.mean(np.square(
                per[b][f"shift_at_{r}"])))) for b in bs} for r in st["fixed_responses"]},
            mean_shift={str(r): {b: finite_or_none(np.mean(per[b][f"shift_at_{r}"]))
                                 for b in bs} for r in st["fixed_responses"]},
            active_responses={str(r): {b: finite_or_none(np.mean(per[b][f"active_at_{r}"]))
                                       for b in bs} for r in st["fixed_responses"]},
            margin={k: {b: ratio_ci(per[b][k], per[b]["progress"], idx) for b in bs}
                    for k in HARM})
    return out


def run(model, base, opt, st: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """Each rule's cell through run_sweep (resumable from its store under engine.store), then
    the answers."""
    del opt
    lanes = st.lanes(engine)
    out = {"schema": results.SCHEMA, "study": st.as_dict(lanes), "predictions": PREDICTIONS,
           "cells": {}}
    t0 = time.perf_counter()
    for name, cfg, opt_, sweep, res, secs in run_cells(
            model, cells(st, base), title="damage study", store_root=engine.store,
            max_lanes=lanes, keep=keep, quiet=quiet, cell_key=lambda n: f"damage_{n}"):
        ref = setup(cfg).start  # the reference policy's held-out stats (warm-up prepared)
        start = {"acc": ref["acc"], "deploy": ref["deploy"]}
        out["cells"][name] = {"per_seed": per_seed(st, res, start), "start": start,
                              "lr": float(res.lrs_BxL[0, 0]),
                              "seconds": secs,
                              "config": results.config_dict(model=cfg, optimizer=opt_,
                                                            sweep=sweep)}
    out["answers"] = {rule: a.json() for rule, a in answers(out["study"], out["cells"]).items()}
    out["seconds"] = time.perf_counter() - t0
    return out


def report(out: dict) -> str:
    """The answers as text, each beside the theory's prediction where it made one."""
    a, st, pred = out["answers"], out["study"], out["predictions"]
    fmt = lambda v, f=".3g": "-" if v is None else format(v, f)
    ci = lambda d: f"{fmt(d['median'])} [{fmt(d['ci'][0])}, {fmt(d['ci'][1])}]"
    S = st["seeds"]
    lines = [f"damage study: batches {tuple(st['batches'])}, {S} seeds, budget {st['budget']} "
             f"responses, warm-up END_B share {st['end_b']:g}, harm at {st['damage_drop']:g} "
             f"of deploy accuracy, {out['seconds']:.0f} s",
             "every [a, b] is a paired bootstrap 95% CI over seeds; '-' = not reached in the "
             "budget (or undefined); damage = deploy accuracy below its running peak, deficit "
             "= deploy accuracy lost against the reference's END_A share (not predicted: "
             "defined after the runs)"]
    for rule, raw in a.items():
        p, v = pred[rule], Answers.from_json(raw)
        lines += ["", f"{rule} rule: reached/{S} median [CI] in responses"]
        for b in sorted(v.reached, key=int):
            r, m = v.reached[b], v.median[b]
            lines.append(f"  B {b:>5}: " + "; ".join(f"{k} {r[k]} {ci(m[k])}" for k in CLOCKS))
        for k in HARM:
            lines.append(f"  {k}:")
            lines.append("    drift at the crossing per batch: " + "; ".join(
                f"{b}: {ci(x)} ({v.towards_end_b[k][b]} towards END_B)"
                for b, x in v.drift_at[k].items()))
            lines.append(f"    drift at the crossing / at B_min (predicted "
                         f"{p['drift_at_damage_ratio']:g}): " + "; ".join(
                             f"{b}: {ci(x)}" for b, x in v.drift_ratio[k].items()))
            lines.append("    N(B) / N(B_min): " + "; ".join(
                f"{b}: {ci(x)}" for b, x in v.ratio[k].items()))
            lines.append("    share of seeds reached, minus B_min's: " + "; ".join(
                f"{b}: {ci(x)}" for b, x in v.damaged_share_difference[k].items()))
            lines.append("    margin N / N_prog: " + "; ".join(
                f"{b}: {ci(x)}" for b, x in v.margin[k].items()))
        lines.append(f"  batch exponents (damage predicted {p['damage_exponent']:g}): " +
                     "; ".join(f"{k} {ci(x)}" for k, x in v.exponent.items()))
        lines.append(f"  RMS shift at fixed responses, slope on log B (predicted "
                     f"{p['rms_slope']:g}): " + "; ".join(
                         f"R {r}: {ci(x)} (RMS " + ", ".join(
                             f"{b}:{fmt(y)}" for b, y in v.rms[r].items()) + ")"
                         for r, x in v.rms_slope.items()))
        for r in v.rms:
            lines.append(f"    R {r}: mean shift " + ", ".join(
                f"{b}:{fmt(y)}" for b, y in v.mean_shift[r].items()) + "; responses in "
                "groups with a nonzero advantage " + ", ".join(
                f"{b}:{fmt(y, '.0f')}" for b, y in v.active_responses[r].items()))
    return "\n".join(lines)


def figure(out: dict):
    """(a) the progress and harm clocks against batch per rule; (b) the signed shift at each
    harm crossing (figures.damage_study)."""
    from twoclock.figures.damage_study import damage_figure
    return damage_figure(out)


STUDY = Study("damage_study", Config, run, report, figure, models=MODELS)
