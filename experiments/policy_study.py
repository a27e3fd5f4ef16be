"""The policy model's study: `python experiments/policy_study.py [--quick]`.

Every cell is a sweep through the engine, resumable from the store under --out/store; prints the
answers with their CIs and writes policy_study[_quick][_<parts>].json (and its figure) to --out.
"""
from functools import partial
import sys

from twoclock.cli import run_study
from twoclock.studies import STUDIES

main = partial(run_study.main, STUDIES.policy_study)  # main(argv=None) -> exit code

if __name__ == "__main__":
    sys.exit(main())
