"""From a few pilot runs to a plan: `python experiments/plan.py [RUNS.csv] [--predict B ...]`,
or from their logged curves: `plan.py --logs LOGS.csv --progress "heldout_acc>=0.7"
--failure "kl>=0.5" [--failure ...] [--col samples=train/num_samples] [--smooth ema:2000]`.

RUNS.csv has one row per pilot run: batch, lr, progress_samples, failure_samples (empty when
the run did not fail) and optionally budget, seconds_per_update, seed. With no CSV the plan
runs on the published GRPO time-to-target table shipped in twoclock/data.
"""
import sys

from twoclock.cli.common import (OneLineParser, add_output_args, check_outputs, fail, json_path,
                                 publish)
from twoclock.cli.rescue import Rescue
from twoclock.figures import pilot as pilot_figure, pilot_logs as logs_figure
from twoclock.pilot import logs as pilot_logs, report as pilot_report


def main(argv=None) -> int:
    p = OneLineParser(prog="plan.py", description=__doc__)
    p.add_argument("runs", nargs="?", help="pilot-run CSV (default: the published GRPO table)")
    p.add_argument("--predict", type=float, nargs="+", metavar="B",
                   help="batches to predict and plan over (default: the pilot batches)")
    p.add_argument("--margin", type=float, default=0.1,
                   help="fraction of the failure clock that must be left at the target")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of the bands")
    g = p.add_argument_group("from logs (one row per logged step: run, batch, lr, samples, "
                             "metrics; CSV or JSON Lines)")
    g.add_argument("--logs", help="per-step log file of the pilot runs (instead of RUNS.csv)")
    g.add_argument("--progress", help="the target, e.g. 'heldout_acc>=0.7'")
    g.add_argument("--failure", action="append", help="a failure clock, e.g. 'kl>=0.5' "
                   "(repeat for several: each is fitted; the earliest sets the plan)")
    g.add_argument("--col", action="append", metavar="NAME=COLUMN",
                   help="read NAME (run, batch, lr, samples, a metric) from COLUMN")
    g.add_argument("--smooth", metavar="ema:T|window:W",
                   help="smooth each curve first (T, W in samples; docs/plan.md states the bias)")
    add_output_args(p, "plan")
    ns = p.parse_args(sys.argv[1:] if argv is None else argv)
    logs_flags = [f for f in ("progress", "failure", "col", "smooth") if getattr(ns, f)]
    if ns.logs is None and logs_flags:
        fail("plan.py", f"--{logs_flags[0]} needs --logs LOGS.csv")
    if ns.logs is not None and (ns.runs is not None or ns.progress is None):
        fail("plan.py", "--logs: give --progress (and no RUNS.csv)" if ns.runs is None
             else "give RUNS.csv or --logs LOGS.csv, not both")
    check_outputs(ns, "plan", "plan.py")
    try:
        if ns.logs is not None:
            out = pilot_logs.plan_logs(ns.logs, ns.progress, ns.failure, ns.predict, ns.margin,
                                       ns.level, ns.smooth, ns.col)
        else:
            out = pilot_report.plan_file(ns.runs, ns.predict, ns.margin, ns.level)
    except ValueError as e:
        fail("plan.py", str(e))
    # the plan is computed: a failing table, JSON or figure keeps it (plan.partial.json, exit 3)
    with Rescue("plan.py", json_path(ns, "plan"), fallback=(ns.out,)) as rescue:
        if ns.logs is not None:
            publish(ns, "plan", out, pilot_logs.table, logs_figure.logs_figure, rescue=rescue)
        else:
            publish(ns, "plan", out, pilot_report.table, pilot_figure.plan_figure,
                    rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
