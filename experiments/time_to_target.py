"""Wall-clock time-to-target against batch: `python experiments/time_to_target.py [flags]`.

Seed 000's figure in simulation: the quadratic model's samples-to-target (sqrt-scaled and
fixed learning rate) divided by the end-to-end throughput of the seed-000-calibrated model
(twoclock.throughput), normalised to the smallest batch with the sqrt rule. Marks the
critical generation batch (throughput knee) and the critical training batch (where
samples-to-target grows by 1 + delta), and stars the optimum. A run whose failure clock fires
before its target counts as never reaching it. One simulated sample stands for 32 responses.
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (ROOT, HERE):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from schedule import (add_optim_args, add_throughput_args,  # noqa: E402
                                  optim_from_args, throughput_from_args)
from twoclock.cli import OneLineParser, add_output_args, fail, publish  # noqa: E402


def parse(argv):
    import twoclock  # noqa: F401
    from twoclock.sweep import MODELS
    p = OneLineParser(prog="time_to_target.py", description=__doc__)
    s = p.add_argument_group("sweep")
    s.add_argument("--model", default="quadratic", help="quadratic")
    s.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256])
    s.add_argument("--lr0", type=float, default=1e-2, help="base learning rate at b0")
    s.add_argument("--lr-rules", nargs="+", default=["sqrt", "fixed"],
                   help="LR rules to compare (fixed | sqrt | linear)")
    s.add_argument("--seeds", type=int, default=16)
    s.add_argument("--budget", type=int, default=100_000, help="sample budget per run")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--n-ckpt", type=int, default=16)
    s.add_argument("--delta", type=float, default=0.2,
                   help="critical training batch: N_prog(B)/N_prog(B_min) >= 1 + delta")
    add_optim_args(p)
    add_throughput_args(p)
    MODELS["quadratic"].add_args(p.add_argument_group("quadratic model"))
    add_output_args(p, "time_to_target")
    return p.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from twoclock.runtime import setup
    setup()  # all cores as devices, persistent compilation cache
    ns = parse(argv)
    from twoclock.config import SweepConfig, require, require_choice, LR_RULES
    from twoclock.sweep import MODELS
    try:
        require(ns.model == "quadratic", "model", "quadratic", ns.model)
        for r in ns.lr_rules:
            require_choice("lr_rules", r, LR_RULES)
        require(len(set(ns.lr_rules)) == len(ns.lr_rules), "lr_rules", "distinct values",
                ns.lr_rules)
        require(ns.delta > 0, "delta", "> 0", ns.delta)
        model_cfg = MODELS[ns.model].config_from_args(ns)
        opts = {r: optim_from_args(ns, rule=r) for r in ns.lr_rules}
        sweep = SweepConfig(batches=tuple(sorted(ns.batches)), lr0s=(ns.lr0,), seeds=ns.seeds,
                            budget=ns.budget, seed=ns.seed, n_ckpt=ns.n_ckpt)
        thr = throughput_from_args(ns)
    except ValueError as e:
        fail("time_to_target.py", str(e))
    from twoclock import clocks, results
    from twoclock.schedule import reached_first
    from twoclock.sweep import run_sweep

    t0 = time.perf_counter()
    idx = clocks.bootstrap_indices(ns.seeds)
    runs, crit = [], None
    for rule, opt in opts.items():
        res = run_sweep(ns.model, model_cfg, opt, sweep, quiet=ns.quiet)
        if rule == ns.lr_rules[0]:
            crit = clocks.critical_batch(list(res.batches), res.prog_n[:, 0], delta=ns.delta,
                                         idx=idx)
        for i, b in enumerate(res.batches):
            p_S, f_S = res.prog_n[i, 0], res.fail_n[i, 0]
            ok = reached_first(p_S, f_S)
            secs = np.where(ok, p_S, 0) / float(thr.throughput(b))
            t = clocks.summarize(secs, idx=idx)
            runs.append({
                "batch": int(b), "lr_rule": rule, "lr": float(res.lrs_BxL[i, 0]),
                "lr0": ns.lr0, "time_to_target": {"median": t["median"], "ci": t["ci"],
                                                  "reached": t["reached"], "seeds": t["seeds"],
                                                  "unit": "seconds"},
                "throughput": {"samples_per_second": float(thr.throughput(b)),
                               "responses_per_second":
                                   float(thr.throughput(b)) * thr.responses_per_sample},
                "progress_samples": clocks.summarize(p_S, idx=idx),
                "failure_samples": clocks.summarize(f_S, idx=idx),
            })
    ref = next(r for r in runs if r["lr_rule"] == ns.lr_rules[0]
               and r["batch"] == min(ns.batches))["time_to_target"]["median"]
    done = [r for r in runs if r["time_to_target"]["median"] is not None]
    best = min(done, key=lambda r: r["time_to_target"]["median"]) if done else None
    out = {
        "model": ns.model, "runs": runs, "lr_rules": ns.lr_rules,
        "optimum": None if best is None else {"lr_rule": best["lr_rule"], "batch": best["batch"]},
        "reference_seconds": ref,
        "critical_generation_batch": thr.critical_gen_batch(),
        "critical_training_batch": crit["batch"], "critical_training_batch_ci": crit["ci"],
        "config": results.config_dict(model=model_cfg, optimizer=opts[ns.lr_rules[0]],
                                      sweep=sweep, lr_rules=ns.lr_rules, delta=ns.delta,
                                      throughput=thr.model,
                                      responses_per_sample=thr.responses_per_sample),
        "versions": results.versions(), "seconds": time.perf_counter() - t0,
    }
    from twoclock.figures_style import time_to_target_figure
    # without a reference time there is nothing to normalise the figure by
    publish(ns, "time_to_target", out, report(out), time_to_target_figure if ref is not None
            else None)
    return 0


def report(out: dict) -> str:
    ref = out["reference_seconds"]
    lines = [f"{'batch':>6} {'rule':>6} {'samples to target':>18} {'throughput':>12} "
             f"{'hours':>8} {'normalised':>10}"]
    for r in sorted(out["runs"], key=lambda r: (r["lr_rule"] != out["lr_rules"][0], r["batch"])):
        t = r["time_to_target"]["median"]
        p = r["progress_samples"]["median"]
        lines.append(f"{r['batch']:>6} {r['lr_rule']:>6} "
                     f"{'>budget' if p is None else format(p, '.0f'):>18} "
                     f"{r['throughput']['samples_per_second'] * 3600:>10.0f}/h "
                     f"{'never' if t is None else format(t / 3600, '.2f'):>8} "
                     f"{'-' if t is None or ref is None else format(t / ref, '.3f'):>10}")
    lines.append(f"critical generation batch {out['critical_generation_batch']:.1f}, critical "
                 f"training batch "
                 f"{'none in range' if out['critical_training_batch'] is None else format(out['critical_training_batch'], '.1f')}")
    if out["optimum"]:
        o = out["optimum"]
        lines.append(f"optimum: {o['lr_rule']} LR at B={o['batch']}")
    by = {(r["lr_rule"], r["batch"]): r["time_to_target"]["median"] for r in out["runs"]}
    if "fixed" in out["lr_rules"] and "sqrt" in out["lr_rules"]:
        ratios = [f"B={b}: {by[('fixed', b)] / by[('sqrt', b)]:.2f}"
                  for (rule, b) in sorted(by) if rule == "fixed"
                  and by[("fixed", b)] and by.get(("sqrt", b))]
        lines.append("fixed-LR / sqrt-LR time at the same batch: " + ", ".join(ratios))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
