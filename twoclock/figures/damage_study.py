"""The damage study's figure (twoclock.studies.damage_study). It takes the result dict, as
written to JSON, and never calls JAX."""
import numpy as np

from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.figures.style import OKABE_ITO, band, figure, log_batch_axis, plain_log_y

HARM = ("damage", "deficit")


def damage_figure(out: dict):
    """(a) the median progress and harm clocks against batch, sqrt rule solid and fixed rule
    dashed, with 95% CI bands; (b) every harmed seed's signed END_B log-odds shift at each harm
    clock's crossing, per batch and rule."""
    fig, (a, b) = figure(2, "full", 2.8)
    cells, st = out["cells"], out["study"]
    idx = bootstrap_indices(st["seeds"])
    reached = False
    for j, (rule, ls) in enumerate((("sqrt", "-"), ("fixed", "--"))):
        if rule not in cells:
            continue
        per = cells[rule]["per_seed"]
        bs = sorted(per, key=int)
        for k, clock in enumerate(("progress",) + HARM):
            cis = [median_ci(censored(per[bb][clock]), idx=idx) for bb in bs]
            m, lo, hi = zip(*((c["median"], *c["ci"]) for c in cis))
            reached |= any(v is not None for v in m)
            band(a, [int(v) for v in bs], m, lo, hi, OKABE_ITO[k], ls=ls,
                 label=f"{clock}, {rule} rule")
        for h, harm in enumerate(HARM):
            for i, bb in enumerate(bs):
                y = np.asarray(per[bb][f"shift_at_{harm}"], float)
                y = y[np.isfinite(y)]
                spread = 0.02 * np.linspace(-1, 1, max(len(y), 1))[:len(y)]
                x = int(bb) * np.exp(0.12 * (2 * j + h - 1.5) + spread)
                color = OKABE_ITO[1 + h]
                b.plot(x, y, "o" if rule == "sqrt" else "s", ms=3, color=color,
                       mfc=color if rule == "sqrt" else "none",
                       label=f"{harm}, {rule} rule" if i == 0 else None)
    log_batch_axis(a, st["batches"], "batch B (responses per update)")
    if reached:  # a log axis needs a positive value
        plain_log_y(a)
    a.set_ylabel("responses to the clock (median)")
    a.set_title("(a) progress and harm clocks")
    a.legend(fontsize=6)
    log_batch_axis(b, st["batches"], "batch B (responses per update)")
    b.axhline(0.0, color="0.5", lw=0.8)
    b.set_ylabel("END_B log-odds shift at the crossing")
    b.set_title("(b) the drift at each harm crossing, per seed")
    b.legend(fontsize=6)
    return fig
