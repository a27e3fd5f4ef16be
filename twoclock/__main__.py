"""`python -m twoclock ...` is the `twoclock` command (`twoclock.cli.main`)."""
import sys

from twoclock.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
