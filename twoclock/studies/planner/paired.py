"""The paired contrast of two practitioner runs (the same designs planned two ways, e.g. the
default and the Adam form, a target alone and jointly with more levels): per cell, per model
and in all, the mean |log(1 + error)| difference with a 95% bootstrap CI over designs
(docs/plan.md, "A practitioner's sweep")."""
import math

import numpy as np


def contrast(base, other, groups=None, resamples: int = 2000, seed: int = 0) -> list:
    """Paired contrast of two practitioner runs' rows (the same designs planned two ways):
    per (model, rule, times the largest pilot), and per model and in all, the mean over the
    designs scored in both of d = |log(1 + err_other)| - |log(1 + err_base)| (negative: other
    is closer) with a 95% percentile bootstrap CI over designs (a design: model, rule, seed,
    resampled whole), and how many designs. `groups` None: those cells, per model, all."""
    key = lambda r: (r["model"], r["rule"], r["seed"], r["times_largest_pilot"])
    a = {key(r): r["rel_error"] for r in base if r.get("rel_error") is not None}
    b = {key(r): r["rel_error"] for r in other if r.get("rel_error") is not None}
    d = {k: abs(math.log1p(b[k])) - abs(math.log1p(a[k])) for k in a if k in b}
    if groups is None:
        cells = sorted({(m, r, t) for m, r, _, t in d})
        groups = cells + [(m, "both", None) for m in dict.fromkeys(m for m, *_ in cells)] + \
            [("all", "both", None)]
    rng = np.random.default_rng(seed)
    out = []
    for model, rule, times in groups:
        ks = [k for k in d if model in ("all", k[0]) and rule in ("both", k[1])
              and times in (None, k[3])]
        designs = sorted({k[:3] for k in ks})
        if not designs:
            continue
        tot = np.array([sum(d[k] for k in ks if k[:3] == g) for g in designs])
        cnt = np.array([sum(k[:3] == g for k in ks) for g in designs], np.float64)
        boot = [tot[i].sum() / cnt[i].sum()
                for i in rng.integers(0, len(designs), (resamples, len(designs)))]
        out.append({"model": model, "rule": rule, "times_largest_pilot": times,
                    "designs": len(designs), "pairs": len(ks),
                    "mean_diff": float(tot.sum() / cnt.sum()),
                    "ci": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]})
    return out


def contrast_table(rows: list, base: str, other: str) -> str:
    """contrast()'s rows as text (docs/plan.md; per rule in docs/history/plan.md)."""
    lines = [f"paired |log error| difference, {other} - {base} (negative: {other} closer), "
             "mean over designs scored in both [95% bootstrap CI over designs]"]
    for r in rows:
        t = "all" if r["times_largest_pilot"] is None else f"{r['times_largest_pilot']}x"
        ci = r["ci"]
        lines.append(f"{r['model']:<10} {r['rule']:<6} {t:<4} {r['pairs']:>4} pairs "
                     f"{r['mean_diff']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]"
                     + ("" if ci[0] <= 0 <= ci[1] else " *"))  # * : the CI excludes 0
    return "\n".join(lines)


__all__ = ["contrast", "contrast_table"]
