"""Figure of a plan (its JSON, twoclock.pilot.plan's Plan.to_json()): pilot points, fitted
clocks with their bands, and the recommended batch; time to target when step times are known.
No JAX."""
import numpy as np

from twoclock.figures.style import OKABE_ITO, band, figure, log_batch_axis, plain_log_y


def plan_figure(out: dict):
    """(a) both clocks against batch; (b) hours to target against batch (if step times)."""
    preds = out["predictions"]
    hours = all(p["hours_to_target"] is not None for p in preds)
    fig, axes = figure(2 if hours else 1, "full" if hours else "column", 2.6)
    a = axes[0]
    B = [p["batch"] for p in preds]
    col = {"progress_samples": OKABE_ITO[0], "failure_samples": OKABE_ITO[3]}
    cur = out["curves"]
    for key, label in (("progress_samples", "N_prog fit"), ("failure_samples", "N_fail fit")):
        if cur[key] is None:
            continue  # no failure clock was fitted
        band(a, cur["batch"], [x["median"] for x in cur[key]], [x["ci"][0] for x in cur[key]],
             [x["ci"][1] for x in cur[key]], col[key], label=label, marker="", ls="-")
    runs = out["runs"]
    for on, mk in ((True, "o"), (False, "x")):
        rs = [r for r in runs if r["on_rule"] == on]
        if not rs:
            continue
        tag = "" if on else " (off the lr rule)"
        a.plot([r["batch"] for r in rs], [r["progress_samples"] for r in rs], marker=mk,
               ls="none", color=col["progress_samples"], mec="k", mew=0.4,
               label="pilot N_prog" + tag)
        f = [r for r in rs if r["failure_samples"] is not None]
        if f:
            a.plot([r["batch"] for r in f], [r["failure_samples"] for r in f], marker=mk,
                   ls="none", color=col["failure_samples"], mec="k", mew=0.4,
                   label="pilot N_fail" + tag)
    cb = out["critical_batch"]
    if cb["batch"] is not None:
        a.axvline(cb["batch"], color="0.3", ls=":", lw=1, label=f"critical batch {cb['batch']:.3g}")
    rec = out["recommendation"]["constant"]
    if rec is not None:
        a.plot([rec["batch"]], [rec["progress_samples"]], marker="*", ms=11, ls="none",
               color=OKABE_ITO[2], mec="k", mew=0.5, label=f"recommended B = {rec['batch']:g}",
               zorder=5)
    all_B = sorted(set(B) | {r["batch"] for r in runs})
    log_batch_axis(a, all_B)
    plain_log_y(a)
    a.set_ylabel("samples to target / to failure")
    a.legend(fontsize=6, loc="best")
    a.set_title("(a) clocks" if hours else "clocks", loc="left")
    if hours:
        b = axes[1]
        h = [p["hours_to_target"] for p in preds]
        band(b, B, [x["median"] for x in h], [x["ci"][0] for x in h], [x["ci"][1] for x in h],
             OKABE_ITO[0], label="fit x step time", marker="o")
        est = out["estimates"]
        b.plot([e["batch"] for e in est], [e["progress"] * e["seconds_per_sample"] / 3600
                                           for e in est],
               marker="s", ls="--", color=OKABE_ITO[1], label="planned (runs where measured)")
        if rec is not None:
            b.plot([rec["batch"]], [rec["cost"] / 3600], marker="*", ms=11, ls="none",
                   color=OKABE_ITO[2], mec="k", mew=0.5, label="recommended", zorder=5)
        log_batch_axis(b, all_B)
        plain_log_y(b)
        b.set_ylabel("hours to target")
        b.set_title("(b) time to target", loc="left")
        b.legend(fontsize=6)
    return fig


__all__ = ["plan_figure"]
