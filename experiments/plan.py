"""From a few pilot runs to a plan: `python experiments/plan.py ...` is `twoclock plan ...`
(`twoclock/cli/plan.py`; `--help` lists every flag)."""
import sys

from twoclock.cli.plan import main

if __name__ == "__main__":
    sys.exit(main())
