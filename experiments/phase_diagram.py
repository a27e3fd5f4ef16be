"""Phase diagram over (batch, lr0): `python experiments/phase_diagram.py [flags]`.

For each model, sweeps batch x lr0 x seed (sqrt rule by default), colours each cell by the
margin N_fail - N_prog (medians, samples), crosses the cells where most seeds fail first, and
draws the theory's boundary N_fail = N_prog over it (quadratic model: Adam failure clock and
mean-field progress clock of twoclock.theory; the bandit has no closed-form boundary).
The quadratic default uses a collapse threshold of 0.2 (see experiments/schedule.py)
so that the boundary crosses the grid.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _p in (ROOT, HERE):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from schedule import add_optim_args, optim_from_args  # noqa: E402
from twoclock.cli import OneLineParser, add_output_args, fail, publish  # noqa: E402


def parse(argv):
    import twoclock  # noqa: F401
    from twoclock.sweep import MODELS
    p = OneLineParser(prog="phase_diagram.py", description=__doc__)
    s = p.add_argument_group("sweep")
    s.add_argument("--models", nargs="+", default=["quadratic", "bandit"],
                   help="quadratic and/or bandit")
    s.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256],
                   help="quadratic batches")
    s.add_argument("--lr0", type=float, nargs="+", default=[2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2],
                   help="quadratic base learning rates")
    s.add_argument("--bandit-batches", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    s.add_argument("--bandit-lr0", type=float, nargs="+", default=[0.01, 0.02, 0.04])
    s.add_argument("--bandit-budget", type=int, default=100_000)
    s.add_argument("--bandit-drift-threshold", type=float, default=0.5,
                   help="bandit collapse threshold on the drift statistic (its headline uses 2; "
                        "0.5 puts the boundary N_fail = N_prog inside the batch range)")
    s.add_argument("--bandit-clock", default="fail_n",
                   help="bandit failure clock: fail_n (drift threshold) | collapse_n")
    s.add_argument("--seeds", type=int, default=8)
    s.add_argument("--budget", type=int, default=30_000, help="quadratic sample budget per run")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--n-ckpt", type=int, default=8)
    s.add_argument("--theory-points", type=int, default=9,
                   help="theory grid points per axis (quadratic boundary)")
    add_optim_args(p)
    MODELS["quadratic"].add_args(p.add_argument_group("quadratic model"))
    p.set_defaults(drift_threshold=0.2)
    add_output_args(p, "phase_diagram")
    return p.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from twoclock.runtime import setup
    setup()  # all cores as devices, persistent compilation cache
    ns = parse(argv)
    import numpy as np
    from twoclock.config import SweepConfig, require, require_int
    from twoclock.sweep import MODELS
    try:
        for m in ns.models:
            require(m in ("quadratic", "bandit") and m in MODELS, "models",
                    "quadratic and/or bandit", m)
        require(ns.bandit_clock in ("fail_n", "collapse_n"), "bandit_clock",
                "fail_n or collapse_n", ns.bandit_clock)
        require_int("theory_points", ns.theory_points, lo=2)
        bcfg = _bandit_config(ns.bandit_drift_threshold) if "bandit" in ns.models else None
        opt = optim_from_args(ns)
        qcfg = MODELS["quadratic"].config_from_args(ns)
        qsweep = SweepConfig(batches=tuple(ns.batches), lr0s=tuple(ns.lr0), seeds=ns.seeds,
                             budget=ns.budget, seed=ns.seed, n_ckpt=ns.n_ckpt)
        bsweep = SweepConfig(batches=tuple(ns.bandit_batches), lr0s=tuple(ns.bandit_lr0),
                             seeds=ns.seeds, budget=ns.bandit_budget, seed=ns.seed,
                             n_ckpt=ns.n_ckpt)
    except ValueError as e:
        fail("phase_diagram.py", str(e))
    from twoclock import phase, results
    from twoclock.sweep import run_sweep

    t0 = time.perf_counter()
    panels, configs = [], {}
    if "quadratic" in ns.models:
        res = run_sweep("quadratic", qcfg, opt, qsweep, quiet=ns.quiet)
        panel = phase.phase_panel(res, "quadratic model (NQM)")
        if opt.name == "adam" and not qcfg.rotate:
            tb = np.geomspace(min(ns.batches), max(ns.batches), ns.theory_points)
            tl = np.geomspace(min(ns.lr0), max(ns.lr0), ns.theory_points)
            panel["theory"] = phase.quadratic_boundary(qcfg, opt, tb, tl, ns.budget)
        panels.append(panel)
        configs["quadratic"] = results.config_dict(model=qcfg, sweep=qsweep)
    if "bandit" in ns.models:
        spec = MODELS["bandit"]
        res = run_sweep("bandit", bcfg, opt, bsweep, quiet=ns.quiet)
        panels.append(phase.phase_panel(res, "bandit (RLVR)", unit=spec.unit,
                                        batch_unit="responses per update",
                                        fail_key=ns.bandit_clock))
        configs["bandit"] = results.config_dict(model=bcfg, sweep=bsweep,
                                                failure_clock=ns.bandit_clock)
    out = {"panels": panels,
           "config": {**configs, **results.config_dict(optimizer=opt)},
           "versions": results.versions(), "seconds": time.perf_counter() - t0}
    from twoclock.figures_style import phase_figure
    publish(ns, "phase_diagram", out, report(out), phase_figure)
    return 0


def _bandit_config(drift_threshold: float):
    from twoclock.bandit import BanditConfig
    return BanditConfig(drift_threshold=drift_threshold)


def report(out: dict) -> str:
    lines = []
    for p in out["panels"]:
        lines.append(f"{p['title']}: margin N_fail - N_prog ({p['unit']}; '>' = failure "
                     f"censored) / fraction of seeds reaching the target first")
        lines.append("lr0 \\ B  " + "".join(f"{b:>14}" for b in p["batches"]))
        for j, lr0 in enumerate(p["lr0s"]):
            cells = []
            for i in range(len(p["batches"])):
                m = p["margin"][j][i]
                cells.append(f"{'>' if m is None else format(m, '.0f'):>8} "
                             f"{p['reached_first'][j][i]:>5.2f}")
            lines.append(f"{lr0:<9.4g}" + "".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
