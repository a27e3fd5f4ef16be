"""The policy study's two parts not run by default (docs/policy.md, "Clip-higher over time, and
the group std measured"):

- cliptime: clip-higher over time. At the collapse cells' unstable lr (unstable_factor x lr0,
  sqrt rule, M x E = 4 x 2, `fixed_m`), the symmetric clip eps 0.2 against (0.2, 0.28) (DAPO's)
  and (0.2, 0.4), the same seeds in every cell (paired), at the smallest and largest batch. Per
  seed it keeps every clock and the held-out accuracy, KL and entropy curves at the
  checkpoints, and answers: (a) the speed-up, N_prog(wider) / N_prog(eps 0.2) and the accuracy
  difference at early_samples; (b) how long it lasts, the first crossing of the two mean
  accuracy curves after the lead (`lead_crossing`); (c) the failure, N(wider) / N(eps 0.2) of
  the collapse clock and the drift clocks.
- stddof: the GRPO group std, ddof 0 (`grpo`, the default) against ddof 1 (`grpo_bessel`),
  the default config (M = E = 1, sqrt rule, lr0) at the smallest and largest batch without a
  KL penalty, and at the smallest with one in the loss (std_kl_coef), paired: per clock the
  ratio of bessel over grpo and the largest |difference| of the mean curves.

Everything after the runs is NumPy on the per-seed numbers the JSON keeps (`answers`), so the
committed file (docs/results/cliptime.json) recomputes them.
"""
import dataclasses

import numpy as np

from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.analysis.paired import diff_ci, finite_or_none, ratio_ci
from twoclock.clock import Clock, first_crossing
from twoclock.config import OptimConfig, require

# the clip bands compared over time: {name: (clip_low, clip_high)}; eps0.2 is the reference
CLIPTIME = {"eps0.2": (0.2, None), "dapo": (0.2, 0.28), "wide": (0.2, 0.4)}
WIDER = ("dapo", "wide")
STD_ADV = ("grpo", "grpo_bessel")
STD_KL = ("nokl", "kl")
CURVES = ("heldout_acc", "kl", "entropy")
FAIL = ("collapse", "null", "kl", "entropy")  # the clocks a wider clip may bring forward
STD_CLOCKS = ("progress", "null", "kl", "entropy")
CROSS = Clock("lead", "<=", 0.0)  # the lead of the wider clip's accuracy has ended


def cells(st, base) -> list:
    """[(name, model config, OptimConfig, SweepConfig)] of the cliptime and stddof parts that
    st.parts names (st: the study's Config; base: the model's config)."""
    b0, b1 = min(st.batches), max(st.batches)
    sweep = lambda lr0, batches=(b0, b1): dataclasses.replace(
        st.sweep, batches=batches, lr0s=(lr0,), seeds=st.seeds, n_ckpt=st.n_ckpt)
    sqrt = OptimConfig(lr_rule="sqrt")
    out = []
    for name, (cl, ch) in (CLIPTIME.items() if "cliptime" in st.parts else ()):
        cfg = dataclasses.replace(base, minibatches=4, epochs=2, clip_low=cl, clip_high=ch)
        out.append((f"cliptime_{name}", cfg, sqrt, sweep(st.lr0 * st.unstable_factor)))
    for kl in (STD_KL if "stddof" in st.parts else ()):
        for adv in STD_ADV:
            cfg = dataclasses.replace(base, advantage=adv,
                                      kl_coef=st.std_kl_coef if kl == "kl" else 0.0)
            # with the KL penalty at the smallest batch only: each (config, batch) is a
            # program of its own (the advantage and kl_coef are not knobs), compiled once
            out.append((f"std_{adv}_{kl}", cfg, sqrt,
                        sweep(st.lr0, (b0, b1) if kl == "nokl" else (b0,))))
    return out


def curves(res, i: int, digits: int = 6) -> dict:
    """{samples: [C], stat: [S][C]} of batch index i's checkpoints (lr0 index 0), each run's
    held-out accuracy, KL and entropy, rounded to `digits` decimals (accuracy is k / 256)."""
    ck = res.ckpt[i]
    s = np.asarray(ck["samples"][0])
    require(np.all(s == s[:1]), "checkpoint samples", "the same in every seed", s)
    return {"samples": s[0].astype(float).tolist(),
            **{k: np.round(np.asarray(ck[k][0], np.float64), digits).tolist() for k in CURVES}}


