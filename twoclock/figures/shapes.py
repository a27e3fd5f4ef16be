"""The shapes study's figures (twoclock.studies.shapes), from its result dict as written to
JSON; they never call JAX."""
import numpy as np

from twoclock.figures.style import OKABE_ITO, _nan, figure


def _x(p: dict, r: dict) -> float:
    """A target on the panel's x axis: the accuracy, or 1 - loss / L0 (the share of the loss
    removed) where the model has no accuracy."""
    return r["accuracy"] if p["start_accuracy"] is not None else 1.0 - r["progress_frac"]


def critical_axes(ax, p: dict) -> None:
    """One model's critical batch against the target (CI bars; a target whose critical batch
    is beyond the largest batch drawn as an open marker there) and the noise-scale theory."""
    x = np.array([_x(p, r) for r in p["critical"]])
    b = np.array([_nan(r["critical_batch"]) for r in p["critical"]])
    lo = np.array([_nan(r["critical_ci"][0]) for r in p["critical"]])
    hi = np.array([_nan(r["critical_ci"][1]) for r in p["critical"]])
    ok = np.isfinite(b)
    ax.errorbar(x[ok], b[ok], yerr=[np.clip(b[ok] - np.nan_to_num(lo[ok], nan=b[ok]), 0, None),
                                    np.clip(np.nan_to_num(hi[ok], nan=b[ok]) - b[ok], 0, None)],
                fmt="o-", color=OKABE_ITO[0], capsize=2, label="measured (95% CI)")
    if (~ok).any():
        ax.plot(x[~ok], np.full((~ok).sum(), p["batches"][-1]), "^", mfc="none",
                color=OKABE_ITO[0], label=f"> {p['batches'][-1]}")
    th = np.array([_nan(r["theory_batch"]) for r in p["critical"]])
    ax.plot(x, th, "s--", color=OKABE_ITO[1], label="theory at the point")
    ax.plot(x, [_nan(r["theory_path_batch"]) for r in p["critical"]], "v-.", color=OKABE_ITO[4],
            label="theory along the path")
    coord = np.array([_nan(r["noise"].get("b_adam_critical")) for r in p["critical"]])
    if np.isfinite(coord).any():
        ax.plot(x, coord, "d:", color=OKABE_ITO[2], label="Adam per-coordinate")
    ax.set_yscale("log")
    ax.set_xlabel("accuracy target" if p["start_accuracy"] is not None
                  else "target: 1 - loss / L0")
    ax.set_ylabel(f"critical batch ({p['unit']})")
    ax.set_title(p["model"])


def real_axes(ax, real: dict) -> None:
    """The real sweep's critical batch against the accuracy target (issue 52's numbers)."""
    cb = real["critical_batch"]
    x = [float(k) for k in cb]
    ax.plot(x, [cb[k] for k in cb], "o-", color=OKABE_ITO[3], label="real GRPO sweep (1B)")
    ax.set_yscale("log")
    ax.set_xlabel("accuracy target")
    ax.set_ylabel("critical batch (rollouts)")
    ax.set_title("real sweep")


def critical_target_figure(out: dict):
    """The critical batch against the target: one panel per model, the real sweep's last."""
    fig, axes = figure(len(out["panels"]) + 1, "full", 2.4)
    for ax, p in zip(axes, out["panels"]):
        critical_axes(ax, p)
    real_axes(axes[-1], out["real"])
    axes[0].legend(loc="upper left")
    return fig


def exponent_figure(out: dict):
    """The fixed-lr local exponent d log N / d log B against batch (at each pair's geometric
    middle, batches scaled by the model's B_min so the models share an axis), each model's
    theory from the noise scale at its target, and the real sweep's range."""
    fig, (ax,) = figure(1, "column", 2.6)
    for k, p in enumerate(out["panels"]):
        ex = p["fixed"]["exponents"]
        bm = np.array([np.sqrt(e["batches"][0] * e["batches"][1]) for e in ex]) / p["batches"][0]
        m = np.array([_nan(e["median"]) for e in ex])
        lo = np.array([_nan(e["ci"][0]) for e in ex])
        hi = np.array([_nan(e["ci"][1]) for e in ex])
        c = OKABE_ITO[k]
        ax.errorbar(bm, m, yerr=[np.clip(m - np.nan_to_num(lo, nan=m), 0, None),
                                 np.clip(np.nan_to_num(hi, nan=m) - m, 0, None)],
                    fmt="o-", color=c, capsize=2, label=p["model"])
        ax.plot(bm, [_nan(e["theory_path"]) for e in ex], "s--", color=c, mfc="none")
    r = out["real"]["fixed_exponent"]
    ax.axhspan(r["exponent"][0], r["exponent"][1], color=OKABE_ITO[3], alpha=0.2,
               label=f"real sweep {r['range'][0]}-{r['range'][1]}")
    ax.plot([], [], "s--", color="0.4", mfc="none", label="theory along the path")
    ax.axhline(0.5, color="0.5", lw=0.6)
    ax.axhline(1.0, color="0.5", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("B / B_min (middle of each pair)")
    ax.set_ylabel("d log N / d log B (fixed lr)")
    ax.legend(loc="lower right", fontsize=6)
    return fig


def shapes_figure(out: dict):
    """The study's figure: the critical-batch panels (its exponent figure is
    `exponent_figure`, drawn by `python -m paper_figures`)."""
    return critical_target_figure(out)


__all__ = ["critical_axes", "real_axes", "critical_target_figure", "exponent_figure",
           "shapes_figure"]
