"""Wall-clock time to target against batch: `python experiments/time_to_target.py [flags]`.

The quadratic model's samples to target (sqrt-scaled and fixed learning rate) divided by the
end-to-end throughput of an RLVR step (twoclock.analysis.throughput), normalised to the smallest
batch with the first rule (twoclock.studies.time_to_target). Marks the critical generation
batch (throughput knee) and the critical training batch (where samples to target grow by
1 + delta), and stars the optimum. A run whose failure clock fires before its target counts
as never reaching it. One simulated sample stands for 32 responses.
"""
import sys

from twoclock.cli.common import (OneLineParser, add_model_flags, add_output_args, model_config,
                          guard, model_from_argv, parsed, publish)
from twoclock.config import OptimConfig, SweepConfig, require
from twoclock.figures.style import time_to_target_figure
from twoclock.cli.flags import add_config_flags, config_from_flags
from twoclock.engine.runtime import setup
from twoclock.studies import time_to_target as study
from twoclock.analysis.throughput import ThroughputModel

PROG = "time_to_target.py"


def parse(argv):
    """(model, model_cfg, opt, sweep, study config, throughput, ns); ValueError if invalid."""
    model = model_from_argv(argv, PROG)
    d = study.defaults(model)
    p = OneLineParser(prog=PROG, description=__doc__)
    g = p.add_argument_group("sweep")
    add_config_flags(g, study.TimeToTarget)
    add_config_flags(g, SweepConfig, skip=("lr0s",), defaults=d["sweep"])
    add_config_flags(p.add_argument_group("throughput model"), ThroughputModel)
    add_model_flags(p, model, skip_optim=("lr_rule",))  # the rules are --lr-rules
    add_output_args(p, "time_to_target")
    ns = p.parse_args(argv)
    cfg = config_from_flags(ns, study.TimeToTarget)
    sweep = config_from_flags(ns, SweepConfig, defaults=d["sweep"], lr0s=(cfg.lr0,))
    thr = config_from_flags(ns, ThroughputModel).scaled(cfg.responses_per_sample)
    return (model, model_config(ns, model, sweep.batches), config_from_flags(ns, OptimConfig),
            sweep, cfg, thr, ns)


def main(argv=None) -> int:
    setup()
    model, model_cfg, opt, sweep, cfg, thr, ns = parsed(PROG, parse, argv)
    with guard(ns, "time_to_target", PROG) as rescue:
        out = study.run(model, model_cfg, opt, sweep, cfg, thr, quiet=ns.quiet, keep=rescue.keep)
        # without a reference time there is nothing to normalise the figure by
        publish(ns, "time_to_target", out, study.report,
                time_to_target_figure if out["reference_seconds"] is not None else None,
                rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
