"""Batch schedule vs constant batches: `python experiments/schedule.py [flags]`.

Measures both clocks at a small batch B1 and a large batch B2, plans the switch B1 -> B2
(twoclock.schedule.plan_switch) under the throughput model, simulates the planned schedule
and a grid of switch points, and prints samples and wall-clock hours to target for constant
B1, constant B2 and the schedule. Writes a JSON file and a figure (PDF + PNG).

Default configuration: the quadratic model of DESIGN.md with one change, a collapse
threshold of 0.2 instead of 1.0. With threshold 1.0 the failure clock (~14.6k samples) is far
behind the progress clock (1.7k-4.1k) at every batch, so nothing fails first and no schedule
is needed; at 0.2 it fires at ~3k samples, after the target at B = 8 (1.7k) but before it at
B = 256 (4.1k). One simulated sample stands for 32 responses (B = 8 is 32 prompts x 8).

`--model bandit`: the RLVR bandit (twoclock.bandit) with B1 = 64 -> B2 = 1024 responses,
lr0 0.02, budget 40k responses, drift threshold 0.4 instead of 2 (the failure clock, ~29k
responses at threshold 2 and batch-invariant, then fires at ~6k: after the target at B = 64
(~3k), before it at B = 1024 (~10k)); one sample is one response. The progress curve the
planner hands over on is (1 - held-out accuracy) / (1 - its initial value).
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from twoclock.cli import OneLineParser, add_output_args, fail, publish  # noqa: E402

THRESHOLD_DEFAULT = 0.2
# per-model defaults (flags given on the command line win)
MODEL_DEFAULTS = {
    "quadratic": dict(batch_small=8, batch_large=256, lr0=1e-2, budget=20000,
                      responses_per_sample=32.0, drift_threshold=THRESHOLD_DEFAULT),
    "bandit": dict(batch_small=64, batch_large=1024, lr0=0.02, budget=40000,
                   responses_per_sample=1.0, bandit_drift_threshold=0.4),
}
# checkpointed progress curve falling from 1 to the target, per model
CURVE_KEY = {"quadratic": "loss_frac", "bandit": "error_frac"}


def add_throughput_args(p) -> None:
    from twoclock.throughput import ThroughputModel
    d = ThroughputModel()
    g = p.add_argument_group("throughput model (defaults: seed 000 GRPO calibration)")
    g.add_argument("--responses-per-sample", type=float, default=32.0,
                   help="real responses one simulated sample stands for")
    g.add_argument("--gen-latency", type=float, default=d.gen_latency,
                   help="weight-read-bound generation seconds per batch")
    g.add_argument("--critical-gen-batch", type=float, default=d.critical_gen_batch,
                   help="roofline knee, in responses")
    g.add_argument("--knee", type=float, default=d.knee, help="knee sharpness k")
    g.add_argument("--max-concurrent", type=float, default=None,
                   help="memory cap on responses decoded at once")
    g.add_argument("--train-per-sample", type=float, default=d.train_per_sample,
                   help="update seconds per response")
    g.add_argument("--train-overhead", type=float, default=d.train_overhead,
                   help="update seconds per step independent of batch")


def throughput_from_args(ns):
    from twoclock.throughput import ThroughputModel
    m = ThroughputModel(gen_latency=ns.gen_latency, critical_gen_batch=ns.critical_gen_batch,
                        knee=ns.knee, max_concurrent=ns.max_concurrent,
                        train_per_sample=ns.train_per_sample, train_overhead=ns.train_overhead)
    return m.scaled(ns.responses_per_sample)


def add_optim_args(p, lr0=(1e-2,), lr_rule="sqrt") -> None:
    g = p.add_argument_group("optimizer")
    g.add_argument("--optimizer", default="adam", help="sgd | momentum | adam")
    g.add_argument("--lr-rule", default=lr_rule, help="fixed | sqrt | linear")
    g.add_argument("--b0", type=float, default=8.0, help="reference batch of the LR rule")
    g.add_argument("--beta1", type=float, default=0.9, help="Adam beta1")
    g.add_argument("--beta2", type=float, default=0.999, help="Adam beta2")
    g.add_argument("--eps", type=float, default=1e-8, help="Adam eps")
    g.add_argument("--momentum", type=float, default=0.9, help="heavy-ball coefficient")


def optim_from_args(ns, rule=None):
    from twoclock.config import OptimConfig
    return OptimConfig(name=ns.optimizer, lr_rule=rule or ns.lr_rule, b0=ns.b0, b1=ns.beta1,
                       b2=ns.beta2, eps=ns.eps, momentum=ns.momentum)


def parse(argv):
    from twoclock.sweep import MODELS
    import twoclock  # noqa: F401
    pre = OneLineParser(prog="schedule.py", add_help=False)
    pre.add_argument("--model", default="quadratic")
    model = pre.parse_known_args(argv)[0].model
    if model not in MODEL_DEFAULTS:
        pre.error(f"argument --model: must be one of {', '.join(MODEL_DEFAULTS)} (got {model!r})")
    p = OneLineParser(prog="schedule.py", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    s = p.add_argument_group("schedule")
    s.add_argument("--model", default="quadratic", help=" | ".join(MODEL_DEFAULTS))
    s.add_argument("--batch-small", type=int, default=8, help="B1, the batch before the switch")
    s.add_argument("--batch-large", type=int, default=256, help="B2, the batch after the switch")
    s.add_argument("--lr0", type=float, default=1e-2, help="base learning rate at b0")
    s.add_argument("--seeds", type=int, default=16)
    s.add_argument("--budget", type=int, default=20000, help="sample budget per run")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--n-ckpt", type=int, default=64, help="checkpoints per run")
    s.add_argument("--margin", type=float, default=0.1,
                   help="failure-clock fraction that must remain at the target")
    s.add_argument("--fail-quantile", type=float, default=0.2,
                   help="planner uses this quantile of the per-seed failure clocks")
    s.add_argument("--objective", default="seconds", help="seconds | samples")
    s.add_argument("--planner", default="curves",
                   help="curves (equal-loss hand-over from measured curves) | fractions")
    s.add_argument("--carry", default="rescale", help="rescale | carry | reset (optimizer state)")
    s.add_argument("--switches", type=int, default=7, help="switch points in the measured grid")
    add_optim_args(p)
    add_throughput_args(p)
    MODELS[model].add_args(p.add_argument_group(f"{model} model"))
    p.set_defaults(**MODEL_DEFAULTS[model])
    add_output_args(p, "schedule")
    return p.parse_args(argv)


def build(ns):
    from twoclock.config import SweepConfig, require, require_int
    from twoclock.schedule import CARRY_MODES, SCHEDULE_RUNS
    from twoclock.sweep import MODELS
    require(ns.model in SCHEDULE_RUNS, "model", "one of " + ", ".join(SCHEDULE_RUNS), ns.model)
    require_int("batch_small", ns.batch_small)
    require_int("batch_large", ns.batch_large)
    require(ns.batch_small < ns.batch_large, "batch_large", f"> batch_small ({ns.batch_small})",
            ns.batch_large)
    require(0 <= ns.margin < 1, "margin", "in [0, 1)", ns.margin)
    require(0 < ns.fail_quantile <= 0.5, "fail_quantile", "in (0, 0.5]", ns.fail_quantile)
    require(ns.objective in ("seconds", "samples"), "objective", "seconds or samples",
            ns.objective)
    require(ns.planner in ("curves", "fractions"), "planner", "curves or fractions", ns.planner)
    require(ns.carry in CARRY_MODES, "carry", "one of " + ", ".join(CARRY_MODES), ns.carry)
    require_int("switches", ns.switches, lo=2)
    model_cfg = MODELS[ns.model].config_from_args(ns)
    opt = optim_from_args(ns)
    sweep = SweepConfig(batches=(ns.batch_small, ns.batch_large), lr0s=(ns.lr0,),
                        seeds=ns.seeds, budget=ns.budget, seed=ns.seed, n_ckpt=ns.n_ckpt)
    return model_cfg, opt, sweep, throughput_from_args(ns)


def median_curve(ckpt, model: str = "quadratic") -> dict:
    """Median curves; "loss_frac" is the model's falling progress curve (CURVE_KEY)."""
    return {"samples": np.asarray(ckpt["samples"])[0, 0].tolist(),
            "loss_frac": np.median(ckpt[CURVE_KEY[model]][0], axis=0).tolist(),
            "drift": np.median(ckpt["drift"][0], axis=0).tolist()}


