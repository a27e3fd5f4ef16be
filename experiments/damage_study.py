"""The harmful drift the reward cannot see: `python experiments/damage_study.py [--quick]`.

Each learning-rate rule's cell is a sweep through the engine, resumable from the store under
--out/store; prints the answers beside the noise-walk theory's predictions and writes
damage_study.json (and its figure) to --out.
"""
from functools import partial
import sys

from twoclock.cli import run_study
from twoclock.studies import STUDIES

main = partial(run_study.main, STUDIES.damage_study)  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
