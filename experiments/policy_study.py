"""The policy model's study (issue 22 item 4): `python experiments/policy_study.py [--quick]`.

Sweeps through the engine, each resumable from the store under --out (default results/);
prints the answers and writes policy_study[_quick].json there.
"""
import argparse
import dataclasses
import json
import os
import sys

from twoclock.studies import policy_study


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="batches 64 and 512, 4 seeds, budget 12288, fixed_m only (~15 min)")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--budget", type=int, default=None)
    p.add_argument("--batches", type=int, nargs="+", default=None)
    p.add_argument("--parts", nargs="+", default=None, choices=("rules", "clip", "collapse"),
                   help="cells to run: rules (sqrt and fixed), clip, collapse (default all)")
    p.add_argument("--out", default="results")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--max-lanes", type=int, default=None,
                   help="runs per compiled chunk (the engine's memory estimate may ask for fewer)")
    ns = p.parse_args(argv)
    st = policy_study.QUICK if ns.quick else policy_study.Study()
    over = {k: (tuple(v) if isinstance(v, list) else v)
            for k, v in (("seeds", ns.seeds), ("budget", ns.budget), ("batches", ns.batches),
                         ("parts", ns.parts))
            if v is not None}
    st = dataclasses.replace(st, **over)
    out = policy_study.run(st, store_root=os.path.join(ns.out, "store"), quiet=ns.quiet,
                           max_lanes=ns.max_lanes)
    text = policy_study.report(out)
    print(text)
    os.makedirs(ns.out, exist_ok=True)
    name = "policy_study_quick" if ns.quick else "policy_study"
    if ns.parts:
        name += "_" + "_".join(ns.parts)
    with open(os.path.join(ns.out, name + ".json"), "w") as f:
        json.dump(out, f, indent=1, default=str)
    with open(os.path.join(ns.out, name + ".txt"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
