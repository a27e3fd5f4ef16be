"""Which regime is each bandit direction in, under injected and emergent drift?
`python experiments/bandit_regimes.py`.

Per case (twoclock.studies.bandit_regimes.CASES) and batch (64 ... 1024 responses): both clocks,
the emergent collapse, the measured gradient noise scale of the skill and the drift block, the
drift's restoring force and Adam's normaliser; for the emergent drift, the exponent p of
lr ~ B^p that holds the failure clock flat.
"""
import sys

from twoclock.cli.common import OneLineParser, add_output_args, guard, publish
from twoclock.engine.runtime import setup
from twoclock.studies import bandit_regimes


def main(argv=None) -> int:
    p = OneLineParser(prog="bandit_regimes.py", description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=16)
    p.add_argument("--cases", nargs="+", type=int, default=None,
                   help="case indices (default all): " + "; ".join(
                       f"{i} = {n}" for i, n in enumerate(bandit_regimes.CASES)))
    add_output_args(p, "bandit_regimes")
    ns = p.parse_args(sys.argv[1:] if argv is None else argv)
    names = list(bandit_regimes.CASES)
    idx = range(len(names)) if ns.cases is None else ns.cases
    if ns.seeds < 1 or any(not 0 <= i < len(names) for i in idx):
        p.error(f"seeds must be >= 1 and cases in [0, {len(names) - 1}]")
    setup()  # all cores as devices, persistent compilation cache
    with guard(ns, "bandit_regimes", "bandit_regimes.py") as rescue:
        out = bandit_regimes.run([names[i] for i in idx], ns.seeds, quiet=ns.quiet,
                                 keep=rescue.keep)
        publish(ns, "bandit_regimes", out, bandit_regimes.report_text, rescue=rescue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
