"""Both clocks against batch size: `python experiments/critical_batch.py [--model bandit] ...`."""
import sys

from twoclock.cli.headline import main

if __name__ == "__main__":
    sys.exit(main())
