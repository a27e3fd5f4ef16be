"""The updates-per-batch cost figure (twoclock.studies.updates_cost). It takes the result dict,
as written to JSON, and never calls JAX."""
import numpy as np

from twoclock.figures.style import OKABE_ITO, _nan, figure


def updates_cost_figure(out: dict):
    """The cost N(K m, K) / N(m, 1) against K per lr0, clipped (solid) and unclipped
    (dashed; the JSON's clip null), with 95% CIs; 1: m = B / K holds."""
    fig, (ax,) = figure(1, "column", 2.6)
    for i, lr0 in enumerate(out["config"]["lr0s"]):
        for eps in out["config"]["clips"]:
            cs = [c for c in out["cells"] if c["lr0"] == lr0 and c["clip"] == eps
                  and c["cost"]["median"] is not None]
            if not cs:
                continue
            k = np.array([c["updates"] for c in cs], float)
            y = np.array([c["cost"]["median"] for c in cs])
            lo = np.array([_nan(c["cost"]["ci"][0]) for c in cs])
            hi = np.array([_nan(c["cost"]["ci"][1]) for c in cs])
            unclipped = cs[0]["clip"] is None
            ax.errorbar(k, y, yerr=[y - lo, hi - y], color=OKABE_ITO[i % len(OKABE_ITO)],
                        capsize=2, marker="o", ls="--" if unclipped else "-",
                        label=f"lr {lr0:g}, " + ("no clip" if unclipped else f"clip {eps:g}"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set_xlabel("K: updates per rollout batch (B = K m)")
    ax.set_ylabel("N(K m, K) / N(m, 1)")
    ax.set_title(f"{out['model']}, fixed lr, m = {out['config']['per_update']}")
    ax.legend(fontsize=6)
    return fig
