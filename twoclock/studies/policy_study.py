"""The policy model's study (docs/policy.md): which clocks of a real network keep their batch
invariance, and what clipping does to them.

Cells, each one sweep through the engine's `run_sweep` (resumable from the store):
- sqrt / fixed: the default config (M = E = 1, eps 0.2) over the batches, lr0 under the sqrt
  rule, and under the fixed rule the sqrt rule's lr at the smallest batch (the same start);
- clip_none_M1E1: the sqrt cell unclipped at the smallest and largest batch (at M = E = 1
  every ratio is 1, so this must equal the sqrt cell);
- clip_<name>_<convention>: M x E = 4 x 2 at the smallest and largest batch and
  clip_lr_factor x lr0, eps 0.2,
  unclipped, and clip-higher (0.2, 0.28), for M fixed (fixed_m) and the minibatch size fixed
  (fixed_size, M = 4 B / B_min);
- collapse_<clip>: an unstable lr (unstable_factor x lr0, M x E = 4 x 2), eps 0.2 and
  unclipped;
- adam: no sweep; Adam's per-coordinate noise measured at the reference policy and the clocks
  it predicts under both rules (twoclock.models.policy.adam_noise).
Every answer is worked out from the cells' per-seed clocks (kept in the JSON), each with a
paired bootstrap 95% CI over seeds: (1) the progress gap N_prog(B) / N_prog(B_min) per batch and
the critical batch per rule; (2) each clock's measured batch exponent against the theory's,
from each direction's measured noise scale; (3) the clipping claims; (4) the collapse clock.
"""
import dataclasses
import time

import numpy as np

from twoclock.analysis import results
from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.config import OptimConfig, SweepConfig
from twoclock.models.policy import MODEL, PolicyConfig, adam_noise
from twoclock.models.policy.predict import measured_exponent

CLOCK_KEYS = {"progress": "prog_n", "null": "null_n", "kl": "kl_n", "entropy": "entropy_n",
              "collapse": "collapse_n"}
DRIFT = ("null", "kl", "entropy", "collapse")
CLIPS = {"eps0.2": (0.2, None), "none": (None, None), "higher": (0.2, 0.28)}
PARTS = ("rules", "adam", "clip", "collapse")
ADAM_STAT = {"progress": "acc", "null": "null", "kl": "kl", "entropy": "entropy"}


@dataclasses.dataclass(frozen=True)
class Study:
    batches: tuple = (64, 128, 256, 512, 1024)
    seeds: int = 16
    budget: int = 12_288
    lr0: float = 1e-4
    unstable_factor: float = 3.0
    # the clipping cells' lr0 over lr0: at lr0 itself M x E = 4 x 2 crosses every clock within
    # 1-3 updates at B 1024, too coarse to compare (docs/policy.md)
    clip_lr_factor: float = 0.25
    early_samples: int = 2048
    n_ckpt: int = 64
    seed: int = 0
    conventions: tuple = ("fixed_m", "fixed_size")
    parts: tuple = PARTS  # which cells to run
    # runs per compiled chunk: the engine's memory estimate sums every intermediate of an
    # update, 1.4 GiB per lane at B 1024 where 0.4 GiB is used (docs/policy.md), so 16 lanes
    # would be refused on a 2-core, 23 GiB machine
    max_lanes: int = 8


QUICK = Study(batches=(64, 512), seeds=4, conventions=("fixed_m",))


def rules(st: Study) -> dict:
    """{rule: (OptimConfig, lr0)}: the sqrt rule at lr0, and the fixed rule at the sqrt rule's
    lr at the smallest batch (the same start)."""
    sqrt, fixed = OptimConfig(lr_rule="sqrt"), OptimConfig(lr_rule="fixed")
    return {"sqrt": (sqrt, st.lr0),
            "fixed": (fixed, sqrt.lr(st.lr0, min(st.batches)))}