def lead_crossing(s_C, d_C, window: float) -> tuple:
    """(lead, crossing) of a difference curve d_C (wider minus eps 0.2) at samples s_C: the
    lead is d's largest value at a checkpoint in (0, window] responses, the crossing the first
    point after it where d <= 0, interpolated linearly in responses between the checkpoints
    either side (`twoclock.clock.first_crossing`). No lead (d <= 0 throughout the window):
    crossing 0, the speed-up lasted nothing; no crossing within the budget: inf (censored)."""
    s_C, d_C = np.asarray(s_C, np.float64), np.asarray(d_C, np.float64)
    win = np.flatnonzero((s_C > 0) & (s_C <= window))
    require(win.size > 0, "early_samples", f">= the first checkpoint ({s_C[s_C > 0][0]:g} "
            f"responses)", window)
    k = int(win[np.argmax(d_C[win])])
    if not d_C[k] > 0:
        return float(d_C[k]), 0.0
    c = first_crossing(s_C[k:], d_C[k:], CROSS)
    return float(d_C[k]), (c.samples if c.seen else np.inf)


def lead_crossing_ci(s_C, wide_SxC, ref_SxC, window: float, idx) -> dict:
    """The lead and crossing of the seed-mean accuracy curves, wider minus eps 0.2, with a
    paired bootstrap 95% CI over seeds (each resample takes the same seeds from both cells):
    {lead, crossing, censored: the share of resamples that never cross, no_lead: the share
    with no lead}. inf is reported as None ("> budget")."""
    d_SxC = np.asarray(wide_SxC, np.float64) - np.asarray(ref_SxC, np.float64)
    lead, cross = lead_crossing(s_C, d_SxC.mean(0), window)
    boot = np.array([lead_crossing(s_C, d_SxC[r].mean(0), window) for r in idx])
    q = lambda v: [finite_or_none(x) for x in np.quantile(v, [0.025, 0.975], method="lower")]
    return {"lead": {"median": lead, "ci": q(boot[:, 0])},
            "crossing": {"median": finite_or_none(cross), "ci": q(boot[:, 1])},
            "censored": float(np.mean(np.isinf(boot[:, 1]))),
            "no_lead": float(np.mean(boot[:, 1] == 0))}


def _ps(c, cell, b, k):
    return np.asarray(c[cell]["per_seed"][b][k])


def cliptime_answers(st: dict, c: dict, idx) -> dict:
    """Per batch and wider clip, against eps 0.2 (paired): (a) speed-up, (b) its duration,
    (c) the failure clocks, and each cell's medians."""
    b0, b1 = str(min(st["batches"])), str(max(st["batches"]))
    ref = "cliptime_eps0.2"
    out = {"medians": {name: {b: {k: finite_or_none(np.median(censored(
        _ps(c, f"cliptime_{name}", b, k)))) for k in ("progress",) + FAIL}
        | {"clip_frac": float(np.median(_ps(c, f"cliptime_{name}", b, "clip_frac"))),
           "collapsed": int((_ps(c, f"cliptime_{name}", b, "collapse") > 0).sum()),
           "final_acc": median_ci(_ps(c, f"cliptime_{name}", b, "final_acc"), idx=idx),
           "peak_acc": median_ci(_ps(c, f"cliptime_{name}", b, "peak_acc"), idx=idx)}
        for b in (b0, b1)} for name in CLIPTIME}}
    for name in WIDER:
        cell = f"cliptime_{name}"
        row = {}
        for b in (b0, b1):
            ps = lambda k, cl=cell: _ps(c, cl, b, k)
            cv, cr = c[cell]["curves"][b], c[ref]["curves"][b]
            row[b] = {
                "a_progress_ratio": ratio_ci(ps("progress"), _ps(c, ref, b, "progress"), idx),
                "a_early_acc_diff": diff_ci(ps("early_acc"), _ps(c, ref, b, "early_acc"), idx),
                "b_lead_crossing": lead_crossing_ci(cv["samples"], cv["heldout_acc"],
                                                    cr["heldout_acc"], st["early_samples"],
                                                    idx),
                "c_fail_ratio": {k: ratio_ci(ps(k), _ps(c, ref, b, k), idx) for k in FAIL},
                "final_acc_diff": diff_ci(ps("final_acc"), _ps(c, ref, b, "final_acc"), idx)}
        out[name] = row
    return out


