"""Known-answer check of the planner: `python experiments/plan_check.py [--model bandit]`.

Simulates pilot runs at a few small batches, plans from them, and prints the prediction
errors at held-out larger batches (the numbers quoted in docs/plan.md).
"""
import sys

import twoclock
from twoclock.cli import OneLineParser, add_output_args, fail, guard, publish
from twoclock.pilot import check as pilot_check

SETUPS = {  # model: (lr0, pilot batches, held-out batches, budget)
    "quadratic": (1e-2, (8, 16, 32, 64), (128, 256), 200_000),
    "bandit": (0.02, (64, 128, 256), (512, 1024), 100_000),
}


def main(argv=None) -> int:
    p = OneLineParser(prog="plan_check.py", description=__doc__)
    p.add_argument("--model", default="quadratic", choices=sorted(SETUPS))
    p.add_argument("--pilot-seeds", type=int, default=4, help="pilot runs per pilot batch")
    p.add_argument("--seeds", type=int, default=16, help="seeds behind the held-out answers")
    p.add_argument("--csv", help="also write the simulated pilot runs to this CSV")
    add_output_args(p, "plan_check")
    ns = p.parse_args(sys.argv[1:] if argv is None else argv)
    lr0, pilots, held, budget = SETUPS[ns.model]
    cfg = twoclock.QuadraticConfig() if ns.model == "quadratic" else twoclock.BanditConfig()
    name = f"plan_check_{ns.model}"
    with guard(ns, name, "plan_check.py"):
        try:
            out = pilot_check.check(ns.model, cfg, twoclock.OptimConfig(), lr0, pilots, held,
                                    ns.pilot_seeds, ns.seeds, budget, ns.csv)
        except ValueError as e:
            fail("plan_check.py", str(e))
        publish(ns, name, out, pilot_check.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