def cells(st: Study, base: PolicyConfig) -> list:
    """[(name, PolicyConfig, OptimConfig, SweepConfig)] of the study."""
    sweep = lambda batches, lr0: SweepConfig(batches=tuple(batches), lr0s=(lr0,),
                                             seeds=st.seeds, budget=st.budget, seed=st.seed,
                                             n_ckpt=st.n_ckpt)
    rule = rules(st)
    sqrt = rule["sqrt"][0]
    b0, b1 = min(st.batches), max(st.batches)
    out = []
    if "rules" in st.parts:
        out += [(name, base, opt, sweep(st.batches, lr0)) for name, (opt, lr0) in rule.items()]
    if "clip" in st.parts:
        out.append(("clip_none_M1E1", dataclasses.replace(base, clip_low=None, clip_high=None),
                    sqrt, sweep((b0, b1), st.lr0)))
    lr_clip = st.lr0 * st.clip_lr_factor
    for conv in (st.conventions if "clip" in st.parts else ()):
        for name, (cl, ch) in CLIPS.items():
            cfg = dataclasses.replace(base, minibatches=4, epochs=2, mb_convention=conv,
                                      mb_ref=b0, clip_low=cl, clip_high=ch)
            out.append((f"clip_{name}_{conv}", cfg, sqrt, sweep((b0, b1), lr_clip)))
    for name in (("eps0.2", "none") if "collapse" in st.parts else ()):
        cl, ch = CLIPS[name]
        cfg = dataclasses.replace(base, minibatches=4, epochs=2, clip_low=cl, clip_high=ch)
        out.append((f"collapse_{name}", cfg, sqrt, sweep((b0, b1), st.lr0 * st.unstable_factor)))
    return out


def clock_S(res, clock: str, i: int) -> np.ndarray:
    key = CLOCK_KEYS[clock]
    return np.asarray(res.prog_n[i, 0] if key == "prog_n" else res.extra[key][i, 0])


def _finite(v):
    return float(v) if np.isfinite(v) else None


def stat_ci(fn, *x_S, idx) -> dict:
    """fn of the seeds (each x_S resampled by the same rows of idx: paired), with its
    bootstrap 95% CI; inf (a censored median) is reported as None."""
    xs = [np.asarray(x, np.float64) for x in x_S]
    with np.errstate(invalid="ignore", divide="ignore"):
        point = fn(*xs)
        boot = fn(*(x[idx] for x in xs))
    boot = np.where(np.isnan(boot), np.inf, boot)
    lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
    return {"median": _finite(point), "ci": [_finite(lo), _finite(hi)]}


def _med(x):
    return np.median(x, axis=-1)


def ratio_ci(x_S, y_S, idx) -> dict:
    """median(x) / median(y) with a paired bootstrap CI (runs that never crossed as inf)."""
    return stat_ci(lambda a, b: _med(a) / _med(b), censored(x_S), censored(y_S), idx=idx)


def delay_ratio_ci(clip1, none1, clip0, none0, idx) -> dict:
    """[med(clip1) / med(none1)] / [med(clip0) / med(none0)]: is the delay larger at batch 1?"""
    return stat_ci(lambda a, b, c, d: (_med(a) / _med(b)) / (_med(c) / _med(d)),
                   *map(censored, (clip1, none1, clip0, none0)), idx=idx)


def diff_ci(x_S, y_S, idx) -> dict:
    """median(x) - median(y) with a paired bootstrap CI."""
    return stat_ci(lambda a, b: _med(a) - _med(b), x_S, y_S, idx=idx)


def exponent_ci(per_batch: dict, clock: str, idx) -> dict:
    """Least-squares slope of log median N against log B over the batches whose median was
    reached, with a paired bootstrap CI over seeds ({median: None} if fewer than two)."""
    bs = sorted(per_batch, key=int)
    x = {b: censored(per_batch[b][clock]) for b in bs}
    use = [b for b in bs if np.isfinite(np.median(x[b]))]
    if len(use) < 2:
        return {"median": None, "ci": [None, None], "batches": [int(b) for b in use]}
    logb = np.log([int(b) for b in use])

    def slope(*xs):
        y = np.log(np.stack([_med(v) for v in xs], axis=-1))  # [..., len(use)]
        yc = y - y.mean(-1, keepdims=True)
        xc = logb - logb.mean()
        return (yc * xc).sum(-1) / (xc ** 2).sum()
    return {**stat_ci(slope, *(x[b] for b in use), idx=idx), "batches": [int(b) for b in use]}


