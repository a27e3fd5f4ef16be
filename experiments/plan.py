"""From a few pilot runs to a plan: `python experiments/plan.py [RUNS.csv] [--predict B ...]`.

RUNS.csv has one row per pilot run: batch, lr, progress_samples, failure_samples (empty when
the run did not fail) and optionally budget, seconds_per_update, seed. With no CSV the plan
runs on the published GRPO time-to-target table shipped in twoclock/data.
"""
import sys

from twoclock.cli import OneLineParser, add_output_args, check_outputs, fail, publish
from twoclock.pilot import figure as pilot_figure, report as pilot_report


def main(argv=None) -> int:
    p = OneLineParser(prog="plan.py", description=__doc__)
    p.add_argument("runs", nargs="?", help="pilot-run CSV (default: the published GRPO table)")
    p.add_argument("--predict", type=float, nargs="+", metavar="B",
                   help="batches to predict and plan over (default: the pilot batches)")
    p.add_argument("--margin", type=float, default=0.1,
                   help="fraction of the failure clock that must be left at the target")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of the bands")
    add_output_args(p, "plan")
    ns = p.parse_args(sys.argv[1:] if argv is None else argv)
    check_outputs(ns, "plan", "plan.py")
    try:
        out = pilot_report.plan_file(ns.runs, ns.predict, ns.margin, ns.level)
    except ValueError as e:
        fail("plan.py", str(e))
    publish(ns, "plan", out, pilot_report.table, pilot_figure.plan_figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
