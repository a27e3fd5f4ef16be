"""Phase-diagram data: where over (batch, lr0) the target is reached before the failure clock.

`phase_panel` turns a SweepResult (batch x lr0 x seed) into JSON-ready grids [L][B]: the
margin N_fail - N_prog (medians, in the model's unit; None when the failure clock is censored
so the margin is only known to exceed budget - N_prog), the fraction of seeds that reach the
target first, and both medians. A model's theory boundary, where it has one, is its
`Model.phase_boundary`.
"""
import math

import numpy as np

from twoclock.analysis import clocks
from twoclock.analysis.switch import reached_first


def _med(x_S) -> float:
    return float(np.median(clocks.censored(x_S)))


def phase_panel(res, title: str, unit: str = "samples", batch_unit: str = "samples per update",
                fail_key: str = "fail_n", prog_key: str = "prog_n") -> dict:
    """Grids [L][B] of one sweep; fail_key may name an `extra` clock (e.g. collapse_n)."""
    prog = getattr(res, prog_key) if hasattr(res, prog_key) else res.extra[prog_key]
    fail = getattr(res, fail_key) if hasattr(res, fail_key) else res.extra[fail_key]
    nB, nL = len(res.batches), len(res.lr0s)
    margin = [[None] * nB for _ in range(nL)]
    reached = [[0.0] * nB for _ in range(nL)]
    n_prog = [[None] * nB for _ in range(nL)]
    n_fail = [[None] * nB for _ in range(nL)]
    for j in range(nL):
        for i in range(nB):
            p_S, f_S = prog[i, j], fail[i, j]
            mp, mf = _med(p_S), _med(f_S)
            reached[j][i] = float(reached_first(p_S, f_S).mean())
            n_prog[j][i] = mp if math.isfinite(mp) else None
            n_fail[j][i] = mf if math.isfinite(mf) else None
            if math.isfinite(mf):
                # a censored progress clock is beyond the budget: margin <= fail - budget
                margin[j][i] = mf - (mp if math.isfinite(mp) else float(res.n_steps_B[i]
                                                                         * res.batches[i]))
    return {"title": title, "unit": unit, "batch_unit": batch_unit,
            "batches": [int(b) for b in res.batches], "lr0s": [float(l) for l in res.lr0s],
            "margin": margin, "reached_first": reached, "n_prog": n_prog, "n_fail": n_fail}


__all__ = ["phase_panel"]
