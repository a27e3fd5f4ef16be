"""Known-answer check of the planner: `python experiments/plan_check.py [--model bandit]`.

Simulates pilot runs at a few small batches, plans from them, and prints the prediction
errors at held-out larger batches (the numbers quoted in docs/plan.md). With `--logs [FILE]`
the pilots (3 batches x 8 seeds) are written as per-step logs, the plan is made from that file
alone (`plan.py --logs`), and every clock is scored at 4x and 8x the largest pilot.
"""
import os
import sys

import twoclock
from twoclock.cli.common import OneLineParser, add_output_args, fail, guard, publish
from twoclock.models import MODELS
from twoclock.pilot import check as pilot_check, logs_check

# every model with a plan-check entry (Model.studies["plan_check"]: lr0, pilot batches,
# held-out batches, budget)
CHECKED = sorted(n for n, m in MODELS.items() if "plan_check" in m.studies)


def main(argv=None) -> int:
    p = OneLineParser(prog="plan_check.py", description=__doc__)
    p.add_argument("--model", default="quadratic", choices=CHECKED)
    p.add_argument("--pilot-seeds", type=int, default=None,
                   help="pilot runs per pilot batch (default 4; with --logs 8)")
    p.add_argument("--seeds", type=int, default=16, help="seeds behind the held-out answers")
    p.add_argument("--csv", help="also write the simulated pilot runs to this CSV")
    p.add_argument("--logs", nargs="?", const="", metavar="FILE",
                   help="plan from the pilots' logged curves, written to FILE (default "
                        "OUT/plan_check_MODEL_logs.csv)")
    p.add_argument("--n-ckpt", type=int, default=512, help="with --logs: logged points per run")
    add_output_args(p, "plan_check")
    ns = p.parse_args(sys.argv[1:] if argv is None else argv)
    if ns.n_ckpt < 2:
        fail("plan_check.py", f"--n-ckpt must be an integer >= 2 (got {ns.n_ckpt})")
    for flag, v in (("--pilot-seeds", ns.pilot_seeds), ("--seeds", ns.seeds)):
        if v is not None and v < 1:
            fail("plan_check.py", f"{flag} must be an integer >= 1 (got {v})")
    model = MODELS[ns.model]
    s = model.studies["plan_check"]
    name = f"plan_check_{ns.model}" + ("" if ns.logs is None else "_logs")
    with guard(ns, name, "plan_check.py") as rescue:
        if ns.logs is not None:
            path = ns.logs or os.path.join(ns.out, f"{name}.csv")
            try:
                out = logs_check.check(model, model.config(), twoclock.OptimConfig(),
                                       8 if ns.pilot_seeds is None else ns.pilot_seeds,
                                       ns.seeds, ns.n_ckpt, path, keep=rescue.keep)
            except ValueError as e:
                fail("plan_check.py", str(e))
            publish(ns, name, out, logs_check.table, rescue=rescue)
            return 0
        try:
            out = pilot_check.check(model, model.config(), twoclock.OptimConfig(), s["lr0"],
                                    s["pilots"], s["heldout"],
                                    4 if ns.pilot_seeds is None else ns.pilot_seeds, ns.seeds,
                                    s["budget"], ns.csv, keep=rescue.keep)
        except ValueError as e:
            fail("plan_check.py", str(e))
        publish(ns, name, out, pilot_check.table, rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
