"""Both clocks against batch size: `python experiments/critical_batch.py [--model bandit] ...`."""
import sys

from twoclock.cli.launch import study_main

main = study_main("headline")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