def at_samples(ck: dict, name: str, n: int) -> np.ndarray:
    """[S] metric at the first checkpoint with samples >= n."""
    s, v = np.asarray(ck["samples"][0]), np.asarray(ck[name][0])
    i = np.argmax(s >= n, axis=-1)
    return v[np.arange(v.shape[0]), i]


def per_seed(cfg, sweep, res, early_samples: int) -> dict:
    """{batch: {clock: [S] responses (0: never), early_acc, collapsed, stayed_down, ...}}: every
    per-seed number the answers are worked out from, so they can be again from the JSON."""
    out = {}
    for i, b in enumerate(res.batches):
        ck = res.ckpt[i]
        acc_end, peak = np.asarray(ck["heldout_acc"][0][:, -1]), np.asarray(ck["peak"][0][:, -1])
        coll = clock_S(res, "collapse", i)
        out[str(b)] = {
            **{c: clock_S(res, c, i).astype(int).tolist() for c in CLOCK_KEYS},
            "early_acc": at_samples(ck, "heldout_acc",
                                    min(early_samples, sweep.budget)).tolist(),
            "final_acc": acc_end.tolist(), "peak_acc": peak.tolist(),
            "stayed_down": ((coll > 0) & (acc_end <= peak - cfg.collapse_drop)).tolist(),
            "clip_frac": np.asarray(ck["clip_frac"][0]).mean(-1).tolist()}
    return out


def analyse(cfg, opt, sweep, res, early_samples: int) -> dict:
    """One cell's entries (run_entries + predict), its critical batch and its per-seed clocks."""
    runs = results.run_entries(res, opt, extra_summaries=tuple(res.extra))
    crit = results.critical_batches(res)
    MODEL.predict(cfg, opt, sweep, res, runs, crit)
    return {"runs": runs, "critical_batch": crit,
            "per_seed": per_seed(cfg, sweep, res, early_samples)}


def run(st: Study, base: PolicyConfig | None = None, store_root: str | None = None,
        quiet: bool = False, log=print, keep=None) -> dict:
    """Every cell through run_sweep (each resumable from its store), then the answers."""
    from twoclock.engine.store import Store  # the engine's home, looked up at call time
    from twoclock.engine.sweep import run_sweep
    base = PolicyConfig() if base is None else base
    out, t0 = {"study": dataclasses.asdict(st), "cells": {}}, time.perf_counter()
    todo = cells(st, base)
    for k, (name, cfg, opt, sweep) in enumerate(todo):
        log(f"[policy study] cell {k + 1}/{len(todo)}: {name} "
            f"({time.perf_counter() - t0:.0f} s so far)")
        store = None
        if store_root is not None:
            store = Store(store_root, "policy", results.config_dict(
                model_name="policy", model=cfg, optimizer=opt, sweep=sweep, study_cell=name))
        t = time.perf_counter()
        res = run_sweep(MODEL, cfg, opt, sweep, quiet=quiet, store=store, resume=True,
                        max_lanes=st.max_lanes, keep=keep)
        out["cells"][name] = {**analyse(cfg, opt, sweep, res, st.early_samples),
                              "seconds": time.perf_counter() - t,
                              "config": results.config_dict(model=cfg, optimizer=opt,
                                                            sweep=sweep)}
    if "adam" in st.parts:
        log("[policy study] adam: per-coordinate noise at the reference policy")
        t = time.perf_counter()
        out["adam_noise"] = {**adam_noise.measure(
            base, rules(st), st.batches,
            ref_batch=max(st.batches), seed=st.seed), "seconds": time.perf_counter() - t}
    out["answers"] = answers(out["study"], out["cells"], out.get("adam_noise"))
    out["seconds"] = time.perf_counter() - t0
    return out


