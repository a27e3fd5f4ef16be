"""The policy model's study (issue 22 item 4): which clocks of a real network keep their batch
invariance, and what clipping does to them.

Cells, each one sweep through the engine's `run_sweep` (resumable from the store):
- sqrt / fixed: the default config over the batches, lr0 under the sqrt rule, and under the
  fixed rule the sqrt rule's lr at the smallest batch (the same start);
- clip_<name>_<convention>: M x E = 4 x 2 at the smallest and largest batch, eps 0.2,
  unclipped, and clip-higher (0.2, 0.28), for M fixed (fixed_m) and the minibatch size fixed
  (fixed_size, M = 4 B / B_min);
- collapse_<clip>: an unstable lr (unstable_factor x lr0, M x E = 4 x 2), eps 0.2 and
  unclipped.
Answers: (1) the progress gap N_prog(B_max) / N_prog(B_min) and the critical batch per rule;
(2) each clock's measured batch exponent (a paired bootstrap CI over seeds) against the
theory's, from each direction's measured noise scale; (3) the clipping claims: failure delay
N_fail(clip) / N_fail(none) per batch, the progress gap with and without clipping, accuracy
after early_samples; (4) collapse: seeds collapsed, when, and whether the accuracy stays down.
With M = E = 1 clipping changes nothing (every ratio is 1; tests/test_policy.py), so the
clipping cells are multi-epoch.
"""
import dataclasses
import time

import numpy as np

from twoclock.analysis import results
from twoclock.analysis.clocks import bootstrap_indices, censored, summarize
from twoclock.config import OptimConfig, SweepConfig
from twoclock.models.policy import MODEL, PolicyConfig
from twoclock.scaling import lr_for_batch

CLOCK_KEYS = {"progress": "prog_n", "null": "null_n", "kl": "kl_n", "entropy": "entropy_n",
              "collapse": "collapse_n"}
CLIPS = {"eps0.2": (0.2, None), "none": (None, None), "higher": (0.2, 0.28)}


@dataclasses.dataclass(frozen=True)
class Study:
    batches: tuple = (64, 128, 256, 512, 1024)
    seeds: int = 16
    budget: int = 16_384
    lr0: float = 1e-4
    unstable_factor: float = 3.0
    early_samples: int = 2048
    n_ckpt: int = 64
    seed: int = 0
    conventions: tuple = ("fixed_m", "fixed_size")
    parts: tuple = ("rules", "clip", "collapse")  # which cells to run


QUICK = Study(batches=(64, 512), seeds=4, budget=12_288, conventions=("fixed_m",))


def cells(st: Study, base: PolicyConfig) -> list:
    """[(name, PolicyConfig, OptimConfig, SweepConfig)] of the study."""
    sweep = lambda batches, lr0: SweepConfig(batches=tuple(batches), lr0s=(lr0,),
                                             seeds=st.seeds, budget=st.budget, seed=st.seed,
                                             n_ckpt=st.n_ckpt)
    sqrt, fixed = OptimConfig(lr_rule="sqrt"), OptimConfig(lr_rule="fixed")
    b0, b1 = min(st.batches), max(st.batches)
    lr_fixed = lr_for_batch(st.lr0, b0, sqrt.b0, "sqrt")
    out = []
    if "rules" in st.parts:
        out += [("sqrt", base, sqrt, sweep(st.batches, st.lr0)),
                ("fixed", base, fixed, sweep(st.batches, lr_fixed))]
    for conv in (st.conventions if "clip" in st.parts else ()):
        for name, (cl, ch) in CLIPS.items():
            cfg = dataclasses.replace(base, minibatches=4, epochs=2, mb_convention=conv,
                                      mb_ref=b0, clip_low=cl, clip_high=ch)
            out.append((f"clip_{name}_{conv}", cfg, sqrt, sweep((b0, b1), st.lr0)))
    for name in (("eps0.2", "none") if "collapse" in st.parts else ()):
        cl, ch = CLIPS[name]
        cfg = dataclasses.replace(base, minibatches=4, epochs=2, clip_low=cl, clip_high=ch)
        out.append((f"collapse_{name}", cfg, sqrt, sweep((b0, b1), st.lr0 * st.unstable_factor)))
    return out


def clock_S(res, clock: str, i: int) -> np.ndarray:
    key = CLOCK_KEYS[clock]
    return np.asarray(res.prog_n[i, 0] if key == "prog_n" else res.extra[key][i, 0])


