"""The policy study's cells: which sweeps it runs (each a model config, an optimizer and a
SweepConfig), and the per-seed numbers each cell keeps for the answers."""
import dataclasses
from typing import NamedTuple

import numpy as np

from twoclock.analysis.paired import at_samples
from twoclock.config import OptimConfig
from twoclock.engine.result import merge_batches
from twoclock.studies.assemble import assemble
from twoclock.studies.policy_study import cliptime

CLOCK_KEYS = {"progress": "prog_n", "null": "null_n", "kl": "kl_n", "entropy": "entropy_n",
              "collapse": "collapse_n"}
DRIFT = ("null", "kl", "entropy", "collapse")
CLIPS = {"eps0.2": (0.2, None), "none": (None, None), "higher": (0.2, 0.28)}
PARTS = ("rules", "adam", "clip", "collapse", "variants", "cliptime", "stddof")
DEFAULT_PARTS = PARTS[:4]  # the variants, cliptime and stddof run when asked for
# the clipping comparison again under fixed_size, eps 0.2 against none, for a second warm-up
# and at 4x the clipping cells' lr: {variant: (lr factor, PolicyConfig overrides)}
VARIANTS = {"warmup_seed1": (1.0, {"warmup_seed": 1}), "lr_x4": (4.0, {})}
CONVENTIONS = ("fixed_m", "fixed_size")


def rules(st) -> dict:
    """{rule: (OptimConfig, lr0)}: the sqrt rule at lr0, and the fixed rule at the sqrt rule's
    lr at the smallest batch (the same start)."""
    sqrt, fixed = OptimConfig(lr_rule="sqrt"), OptimConfig(lr_rule="fixed")
    return {"sqrt": (sqrt, st.lr0),
            "fixed": (fixed, sqrt.lr(st.lr0, min(st.batches)))}


def cells(st, base) -> list:
    """[(name, model config, OptimConfig, SweepConfig)] of the study (st: its Config; base:
    the model's config); ValueError for a cell the configs refuse."""
    sweep = lambda batches, lr0, seeds=st.seeds: dataclasses.replace(
        st.sweep, batches=tuple(batches), lr0s=(lr0,), seeds=seeds, n_ckpt=st.n_ckpt)
    rule = rules(st)
    sqrt = rule["sqrt"][0]
    b0, b1 = min(st.batches), max(st.batches)
    out = []
    loans = borrowed(st)
    if "rules" in st.parts:
        # the fixed rule's runs at b0 are the sqrt rule's (the same lr there): borrowed
        out += [(name, base, opt, sweep(_own(name, st.batches, loans), lr0))
                for name, (opt, lr0) in rule.items()]
    if "clip" in st.parts:
        out.append(("clip_none_M1E1", dataclasses.replace(base, clip_low=None, clip_high=None),
                    sqrt, sweep((b0, b1), st.lr0, min(st.control_seeds, st.seeds))))
    lr_clip = st.lr0 * st.clip_lr_factor
    for conv in (st.conventions if "clip" in st.parts else ()):
        opt, lr0 = clip_rule(conv, lr_clip, b0)
        for name, (cl, ch) in CLIPS.items():
            cfg = dataclasses.replace(base, minibatches=4, epochs=2, mb_convention=conv,
                                      mb_ref=b0, clip_low=cl, clip_high=ch)
            # at b0 = mb_ref, fixed_size runs fixed_m's runs (M = 4 either way): borrowed
            cell = f"clip_{name}_{conv}"
            out.append((cell, cfg, opt, sweep(_own(cell, (b0, b1), loans), lr0)))
    for v, (factor, over) in (VARIANTS.items() if "variants" in st.parts else ()):
        opt, lr0 = clip_rule("fixed_size", lr_clip * factor, b0)
        vbase = with_overrides(base, over)
        for name in ("eps0.2", "none"):
            cl, ch = CLIPS[name]
            cfg = dataclasses.replace(vbase, minibatches=4, epochs=2, mb_convention="fixed_size",
                                      mb_ref=b0, clip_low=cl, clip_high=ch)
            out.append((f"variant_{v}_{name}", cfg, opt, sweep((b0, b1), lr0)))
    for name in (("eps0.2", "none") if "collapse" in st.parts else ()):
        cl, ch = CLIPS[name]
        cfg = dataclasses.replace(base, minibatches=4, epochs=2, clip_low=cl, clip_high=ch)
        out.append((f"collapse_{name}", cfg, sqrt, sweep((b0, b1), st.lr0 * st.unstable_factor)))
    return out + cliptime.cells(st, base)  # clip-higher over time, the group std (cliptime.py)


def with_overrides(base, over: dict):
    """base with PolicyConfig fields replaced; `warmup_seed` replaces the warm-up's seed."""
    over = dict(over)
    if "warmup_seed" in over:
        over["warmup"] = dataclasses.replace(base.warmup, seed=over.pop("warmup_seed"))
    return dataclasses.replace(base, **over)


