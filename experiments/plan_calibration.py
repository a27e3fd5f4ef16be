"""The planner's bands calibrated from logs: `python experiments/plan_calibration.py
[--models quadratic bandit policy]`.

Simulates each model's pilots (4 batches x 16 seeds) and held-out runs at 4x and 8x the
largest pilot, plans from six pilot designs of those logs (3 or 4 batches; 8 seeds, or two
disjoint sets of 4), and prints the coverage of the 50/80/95% bands and their median
half-width per model and clock kind (the table in docs/plan.md). `--design practitioner`: one
seed per batch, fixed lr and the sqrt rule, an evaluation on 1000 items every 25 updates with
none at step 0, pilots at 3 batches, held out at 2x and 8x (its table in docs/plan.md). The simulated logs are kept
under --out and reused while the simulation's configuration and code are unchanged.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("plan_calibration")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
