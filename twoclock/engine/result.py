"""A sweep's result: first crossings and checkpoints per (batch, lr0, seed), and results of
several sweeps merged by batch. NumPy only: reading a result loads no JAX."""
from dataclasses import dataclass

import numpy as np

from twoclock.config import require


@dataclass
class SweepResult:
    """Per-(batch, lr0, seed) first crossings, in samples (0 = never), and checkpoints.

    prog_n / fail_n / div_n / prog_t: float64 [B, L, S] (fractional: interpolated between
    updates, `twoclock.engine.stages.crossed`); extra[name]: [B, L, S];
    ckpt[b][name]: [L, S, C_b] (checkpoint counts differ between batches).
    """
    batches: tuple
    lr0s: tuple
    lrs_BxL: np.ndarray
    n_steps_B: np.ndarray
    prog_n: np.ndarray
    fail_n: np.ndarray
    div_n: np.ndarray
    prog_t: np.ndarray
    extra: dict
    ckpt: list
    seconds: float
    padded_fraction: float  # scanned-but-unused updates / useful updates
    reused_chunks: int = 0
    codegen: str = "fused"  # the XLA code generator that compiled the programs (twoclock.engine.layout)


def merge_batches(parts: list, batches) -> SweepResult:
    """One result of `batches`, in that order, each batch's runs taken from the first of parts
    that has it, with its own learning rates (lrs_BxL); lr0s are the first part's, so a batch
    taken from another part must hold the runs the first part's lr0s give there (another lr
    rule with the same lr at that batch). ValueError where no part has a batch, or where the
    parts' lr0 or seed counts differ."""
    nL, S = len(parts[0].lr0s), parts[0].prog_n.shape[-1]
    require(all(len(r.lr0s) == nL and r.prog_n.shape[-1] == S for r in parts),
            "parts", f"results with {nL} lr0s and {S} seeds each", "others")
    lr0s = parts[0].lr0s
    src = []
    for b in batches:
        have = [(r, list(r.batches).index(b)) for r in parts if b in r.batches]
        require(len(have) > 0, "batches", "batches of the parts' results", b)
        src.append(have[0])
    pick = lambda rows: np.stack([rows(r)[i] for r, i in src])
    return SweepResult(
        tuple(batches), tuple(lr0s), pick(lambda r: r.lrs_BxL), pick(lambda r: r.n_steps_B),
        *(pick(lambda r, k=k: getattr(r, k)) for k in ("prog_n", "fail_n", "div_n", "prog_t")),
        {k: pick(lambda r, k=k: r.extra[k]) for k in parts[0].extra}, [r.ckpt[i] for r, i in src],
        sum(r.seconds for r in parts), max(r.padded_fraction for r in parts),
        sum(r.reused_chunks for r in parts), parts[0].codegen)
