"""One paper style for every figure, and the figure builders of the schedule, time-to-target
and phase-diagram results. Builders take result dicts (as written to JSON) and never call JAX.

Sizes are for a two-column paper (3.4 in one column, 7.0 in full width); colours are the
Okabe-Ito colour-blind-safe palette; batch and sample axes are logarithmic; confidence
intervals are bands; every axis is labelled with its unit.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter  # noqa: E402
import numpy as np  # noqa: E402

from twoclock.atomic import atomic_write  # noqa: E402

COLUMN_IN, FULL_IN = 3.4, 7.0
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
             "#000000"]
RC = {
    "font.size": 8, "axes.labelsize": 8, "axes.titlesize": 8, "legend.fontsize": 7,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "lines.linewidth": 1.3, "lines.markersize": 4,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO), "axes.grid": True,
    "grid.alpha": 0.25, "grid.linewidth": 0.5, "legend.frameon": False,
    "savefig.dpi": 300, "figure.dpi": 100, "pdf.fonttype": 42, "axes.spines.top": False,
    "axes.spines.right": False,
}


def figure(ncols: int = 1, width: str = "column", height: float | None = None):
    """A styled (fig, axes) pair; width 'column' (3.4 in) or 'full' (7.0 in)."""
    plt.rcParams.update(RC)
    w = COLUMN_IN if width == "column" else FULL_IN
    h = height if height is not None else (2.4 if width == "column" else 2.3)
    fig, axes = plt.subplots(1, ncols, figsize=(w, h), layout="constrained", squeeze=False)
    return fig, list(axes[0])


def log_batch_axis(ax, batches, label="batch B (samples per update)"):
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(batches))
    ax.set_xticklabels([str(int(b)) for b in batches])
    ax.minorticks_off()
    ax.set_xlabel(label)


def plain_log_y(ax):
    """Log y axis with plain-number labels (0.4, 2000) on a 1-1.5-2-3-5-7 grid of ticks, so a
    range within one decade still gets labels."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def band(ax, x, med, lo, hi, color, label=None, marker="o", ls="-"):
    """Median line with a CI band; None (censored) entries are skipped."""
    x = np.asarray(x, float)
    f = lambda v: np.array([np.nan if a is None else a for a in v], float)
    med, lo, hi = f(med), f(lo), f(hi)
    ax.plot(x, med, marker=marker, ls=ls, color=color, label=label)
    ok = np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        ax.fill_between(x[ok], lo[ok], hi[ok], color=color, alpha=0.2, lw=0)


def save(fig, stem: str) -> list:
    """Write stem.pdf and stem.png atomically; returns the paths."""
    paths = [atomic_write(f"{stem}.{ext}", lambda f, ext=ext: fig.savefig(f, format=ext),
                          binary=True) for ext in ("pdf", "png")]
    plt.close(fig)
    return paths


def _nan(v):
    return np.nan if v is None else float(v)


# ---------------------------------------------------------------------------- schedule

def schedule_figure(result: dict):
    """(a) the progress curve and (b) drift against samples for constant B1, constant B2 and
    the planned schedule; (c) wall-clock time-to-target against the switch point."""
    fig, (a, b, c) = figure(3, "full", 3.1)
    cfg = result["config"]
    colors = {"constant_small": OKABE_ITO[0], "constant_large": OKABE_ITO[3],
              "schedule": OKABE_ITO[2]}
    for run in result["runs"]:
        cur = run["curve"]
        label = run["label"]
        a.plot(cur["samples"], cur["progress_frac"], color=colors[run["kind"]], label=label)
        b.plot(cur["samples"], cur["drift"], color=colors[run["kind"]], label=label)
    sw = result["plan"]["switch_samples"]
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_xlabel("samples consumed")
        if sw:
            ax.axvline(sw, color=OKABE_ITO[2], ls=":", lw=1)
    a.set_yscale("log")
    # the target on the curve's own scale (the bandit's: held-out error / initial error)
    a.axhline(result["curve_target"], color="k", ls="--", lw=0.8, label="target")
    a.set_ylabel(f"{result['progress_label']} (median)")
    b.axhline(cfg["model"]["drift_threshold"], color="k", ls="--", lw=0.8, label="collapse threshold")
    b.set_ylabel("drift statistic (median)")
    below = dict(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=6)  # off the data
    a.legend(**below)
    b.legend(**below)
    sweep = result["switch_sweep"]
    S = [r["switch"] for r in sweep]
    hours = [r["hours"] for r in sweep]
    band(c, S, [h["median"] for h in hours], [h["ci"][0] for h in hours],
         [h["ci"][1] for h in hours], OKABE_ITO[2], label="schedule (measured)")
    for run in result["runs"]:
        if run["kind"] != "schedule" and run["hours"]["median"] is not None:
            c.axhline(run["hours"]["median"], color=colors[run["kind"]], ls="--", lw=1,
                      label=run["label"])
    if sw:
        c.axvline(sw, color=OKABE_ITO[2], ls=":", lw=1, label="planned switch")
    reach = [r["reached_first"] for r in sweep]
    c2 = c.twinx()
    c2.plot(S, reach, color="0.5", marker=".", ls="-", lw=0.8)
    c2.set_ylim(0, 1.05)
    c2.set_ylabel("fraction of seeds reaching target first", color="0.4")
    c2.grid(False)
    c.set_xlabel("switch point (samples at B1)")
    c.set_ylabel("time to target (hours, median)")
    c.legend(**below)
    for ax, t in zip((a, b, c), "abc"):
        ax.set_title(f"({t})", loc="left")
    return fig


