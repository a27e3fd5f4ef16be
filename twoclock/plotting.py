"""Figures from result dicts (the JSON the experiments write); never calls JAX."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Okabe-Ito: colour-blind safe.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def save(fig, stem: str) -> list:
    """Write stem.png and stem.pdf; returns the paths."""
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    paths = [stem + ".png", stem + ".pdf"]
    fig.savefig(paths[0], dpi=200, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths


def _series(runs, lr0, key):
    rows = sorted((r for r in runs if r["lr0"] == lr0), key=lambda r: r["batch"])
    b = [r["batch"] for r in rows]
    med = [r[key]["median"] for r in rows]
    lo = [r[key]["ci"][0] for r in rows]
    hi = [r[key]["ci"][1] for r in rows]
    nan = float("nan")
    return (b, [nan if v is None else v for v in med], [nan if v is None else v for v in lo],
            [nan if v is None else v for v in hi], rows)


def clocks_vs_batch(result: dict, stem: str, unit: str = "samples") -> list:
    """Both clocks (median, 95% CI band) against batch, absolute and relative to B_min."""
    runs = result["runs"]
    lr0s = sorted({r["lr0"] for r in runs})
    fig, (ax, axr) = plt.subplots(1, 2, figsize=(7.0, 3.2), layout="constrained")
    for k, lr0 in enumerate(lr0s):
        col = PALETTE[k % len(PALETTE)]
        for key, style, name in (("progress_samples", "-", "progress"),
                                 ("failure_samples", "--", "failure")):
            b, med, lo, hi, rows = _series(runs, lr0, key)
            ax.plot(b, med, style, color=col, marker="o", ms=3,
                    label=f"{name}, lr0={lr0:g}")
            ax.fill_between(b, lo, hi, color=col, alpha=0.18, lw=0)
            if med and med[0] == med[0]:
                axr.plot(b, [m / med[0] for m in med], style, color=col, marker="o", ms=3)
        pred = [(r["batch"], r.get("theory", {}).get("failure_samples"))
                for r in sorted((r for r in runs if r["lr0"] == lr0), key=lambda r: r["batch"])]
        pred = [(b, p) for b, p in pred if p is not None]
        if pred:
            ax.plot(*zip(*pred), ":", color=col, lw=1)
    for a in (ax, axr):
        a.set_xscale("log", base=2)
        a.set_xlabel(f"batch B ({unit} per update)")
    ax.set_yscale("log")
    ax.set_ylabel(f"clock ({unit})")
    ax.set_title("solid: progress, dashed: failure, dotted: theory", fontsize=8)
    axr.set_ylabel("clock / clock at smallest B")
    axr.axhline(1.2, color="grey", lw=0.6, ls=":")
    axr.set_title("relative to smallest batch (grey: 1.2)", fontsize=8)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=6,
               frameon=False)
    return save(fig, stem)
