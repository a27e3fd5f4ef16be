"""The policy model's study: `python experiments/policy_study.py [--quick]`.

Every cell is a sweep through the engine, resumable from the store under --out/store; prints the
answers with their CIs and writes policy_study[_quick][_<parts>].json (and its figure) to --out.
"""
import dataclasses
import sys

from twoclock.cli.common import OneLineParser, add_output_args, guard, parsed, publish
from twoclock.config import require, require_int, require_positive
from twoclock.engine.runtime import setup
from twoclock.figures.policy_study import study_figure
from twoclock.studies import policy_study


def parse(argv):
    d = policy_study.Study()
    p = OneLineParser(prog="policy_study.py", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="batches 64 and 512, 4 seeds, fixed_m only (~20 min on 2 cores)")
    p.add_argument("--seeds", type=int, default=None, help=f"seeds per cell ({d.seeds})")
    p.add_argument("--budget", type=int, default=None, help=f"responses per run ({d.budget})")
    p.add_argument("--batches", type=int, nargs="+", default=None,
                   help=f"batches in responses {d.batches}; the clipping and collapse cells "
                        "use the smallest and the largest")
    p.add_argument("--parts", nargs="+", default=None, choices=policy_study.PARTS,
                   help="cells to run: rules (sqrt and fixed), clip, collapse (default all)")
    p.add_argument("--clip-lr-factor", type=float, default=None,
                   help=f"the clipping cells' lr0 / lr0 ({d.clip_lr_factor})")
    p.add_argument("--max-lanes", type=int, default=None,
                   help=f"runs per compiled chunk ({d.max_lanes})")
    add_output_args(p, "policy_study")
    ns = p.parse_args(argv)
    st = policy_study.QUICK if ns.quick else d
    over = {k: (tuple(v) if isinstance(v, list) else v)
            for k, v in (("seeds", ns.seeds), ("budget", ns.budget), ("batches", ns.batches),
                         ("parts", ns.parts), ("max_lanes", ns.max_lanes),
                         ("clip_lr_factor", ns.clip_lr_factor)) if v is not None}
    st = dataclasses.replace(st, **over)
    require_int("--seeds", st.seeds, lo=2)
    require_int("--budget", st.budget, lo=1)
    require_int("--max-lanes", st.max_lanes, lo=1)
    require_positive("--clip-lr-factor", st.clip_lr_factor)
    require(len(set(st.batches)) >= 2 and min(st.batches) >= 1, "--batches",
            "at least two distinct batches >= 1", st.batches)
    ns.name = "policy_study" + ("_quick" if ns.quick else "") + (
        "_" + "_".join(ns.parts) if ns.parts else "")
    return ns, st


def main(argv=None) -> int:
    ns, st = parsed("policy_study.py", parse, argv)
    setup()  # all cores as devices, persistent compilation cache
    with guard(ns, ns.name, "policy_study.py") as rescue:
        out = policy_study.run(st, store_root=f"{ns.out}/store", quiet=ns.quiet,
                               log=(lambda m: None) if ns.quiet else print, keep=rescue.keep)
        publish(ns, ns.name, out, policy_study.report, study_figure, rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
