"""Which regime is each bandit direction in? `python experiments/bandit_regimes.py`.

Runs the default bandit (noise-dominated drift) and a signal-dominated-drift counter-example
over a 16x batch range and prints, per batch, both clocks, the emergent collapse, the theory's
failure clock and the measured gradient noise scale B_simple = tr(Sigma) / |G|^2 (responses) of
the skill block (over checkpoints up to the progress clock) and of the drift block (up to the
failure clock). A direction is noise-dominated at batch B when B < B_simple.
"""
import dataclasses
import os
import sys
import time

from twoclock import bandit, report, results
from twoclock.cli import OneLineParser, fail
from twoclock.config import OptimConfig, SweepConfig
from twoclock.sweep import run_sweep

CASES = {
    "default (noise-dominated drift)": {},
    "signal-dominated drift (c_d = 0.01)": dict(drift_noise=0.01, drift_threshold=10.0,
                                                drift_scale=0.05),
}


def main(argv=None) -> int:
    p = OneLineParser(prog="bandit_regimes.py", description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=16)
    p.add_argument("--out", default="results")
    p.add_argument("--json", help="JSON path (default OUT/bandit_regimes.json)")
    p.add_argument("--quiet", action="store_true")
    ns = p.parse_args(argv)
    from twoclock.runtime import setup
    setup()  # all cores as devices, persistent compilation cache
    d, opt = bandit.DEFAULT_SWEEP, OptimConfig()
    try:
        sweep = SweepConfig(batches=d["batches"], lr0s=d["lr0s"], seeds=ns.seeds,
                            budget=d["budget"])
    except ValueError as e:
        fail("bandit_regimes.py", str(e))
    out = {"cases": {}, "versions": results.versions()}
    for name, kw in CASES.items():
        cfg = dataclasses.replace(bandit.BanditConfig(), **kw)
        t0 = time.perf_counter()
        res = run_sweep("bandit", cfg, opt, sweep, quiet=ns.quiet)
        runs = results.run_entries(res, opt, extra_summaries=("collapse_n",))
        bandit.annotate(cfg, opt, sweep, res, runs, [])
        for r in runs:
            r.update(bandit.describe_batch(cfg, r["batch"]))
        case = {"unit": "responses", "overrides": kw, "runs": runs,
                "config": results.config_dict(model=cfg, optimizer=opt, sweep=sweep),
                "seconds": time.perf_counter() - t0}
        out["cases"][name] = case
        print(f"\n{name}: {case['seconds']:.0f} s")
        print(report.clock_table(case))
    path = ns.json or os.path.join(ns.out, "bandit_regimes.json")
    results.write_json(path, out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
