"""The source article's three clipping claims on the RLVR bandit: `python experiments/clipping.py`.

(a) clipping delays the failure clock, more at the largest batch; (b) without clipping the
progress gap remains; (c) a wider clip learns faster early and fails earlier. Defaults: the
emergent-drift regime of twoclock.studies.clipping.EMERGENT (M = 4 minibatches x E = 2 epochs,
where clipping binds), B = 64 and 1024, eps 0.1 ... 0.5 and none, 16 seeds.
"""
import sys

from twoclock.cli.common import OneLineParser, add_output_args, guard, parsed, publish
from twoclock.config import OptimConfig
from twoclock.figures.clipping import claims_figure, regime_map_figure
from twoclock.cli.flags import add_config_flags, config_from_flags, float_or_none
from twoclock.models.bandit import BanditConfig
from twoclock.engine.runtime import setup
from twoclock.studies import clipping


def parse(argv):
    d = clipping.Study()
    p = OneLineParser(prog="clipping.py", description=__doc__.split("\n")[0])
    p.add_argument("--batches", type=int, nargs="+", default=list(d.batches),
                   help="batches in responses; the claims use the smallest and the largest")
    p.add_argument("--clips", type=float_or_none, nargs="+", default=list(d.clips),
                   help="symmetric clip eps values; 'none' = unclipped (required)")
    p.add_argument("--lr0", type=float, default=d.lr0, help="base learning rate at --b0")
    p.add_argument("--seeds", type=int, default=d.seeds)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--budget", type=int, default=d.budget, help="responses per run")
    p.add_argument("--early-samples", type=int, default=d.early_samples,
                   help="responses after which early held-out accuracy is read")
    p.add_argument("--regime-map", action="store_true",
                   help="instead: the delay over (batch, eps) and (lr0, eps), batches 64, 256, "
                        "1024 x lr0 0.01, 0.02, 0.04 x the clips (writes clipping_regime_map)")
    add_output_args(p, "clipping")
    add_config_flags(p.add_argument_group("optimizer"), OptimConfig,
                     rename={"name": "optimizer"})
    add_config_flags(p.add_argument_group("bandit model (every run; clip_low is --clips)"),
                     BanditConfig, skip=("clip_low", "clip_high"), defaults=clipping.EMERGENT)
    ns = p.parse_args(argv)
    study = clipping.Study(batches=tuple(ns.batches), clips=tuple(ns.clips), lr0=ns.lr0,
                           seeds=ns.seeds, seed=ns.seed, budget=ns.budget,
                           early_samples=ns.early_samples)
    base = config_from_flags(ns, BanditConfig, defaults=clipping.EMERGENT)
    opt = config_from_flags(ns, OptimConfig)
    study.check(base)
    return ns, study, base, opt


def main(argv=None) -> int:
    ns, study, base, opt = parsed("clipping.py", parse, argv)
    setup()  # all cores as devices, persistent compilation cache
    if ns.regime_map:
        with guard(ns, "clipping_regime_map", "clipping.py") as rescue:
            m = clipping.regime_map(base, opt, clips=[c for c in study.clips if c is not None],
                                    seeds=study.seeds, seed=study.seed, budget=study.budget,
                                    quiet=ns.quiet, keep=rescue.keep)
            publish(ns, "clipping_regime_map", m, clipping.regime_report, regime_map_figure,
                    rescue=rescue)
        return 0
    with guard(ns, "clipping", "clipping.py") as rescue:
        out = clipping.run(study, base, opt, quiet=ns.quiet, keep=rescue.keep)
        publish(ns, "clipping", out, lambda o: f"{clipping.report(o)}\n\n"
                f"{len(o['runs']) * study.seeds} runs in {o['seconds']:.1f} s", claims_figure,
                rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