def exponent_ci(res, clock: str, idx) -> dict:
    """Slope of log median N between the smallest and largest batch, paired bootstrap CI."""
    i0, i1 = int(np.argmin(res.batches)), int(np.argmax(res.batches))
    a, b = censored(clock_S(res, clock, i0)), censored(clock_S(res, clock, i1))
    span = np.log(res.batches[i1] / res.batches[i0])
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.log(np.median(b) / np.median(a)) / span
        boot = np.log(np.median(b[idx], axis=-1) / np.median(a[idx], axis=-1)) / span
    f = lambda v: float(v) if np.isfinite(v) else None
    lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
    return {"median": f(point), "ci": [f(lo), f(hi)]}


def ratio_ci(x_S, y_S, idx) -> dict:
    """median(x) / median(y) with a paired bootstrap CI (censored runs as inf)."""
    a, b = censored(x_S), censored(y_S)
    with np.errstate(invalid="ignore"):
        point = np.median(a) / np.median(b)
        boot = np.median(a[idx], axis=-1) / np.median(b[idx], axis=-1)
    lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
    f = lambda v: float(v) if np.isfinite(v) else None
    return {"median": f(point), "ci": [f(lo), f(hi)]}


def at_samples(ck: dict, name: str, n: int) -> np.ndarray:
    """[S] metric at the first checkpoint with samples >= n."""
    s, v = np.asarray(ck["samples"][0]), np.asarray(ck[name][0])
    i = np.argmax(s >= n, axis=-1)
    return v[np.arange(v.shape[0]), i]


def analyse(cfg, opt, sweep, res, early_samples: int) -> dict:
    """One cell's entries (run_entries + predict) and its own summaries."""
    runs = results.run_entries(res, opt, extra_summaries=tuple(res.extra))
    crit = results.critical_batches(res)
    MODEL.predict(cfg, opt, sweep, res, runs, crit)
    idx = bootstrap_indices(sweep.seeds)
    out = {"runs": runs, "critical_batch": crit,
           "exponent": {c: exponent_ci(res, c, idx) for c in ("progress", "null", "kl",
                                                              "entropy")}}
    i0, i1 = int(np.argmin(res.batches)), int(np.argmax(res.batches))
    out["progress_gap"] = ratio_ci(clock_S(res, "progress", i1), clock_S(res, "progress", i0),
                                   idx)
    out["early_acc"], out["final"] = {}, {}
    for i, b in enumerate(res.batches):
        ck = res.ckpt[i]
        out["early_acc"][str(b)] = float(np.median(at_samples(
            ck, "heldout_acc", min(early_samples, sweep.budget))))
        acc_end, peak = np.asarray(ck["heldout_acc"][0][:, -1]), np.asarray(ck["peak"][0][:, -1])
        coll = clock_S(res, "collapse", i)
        out["final"][str(b)] = {
            "collapsed_seeds": int((coll > 0).sum()),
            "stayed_down_seeds": int(((coll > 0) & (acc_end <= peak - cfg.collapse_drop)).sum()),
            "final_acc_median": float(np.median(acc_end)), "peak_median": float(np.median(peak)),
            "clip_frac_median": float(np.median(np.asarray(ck["clip_frac"][0]).mean(-1)))}
    return out


def run(st: Study, base: PolicyConfig | None = None, store_root: str | None = None,
        quiet: bool = False, log=print, max_lanes: int | None = None) -> dict:
    """Every cell through run_sweep (each resumable from its store), then the answers."""
    from twoclock.engine.store import Store  # the engine's home, looked up at call time
    from twoclock.engine.sweep import run_sweep
    base = PolicyConfig() if base is None else base
    out, t0 = {"study": dataclasses.asdict(st), "cells": {}}, time.perf_counter()
    todo = cells(st, base)
    for k, (name, cfg, opt, sweep) in enumerate(todo):
        log(f"[policy study] cell {k + 1}/{len(todo)}: {name}")
        store = None
        if store_root is not None:
            store = Store(store_root, "policy", results.config_dict(
                model_name="policy", model=cfg, optimizer=opt, sweep=sweep, study_cell=name))
        t = time.perf_counter()
        kw = {} if max_lanes is None else {"max_lanes": max_lanes}
        res = run_sweep(MODEL, cfg, opt, sweep, quiet=quiet, store=store, resume=True, **kw)
        out["cells"][name] = {**analyse(cfg, opt, sweep, res, st.early_samples),
                              "seconds": time.perf_counter() - t,
                              "config": results.config_dict(model=cfg, optimizer=opt,
                                                            sweep=sweep)}
    out["answers"] = answers(st, out["cells"])
    out["seconds"] = time.perf_counter() - t0
    return out


