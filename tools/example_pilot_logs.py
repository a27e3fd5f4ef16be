"""Regenerate twoclock/data/example_pilot_logs.csv: `python tools/example_pilot_logs.py [PATH]`.

Simulated pilots of the bandit (defaults but 2 minibatches per rollout batch, Adam, sqrt rule from
lr0 = 0.02) at B = 64, 128, 256 responses, 4 seeds each, each logged at 128 checkpoints over
50 000 responses: held-out accuracy, KL to the reference, entropy, the drift statistic and the
clipped share of samples (twoclock.studies.planner.logs_check.example).
The simulation is deterministic, so the file is reproduced bit for bit on one platform.
"""
import os
import sys

from twoclock.models import get
from twoclock.studies.planner.logs_check import example

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "twoclock",
                    "data", "example_pilot_logs.csv")

if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else DATA
    print(f"wrote {path}: {example(path, get('bandit'))} rows")
