"""Batch schedule vs constant batches: `python experiments/schedule.py [--model bandit] [flags]`.

Measures both clocks at a small batch B1 and a large batch B2, plans the switch B1 -> B2
under the wall-clock throughput model, simulates the planned schedule and a grid of switch
points, and prints samples and hours to target for constant B1, constant B2 and the
schedule (twoclock.studies.schedule_study). Writes a JSON file and a figure (PDF + PNG).

Quadratic model (default): B1 = 8 -> B2 = 256, lr0 0.01, budget 20k samples, collapse
threshold 0.2 instead of 1.0, so that the failure clock fires after the target at B1 but
before it at B2; one simulated sample stands for 32 responses. `--model bandit`: B1 = 64 ->
B2 = 1024 responses, lr0 0.02, budget 40k responses, drift threshold 0.4 instead of 2; one
sample is one response, and the progress curve is held-out error / initial error.
"""
import argparse
import sys

from twoclock.cli.common import (OneLineParser, add_model_flags, add_output_args, model_config,
                                 guard, model_from_argv, parsed, publish)
from twoclock.config import OptimConfig, SweepConfig
from twoclock.figures.style import schedule_figure
from twoclock.cli.flags import add_config_flags, config_from_flags
from twoclock.engine.runtime import setup
from twoclock.studies import schedule_study as study
from twoclock.analysis.throughput import ThroughputModel

PROG = "schedule.py"


def parse(argv):
    """(model, model_cfg, opt, sweep, study config, throughput, ns); ValueError if invalid."""
    model = model_from_argv(argv, PROG)
    d = study.defaults(model)
    p = OneLineParser(prog=PROG, description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("schedule")
    add_config_flags(g, study.ScheduleStudy, defaults=d["study"])
    add_config_flags(g, SweepConfig, skip=("batches", "lr0s"), defaults=d["sweep"])
    add_config_flags(p.add_argument_group("throughput model"), ThroughputModel)
    add_model_flags(p, model, defaults=d["model"])
    add_output_args(p, "schedule")
    ns = p.parse_args(argv)
    cfg = config_from_flags(ns, study.ScheduleStudy, defaults=d["study"])
    sweep = config_from_flags(ns, SweepConfig, defaults=d["sweep"], lr0s=(cfg.lr0,),
                              batches=(cfg.batch_small, cfg.batch_large))
    thr = config_from_flags(ns, ThroughputModel).scaled(cfg.responses_per_sample)
    return (model, model_config(ns, model, sweep.batches, d["model"]),
            config_from_flags(ns, OptimConfig), sweep, cfg, thr, ns)


def main(argv=None) -> int:
    setup()
    model, model_cfg, opt, sweep, cfg, thr, ns = parsed(PROG, parse, argv)
    with guard(ns, "schedule", PROG) as rescue:
        out = study.run(model, model_cfg, opt, sweep, cfg, thr, quiet=ns.quiet, keep=rescue.keep)
        publish(ns, "schedule", out, study.report, schedule_figure, rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