# ---------------------------------------------------------------------------- time to target

def time_to_target_figure(result: dict):
    """Normalised time-to-target against batch, sqrt-scaled vs fixed LR; criticals marked."""
    fig, (ax,) = figure(1, "column", 2.6)
    ref = result["reference_seconds"]
    colors = {"sqrt": OKABE_ITO[0], "fixed": OKABE_ITO[1], "linear": OKABE_ITO[2]}
    batches = sorted({r["batch"] for r in result["runs"]})
    for rule in result["lr_rules"]:
        rs = sorted([r for r in result["runs"] if r["lr_rule"] == rule], key=lambda r: r["batch"])
        t = [r["time_to_target"] for r in rs]
        n = lambda v: None if v is None else v / ref
        band(ax, [r["batch"] for r in rs], [n(x["median"]) for x in t],
             [n(x["ci"][0]) for x in t], [n(x["ci"][1]) for x in t], colors.get(rule, "k"),
             label=f"{rule} LR")
    opt = result["optimum"]
    if opt is not None:
        best = next(r for r in result["runs"]
                    if r["batch"] == opt["batch"] and r["lr_rule"] == opt["lr_rule"])
        ax.plot([opt["batch"]], [best["time_to_target"]["median"] / ref], marker="*", ms=12,
                color=colors.get(opt["lr_rule"], "k"), mec="k", mew=0.5, ls="none",
                label="optimum", zorder=5)
    cg = result["critical_generation_batch"]
    ax.axvline(cg, color="0.3", ls=":", lw=1, label=f"critical generation batch ({cg:.0f})")
    ct = result["critical_training_batch"]
    if ct is not None:
        ax.axvline(ct, color="0.3", ls="--", lw=1, label=f"critical training batch ({ct:.0f})")
    ax.axhline(1.0, color="k", lw=0.5)
    log_batch_axis(ax, batches)
    plain_log_y(ax)
    ax.set_ylabel(f"time to target / time at B={batches[0]} (ratio)")
    ax.legend(loc="upper center", fontsize=6)
    return fig


# ---------------------------------------------------------------------------- phase diagram

def phase_figure(result: dict):
    """Margin N_fail - N_prog over (batch, lr0) per model, theory boundary on top."""
    panels = result["panels"]
    fig, axes = figure(len(panels), "column" if len(panels) == 1 else "full", 2.6)
    for ax, p in zip(axes, panels):
        B, L = np.asarray(p["batches"], float), np.asarray(p["lr0s"], float)
        m = np.array([[_nan(v) for v in row] for row in p["margin"]], float)  # [L, B]
        frac = np.array(p["reached_first"], float)
        scale = np.nanmax(np.abs(m)) if np.isfinite(m).any() else 1.0
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-scale, vmax=scale)
        lb, ll = np.log2(B), np.log10(L)
        edges = lambda v: np.concatenate([[v[0] - (v[1] - v[0]) / 2],
                                          (v[1:] + v[:-1]) / 2, [v[-1] + (v[-1] - v[-2]) / 2]])
        mesh = ax.pcolormesh(2 ** edges(lb), 10 ** edges(ll), m, cmap="RdBu", norm=norm)
        cb = fig.colorbar(mesh, ax=ax, shrink=0.9)
        cb.set_label(f"margin N_fail - N_prog ({p['unit']})")
        for i in range(len(L)):
            for j in range(len(B)):
                if np.isnan(m[i, j]):
                    ax.text(B[j], L[i], ">", ha="center", va="center", fontsize=6)
                elif frac[i, j] < 0.5:
                    ax.plot(B[j], L[i], marker="x", color="k", ms=3, ls="none")
        th = p.get("theory")
        if th is not None:
            tb, tl = np.asarray(th["batches"], float), np.asarray(th["lr0s"], float)
            r = np.asarray(th["log_ratio"], float)
            if np.nanmin(r) < 0 < np.nanmax(r):
                ax.contour(tb, tl, r, levels=[0.0], colors="k", linewidths=1.2)
            ax.plot([], [], color="k", label="theory: N_fail = N_prog")
        ax.plot([], [], marker="x", color="k", ls="none", label="most seeds fail first")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(list(B))
        ax.set_xticklabels([str(int(b)) for b in B])
        ax.set_yticks(list(L))
        ax.set_yticklabels([f"{l:g}" for l in L])
        ax.minorticks_off()
        ax.set_xlabel(f"batch B ({p['batch_unit']})")
        ax.set_ylabel("base learning rate lr0 (at B0)")
        ax.set_title(p["title"], loc="left")
        ax.legend(loc="lower left", fontsize=6, frameon=True)
    return fig


