"""Which regime is each bandit direction in, under injected and emergent drift?
`python experiments/bandit_regimes.py`.

Per case (twoclock.studies.bandit_regimes.CASES) and batch (64 ... 1024 responses): both clocks,
the emergent collapse, the measured gradient noise scale of the skill and the drift block, the
drift's restoring force and Adam's normaliser; for the emergent drift, the exponent p of
lr ~ B^p that holds the failure clock flat.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("bandit_regimes")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
