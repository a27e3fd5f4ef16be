"""The regime map's figure: per finished cell (difficulty level), (a) each failure clock's
batch exponent [95% CI] per budget beside the pre-registered prediction, and (b) the share of
mixed-reward groups along the run per batch (colour: batch; line style: cell). Draws the result dict only (no JAX)."""
from twoclock.figures.style import plt

CLOCKS = ("null", "deficit", "damage")
COLORS = {"null": "C0", "deficit": "C1", "damage": "C3"}


def regime_figure(out: dict):
    cells = out.get("cells") or {}
    if not cells:
        return None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(cells)
    budgets = out["study"]["budgets"]
    preds = (out.get("predictions") or {}).get("cells", {})
    for i, name in enumerate(names):
        for j, R in enumerate(budgets):
            a = cells[name]["budgets"][str(R)]["answers"]["2_exponent"]
            for k, clock in enumerate(CLOCKS):
                x = i + 0.25 * (j - 0.5) + 0.06 * (k - 1)
                e = a[clock]
                if e["median"] is not None:
                    lo, hi = e["ci"]
                    lo = e["median"] - 1 if lo is None else lo
                    hi = e["median"] + 1 if hi is None else hi
                    ax.errorbar(x, e["median"], yerr=[[e["median"] - lo], [hi - e["median"]]],
                                fmt="o" if j else "s", color=COLORS[clock], ms=4,
                                label=f"{clock}, budget {R}" if i == 0 else None)
                p = preds.get(name, {}).get(str(R), {}).get("exponent", {}).get(clock)
                if p is not None:
                    first = "predicted" not in ax.get_legend_handles_labels()[1]
                    ax.plot(x, p, "x", color="k", ms=6, label="predicted" if first else None)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("failure clock's batch exponent (sqrt rule)")
    ax.set_title("(a) exponent [95% CI] per cell and budget (bar to +1: upper bound past "
                 "the budget)", fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
    for i, name in enumerate(names):
        longest = cells[name]["budgets"][str(max(budgets))]["mixed_path"]
        for j, (b, m) in enumerate(sorted(longest.items(), key=lambda kv: int(kv[0]))):
            bx.plot(m["responses"], m["share"], ls=("-", "--", ":")[i % 3], color=f"C{j}",
                    label=f"{name} B {b}")
    bx.set_xscale("log")
    bx.set_xlabel("responses")
    bx.set_ylabel("share of mixed-reward groups")
    bx.set_title("(b) mixed share along the run")
    bx.legend(fontsize=6)
    fig.tight_layout()
    return fig
