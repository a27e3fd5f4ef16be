"""Figure of a plan from logs (twoclock.pilot.logs.plan_logs's dict): the pilots' logged
curves with the crossings found in them, and every clock against batch with the fits, their
bands and the predicted batches. No JAX."""
import math

import matplotlib.pyplot as plt
import numpy as np

from twoclock.figures.style import FULL_IN, OKABE_ITO, RC, band, log_batch_axis, plain_log_y


def _grid(n: int):
    """(fig, axes): n panels, at most three a row, full width."""
    plt.rcParams.update(RC)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(FULL_IN, 2.3 * rows), layout="constrained",
                             squeeze=False)
    flat = list(axes.ravel())
    for a in flat[n:]:
        fig.delaxes(a)
    return fig, flat[:n]


def _curves(a, out, cond: str, colour_of, title: str):
    """Every run's logged curve of cond's metric, its crossing (filled) or censoring (open at
    the last logged point), and the threshold."""
    seen = set()
    for c in out["logs"]["curves"]:
        d = c[cond]
        col = colour_of[c["batch"]]
        label = None if c["batch"] in seen else f"B = {c['batch']:g}"
        seen.add(c["batch"])
        a.plot(d["samples"], d["values"], color=col, lw=0.6, alpha=0.7, label=label)
        y = float(np.interp(d["clock"], d["samples"], d["values"]))
        a.plot([d["clock"]], [y], marker="o", ms=3.5, ls="none",
               mfc=col if d["crossed"] else "white", mec="k", mew=0.4)
    thr = _threshold(cond)
    a.axhline(thr, color="0.3", ls=":", lw=1)
    a.set_xscale("log")
    a.set_xlabel("samples")
    a.set_ylabel(_metric(cond))
    a.set_title(title, loc="left")


def _metric(cond: str) -> str:
    for op in (">=", "<=", ">", "<"):
        if op in cond:
            return cond.split(op)[0]
    return cond


def _threshold(cond: str) -> float:
    for op in (">=", "<=", ">", "<"):
        if op in cond:
            return float(cond.split(op)[1])
    return math.nan


def logs_figure(out: dict):
    """(a) the progress metric's curves; (b...) one panel per failure metric; last: the clocks
    against batch (pilot runs' crossings, fits with bands, predictions with their bands)."""
    lg = out["logs"]
    conds = [lg["progress"]] + list(lg["failures"])
    fig, axes = _grid(len(conds) + 1)
    batches = sorted({c["batch"] for c in lg["curves"]})
    colour_of = {b: OKABE_ITO[i % len(OKABE_ITO)] for i, b in enumerate(batches)}
    letters = "abcdefghij"
    for k, (a, cond) in enumerate(zip(axes, conds)):
        kind = "progress" if k == 0 else "failure"
        _curves(a, out, cond, colour_of, f"({letters[k]}) {kind}: {cond}")
        if k == 0:
            a.legend(fontsize=6, loc="best")
    a = axes[-1]
    clock_col = [OKABE_ITO[0]] + [OKABE_ITO[(3 + i) % len(OKABE_ITO)] for i in range(len(conds))]
    cur = out["curves"]
    series = [("progress " + lg["progress"], cur["progress_samples"],
               [p["progress_samples"] for p in out["predictions"]], lg["progress"])]
    series += [("failure " + f["condition"], f["curves"],
                [p["failure_samples"] for p in f["predictions"]], f["condition"])
               for f in out["failures"]]
    for (label, curve, preds, cond), col in zip(series, clock_col):
        if curve is not None:
            band(a, cur["batch"], [x["median"] for x in curve], [x["ci"][0] for x in curve],
                 [x["ci"][1] for x in curve], col, label=label, marker="", ls="-")
        pts = [(c["batch"], c[cond]["clock"], c[cond]["crossed"]) for c in lg["curves"]]
        a.plot([p[0] for p in pts if p[2]], [p[1] for p in pts if p[2]], marker="o", ls="none",
               color=col, mec="k", mew=0.4, ms=3)
        cens = [p for p in pts if not p[2]]
        if cens:
            a.plot([p[0] for p in cens], [p[1] for p in cens], marker="^", ls="none",
                   mfc="white", mec=col, mew=0.8, ms=3)
        B = [p["batch"] for p in out["predictions"]]
        ok = [(b, x) for b, x in zip(B, preds) if x["median"] is not None]
        if ok:
            med = np.array([x["median"] for b, x in ok])
            lo = np.array([x["ci"][0] if x["ci"][0] is not None else x["median"] for b, x in ok])
            hi = np.array([x["ci"][1] if x["ci"][1] is not None else x["median"] for b, x in ok])
            a.errorbar([b for b, _ in ok], med, yerr=[med - lo, hi - med], fmt="s", color=col,
                       mec="k", mew=0.4, ms=4, capsize=2, lw=1)
    rec = out["recommendation"]["constant"]
    if rec is not None:
        a.plot([rec["batch"]], [rec["progress_samples"]], marker="*", ms=10, ls="none",
               color=OKABE_ITO[2], mec="k", mew=0.5, label=f"recommended B = {rec['batch']:g}",
               zorder=5)
    log_batch_axis(a, sorted(set(batches) | {p["batch"] for p in out["predictions"]}),
                   label="batch B")
    plain_log_y(a)
    a.set_ylabel("samples to the clock")
    a.set_title(f"({letters[len(conds)]}) clocks: runs (o; ^ censored), fits, "
                "predicted (squares)", loc="left")
    a.legend(fontsize=5.5, loc="best")
    return fig


__all__ = ["logs_figure"]