def curve_target(model: str, model_cfg) -> float:
    """The progress target on the scale of the curves' "loss_frac" (see CURVE_KEY)."""
    if model != "bandit":
        return float(model_cfg.target)
    import jax.numpy as jnp
    from twoclock import bandit
    _, test = bandit.make_problem(model_cfg)
    pool = bandit.Pool(*(jnp.asarray(v, jnp.float32) for v in test))
    acc0 = float(bandit.accuracy(jnp.zeros(test.phi.shape[-1], jnp.float32), pool))
    return (1.0 - model_cfg.target) / (1.0 - acc0)


def summarize_run(kind, label, sched, prog_S, fail_S, thr, idx) -> dict:
    from twoclock import clocks
    from twoclock.schedule import reached_first, seconds_to
    ok = reached_first(prog_S, fail_S)
    secs = seconds_to(np.where(ok, prog_S, 0), sched, lambda b: 1.0 / float(thr.throughput(b)))
    hours = clocks.summarize(secs / 3600.0, idx=idx)
    return {"kind": kind, "label": label, "b1": sched.b1, "b2": sched.b2,
            "switch": int(sched.switch), "progress_samples": clocks.summarize(prog_S, idx=idx),
            "failure_samples": clocks.summarize(fail_S, idx=idx),
            "reached_first": float(ok.mean()), "hours": hours}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from twoclock.runtime import setup
    setup()  # all cores as devices, persistent compilation cache
    ns = parse(argv)
    try:
        model_cfg, opt, sweep, thr = build(ns)
    except ValueError as e:
        fail("schedule.py", str(e))
    from twoclock import clocks, results
    from twoclock.schedule import Clocks, Schedule, curve_remaining, plan_switch, run_schedule
    from twoclock.sweep import run_sweep

    t0 = time.perf_counter()
    B1, B2 = ns.batch_small, ns.batch_large
    res = run_sweep(ns.model, model_cfg, opt, sweep, quiet=ns.quiet)
    idx = clocks.bootstrap_indices(ns.seeds)

    def measured(i):
        p = clocks.censored(res.prog_n[i, 0])
        f = clocks.censored(res.fail_n[i, 0])
        return Clocks(res.batches[i], float(np.median(p)),
                      float(np.quantile(f, ns.fail_quantile, method="lower")))

    small, large = measured(0), measured(1)
    spp = lambda b: 1.0 / float(thr.throughput(b))
    remaining = None
    if ns.planner == "curves":
        key = CURVE_KEY[ns.model]
        curve = lambda i: (res.ckpt[i]["samples"][0, 0], np.median(res.ckpt[i][key][0], 0))
        remaining = curve_remaining(small, large, curve(0), curve(1))
    plan = plan_switch(small, large, spp, margin=ns.margin, objective=ns.objective,
                       remaining=remaining)
    switch = int(plan.best.switch) // B1 * B1 if plan.best.kind == "schedule" else None

    runs = [summarize_run("constant_small", f"constant B={B1}", Schedule(B1, B1, 0),
                          res.prog_n[0, 0], res.fail_n[0, 0], thr, idx),
            summarize_run("constant_large", f"constant B={B2}", Schedule(B2, B2, 0),
                          res.prog_n[1, 0], res.fail_n[1, 0], thr, idx)]
    runs[0]["curve"] = median_curve(res.ckpt[0], ns.model)
    runs[1]["curve"] = median_curve(res.ckpt[1], ns.model)

    # the measured grid of switch points (plus the planned one)
    hi = small.n_prog if np.isfinite(small.n_prog) else ns.budget / 2
    grid = sorted({int(s) // B1 * B1 for s in np.linspace(0, hi, ns.switches)} |
                  ({switch} if switch else set()))
    sweep_rows, sched_run = [], None
    for S in grid:
        sched = Schedule(B1, B2, S)
        out = run_schedule(ns.model, model_cfg, opt, sched, [ns.lr0], ns.seeds, ns.budget,
                           seed=ns.seed, n_ckpt=ns.n_ckpt, carry=ns.carry)
        row = summarize_run("schedule", f"B={B1} -> {B2} at {S}", sched, out["prog_n"][0],
                            out["fail_n"][0], thr, idx)
        sweep_rows.append({k: row[k] for k in ("switch", "progress_samples", "failure_samples",
                                                "reached_first", "hours")})
        if S == switch:
            sched_run = row
            sched_run["curve"] = median_curve({k: v for k, v in out["ckpt"].items()}, ns.model)
            sched_run["label"] = f"B={B1} -> {B2} (planned switch)"
        if not ns.quiet:
            print(f"[schedule] switch {S}: reached first {row['reached_first']:.2f}",
                  file=sys.stderr, flush=True)
    if sched_run is not None:
        runs.append(sched_run)

    out = {
        "model": ns.model, "runs": runs,
        "plan": {**plan.to_dict(), "switch_samples": switch,
                 "clocks": {"small": vars(small) if hasattr(small, "__dict__") else small,
                            "large": large.__dict__}},
        "switch_sweep": sweep_rows,
        "curve_target": curve_target(ns.model, model_cfg),
        "config": results.config_dict(model=model_cfg, optimizer=opt, sweep=sweep,
                                      throughput=thr.model, responses_per_sample=thr.responses_per_sample,
                                      margin=ns.margin, fail_quantile=ns.fail_quantile,
                                      objective=ns.objective, carry=ns.carry, lr0=ns.lr0,
                                      planner=ns.planner,
                                      batch_small=B1, batch_large=B2),
        "versions": results.versions(),
        "seconds": time.perf_counter() - t0,
    }
    out["plan"]["clocks"] = {k: {"batch": c.batch, "n_prog": _fin(c.n_prog),
                                 "n_fail": _fin(c.n_fail)} for k, c in
                             (("small", small), ("large", large))}
    for o in out["plan"]["options"] + [out["plan"]["best"]]:
        for k in ("samples", "seconds", "failure_fraction"):
            o[k] = _fin(o[k])
    from twoclock.figures_style import schedule_figure
    publish(ns, "schedule", out, report(out), schedule_figure)
    return 0


def _fin(v):
    return None if v is None or not np.isfinite(v) else float(v)


def _fmt(s: dict, spec=".0f") -> str:
    m = s["median"]
    if m is None:
        return f">budget ({s['reached']}/{s['seeds']})"
    lo, hi = s["ci"]
    f = lambda v: "?" if v is None else format(v, spec)
    return f"{format(m, spec)} [{f(lo)}, {f(hi)}]"


def report(out: dict) -> str:
    plan = out["plan"]
    c = plan["clocks"]
    lines = [
        f"clocks (samples; N_prog median, N_fail {out['config']['fail_quantile']:.0%} quantile): "
        f"B={c['small']['batch']}: N_prog {c['small']['n_prog']}, N_fail {c['small']['n_fail']}; "
        f"B={c['large']['batch']}: N_prog {c['large']['n_prog']}, N_fail {c['large']['n_fail']}",
        "plan ({} planner, margin {:.0%}):".format(out["config"]["planner"], plan["margin"]),
    ]
    for o in plan["options"]:
        f = lambda v, spec: "never" if v is None else format(v, spec)
        lines.append(f"  {o['kind']:<15} switch {o['switch']:>8.0f}  samples {f(o['samples'], '.0f'):>6}"
                     f"  hours {f(o['seconds'] and o['seconds'] / 3600, '.2f'):>6}"
                     f"  failure clock spent {f(o['failure_fraction'], '.2f')}"
                     f"  {'safe' if o['safe'] else 'UNSAFE'}")
    lines.append(f"  -> best: {plan['best']['kind']}"
                 + (f" (switch at {plan['switch_samples']} samples)" if plan["switch_samples"] else ""))
    lines.append("")
    lines.append(f"{'run':<32} {'samples to target':>26} {'failure clock':>26} "
                 f"{'reach first':>11} {'hours to target':>22}")
    for r in out["runs"]:
        lines.append(f"{r['label']:<32} {_fmt(r['progress_samples']):>26} "
                     f"{_fmt(r['failure_samples']):>26} {r['reached_first']:>11.2f} "
                     f"{_fmt(r['hours'], '.2f'):>22}")
    lines.append("(hours count a run whose failure clock fires first as never reaching the target)")
    lines.append("")
    lines.append("switch grid (measured): " + "; ".join(
        f"{r['switch']}: {r['reached_first']:.2f} reach, "
        f"{'never' if r['hours']['median'] is None else format(r['hours']['median'], '.2f') + ' h'}"
        for r in out["switch_sweep"]))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
