"""Mutation testing of the core modules with mutmut 2 (`pip install -e '.[mutation]'`).

    python tools/mutation.py                 # every core module, this working tree's tests
    python tools/mutation.py --ref main      # the same against the tests of a commit
    python tools/mutation.py twoclock/clocks.py --types operator
    python tools/mutation.py twoclock/stages.py --functions crossed,samples_at,stage_layout

Each module is mutated in a throwaway copy of the tree (the working tree is never touched), and
each mutant runs only that module's fast test selection (TESTS). String mutations are off: they
change error messages and help text, which the CLI tests cover, not the formulas. Prints one
line per module (killed / total, surviving mutant ids) and, with --out FILE, the surviving
mutants' diffs as Markdown.
"""
import argparse
import ast
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

# module -> fast tests that should catch a wrong formula in it (files missing at --ref are skipped)
TESTS = {
    "twoclock/clocks.py": ["tests/test_clocks.py", "tests/test_results_values.py"],
    "twoclock/objectives.py": ["tests/test_objectives.py"],
    "twoclock/stages.py": ["tests/test_stages.py", "tests/test_quadratic.py"],
    # the planner's own tests (numpy only; the file's simulation tests do not reach it)
    "twoclock/planner.py": [f"tests/test_schedule.py::test_{t}" for t in (
        "planner_switches_before_failure_never_after", "no_switch_when_the_large_batch_never_fails",
        "no_plan_is_safe_reports_least_risky",
        "curve_planner_matches_fraction_model_on_proportional_curves", "planner_bad_input")]
    + ["tests/test_studies_schedule.py::test_summarize_run_counts_failure_first_as_never_and_"
       "prices_each_stage"],
    "twoclock/models/quadratic/dynamics.py": [
        "tests/test_quadratic.py",
        "tests/test_stages.py::test_every_seed_has_its_own_noise_stream"],
    "twoclock/results.py": ["tests/test_results_values.py"],
    # the store's own tests; the two that run whole sweeps twice (14 s each) are left out
    "twoclock/store.py": ["tests/test_store_parts.py", "tests/test_store_isolation.py"] + [
        f"tests/test_store.py::test_{t}" for t in (
            "the_key_fingerprints_every_source_file_and_the_jax_versions",
            "files_respect_the_umask", "corrupt_chunks_are_named_in_one_line_each_and_recomputed",
            "a_chunk_of_another_store_is_not_used", "identical_configuration_is_reused")],
    # references: every per-update record from a step-by-step replay, then the clocks from the
    # weights after every update with a float64 evaluation of the held-out pool
    "twoclock/models/bandit/dynamics.py": ["tests/test_bandit_records.py",
                                           "tests/test_bandit_reference.py"],
}
PYTEST = f"{sys.executable} -m pytest -x -q -p no:cacheprovider"


def copy_tree(dst: str, ref: str | None) -> None:
    """The working tree's files (tracked and untracked, not ignored), or a commit's."""
    if ref:
        archive = subprocess.run(["git", "archive", ref], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", dst], input=archive, check=True)
        return
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], check=True,
                           capture_output=True, text=True).stdout.split()
    for f in files:
        if os.path.isfile(f):
            os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(f, os.path.join(dst, f))


def mutmut(args, cwd, **kw):
    env = {**os.environ, "PYTHONPATH": cwd, "TWOCLOCK_CACHE_DIR": "off"}
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, **kw)


def restrict(root: str, module: str, functions: str | None) -> None:
    """Only mutate the lines of these functions (a pre_mutation hook marks the rest skipped)."""
    hook = os.path.join(root, "mutmut_config.py")
    if not functions:
        if os.path.exists(hook):
            os.remove(hook)
        return
    names = set(functions.split(","))
    tree = ast.parse(open(os.path.join(root, module)).read())
    spans = [(n.lineno, n.end_lineno) for n in ast.walk(tree)
             if isinstance(n, ast.FunctionDef) and n.name in names]
    with open(hook, "w") as f:
        f.write(f"SPANS = {spans!r}\n\n\ndef pre_mutation(context):\n"
                "    line = context.current_line_index + 1\n"
                "    context.skip = not any(a <= line <= b for a, b in SPANS)\n")


def one_module(root: str, module: str, types: str | None) -> dict:
    # a test may be a node id (file::test): the file must exist in this tree
    tests = [t for t in TESTS[module] if os.path.exists(os.path.join(root, t.split("::")[0]))]
    opts = ["--paths-to-mutate", module, "--tests-dir", "tests/", "--runner",
            f"{PYTEST} {' '.join(tests)}", "--simple-output", "--no-progress"]
    opts += (["--enable-mutation-types", types] if types else
             ["--disable-mutation-types", "string,fstring"])
    if os.path.exists(os.path.join(root, ".mutmut-cache")):
        os.remove(os.path.join(root, ".mutmut-cache"))
    run = mutmut(["run", *opts], root)
    with sqlite3.connect(os.path.join(root, ".mutmut-cache")) as db:
        rows = db.execute("SELECT Mutant.id, status, line_number FROM Mutant JOIN Line "
                          "ON Mutant.line = Line.id").fetchall()
    counts = {}
    for _, status, _ in rows:
        counts[status] = counts.get(status, 0) + 1
    survived = [i for i, status, _ in rows if status == "bad_survived"]
    timeout = [i for i, status, _ in rows if status == "bad_timeout"]
    diffs = {i: mutmut(["show", str(i)], root).stdout for i in survived + timeout}
    return {"module": module, "tests": tests, "counts": counts, "survived": survived,
            "timeout": timeout, "diffs": diffs, "log": run.stdout[-2000:]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", default=list(TESTS))
    p.add_argument("--ref", help="take the tree (code and tests) from this commit")
    p.add_argument("--types", help="only these mutation types (mutmut's names, comma-separated)")
    p.add_argument("--functions", help="only the lines of these functions (comma-separated)")
    p.add_argument("--out", help="write the surviving diffs here (Markdown)")
    ns = p.parse_args(argv)
    lines = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as root:
        copy_tree(root, ns.ref)
        for m in ns.modules:
            restrict(root, m, ns.functions)
            r = one_module(root, m, ns.types)
            c = r["counts"]
            # suspicious = killed, but slowly; a timeout is not counted as killed
            killed = c.get("ok_killed", 0) + c.get("ok_suspicious", 0)
            total = killed + c.get("bad_survived", 0) + c.get("bad_timeout", 0)
            line = (f"{m}: {killed}/{total} killed ({100 * killed / max(total, 1):.0f}%), "
                    f"survived {r['survived']}, timed out {r['timeout']}, "
                    f"skipped {c.get('skipped', 0)}  [tests: {' '.join(r['tests'])}]")
            print(line, flush=True)
            lines += [f"## {line}", "", *(f"```diff\n{d.strip()}\n```" for d in
                                            r["diffs"].values()), ""]
    if ns.out:
        with open(ns.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
