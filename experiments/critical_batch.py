"""Both clocks against batch size: `python experiments/critical_batch.py [--model bandit] ...`."""
import sys

from twoclock.cli import run_study
from twoclock.studies import STUDIES

if __name__ == "__main__":
    sys.exit(run_study.main(STUDIES.headline))
