"""Seed 002's three clipping claims on the RLVR bandit: `python experiments/clipping.py`.

(a) clipping delays the failure clock, more at the largest batch: N_fail with and without
    clipping and their ratio at the smallest and the largest batch;
(b) without clipping the progress gap N_prog(B_max) / N_prog(B_min) remains;
(c) wider clipping (eps in 0.1, 0.2, 0.3, 0.5, none) buys faster early progress (held-out
    accuracy after --early-samples responses) and an earlier failure.
Clipping only acts when a rollout batch is used for several optimizer steps (with M = E = 1
the ratio is 1), so this experiment defaults to M = 4 minibatches x E = 2 epochs.
"""
import sys
import time

import numpy as np

from twoclock.cli import OneLineParser, add_output_args, fail, publish

CLIP_DEFAULTS = dict(minibatches=4, epochs=2)  # bandit flags whose default differs here


def parse(argv):
    from twoclock import bandit
    p = OneLineParser(prog="clipping.py", description=__doc__.split("\n")[0])
    p.add_argument("--batches", type=int, nargs="+", default=[64, 1024],
                   help="batches in responses; claims use the smallest and the largest")
    p.add_argument("--clips", nargs="+", default=["0.1", "0.2", "0.3", "0.5", "none"],
                   help="symmetric clip eps values, 'none' = unclipped")
    p.add_argument("--lr0", type=float, default=0.02, help="base learning rate at --b0")
    p.add_argument("--b0", type=float, default=8.0)
    p.add_argument("--seeds", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=int, default=40_000, help="responses per run")
    p.add_argument("--early-samples", type=int, default=4096,
                   help="responses after which early held-out accuracy is read")
    add_output_args(p, "clipping")
    bandit.add_args(p.add_argument_group("bandit model (all runs)"))
    ns = p.parse_args(argv)
    for k, v in CLIP_DEFAULTS.items():
        if getattr(ns, "bandit_" + k) is None:
            setattr(ns, "bandit_" + k, v)
    clips = []
    for c in ns.clips:
        if c.lower() == "none":
            clips.append(None)
            continue
        try:
            clips.append(float(c))
        except ValueError:
            raise ValueError(f"clips must be numbers in (0, 1) or 'none' (got {c!r})") from None
    base = bandit.config_from_args(ns)
    for c in clips:  # validates every eps through the config
        bandit.BanditConfig(**{**base.__dict__, "clip_low": c, "clip_high": None})
    from twoclock.config import OptimConfig, SweepConfig, require, require_int
    for b in ns.batches:  # before min(batches) divides anything
        require_int("batch", b)
    sweep = SweepConfig(batches=tuple(sorted(ns.batches)), lr0s=(ns.lr0,), seeds=ns.seeds,
                        budget=ns.budget, seed=ns.seed,
                        n_ckpt=max(1, ns.budget // min(ns.batches)))  # every update
    require(len(sweep.batches) >= 2, "batches", "at least two values", ns.batches)
    for b in sweep.batches:
        base.prompts(b)
    require(min(sweep.batches) * 1 <= ns.early_samples <= ns.budget, "early_samples",
            f"in [{min(sweep.batches)}, budget = {ns.budget}]", ns.early_samples)
    opt = OptimConfig(b0=ns.b0)
    return ns, base, clips, sweep, opt


def early_accuracy(ckpt_b: dict, n_early: int) -> np.ndarray:
    """[S] held-out accuracy at the first checkpoint with samples >= n_early (lr0 index 0)."""
    samples, acc = ckpt_b["samples"][0], ckpt_b["heldout_acc"][0]  # [S, C]
    i = np.argmax(samples >= n_early, axis=-1)
    return acc[np.arange(acc.shape[0]), i]


def simulate(base, clips, sweep, opt, n_early, quiet):
    import dataclasses
    from twoclock import bandit
    from twoclock.clocks import median_ci, summarize
    from twoclock.sweep import run_sweep
    runs = []
    for c in clips:
        cfg = dataclasses.replace(base, clip_low=c, clip_high=None)
        res = run_sweep("bandit", cfg, opt, sweep, quiet=quiet)
        for i, B in enumerate(sweep.batches):
            ck = res.ckpt[i]
            runs.append({
                "batch": int(B), "clip": c, "lr": float(res.lrs_BxL[i, 0]),
                **bandit.describe_batch(cfg, B),
                "progress_samples": summarize(res.prog_n[i, 0]),
                "failure_samples": summarize(res.fail_n[i, 0]),
                "collapse_samples": summarize(res.extra["collapse_n"][i, 0]),
                "early_accuracy": median_ci(early_accuracy(ck, n_early)),  # not a crossing
                "clip_fraction": float(np.mean(ck["clip_frac"])),
                "outside_fraction": float(np.mean(ck["outside_frac"])),
                "noise_scale_drift": float(bandit.noise_scale(ck["noise_drift"],
                                                              ck["signal_drift"])),
            })
    return runs


def _ratio(a, b):
    return None if a is None or b is None else a / b


def claims(runs, batches) -> dict:
    """The three claims' numbers from the runs (medians; None where censored)."""
    get = {(r["batch"], r["clip"]): r for r in runs}
    clips = sorted({r["clip"] for r in runs if r["clip"] is not None})
    b_lo, b_hi = min(batches), max(batches)
    ref = 0.2 if 0.2 in clips else clips[len(clips) // 2]
    fail = lambda b, c: get[(b, c)]["failure_samples"]["median"]
    prog = lambda b, c: get[(b, c)]["progress_samples"]["median"]
    return {
        "a_failure_delay": {str(b): {"clip": ref, "with": fail(b, ref), "without": fail(b, None),
                                     "ratio": _ratio(fail(b, ref), fail(b, None))}
                            for b in (b_lo, b_hi)},
        "b_progress_gap": {str(c): _ratio(prog(b_hi, c), prog(b_lo, c)) for c in (None, ref)},
        "c_wider_clipping": {str(b): [{"clip": c, "early_accuracy":
                                       get[(b, c)]["early_accuracy"]["median"],
                                       "failure": fail(b, c)} for c in clips + [None]]
                             for b in (b_lo, b_hi)},
    }


def _fmt(s):
    if s["median"] is None:
        return f">budget ({s['reached']}/{s['seeds']})"
    lo, hi = s["ci"]
    return f"{s['median']:.0f} [{lo:.0f}, {'>' if hi is None else f'{hi:.0f}'}]"


def _num(v) -> str:
    return ">budget" if v is None else f"{v:.0f}"


def table(out) -> str:
    lines = [f"clipping claims on the bandit (M = {out['config']['model']['minibatches']}, "
             f"E = {out['config']['model']['epochs']}); clocks in responses, median [95% CI]; "
             f"early acc = held-out accuracy after {out['config']['early_samples']} responses",
             f"{'batch':>6} {'clip':>5} | {'N_prog':>22} | {'N_fail':>22} | "
             f"{'early acc':>20} | {'clip%':>6} {'out%':>6}"]
    lines.append("-" * len(lines[-1]))
    for r in out["runs"]:
        ea = r["early_accuracy"]
        lines.append(f"{r['batch']:>6} {'none' if r['clip'] is None else r['clip']:>5} | "
                     f"{_fmt(r['progress_samples']):>22} | {_fmt(r['failure_samples']):>22} | "
                     f"{ea['median']:.3f} [{ea['ci'][0]:.3f}, {ea['ci'][1]:.3f}] | "
                     f"{100 * r['clip_fraction']:6.2f} {100 * r['outside_fraction']:6.2f}")
    c = out["claims"]
    lines.append("")
    for b, d in c["a_failure_delay"].items():
        ratio = "n/a" if d["ratio"] is None else f"{d['ratio']:.3f}"
        lines.append(f"(a) B={b}: N_fail clip {d['clip']} / no clip = {ratio}")
    for k, v in c["b_progress_gap"].items():
        lines.append(f"(b) N_prog(B_max)/N_prog(B_min), clip {k}: "
                     f"{'n/a' if v is None else f'{v:.2f}'}")
    for b, rows in c["c_wider_clipping"].items():
        lines.append(f"(c) B={b}: " + ", ".join(
            f"eps {'none' if r['clip'] is None else r['clip']}: acc {r['early_accuracy']:.3f} "
            f"fail {_num(r['failure'])}" for r in rows))
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from twoclock.runtime import setup
    setup()  # all cores as devices, persistent compilation cache
    try:
        ns, base, clips, sweep, opt = parse(argv)
    except ValueError as e:
        fail("clipping.py", str(e))
    t0 = time.perf_counter()
    runs = simulate(base, clips, sweep, opt, ns.early_samples, ns.quiet)
    from twoclock import results
    out = {
        "runs": runs, "claims": claims(runs, sweep.batches),
        "config": {"model": {k: v for k, v in base.__dict__.items() if k != "clip_low"},
                   "clips": clips, "batches": list(sweep.batches), "lr0": ns.lr0, "b0": ns.b0,
                   "lr_rule": opt.lr_rule, "optimizer": opt.name, "seeds": ns.seeds,
                   "budget": ns.budget, "seed": ns.seed, "early_samples": ns.early_samples},
        "seconds": time.perf_counter() - t0,
    }
    out["versions"] = results.versions()
    from twoclock.figures_style import clipping_figure
    publish(ns, "clipping", out, f"{table(out)}\n\n{len(runs) * ns.seeds} runs in "
            f"{out['seconds']:.1f} s", clipping_figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