def clip_rule(conv: str, lr0: float, b0: int) -> tuple:
    """(OptimConfig, lr0) of a clipping cell: the lr follows the batch each optimizer step
    sees. Under fixed_m that is the rollout batch (the sqrt rule); under fixed_size it is the
    minibatch, the same at every B, so the lr is the sqrt rule's at b0 at every batch (the fixed
    rule) and a larger batch takes more steps at the same lr: the move per response is matched
    instead of growing with the steps x the lr."""
    sqrt = OptimConfig(lr_rule="sqrt")
    return (sqrt, lr0) if conv == "fixed_m" else (OptimConfig(lr_rule="fixed"), sqrt.lr(lr0, b0))


class Loan(NamedTuple):
    """Runs a cell takes from another that has run them, bit for bit."""
    batch: int  # the batch whose runs are borrowed
    lender: str  # the cell that runs them
    batches: tuple  # the borrowing cell's batches, its own and the borrowed, in its order


def borrowed(st) -> dict:
    """{cell: Loan}. With both rules, the fixed rule's runs at the smallest batch b0 (its lr
    there is the sqrt rule's, `rules`); with both conventions, the fixed_size clipping cells'
    at b0 = mb_ref (fixed_m's config but for the convention's name, which sets no number there:
    M = 4 either way)."""
    b0, b1 = min(st.batches), max(st.batches)
    out = {}
    if "rules" in st.parts:
        (sqrt, lr0), (fixed, lr0_fixed) = rules(st)["sqrt"], rules(st)["fixed"]
        if sqrt.lr(lr0, b0) == fixed.lr(lr0_fixed, b0):
            out["fixed"] = Loan(b0, "sqrt", tuple(st.batches))
    if "clip" in st.parts and set(CONVENTIONS) <= set(st.conventions):
        out.update({f"clip_{name}_fixed_size": Loan(b0, f"clip_{name}_fixed_m", (b0, b1))
                    for name in CLIPS})
    return out


def _own(cell: str, batches: tuple, loans: dict) -> tuple:
    """The batches a cell runs itself: all but the one it borrows."""
    return tuple(b for b in batches if cell not in loans or b != loans[cell].batch)


def lend(name: str, sweep, res, done: dict, loans: dict) -> tuple:
    """(sweep, result) of a cell over all its batches: where it borrows (loans[name]), its own
    result res with the borrowed batch taken from the lender's, done[lender] (a SweepResult),
    so that its clocks, critical batch and per-seed numbers are worked out over every batch."""
    loan = loans.get(name)
    if loan is None:
        return sweep, res
    return (dataclasses.replace(sweep, batches=loan.batches),
            merge_batches([res, done[loan.lender]], loan.batches))  # its own runs first


def check_cells(model, st, base) -> None:
    """Every cell's configs and every batch it runs, as the model splits it (ValueError), so
    that a cell refuses before any other cell runs."""
    for _, cfg, _, sweep in cells(st, base):
        for b in sweep.batches:
            model.describe_batch(cfg, b)


def clock_S(res, clock: str, i: int) -> np.ndarray:
    key = CLOCK_KEYS[clock]
    return np.asarray(res.prog_n[i, 0] if key == "prog_n" else res.extra[key][i, 0])


def per_seed(cfg, sweep, res, early_samples: int) -> dict:
    """{batch: {clock: [S] responses (0: never), early_acc, collapsed, stayed_down, ...}}: every
    per-seed number the answers are worked out from, so they can be again from the JSON."""
    out = {}
    for i, b in enumerate(res.batches):
        ck = res.ckpt[i]
        acc_end, peak = np.asarray(ck["heldout_acc"][0][:, -1]), np.asarray(ck["peak"][0][:, -1])
        coll = clock_S(res, "collapse", i)
        out[str(b)] = {
            **{c: clock_S(res, c, i).astype(float).tolist() for c in CLOCK_KEYS},
            "early_acc": at_samples(ck, "heldout_acc",
                                    min(early_samples, sweep.budget)).tolist(),
            "final_acc": acc_end.tolist(), "peak_acc": peak.tolist(),
            "stayed_down": ((coll > 0) & (acc_end <= peak - cfg.collapse_drop)).tolist(),
            "clip_frac": np.asarray(ck["clip_frac"][0]).mean(-1).tolist()}
    return out


def analyse(model, cfg, opt, sweep, res, early_samples: int) -> dict:
    """One cell's entries (every extra clock, the model's predictions), its critical batch and
    its per-seed clocks."""
    runs, crit = assemble(model, cfg, opt, sweep, res, extra=tuple(res.extra), describe=False)
    return {"runs": runs, "critical_batch": crit,
            "per_seed": per_seed(cfg, sweep, res, early_samples)}


__all__ = ["CLOCK_KEYS", "DRIFT", "CLIPS", "PARTS", "DEFAULT_PARTS", "VARIANTS", "CONVENTIONS",
           "rules", "cells", "with_overrides", "clip_rule", "borrowed", "Loan", "lend", "check_cells",
           "clock_S", "per_seed", "analyse"]
