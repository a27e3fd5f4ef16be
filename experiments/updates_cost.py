"""What K optimizer updates per rollout batch cost against m = B / K:
`python experiments/updates_cost.py`.

On the bandit under a fixed lr, per lr0 and clip eps: the progress clock of runs at B = K m
with K updates of m responses each, over the one-update run at m (1: the planner's m = B / K
holds), with paired bootstrap CIs, the one-update run at B beside it, and the clip fraction
(twoclock.studies.updates_cost; docs/plan.md, "Updates per rollout batch").
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("updates_cost")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
