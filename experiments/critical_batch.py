"""Both clocks against batch size: `python experiments/critical_batch.py [--model bandit] ...`."""
from functools import partial
import sys

from twoclock.cli import run_study
from twoclock.studies import STUDIES

main = partial(run_study.main, STUDIES.headline)  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