def max_curve_diff(x_SxC, y_SxC) -> float:
    """max over checkpoints of |mean_seeds x - mean_seeds y|."""
    return float(np.max(np.abs(np.mean(x_SxC, 0) - np.mean(y_SxC, 0))))


def std_answers(st: dict, c: dict, idx) -> dict:
    """Per KL setting and batch: bessel / grpo of every clock (paired), and the largest
    |difference| of the mean accuracy, KL and entropy curves."""
    out = {}
    for kl in STD_KL:
        g, s = f"std_grpo_{kl}", f"std_grpo_bessel_{kl}"
        if g not in c or s not in c:
            continue
        out[kl] = {b: {"ratio": {k: ratio_ci(_ps(c, s, b, k), _ps(c, g, b, k), idx)
                                 for k in STD_CLOCKS},
                       "early_acc_diff": diff_ci(_ps(c, s, b, "early_acc"),
                                                 _ps(c, g, b, "early_acc"), idx),
                       "max_abs_curve_diff": {k: max_curve_diff(c[s]["curves"][b][k],
                                                                c[g]["curves"][b][k])
                                              for k in CURVES},
                       "identical_clocks": all(np.array_equal(_ps(c, s, b, k), _ps(c, g, b, k))
                                               for k in STD_CLOCKS)}
                   for b in c[g]["per_seed"]}
    return out


def answers(st: dict, c: dict) -> dict:
    """{cliptime, stddof}: the parts' answers from the cells present."""
    idx = bootstrap_indices(st["seeds"])
    out = {}
    if all(f"cliptime_{n}" in c for n in CLIPTIME):
        out["cliptime"] = cliptime_answers(st, c, idx)
    if any(n.startswith("std_") for n in c):
        out["stddof"] = std_answers(st, c, idx)
    return out


def report_lines(a: dict, st: dict) -> list:
    """The parts' answers as text lines (a: answers["6_cliptime"])."""
    fmt = lambda v, f=".3g": ">" if v is None else format(v, f)
    ci = lambda d: f"{fmt(d['median'])} [{fmt(d['ci'][0])}, {fmt(d['ci'][1])}]"
    lines = []
    if "cliptime" in a:
        ct = a["cliptime"]
        lines += ["", f"6. clip-higher over time at {st['unstable_factor']}x lr0, M 4 x E 2 "
                  "(wider / eps0.2, paired):"]
        for name, per in ct["medians"].items():
            lines.append(f"   {name:>7}: " + "; ".join(
                f"B {b}: " + " ".join(f"{k} {fmt(v[k])}" for k in ("progress",) + FAIL)
                + f" collapsed {v['collapsed']} clip {v['clip_frac']:.2%} final acc "
                f"{ci(v['final_acc'])}" for b, v in per.items()))
        for name in WIDER:
            for b, r in ct[name].items():
                lc = r["b_lead_crossing"]
                lines.append(
                    f"   {name:>7} B {b:>4}: (a) N_prog ratio {ci(r['a_progress_ratio'])}, "
                    f"acc at {st['early_samples']} diff {ci(r['a_early_acc_diff'])}; (b) lead "
                    f"{ci(lc['lead'])}, curves cross at {ci(lc['crossing'])} responses "
                    f"(never: {lc['censored']:.0%}, no lead: {lc['no_lead']:.0%} of resamples);"
                    f" (c) " + ", ".join(f"{k} {ci(v)}" for k, v in r["c_fail_ratio"].items())
                    + f"; final acc diff {ci(r['final_acc_diff'])}")
    for kl, per in a.get("stddof", {}).items():
        if kl == list(a["stddof"])[0]:
            lines += ["", "7. the group std, grpo_bessel / grpo (paired):"]
        for b, r in per.items():
            lines.append(f"   {kl:>4} B {b:>4}: " + ", ".join(
                f"{k} {ci(v)}" for k, v in r["ratio"].items())
                + f"; early acc diff {ci(r['early_acc_diff'])}; max |mean curve diff| "
                + " ".join(f"{k} {v:.3g}" for k, v in r["max_abs_curve_diff"].items())
                + f"; identical clocks {r['identical_clocks']}")
    return lines


__all__ = ["CLIPTIME", "WIDER", "STD_ADV", "STD_KL", "CURVES", "FAIL", "cells", "curves",
           "lead_crossing", "lead_crossing_ci", "cliptime_answers", "std_answers",
           "max_curve_diff", "answers", "report_lines"]
