"""`twoclock COMMAND ...`, also `python -m twoclock COMMAND ...`: one command for the planner,
every study and the figures. The scripts in experiments/ are the same commands by another name
(`python experiments/critical_batch.py ...` is `twoclock run critical_batch ...`).

    twoclock plan ...          plan from pilot runs or their logs (experiments/plan.py)
    twoclock run STUDY ...     run a study: its flags follow (twoclock run STUDY --help)
    twoclock figures ...       every figure, from cached results (python -m paper_figures)
"""
import sys
import textwrap

PROG = "twoclock"


def _studies() -> dict:
    """{command name: Study}: each study by its script's name (critical_batch) and its
    registry name (headline)."""
    from twoclock.studies import STUDIES
    out = {}
    for study in STUDIES.values():
        script = _script(study)
        out[script.removesuffix(".py")] = study
        out.setdefault(study.name, study)
    return out


def _script(study) -> str:
    """The study's script in experiments/ (its config's SCRIPT), the name `twoclock run` takes."""
    from twoclock.studies.protocol import declared
    return declared(study, "SCRIPT") or f"{study.name}.py"


def _usage() -> str:
    from twoclock.studies import STUDIES
    names = sorted(_script(s).removesuffix(".py") for s in STUDIES.values())
    return (f"usage: {PROG} {{plan,run,figures}} ...\n\n"
            "One command for the planner, every study and the figures (python -m twoclock is the "
            "same).\n\n"
            f"  {PROG} plan ...          plan from pilot runs or their logs ({PROG} plan --help)\n"
            f"  {PROG} run STUDY ...     run a study ({PROG} run STUDY --help); STUDY is one of\n"
            + textwrap.fill(", ".join(names), 96, initial_indent=" " * 28,
                            subsequent_indent=" " * 28) + "\n"
            f"  {PROG} figures ...       every figure, from cached results ({PROG} figures "
            "--help)\n")


def _refuse(msg: str) -> int:
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "plan":
        from twoclock.cli import plan
        return plan.main(rest, prog=f"{PROG} plan")
    if command == "run":
        from twoclock.cli.rescue import loading  # a Ctrl-C while the studies load: one line
        with loading(f"{PROG} run"):
            studies = _studies()
            from twoclock.cli import run_study
        if not rest:  # a refusal like the others: one line, the study missing and the choices
            return _refuse("run: give a study to run: one of "
                           f"{', '.join(sorted(studies))}")
        if rest[0] in ("-h", "--help"):
            print(_usage())
            return 0
        if rest[0] not in studies:
            return _refuse(f"run: no study {rest[0]!r}; the studies are "
                           f"{', '.join(sorted(studies))}")
        return run_study.main(studies[rest[0]], rest[1:], prog=f"{PROG} run {rest[0]}")
    if command == "figures":
        try:
            from paper_figures.__main__ import main as figures
        except ImportError:
            return _refuse("figures: paper_figures is not importable; install twoclock from its "
                           "repository (pip install -e .) and run this there")
        return figures(rest)
    return _refuse(f"no command {command!r}; the commands are plan, run, figures")
