"""From a few pilot runs to a plan: `twoclock plan [RUNS.csv] [--predict B[:K] ...]` (also
`python experiments/plan.py ...`), or from their logged curves: `twoclock plan --logs LOGS.csv
--progress "heldout_acc>=0.7" --failure "kl>=0.5" [--failure ...] [--col
samples=train/num_samples] [--smooth ema:2000]`,
or from a trainer's own files: `twoclock plan --logs tb_runs/ --preset trl --batch b64=64 ...`
(a TensorBoard directory, trainer_state.json, verl's file logger; OpenRLHF's TensorBoard runs
with --preset openrlhf, which reads each run's batch from its logs; docs/plan.md).

RUNS.csv has one row per pilot run: batch, lr, progress_samples, failure_samples (empty when
the run did not fail) and optionally budget, seconds_per_update, seed, updates (K). With no CSV
the plan runs on the published GRPO time-to-target table shipped in twoclock/data.

What the planner understands (docs/plan.md):
LR rules: lr = lr0 (B / b0)^p with any p (fixed, sqrt, linear, or another exponent), inferred
from the pilots; by default the progress form is fitted on the runs of the rule most pilots
share (others are left out), and --progress-form adam fits runs at any lr and predicts under
their rule or --predict-rule P[:LR0@B0].
Update counts: K optimizer updates per rollout batch, from an `updates` column, minibatches x
epochs, --updates RUN=K, or verl's / TRL's own settings (default 1; OpenRLHF writes none:
give --updates); pilots with unequal K need
--progress-form adam, which reads K. --predict B:K asks for runs that take K (--predict 2048
8192:4): with --progress-form adam at m = B / K samples per update (B alone: K = 1); the
default forms plan only the pilots' K (B alone: that K).
Evaluation schedules: any spacing, per run; a clock is the first crossing, interpolated
linearly between the logged points around it (coarse logging is flagged); no step-0
evaluation is needed: a run already past the target at its first logged point gives the bound
(0, first point], not a clock; --smooth smooths noisy evaluations first.
"""
import argparse
from dataclasses import fields
import sys

from twoclock.cli.common import (OneLineParser, add_output_args, check_outputs, fail, json_path,
                                 publish)
from twoclock.cli.flags import add_config_flags, config_from_flags, dest
from twoclock.cli.rescue import Rescue
from twoclock.figures import pilot as pilot_figure, pilot_logs as logs_figure
from twoclock.pilot import levels, logs as pilot_logs, report as pilot_report
from twoclock.pilot.config import LogsInput, PlanConfig, RunsInput, plan


def _given(ns, cls) -> bool:
    """Whether any flag of cls is on the command line."""
    return any(hasattr(ns, dest(cls, f.name)) for f in fields(cls))


def main(argv=None, prog: str = "plan.py") -> int:
    p = OneLineParser(prog=prog, description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_flags(p, RunsInput)
    add_config_flags(p, PlanConfig, skip=PlanConfig.INPUTS)
    add_config_flags(p.add_argument_group("from logs (one row per logged step: run, batch, lr, "
                                          "samples, metrics; CSV or JSON Lines; or a "
                                          "TensorBoard directory, trainer_state.json, verl's "
                                          "file logger)"),
                     LogsInput, rename=LogsInput.RENAME)
    add_output_args(p, "plan")
    ns = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:  # one input mode, nested: only the one whose flags were given
        logs = config_from_flags(ns, LogsInput) if _given(ns, LogsInput) else None
        runs = config_from_flags(ns, RunsInput) if _given(ns, RunsInput) else None
        cfg = config_from_flags(ns, PlanConfig, runs=runs, logs=logs)
    except ValueError as e:
        fail(prog, str(e))
    check_outputs(ns, "plan", prog)
    try:
        out = plan(cfg)
    except ValueError as e:
        fail(prog, str(e))
    # the plan is computed: a failing table, JSON or figure keeps it (plan.partial.json, exit 3)
    with Rescue(prog, json_path(ns, "plan"), fallback=(ns.out,)) as rescue:
        if "targets" in out:  # several targets: the joint table, every target in the figure
            publish(ns, "plan", out, levels.table, logs_figure.targets_figure, rescue=rescue)
        elif cfg.logs is not None:
            publish(ns, "plan", out, pilot_logs.table, logs_figure.logs_figure, rescue=rescue)
        else:
            publish(ns, "plan", out, pilot_report.table, pilot_figure.plan_figure,
                    rescue=rescue)
    return 0