def answers(st: dict, c: dict, adam: dict | None = None) -> dict:
    """Every answer from the cells' per-seed clocks (st: the study as a dict, as in the JSON)
    and, given, the per-coordinate Adam measurement's predictions."""
    idx = bootstrap_indices(st["seeds"])
    b0, b1 = str(min(st["batches"])), str(max(st["batches"]))
    ps = lambda cell, b, k: np.asarray(c[cell]["per_seed"][b][k])
    a = {"1_progress_gap": {}, "2_exponents": {}}
    for rule in (r for r in ("sqrt", "fixed") if r in c):
        per = c[rule]["per_seed"]
        a["1_progress_gap"][rule] = {
            "gap_by_batch": {b: ratio_ci(per[b]["progress"], per[b0]["progress"], idx)
                             for b in per if b != b0},
            "critical_batch": c[rule]["critical_batch"][0]}
        a["2_exponents"][rule] = {
            clock: {"measured": exponent_ci(per, clock, idx),
                    "predicted_by_batch": {str(r["batch"]): r["theory"]["exponent"][clock]
                                           for r in c[rule]["runs"]},
                    "regime_by_batch": {str(r["batch"]): r["regime"][d]
                                        for r in c[rule]["runs"]},
                    "noise_scale_by_batch": {str(r["batch"]): r["noise_scale"][d]
                                             for r in c[rule]["runs"]}}
            for clock, d in (("progress", "acc"), ("null", "null"), ("kl", "kl"),
                             ("entropy", "entropy"))}
        if adam is not None and rule in adam["rules"]:
            for clock, v in a["2_exponents"][rule].items():
                pr = adam["rules"][rule]
                v["adam_predicted"] = pr["exponent"][ADAM_STAT[clock]]["both"]
                v["adam_predicted_by_batch"] = by_b = pr["clocks"][ADAM_STAT[clock]]["both"]
                # over the batches the measured slope used, for a like-for-like comparison
                v["adam_predicted_same_batches"] = measured_exponent(
                    v["measured"]["batches"], [by_b.get(str(b)) for b in v["measured"]["batches"]])
    clip = {}
    if "clip_none_M1E1" in c and "sqrt" in c:  # the sqrt cell is eps 0.2 at M = E = 1
        clip["M1xE1"] = {"delay": {b: {k: ratio_ci(ps("sqrt", b, k), ps("clip_none_M1E1", b, k),
                                                   idx) for k in ("progress",) + DRIFT}
                                   for b in (b0, b1)},
                         "identical_clocks": all(
                             np.array_equal(ps("sqrt", b, k), ps("clip_none_M1E1", b, k))
                             for b in (b0, b1) for k in CLOCK_KEYS)}
    for conv in st["conventions"]:
        n = lambda name: f"clip_{name}_{conv}"
        if not all(n(name) in c for name in CLIPS):
            continue
        row = {"median": {name: {b: {k: _finite(
                   np.median(censored(ps(n(name), b, k)))) for k in ("progress",) + DRIFT}
                   for b in (b0, b1)} for name in CLIPS},
               "clip_frac": {name: {b: float(np.median(ps(n(name), b, "clip_frac")))
                                    for b in (b0, b1)} for name in CLIPS}}
        # (a) clipping delays each drift clock, and more at the larger batch
        row["a_delay"] = {b: {k: ratio_ci(ps(n("eps0.2"), b, k), ps(n("none"), b, k), idx)
                              for k in DRIFT} for b in (b0, b1)}
        row["a_more_at_larger_batch"] = {k: delay_ratio_ci(
            ps(n("eps0.2"), b1, k), ps(n("none"), b1, k), ps(n("eps0.2"), b0, k),
            ps(n("none"), b0, k), idx) for k in DRIFT}
        # (b) the progress gap remains with and without clipping
        row["b_progress_gap"] = {name: ratio_ci(ps(n(name), b1, "progress"),
                                                ps(n(name), b0, "progress"), idx)
                                 for name in CLIPS}
        # (c) clip-higher learns faster early and fails earlier than eps 0.2
        row["c_early_acc_higher_minus_eps"] = {b: diff_ci(
            ps(n("higher"), b, "early_acc"), ps(n("eps0.2"), b, "early_acc"), idx)
            for b in (b0, b1)}
        row["c_fail_higher_over_eps"] = {b: {k: ratio_ci(
            ps(n("higher"), b, k), ps(n("eps0.2"), b, k), idx) for k in DRIFT}
            for b in (b0, b1)}
        clip[conv] = row
    a["3_clipping"] = clip
    coll = {}
    for name in ("eps0.2", "none"):
        cell = f"collapse_{name}"
        if cell not in c:
            continue
        coll[name] = {b: {"collapsed_seeds": int((ps(cell, b, "collapse") > 0).sum()),
                          "stayed_down_seeds": int(ps(cell, b, "stayed_down").sum()),
                          "collapse_samples": median_ci(censored(ps(cell, b, "collapse")),
                                                        idx=idx),
                          "final_acc": median_ci(ps(cell, b, "final_acc"), idx=idx),
                          "peak_acc": median_ci(ps(cell, b, "peak_acc"), idx=idx),
                          "clip_frac_median": float(np.median(ps(cell, b, "clip_frac")))}
                      for b in (b0, b1)}
    if len(coll) == 2:
        coll["clip_effect"] = {b: {
            "collapse_delay": ratio_ci(ps("collapse_eps0.2", b, "collapse"),
                                       ps("collapse_none", b, "collapse"), idx),
            "final_acc_clip_minus_none": diff_ci(ps("collapse_eps0.2", b, "final_acc"),
                                                 ps("collapse_none", b, "final_acc"), idx)}
            for b in (b0, b1)}
    a["4_collapse"] = coll
    return a


