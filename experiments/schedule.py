"""Batch schedule vs constant batches: `python experiments/schedule.py [--model bandit] [flags]`.

Measures both clocks at a small batch B1 and a large batch B2, plans the switch B1 -> B2
under the wall-clock throughput model, simulates the planned schedule and a grid of switch
points, and prints samples and hours to target for constant B1, constant B2 and the
schedule (twoclock.studies.schedule_study). Writes a JSON file and a figure (PDF + PNG).

Quadratic model (default): B1 = 8 -> B2 = 256, lr0 0.01, budget 20k samples, collapse
threshold 0.2 instead of 1.0, so that the failure clock fires after the target at B1 but
before it at B2; one simulated sample stands for 32 responses. `--model bandit`: B1 = 64 ->
B2 = 1024 responses, lr0 0.02, budget 40k responses, drift threshold 0.4 instead of 2; one
sample is one response, and the progress curve is held-out error / initial error.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("schedule")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
