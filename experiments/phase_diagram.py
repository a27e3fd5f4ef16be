"""Phase diagram over (batch, lr0): `python experiments/phase_diagram.py [flags]`.

For each model, sweeps batch x lr0 x seed (sqrt rule by default), colours each cell by the
margin N_fail - N_prog (medians), crosses the cells where most seeds fail first, and draws
the theory's boundary N_fail = N_prog over the quadratic panel (twoclock.studies.phase_study).
The quadratic default uses a collapse threshold of 0.2 and the bandit a drift threshold of
0.5, so that the boundary crosses the grid.
"""
import sys

from twoclock.cli import OneLineParser, add_output_args, guard, parsed, publish
from twoclock.config import OptimConfig, SweepConfig
from twoclock.figures_style import phase_figure
from twoclock.flags import add_config_flags, config_from_flags
from twoclock.models.quadratic import QuadraticConfig
from twoclock.runtime import setup
from twoclock.studies import phase_study as study

PROG = "phase_diagram.py"


def parse(argv):
    """(quadratic config, opt, quadratic sweep, study config, ns); ValueError if invalid."""
    p = OneLineParser(prog=PROG, description=__doc__)
    g = p.add_argument_group("sweep (batches and lr0: the quadratic's)")
    add_config_flags(g, SweepConfig, rename={"lr0s": "lr0"}, defaults=study.QUADRATIC_SWEEP)
    add_config_flags(g, study.PhaseStudy, rename={"bandit_lr0s": "bandit_lr0"})
    add_config_flags(p.add_argument_group("optimizer"), OptimConfig, rename={"name": "optimizer"})
    add_config_flags(p.add_argument_group("quadratic model"), QuadraticConfig,
                     defaults=study.QUADRATIC_MODEL)
    add_output_args(p, "phase_diagram")
    ns = p.parse_args(argv)
    cfg = config_from_flags(ns, study.PhaseStudy)
    sweep = config_from_flags(ns, SweepConfig, defaults=study.QUADRATIC_SWEEP)
    if "bandit" in cfg.models:
        study.bandit_grid(cfg, sweep)  # checks the bandit's grid before any simulation
    return (config_from_flags(ns, QuadraticConfig, defaults=study.QUADRATIC_MODEL),
            config_from_flags(ns, OptimConfig), sweep, cfg, ns)


def main(argv=None) -> int:
    setup()
    qcfg, opt, sweep, cfg, ns = parsed(PROG, parse, argv)
    with guard(ns, "phase_diagram", PROG):
        out = study.run(qcfg, opt, sweep, cfg, quiet=ns.quiet)
        publish(ns, "phase_diagram", out, study.report, phase_figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
