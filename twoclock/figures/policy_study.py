"""The policy study's figure (twoclock.studies.policy_study). It takes the result dict, as
written to JSON, and never calls JAX."""
import numpy as np

from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.figures.style import OKABE_ITO, band, figure, log_batch_axis, plain_log_y

CLOCKS = ("progress", "null", "kl", "entropy")


def study_figure(out: dict):
    """(a) each clock's median responses against batch under the sqrt rule (solid) and the
    fixed rule (dashed), 95% CI bands; (b) the clipping delay N(eps 0.2) / N(none) of each drift
    clock at M 4 x E 2, per batch and minibatch convention, with its CI."""
    fig, (a, b) = figure(2, "full", 2.8)
    cells, st = out["cells"], out["study"]
    idx = bootstrap_indices(st["seeds"])
    reached = False
    for rule, ls in (("sqrt", "-"), ("fixed", "--")):
        if rule not in cells:
            continue
        per = cells[rule]["per_seed"]
        bs = sorted(per, key=int)
        for k, clock in enumerate(CLOCKS):
            cis = [median_ci(censored(per[bb][clock]), idx=idx) for bb in bs]
            m, lo, hi = zip(*((c["median"], *c["ci"]) for c in cis))
            reached |= any(v is not None for v in m)
            band(a, [int(v) for v in bs], m, lo, hi, OKABE_ITO[k], ls=ls,
                 label=clock if rule == "sqrt" else ("fixed rule" if k == 0 else None))
    log_batch_axis(a, st["batches"], "batch B (responses per update)")
    if reached:  # a log axis needs a positive value
        plain_log_y(a)
    a.set_ylabel("responses to the clock (median)")
    a.set_title("(a) the clocks: sqrt rule solid, fixed rule dashed")
    a.legend(fontsize=6, ncol=2)
    clip = {k: v for k, v in out["answers"].get("3_clipping", {}).items() if k != "M1xE1"}
    drift = ("progress", "null", "kl", "entropy")  # progress: the delay the margin divides out
    x0, w = 0, 0.8 / max(1, 2 * len(clip))
    for j, (conv, row) in enumerate(clip.items()):
        for i, bb in enumerate(sorted(row["a_delay"], key=int)):
            k = 2 * j + i
            d = [row["a_delay"][bb][c] for c in drift]
            med = np.array([np.nan if v["median"] is None else v["median"] for v in d])
            lo = np.array([np.nan if v["ci"][0] is None else v["ci"][0] for v in d])
            hi = np.array([np.nan if v["ci"][1] is None else v["ci"][1] for v in d])
            xs = np.arange(len(drift)) + x0 + (k - (2 * len(clip) - 1) / 2) * w
            b.errorbar(xs, med, yerr=[med - lo, np.where(np.isnan(hi), 0, hi - med)],
                       fmt="o", color=OKABE_ITO[k % len(OKABE_ITO)], ms=3, capsize=2,
                       label=f"{conv}, B {bb}")
    b.axhline(1.0, color="0.5", lw=0.8)
    b.set_xticks(np.arange(len(drift)))
    b.set_xticklabels(drift)
    b.set_ylabel("delay N(eps 0.2) / N(none)")
    b.set_title("(b) clipping at M 4 x E 2 (> 1: clipping delays the clock)")
    if clip:
        b.legend(fontsize=6)
    return fig