def reanswer(out: dict) -> dict:
    """A study's JSON with its answers worked out again from its per-seed clocks."""
    return {**out, "answers": answers(out["study"], out["cells"], out.get("adam_noise"))}


def report(out: dict) -> str:
    """The answers as text tables."""
    a, st = out["answers"], out["study"]
    fmt = lambda v, f=".3g": "-" if v is None else format(v, f)
    ci = lambda d: f"{fmt(d['median'])} [{fmt(d['ci'][0])}, {fmt(d['ci'][1])}]"
    b0, b1 = str(min(st["batches"])), str(max(st["batches"]))
    lines = [f"policy study: batches {tuple(st['batches'])}, {st['seeds']} seeds, budget "
             f"{st['budget']} responses, {out['seconds']:.0f} s",
             "every [a, b] is a paired bootstrap 95% CI over seeds; '-' = not reached in the "
             "budget", "",
             f"1. progress gap N_prog(B) / N_prog({b0}) and critical batch:"]
    for rule, v in a["1_progress_gap"].items():
        cb = v["critical_batch"]
        gaps = "; ".join(f"{b}: {ci(g)}" for b, g in v["gap_by_batch"].items())
        lines.append(f"   {rule:>5}: {gaps}; critical batch {fmt(cb['batch'])} "
                     f"[{fmt(cb['ci'][0])}, {fmt(cb['ci'][1])}]")
    lines += ["", "2. batch exponent d log N / d log B: measured [CI] (over B) | predicted "
              "per batch (regime) | B_simple per batch (responses)"]
    for rule, clocks in a["2_exponents"].items():
        for clock, v in clocks.items():
            m = v["measured"]
            pred = ", ".join(f"{b}:{fmt(p, '.2g')}" for b, p in v["predicted_by_batch"].items())
            ns = ", ".join(f"{b}:{fmt(p)}" for b, p in v["noise_scale_by_batch"].items())
            over = f"{m['batches'][0]}-{m['batches'][-1]}" if m["batches"] else "-"
            lines.append(f"   {rule:>5} {clock:>8}: {ci(m):>24} ({over}) | {pred} | {ns}")
    if any("adam_predicted" in v for clocks in a["2_exponents"].values() for v in clocks.values()):
        lines += ["", "2b. Adam's per-coordinate noise at the reference policy: predicted exponent "
                  "(over the measured slope's batches) | predicted N per batch | measured median "
                  "N per batch"]
        for rule, clocks in a["2_exponents"].items():
            per = out["cells"][rule]["per_seed"]
            for clock, v in clocks.items():
                if "adam_predicted" not in v:
                    continue
                pn = ", ".join(f"{b}:{fmt(p)}" for b, p in v["adam_predicted_by_batch"].items())
                mn = ", ".join(f"{b}:{fmt(_finite(np.median(censored(per[b][clock]))))}"
                               for b in sorted(per, key=int))
                same = fmt(v.get("adam_predicted_same_batches"))
                lines.append(f"   {rule:>5} {clock:>8}: {fmt(v['adam_predicted']):>6} ({same}) | "
                             f"{pn} | {mn}")
        share = out["adam_noise"]["signal_share"]
        lines.append("   share of each direction on signal-dominated coordinates (B_i < B): " +
                     "; ".join(f"{b}: " + " ".join(f"{k} {x:.2f}" for k, x in v.items())
                               for b, v in share.items()))
    lines += ["", "3. clipping (N_clip / N_none: > 1 is a delay)"]
    clip = a["3_clipping"]
    if "M1xE1" in clip:
        d = clip["M1xE1"]
        lines.append(f"   M 1 x E 1: clocks identical with and without clipping: "
                     f"{d['identical_clocks']}; delay at {b1}: " + ", ".join(
                         f"{k} {ci(v)}" for k, v in d["delay"][b1].items()))
    for conv, row in ((k, v) for k, v in clip.items() if k != "M1xE1"):
        lines.append(f"   M 4 x E 2, {conv}, lr0 x {st.get('clip_lr_factor', 1.0):g}:")
        for name in CLIPS:
            per = "; ".join(f"B {b}: " + " ".join(f"{k} {fmt(row['median'][name][b][k])}"
                                                  for k in ("progress",) + DRIFT)
                            + f" clip {row['clip_frac'][name][b]:.2%}" for b in (b0, b1))
            lines.append(f"      {name:>7}: {per}")
        for b in (b0, b1):
            lines.append(f"      (a) delay at {b:>4}: " + ", ".join(
                f"{k} {ci(v)}" for k, v in row["a_delay"][b].items()))
        lines.append(f"      (a) delay at {b1} / delay at {b0}: " + ", ".join(
            f"{k} {ci(v)}" for k, v in row["a_more_at_larger_batch"].items()))
        lines.append(f"      (b) progress gap {b1}/{b0}: " + ", ".join(
            f"{k} {ci(v)}" for k, v in row["b_progress_gap"].items()))
        for b in (b0, b1):
            lines.append(f"      (c) at {b:>4}: early acc higher - eps0.2 "
                         f"{ci(row['c_early_acc_higher_minus_eps'][b])}; N_higher / N_eps0.2 "
                         + ", ".join(f"{k} {ci(v)}"
                                     for k, v in row["c_fail_higher_over_eps"][b].items()))
    lines += ["", f"4. collapse at {st['unstable_factor']}x lr0, M 4 x E 2:"]
    coll = a["4_collapse"]
    for name in ("eps0.2", "none"):
        for b, v in coll.get(name, {}).items():
            lines.append(f"   {name:>7} B {b:>4}: collapsed {v['collapsed_seeds']}/{st['seeds']},"
                         f" stayed down {v['stayed_down_seeds']}, at {ci(v['collapse_samples'])}"
                         f" responses, final acc {ci(v['final_acc'])} (peak "
                         f"{ci(v['peak_acc'])}), clip {v['clip_frac_median']:.2%}")
    for b, v in coll.get("clip_effect", {}).items():
        lines.append(f"   clipping at {b:>4}: collapse delay {ci(v['collapse_delay'])}, final acc "
                     f"eps0.2 - none {ci(v['final_acc_clip_minus_none'])}")
    return "\n".join(lines)
