"""Figure of a plan from logs (twoclock.pilot.logs.plan_logs's dict): the pilots' logged
curves as their conditions compare them, with the crossings found in them, the logged clipped
share and its onset, and every clock against batch with the fits, their bands and the
predicted batches. No JAX."""
import math

from matplotlib.lines import Line2D
import matplotlib.pyplot as plt
import numpy as np

from twoclock.figures.style import FULL_IN, OKABE_ITO, RC, band, log_batch_axis, plain_log_y
from twoclock.pilot.conditions import parse_condition


def _grid(n: int):
    """(fig, axes): n panels, at most three a row, full width; the last spans what is left of
    its row, so no slot is empty."""
    plt.rcParams.update(RC)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = plt.figure(figsize=(FULL_IN, 2.3 * rows), layout="constrained")
    gs = fig.add_gridspec(rows, cols)
    axes = [fig.add_subplot(gs[i // cols, i % cols]) for i in range(n - 1)]
    axes.append(fig.add_subplot(gs[(n - 1) // cols, (n - 1) % cols:]))
    return fig, axes


def _curves(a, out, text: str, colour_of, title: str):
    """Every run's logged curve as its condition compares it (the metric, or its distance from
    the run's running peak or trough), its crossing (filled) or censoring (open at the last
    logged point), and the condition's level."""
    cond = parse_condition(text, "--failure")
    for c in out["logs"]["curves"]:
        d = c[text]
        col = colour_of[c["batch"]]
        y = cond.curve(d["values"])
        a.plot(d["samples"], y, color=col, lw=0.6, alpha=0.7)
        at = float(np.interp(d["clock"], d["samples"], y))
        a.plot([d["clock"]], [at], marker="o", ms=3.5, ls="none",
               mfc=col if d["crossed"] else "white", mec="k", mew=0.4)
    a.axhline(cond.level, color="0.3", ls=":", lw=1)
    a.set_xscale("log")
    a.set_xlabel("samples")
    a.set_ylabel(cond.metric + {"peak": " - running peak", "trough": " - running trough"}.get(
        cond.ref, ""))
    a.set_title(title, loc="left")


def _batch_legend(a, batches, colour_of, levels=()):
    """One entry per batch, in numeric order; then each (target, its level line's style)."""
    a.legend([Line2D([], [], color=colour_of[b], lw=1) for b in batches]
             + [Line2D([], [], color="0.3", ls=ls, lw=1) for _, ls in levels],
             [f"B = {b:g}" for b in batches] + [t for t, _ in levels], fontsize=6, loc="best")


def _has_clip(co) -> bool:
    return co is not None and any((p["share"] or 0) > 0 for p in co["runs"])


def _onset(a, co):
    """The batch where the clipped share passes its bind level, as a vertical line."""
    if co is not None and co["binds_at"] is not None:
        a.axvline(co["binds_at"], color=OKABE_ITO[5], ls="--", lw=1,
                  label=f"clipping binds, B ~ {co['binds_at']:.0f}")


def _clip(a, co, colour_of, pred_B, title: str):
    """The clipped share per pilot run against batch, the fitted line over its checked reach,
    the shares predicted there, the bind level and the onset."""
    runs = [p for p in co["runs"] if (p["share"] or 0) > 0]
    for p in runs:
        a.plot([p["batch"]], [p["share"]], marker="o", ms=3.5, ls="none",
               color=colour_of[p["batch"]], mec="k", mew=0.4)
    if co["curve"] is not None:
        a.plot(co["curve"]["batch"], co["curve"]["share"], color="0.2", lw=1,
               label="fit (its checked reach)")
    ok = [p for p in co["predictions"] if p["share"] is not None]
    if ok:
        a.plot([p["batch"] for p in ok], [p["share"] for p in ok], marker="s", ls="none",
               color="0.2", mec="k", mew=0.4, ms=4, label="predicted")
    reach = co["reach"]["batches"] if co["reach"] is not None else None
    if reach is not None and pred_B and max(pred_B) > reach[1]:
        a.axvspan(reach[1], max(pred_B) * 1.2, color="0.9", lw=0, label="past the reach")
    a.axhline(co["bind"], color="0.3", ls=":", lw=1, label=f"bind level {co['bind']:g}")
    _onset(a, co)
    log_batch_axis(a, sorted({p["batch"] for p in runs} | set(pred_B)), label="batch B")
    plain_log_y(a)
    a.set_ylabel(f"clipped share ({co['metric']})")
    a.set_title(title, loc="left")
    a.legend(fontsize=5.5, loc="best")


# each further target's line style in the clocks panel (several targets: `targets_figure`)
TARGET_STYLES = ("--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))


def targets_figure(out: dict):
    """Several targets (pilot/levels.py's document): the first target's plan figure, with
    every other target drawn too: its level on the progress panel, and in the clocks panel its
    own plan's progress clock (fit and band, its pilots' crossings, its predictions), each
    target a line style of its own."""
    rows = out["targets"]
    return logs_figure(rows[0]["plan"], others=[(r["condition"], r["plan"]) for r in rows[1:]])


def _style(i: int):
    """The i-th further target's line style (they repeat past TARGET_STYLES)."""
    return TARGET_STYLES[i % len(TARGET_STYLES)]


def _other_target(a, text: str, plan: dict, col, ls):
    """One more target's progress clock in the clocks panel (a): its plan's fitted band, its
    pilots' crossings and its predictions with their bands, in line style ls."""
    cur = plan["curves"]
    curve = cur["progress_samples"]
    band(a, cur["batch"], [x["median"] for x in curve], [x["ci"][0] for x in curve],
         [x["ci"][1] for x in curve], col, label="progress " + text, marker="", ls=ls)
    pts = [(c["batch"], c[text]["clock"]) for c in plan["logs"]["curves"] if c[text]["crossed"]]
    a.plot([p[0] for p in pts], [p[1] for p in pts], marker="D", ls="none", color=col,
           mec="k", mew=0.4, ms=2.5)
    ok = [p for p in plan["predictions"] if p["progress_samples"]["median"] is not None]
    if ok:
        med = np.array([p["progress_samples"]["median"] for p in ok])
        lo = np.array([_or(p["progress_samples"]["ci"][0], m) for p, m in zip(ok, med)])
        hi = np.array([_or(p["progress_samples"]["ci"][1], m) for p, m in zip(ok, med)])
        eb = a.errorbar([p["batch"] for p in ok], med, yerr=[med - lo, hi - med], fmt="s",
                        color=col, mec="k", mew=0.4, ms=3, capsize=2, lw=1)
        eb[-1][0].set_linestyle(ls)


def _or(v, default):
    return default if v is None else v


def logs_figure(out: dict, others=()):
    """(a) the progress metric's curves; (b...) one panel per failure condition; with a logged
    clipped share, its panel; last: the clocks against batch (pilot runs' crossings, fits with
    bands, predictions with their bands, the clipping onset). others: further targets of the
    progress metric, (condition, its own plan), each drawn on (a) and in the clocks panel
    (`targets_figure`)."""
    lg = out["logs"]
    conds = [lg["progress"]] + list(lg["failures"])
    co = out.get("clip_onset")
    clip = _has_clip(co)
    fig, axes = _grid(len(conds) + clip + 1)
    batches = sorted({c["batch"] for c in lg["curves"]})  # numbers, in numeric order
    colour_of = {b: OKABE_ITO[i % len(OKABE_ITO)] for i, b in enumerate(batches)}
    letters = "abcdefghijklmnopqrstuvwxyz"
    for k, (a, cond) in enumerate(zip(axes, conds)):
        kind = "progress" if k == 0 else "failure"
        _curves(a, out, cond, colour_of, f"({letters[k]}) {kind}: {cond}")
        if k == 0:
            for i, (text, _) in enumerate(others):  # each further target's level
                a.axhline(parse_condition(text, "--progress").level, color="0.3", ls=_style(i),
                          lw=1)
            if others:
                a.set_title(f"({letters[k]}) {kind}: {len(others) + 1} targets of "
                            f"{parse_condition(cond, '--progress').metric}", loc="left")
            _batch_legend(a, batches, colour_of, [(cond, ":")] * bool(others) + [
                (t, _style(i)) for i, (t, _) in enumerate(others)])
    if clip:
        _clip(axes[len(conds)], co, colour_of, [p["batch"] for p in out["predictions"]],
              f"({letters[len(conds)]}) clipping: {co['metric']} per run, fit, onset")
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
        for p, x in zip(out["predictions"], preds):  # a point asked at B:K (--predict)
            if p.get("updates", 1) != 1 and x["median"] is not None:
                a.annotate(f"K = {p['updates']:g}", (p["batch"], x["median"]), fontsize=6,
                           textcoords="offset points", xytext=(4, 3), color=col)
    for i, (text, plan) in enumerate(others):
        _other_target(a, text, plan, clock_col[0], _style(i))
    rec = out["recommendation"]["constant"]
    if rec is not None:
        a.plot([rec["batch"]], [rec["progress_samples"]], marker="*", ms=10, ls="none",
               color=OKABE_ITO[2], mec="k", mew=0.5, label=f"recommended B = {rec['batch']:g}"
               + (f" ({lg['progress']})" if others else ""), zorder=5)
    _onset(a, co)
    log_batch_axis(a, sorted(set(batches) | {p["batch"] for p in out["predictions"]}),
                   label="batch B")
    plain_log_y(a)
    a.set_ylabel("samples to the clock")
    a.set_title(f"({letters[len(axes) - 1]}) clocks: runs (o; ^ censored),\nfits, "
                "predicted (squares)", loc="left")
    a.legend(fontsize=5.5, loc="best", framealpha=0.85)
    return fig


__all__ = ["logs_figure", "targets_figure"]
