"""The regime map's report and figure (twoclock.studies.regime_map): per finished cell and
budget, each clock's batch exponent [paired 95% CI] beside the pre-registered prediction and
the no-theory baseline (0: the drift-threshold hypothesis itself), the drift at each harm
crossing over B_min's, the share of mixed-reward groups along the run; and the cells missing
with the command that runs them. Reads the result dict only (no JAX).

`python -m twoclock.studies.regime_report RESULT.json MEASURED.json` writes the measured file
that docs/preregistered/ keeps beside the predictions: per cell and budget the per-seed clocks,
the answers and the mixed-share path (32 points per batch), without the predictions."""
import json
import sys

CLOCKS = ("progress", "null", "deficit", "damage")


def _fmt(v, f=".3g"):
    return "-" if v is None else format(v, f)


def _ci(d):
    return f"{_fmt(d['median'])} [{_fmt(d['ci'][0])}, {_fmt(d['ci'][1])}]"


def predicted(out: dict, cell: str, budget: str, clock: str) -> str:
    """The pre-registered exponent of a clock in a cell and budget, as the report prints it:
    the number, "past budget" (its median predicted censored at every batch) or "-" (none)."""
    p = (out.get("predictions") or {}).get("cells", {}).get(cell, {}).get(budget, {})
    e = p.get("exponent", {}).get(clock)
    if e is not None:
        return f"{e:.3g}"
    n = p.get("N", {}).get(clock)
    return "past budget" if n and all(v is None for v in n.values()) else "-"


def report(out: dict) -> str:
    st = out["study"]
    lines = [f"regime map: levels {tuple(st['levels'])} (warm-up held-out accuracy), budgets "
             f"{tuple(st['budgets'])} responses, batches {tuple(st['batches'])}, "
             f"{st['seeds']} seeds, sqrt rule, lr0 {st['lr0']:g}; {out['seconds']:.0f} s",
             "every [a, b] is a paired bootstrap 95% CI over seeds; '-' = not reached / "
             "undefined; pred = pre-registered (docs/preregistered/regimes_predictions.json), "
             "baseline 0 (the hypothesis)"]
    for name, cell in out["cells"].items():
        lines.append("")
        lines.append(f"cell {name}: warm-up held-out accuracy {cell['start']['acc']:.3f}, "
                     f"lr {cell['lr']:.3g} at B {min(st['batches'])}, {cell['seconds']:.0f} s")
        for R, c in cell["budgets"].items():
            a = c["answers"]
            lines.append(f"  budget {R}:")
            reached = a["1_reached"]
            lines.append("    reached/seeds: " + "; ".join(
                f"B {b}: " + ", ".join(f"{k} {reached[b][k]}" for k in CLOCKS) for b in reached))
            for k in CLOCKS:
                p = predicted(out, name, R, k)
                lines.append(f"    exponent {k:>8}: {_ci(a['2_exponent'][k])}  pred {p}")
            for k in ("damage", "deficit"):
                lines.append(f"    drift at {k} / B_min's: " + "; ".join(
                    f"{b}: {_ci(x)}" for b, x in a["3_drift_ratio"][k].items()))
            for b, m in c["mixed_path"].items():
                sh = m["share"]
                lines.append(f"    mixed share B {b}: " + " ".join(
                    f"{int(r)}:{s:.2f}" for r, s in list(zip(m["responses"], sh))[::3]) +
                    f"; active by {int(m['responses'][-1])}: {m['active'][-1]:.0f}")
    if out["missing"]:
        lines += ["", "missing cells: " + ", ".join(out["missing"]) + "; run them with "
                  "python experiments/regime_map.py --cells " + " ".join(
                      c.removeprefix("acc") for c in out["missing"])]
    return "\n".join(lines)


def measured(out: dict) -> dict:
    """The map's measured file: the study's settings and every finished cell (per-seed clocks
    and drifts, the answers with their CIs, the mixed-share path), the predictions left out."""
    keep = ("level", "start", "lr", "seconds", "config", "budgets")
    return {"study": out["study"], "cells": {name: {k: c[k] for k in keep}
                                             for name, c in out["cells"].items()},
            "missing": out["missing"],
            "reading": "per cell (warm-up level) and budget: per_seed[B][clock] = each seed's "
                       "crossing in responses (null = not reached within the budget), "
                       "answers = the study's contrasts with paired bootstrap 95% CIs, "
                       "mixed_path[B] = share of mixed-reward groups, held-out accuracy and "
                       "responses in mixed groups at 32 log-spaced response counts"}


def main(argv=None) -> int:
    src, dst = argv if argv is not None else sys.argv[1:]
    with open(src) as f:
        out = json.load(f)
    with open(dst, "w") as f:
        json.dump(measured(out), f, separators=(",", ":"))
        f.write("\n")
    return 0


def figure(out: dict):
    """The regime map figure (twoclock.figures.regime_map); None where no cell is done."""
    from twoclock.figures.regime_map import regime_figure
    return regime_figure(out)


if __name__ == "__main__":
    sys.exit(main())
