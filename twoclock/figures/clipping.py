"""Figures of the clipping study (twoclock.studies.clipping). They take result dicts, as written
to JSON, and never call JAX."""
import numpy as np

from twoclock.figures.style import OKABE_ITO, clipping_figure, figure

claims_figure = clipping_figure  # (a) N_fail, (b) N_prog, (c) early accuracy against eps


def _edges(c, geometric: bool = False):
    """Cell edges around centres c: midpoints (geometric ones on a log axis), ends mirrored."""
    c = np.log(c) if geometric else np.asarray(c, float)
    if len(c) == 1:
        e = np.array([c[0] - 0.5, c[0] + 0.5])
    else:
        mid = (c[1:] + c[:-1]) / 2
        e = np.concatenate([[2 * c[0] - mid[0]], mid, [2 * c[-1] - mid[-1]]])
    return np.exp(e) if geometric else e


def regime_map_figure(m: dict):
    """The clipping regime map: heat maps of the delay N_fail(eps) / N_fail(none) over
    (batch, eps) at the middle lr0 and over (lr0, eps) at the largest batch, with the predicted
    boundary eps* where clipping starts to bind on the drift (it binds below the line)."""
    B, L, C = np.array(m["batches"]), np.array(m["lr0s"]), np.array(m["clips"])
    d = lambda c: np.array([[np.nan if v is None else v for v in row]
                            for row in m["delay"][str(c) if str(c) in m["delay"] else c]])
    delay_CxBxL = np.stack([d(c) for c in m["clips"]])
    eps_star_BxL = np.array(m["eps_star"], float)
    jl = len(L) // 2
    fig, axes = figure(2, "full", 2.6)
    vmax = max(2.0, float(np.nanmax(delay_CxBxL)) if np.isfinite(delay_CxBxL).any() else 2.0)
    panels = ((axes[0], delay_CxBxL[:, :, jl], B.astype(float), eps_star_BxL[:, jl],
               f"batch B ({m['unit']}; lr0 {L[jl]:g})", [str(b) for b in B]),
              (axes[1], delay_CxBxL[:, -1, :], L.astype(float), eps_star_BxL[-1, :],
               f"lr0 (B = {B[-1]})", [f"{v:g}" for v in L]))
    for ax, z, x, star, xl, ticks in panels:
        y = np.log2(C)
        im = ax.pcolormesh(_edges(x, geometric=True), _edges(y), z, shading="flat",
                           cmap="viridis", vmin=1.0, vmax=vmax)
        for i in range(len(C)):
            for j in range(len(x)):
                if np.isfinite(z[i, j]):
                    ax.text(x[j], y[i], f"{z[i, j]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if z[i, j] < (1 + vmax) / 2 else "black")
        ax.plot(x, np.log2(star), color=OKABE_ITO[3], lw=1.5, label="predicted boundary eps*")
        ax.set_ylim(y[0] - 0.6, y[-1] + 0.6)
        ax.set_xscale("log")  # batch and lr0 grow geometrically: cells of equal width
        ax.set_xlim(*_edges(x, geometric=True)[[0, -1]])
        ax.set_xticks(x)
        ax.set_xticklabels(ticks)
        ax.minorticks_off()
        ax.set_yticks(y)
        ax.set_yticklabels([f"{c:g}" for c in C])
        ax.set_xlabel(xl)
        ax.set_ylabel("clip eps")
        ax.grid(False)
    axes[0].legend(loc="upper left", fontsize=6)
    cb = fig.colorbar(im, ax=axes, shrink=0.9)
    cb.set_label("delay N_fail(eps) / N_fail(none)")
    axes[0].set_title("(a) delay over (B, eps)", loc="left")
    axes[1].set_title("(b) delay over (lr0, eps)", loc="left")
    return fig


__all__ = ["claims_figure", "regime_map_figure"]