# ---------------------------------------------------------------------------- clocks

def clocks_figure(panel: dict):
    """Both clocks against batch for one lr0 (median + CI bands), theory lines if given."""
    fig, (ax,) = figure(1, "column", 2.5)
    B = panel["batches"]
    for name, color, label in (("progress", OKABE_ITO[0], "N_prog (progress)"),
                               ("failure", OKABE_ITO[3], "N_fail (failure)")):
        s = panel[name]
        band(ax, B, [x["median"] for x in s], [x["ci"][0] for x in s], [x["ci"][1] for x in s],
             color, label=label + " simulated")
        th = panel.get("theory", {}).get(name)
        if th is not None:
            ax.plot(B, [_nan(v) for v in th], color=color, ls="--", lw=1, label=label + " theory")
    log_batch_axis(ax, B, f"batch B ({panel['batch_unit']})")
    plain_log_y(ax)
    ax.set_ylabel(f"samples to threshold ({panel['unit']})")
    ax.set_title(panel["title"], loc="left")
    ax.legend(fontsize=6)
    return fig


def clipping_figure(result: dict):
    """The clipping claims (experiments/clipping.py): failure clock, progress clock and
    early held-out accuracy against the clip width, one line per batch (median + 95% CI)."""
    runs = result["runs"]
    clips = sorted({r["clip"] for r in runs if r["clip"] is not None})
    xs = list(range(len(clips) + 1))
    labels = [f"{c:g}" for c in clips] + ["none"]
    fig, axes = figure(3, "full", 2.4)
    unit = result.get("unit", "responses")
    for k, b in enumerate(sorted({r["batch"] for r in runs})):
        rows = {r["clip"]: r for r in runs if r["batch"] == b}
        order = [rows[c] for c in clips] + [rows[None]]
        for ax, key in zip(axes, ("failure_samples", "progress_samples", "early_accuracy")):
            band(ax, xs, [r[key]["median"] for r in order], [r[key]["ci"][0] for r in order],
                 [r[key]["ci"][1] for r in order], OKABE_ITO[k % len(OKABE_ITO)],
                 label=f"B = {b} {unit}")
    early = result.get("config", {}).get("early_samples")
    ylabels = (f"N_fail ({unit})", f"N_prog ({unit})",
               f"held-out acc. at {early} {unit}" if early else "early held-out accuracy")
    for ax, yl, tag in zip(axes, ylabels, "abc"):
        ax.set_xticks(xs)
        ax.set_xticklabels(labels)
        ax.set_xlabel("clip eps (band [1-eps, 1+eps])")
        ax.set_ylabel(yl)
        ax.set_title(f"({tag})", loc="left")
    plain_log_y(axes[1])  # progress spans decades across batches; failure stays within ~2x
    axes[0].legend()
    return fig


def axes_labelled(fig) -> bool:
    """Every axes has a y label and an x label (its own or its twin's); colorbars a label."""
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            if not (ax.get_ylabel() or ax.get_xlabel()):
                return False
            continue
        twins = ax.get_shared_x_axes().get_siblings(ax)
        if not ax.get_ylabel() or not any(t.get_xlabel() for t in twins):
            return False
    return True


__all__ = ["figure", "save", "band", "log_batch_axis", "schedule_figure",
           "time_to_target_figure", "phase_figure", "clocks_figure", "clipping_figure",
           "axes_labelled",
           "OKABE_ITO", "COLUMN_IN", "FULL_IN"]
