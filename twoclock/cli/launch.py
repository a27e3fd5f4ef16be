"""experiments/X.py is `main = study_main("X")`: the study's command, with its heavy imports
(JAX, the engine: seconds) made when main runs, inside `rescue.loading`, not when the script
loads, so that a Ctrl-C or SIGTERM before the run starts ends in one line and exit 130 or 143,
never a traceback from inside an import or a signal lost in JAX's callbacks. From the first
simulation on, the rescue guard (`twoclock.cli.rescue`) answers a signal."""
import os
import sys

from twoclock.cli.rescue import loading


def study_main(name: str):
    """main(argv=None) -> exit code of the study registered as `name` (twoclock.studies)."""
    def main(argv=None) -> int:
        with loading(os.path.basename(sys.argv[0])):
            from twoclock.cli import run_study
            from twoclock.studies import STUDIES
        return run_study.main(STUDIES[name], argv)
    main.__doc__ = f"The {name} study's command: main(argv=None) -> exit code."
    return main
