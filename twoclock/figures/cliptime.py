"""The policy study's clip-higher-over-time figure (twoclock.studies.policy_study.cliptime). It
takes the result dict, as written to JSON, and never calls JAX."""
import numpy as np

from twoclock.figures.style import OKABE_ITO, figure

CLIP_LABELS = {"eps0.2": "eps 0.2 / 0.2", "dapo": "0.2 / 0.28 (DAPO)", "wide": "0.2 / 0.4"}


def cliptime_figure(out: dict):
    """Per batch, the seed-mean held-out accuracy against responses of each clip band (the
    first crossing of a wider band's curve with eps 0.2's after its lead marked, where seen),
    and the seed-mean KL(pi || pi_ref) against responses."""
    cells = out["cells"]
    bs = sorted(cells["cliptime_eps0.2"]["curves"], key=int)
    fig, axes = figure(2 * len(bs), "full", 2.4)
    ans = out["answers"].get("6_cliptime", out["answers"]).get("cliptime", {})
    for j, b in enumerate(bs):
        acc, klax = axes[j], axes[len(bs) + j]
        for k, name in enumerate(CLIP_LABELS):
            cv = cells[f"cliptime_{name}"]["curves"][b]
            s = np.asarray(cv["samples"])
            acc.plot(s, np.mean(cv["heldout_acc"], 0), color=OKABE_ITO[k],
                     label=CLIP_LABELS[name])
            klax.plot(s, np.mean(cv["kl"], 0), color=OKABE_ITO[k], label=CLIP_LABELS[name])
            cross = ans.get(name, {}).get(b, {}).get("b_lead_crossing", {})
            x = cross.get("crossing", {}).get("median")
            if x:  # a crossing seen (0: no lead; None: never crossed)
                acc.axvline(x, color=OKABE_ITO[k], ls=":", lw=1)
        acc.set_title(f"B {b}: held-out accuracy")
        klax.set_title(f"B {b}: KL to pi_ref (nats)")
        for ax in (acc, klax):
            ax.set_xlabel("responses")
    axes[0].set_ylabel("accuracy (mean of seeds)")
    axes[0].legend(fontsize=6)
    return fig


__all__ = ["cliptime_figure"]
