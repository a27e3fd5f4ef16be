"""Known-answer check of the planner: `python experiments/plan_check.py [--model bandit]`.

Simulates pilot runs at a few small batches, plans from them, and prints the prediction
errors at held-out larger batches (the numbers quoted in docs/plan.md). With `--logs [FILE]`
the pilots (3 batches x 8 seeds) are written as per-step logs, the plan is made from that file
alone (`plan.py --logs`), and every clock is scored at 4x and 8x the largest pilot.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("plan_check")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
