"""Phase diagram over (batch, lr0): `python experiments/phase_diagram.py [--models NAME ...]`.

For each model, sweeps batch x lr0 x seed (sqrt rule by default), colours each cell by the
margin N_fail - N_prog (medians), crosses the cells where most seeds fail first, and draws
the theory's boundary N_fail = N_prog where the model's theory gives one (the quadratic's;
twoclock.studies.phase_study). Each model's grid is its phase default, which lowers the failure
threshold so that the boundary crosses the grid. --seeds, --seed and --n-ckpt apply to every
panel; the grid and model flags need a single --models entry.
"""
import sys

from twoclock.cli.common import (OneLineParser, add_model_flags, add_output_args, guard,
                                 model_config, parsed, publish)
from twoclock.cli.flags import add_config_flags, config_from_flags, dest
from twoclock.config import OptimConfig, SweepConfig
from twoclock.engine.runtime import setup
from twoclock.figures.style import phase_figure
from twoclock.models import get as get_model
from twoclock.studies import phase_study as study

PROG = "phase_diagram.py"
SHARED = ("seeds", "seed", "n_ckpt")  # sweep flags that apply to every panel


def parse(argv):
    """(models, opt, study config, setups, ns); ValueError if invalid."""
    pre = OneLineParser(prog=PROG, add_help=False)
    pre.add_argument("--models", nargs="+", default=list(study.PhaseStudy().models))
    models = [get_model(m) for m in pre.parse_known_args(argv)[0].models]
    one = models[0] if len(models) == 1 else None
    p = OneLineParser(prog=PROG, description=__doc__)
    add_config_flags(p.add_argument_group("study"), study.PhaseStudy)
    g = p.add_argument_group("sweep (each model's phase grid by default)")
    add_config_flags(g, SweepConfig, rename={"lr0s": "lr0"},
                     defaults=study.defaults(one)["sweep"] if one else None)
    if one is not None:
        g.add_argument("--failure-clock", choices=study.failure_clocks(one), default=None,
                       help="the panel's failure clock")
        add_model_flags(p, one, defaults=study.defaults(one).get("model"))
    else:
        add_config_flags(p.add_argument_group("optimizer"), OptimConfig,
                         rename={"name": "optimizer"})
    add_output_args(p, "phase_diagram")
    ns = p.parse_args(argv)
    cfg = config_from_flags(ns, study.PhaseStudy)
    setups = {}
    for m in models:
        d = study.defaults(m)
        if one is None:
            given = [f for f in SweepConfig.__dataclass_fields__ if f not in SHARED
                     and hasattr(ns, dest(SweepConfig, f))]
            if given:
                raise ValueError(f"--{given[0].replace('_', '-').replace('lr0s', 'lr0')} "
                                 "changes one model's grid: give a single --models entry")
        shared = {f: getattr(ns, dest(SweepConfig, f)) for f in SHARED
                  if hasattr(ns, dest(SweepConfig, f))}
        sweep = config_from_flags(ns, SweepConfig, defaults={**d["sweep"], **shared})
        model_cfg = (model_config(ns, m, sweep.batches, d.get("model")) if one is not None
                     else m.config(**d.get("model", {})))
        setups[m.name] = study.panel_setup(m, model_cfg, sweep,
                                           getattr(ns, "failure_clock", None))
    return models, config_from_flags(ns, OptimConfig), cfg, setups, ns


def main(argv=None) -> int:
    setup()
    models, opt, cfg, setups, ns = parsed(PROG, parse, argv)
    with guard(ns, "phase_diagram", PROG) as rescue:
        out = study.run(models, opt, cfg, setups, quiet=ns.quiet, keep=rescue.keep)
        publish(ns, "phase_diagram", out, study.report, phase_figure, rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