def answers(st: Study, c: dict) -> dict:
    b0, b1 = str(min(st.batches)), str(max(st.batches))
    rules = [r for r in ("sqrt", "fixed") if r in c]
    a = {"1_progress_gap": {rule: {"gap": c[rule]["progress_gap"],
                                   "critical_batch": c[rule]["critical_batch"][0]}
                            for rule in rules},
         "2_exponents": {rule: {clock: {"measured": c[rule]["exponent"][clock],
                                        "predicted_by_batch": {
                                            str(r["batch"]): r["theory"]["exponent"][clock]
                                            for r in c[rule]["runs"]},
                                        "noise_scale_by_batch": {
                                            str(r["batch"]): r["noise_scale"][d]
                                            for r in c[rule]["runs"]}}
                                for clock, d in (("progress", "acc"), ("null", "null"),
                                                 ("kl", "kl"), ("entropy", "entropy"))}
                         for rule in rules}}
    clip = {}
    for conv in (st.conventions if "clip" in st.parts else ()):
        get = lambda name: c[f"clip_{name}_{conv}"]
        row = {}
        for name in CLIPS:
            runs = {str(r["batch"]): r for r in get(name)["runs"]}
            row[name] = {b: {k: runs[b][f"{k}_samples"]["median"]
                             for k in ("progress", "null", "kl", "entropy", "collapse")}
                         for b in (b0, b1)}
            row[name]["progress_gap"] = get(name)["progress_gap"]
            row[name]["early_acc"] = get(name)["early_acc"]
            row[name]["clip_frac"] = {b: get(name)["final"][b]["clip_frac_median"]
                                      for b in (b0, b1)}
        clip[conv] = row
    a["3_clipping"] = clip
    a["4_collapse"] = {name: c[f"collapse_{name}"]["final"] for name in ("eps0.2", "none")
                       if f"collapse_{name}" in c}
    return a


def report(out: dict) -> str:
    """The answers as text tables."""
    a, st = out["answers"], out["study"]
    fmt = lambda v, f=".3g": "-" if v is None else format(v, f)
    ci = lambda d: f"{fmt(d['median'])} [{fmt(d['ci'][0])}, {fmt(d['ci'][1])}]"
    lines = [f"policy study: batches {st['batches']}, {st['seeds']} seeds, budget "
             f"{st['budget']} responses, {out['seconds']:.0f} s", "",
             "1. progress gap N_prog(B_max)/N_prog(B_min) [95% CI] and critical batch:"]
    for rule, v in a["1_progress_gap"].items():
        cb = v["critical_batch"]
        lines.append(f"   {rule:>5}: gap {ci(v['gap'])}; critical batch {fmt(cb['batch'])} "
                     f"[{fmt(cb['ci'][0])}, {fmt(cb['ci'][1])}]")
    lines += ["", "2. batch exponent d log N / d log B: measured [95% CI] | predicted per batch "
              "| B_simple per batch (responses)"]
    for rule, clocks in a["2_exponents"].items():
        for clock, v in clocks.items():
            pred = ", ".join(f"{b}:{fmt(p, '.2g')}" for b, p in v["predicted_by_batch"].items())
            ns = ", ".join(f"{b}:{fmt(p)}" for b, p in v["noise_scale_by_batch"].items())
            lines.append(f"   {rule:>5} {clock:>8}: {ci(v['measured']):>26} | {pred} | {ns}")
    lines += ["", "3. clipping at M 4 x E 2 (median responses to each clock; '-' = censored):"]
    for conv, rows in a["3_clipping"].items():
        for name, row in rows.items():
            per = "; ".join(f"B {b}: " + " ".join(f"{k} {fmt(row[b][k])}" for k in
                                                  ("progress", "null", "kl", "entropy"))
                            + f" clip {fmt(row['clip_frac'][b], '.2%')}"
                            for b in sorted((k for k in row if k.isdigit()), key=int))
            early = ", ".join(f"{b}:{fmt(v)}" for b, v in row["early_acc"].items())
            lines.append(f"   {conv:>10} {name:>7}: {per}; gap {ci(row['progress_gap'])}; "
                         f"acc at {st['early_samples']} responses {early}")
    lines += ["", f"4. collapse at {st['unstable_factor']}x lr0, M 4 x E 2:"]
    for name, per_b in a["4_collapse"].items():
        for b, v in per_b.items():
            lines.append(f"   {name:>7} B {b}: collapsed {v['collapsed_seeds']}/{st['seeds']}, "
                         f"stayed down {v['stayed_down_seeds']}, final acc "
                         f"{v['final_acc_median']:.3f} (peak {v['peak_median']:.3f}), "
                         f"clip fraction {v['clip_frac_median']:.2%}")
    return "\n".join(lines)
