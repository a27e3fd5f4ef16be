"""The headline figure (both clocks against batch) from a result dict; never calls JAX.

Uses the one paper style of twoclock.figures.style.
"""
from twoclock.config import DELTA
from twoclock.figures.style import OKABE_ITO, band, figure, log_batch_axis, plain_log_y


def _rows(runs, lr0):
    return sorted((r for r in runs if r["lr0"] == lr0), key=lambda r: r["batch"])


def clocks_vs_batch_figure(result: dict, unit: str = "samples"):
    """Both clocks (median, 95% CI band; dotted: theory) against batch, absolute and relative
    to the smallest batch, one colour per lr0."""
    runs = result["runs"]
    fig, (ax, axr) = figure(2, "full", 2.8)
    lr0s = sorted({r["lr0"] for r in runs})
    batches = sorted({r["batch"] for r in runs})
    for k, lr0 in enumerate(lr0s):
        col = OKABE_ITO[k % len(OKABE_ITO)]
        rows = _rows(runs, lr0)
        B = [r["batch"] for r in rows]
        for key, ls, name in (("progress_samples", "-", "progress"),
                              ("failure_samples", "--", "failure")):
            s = [r[key] for r in rows]
            band(ax, B, [x["median"] for x in s], [x["ci"][0] for x in s],
                 [x["ci"][1] for x in s], col, label=f"{name}, lr0={lr0:g}", ls=ls)
            base = s[0]["median"]
            if base:
                axr.plot(B, [float("nan") if x["median"] is None else x["median"] / base
                             for x in s], ls=ls, marker="o", color=col)
            th = [(r["batch"], r.get("theory", {}).get(key)) for r in rows]
            th = [(b, v) for b, v in th if v is not None]
            if th:
                ax.plot(*zip(*th), ls=":", color=col, lw=1)
    for a in (ax, axr):
        log_batch_axis(a, batches, f"batch B ({unit} per update)")
    plain_log_y(ax)
    ax.set_ylabel(f"clock ({unit})")
    ax.set_title("solid: progress, dashed: failure, dotted: theory", loc="left")
    axr.set_ylabel("clock / clock at smallest batch")
    axr.axhline(1 + result.get("config", {}).get("delta", DELTA), color="0.5", lw=0.6, ls=":")
    axr.set_title("relative to the smallest batch (dotted: 1 + delta)", loc="left")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center",
               ncol=min(3, 2 * len(lr0s)), fontsize=6)
    return fig
