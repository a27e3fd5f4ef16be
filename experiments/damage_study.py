"""The harmful drift the reward cannot see: `python experiments/damage_study.py [--quick]`.

Each learning-rate rule's cell is a sweep through the engine, resumable from the store under
--out/store; prints the answers beside the noise-walk theory's predictions and writes
damage_study.json (and its figure) to --out.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("damage_study")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
