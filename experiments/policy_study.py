"""The policy model's study: `python experiments/policy_study.py [--quick]`.

Every cell is a sweep through the engine, resumable from the store under --out/store; prints the
answers with their CIs and writes policy_study[_quick][_<parts>].json (and its figure) to --out.
"""
import sys

from twoclock.cli.launch import study_main

main = study_main("policy_study")  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
