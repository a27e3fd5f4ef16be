"""Mutation testing of the core modules with mutmut 2 (`pip install -e '.[mutation]'`).

    python tools/mutation.py                 # every core module, this working tree's tests
    python tools/mutation.py --ref main      # the same against the tests of a commit
    python tools/mutation.py twoclock/analysis/clocks.py --types operator
    python tools/mutation.py twoclock/engine/stages.py --functions crossed,samples_at,stage_layout
    python tools/mutation.py twoclock/models/quadratic/drift.py --sample 70 --seed 0
    python tools/mutation.py twoclock/models/quadratic/drift.py --ids 12,140   # rerun two mutants

Each module is mutated in a throwaway copy of the tree (the working tree is never touched), and
each mutant runs only that module's fast test selection (TESTS). String mutations are off: they
change error messages and help text, which the CLI tests cover, not the formulas. Prints one
line per module (killed / total, surviving mutant ids) and, with --out FILE, the surviving
mutants' diffs as Markdown.

A mutant's id is its 1-based position in mutmut's list of the module's mutants (of the enabled
types), the same in every run of an unchanged module; --ids reruns chosen ones. --sample N
--seed S runs N mutants drawn uniformly without replacement (random.Random(S)) from the module's
mutants (inside --functions, if given); the line then adds a 95% Wilson interval for the
module's score, treating the sample as binomial (conservative: it ignores the finite
population). Mutants not run are marked skipped by a pre_mutation hook.
"""
import argparse
import ast
import fnmatch
import math
import os
import random
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

# the first-passage selection: first_passage.py and its Gaussian primitives (gaussian.py)
PASSAGE_TESTS = [
    "tests/models/test_theory_mutants.py::test_first_passage_*",
    "tests/models/test_theory_passage.py::test_saddle_point_marginal_matches_monte_carlo",
    "tests/models/test_theory_passage.py::test_first_passage_beats_expected_loss_near_the_floor",
    "tests/models/test_theory_passage.py::test_first_passage_remembers_slow_coordinates",
    "tests/models/test_theory_passage.py::test_first_passage_many_is_each_configuration_alone",
    "tests/models/test_theory_passage.py::test_first_passage_median_matches_simulation_momentum",
]

# module -> fast tests that should catch a wrong formula in it (files missing at --ref are skipped)
TESTS = {
    "twoclock/analysis/clocks.py": ["tests/analysis/test_clocks.py", "tests/analysis/test_results_values.py"],
    "twoclock/objectives.py": ["tests/test_objectives.py"],
    "twoclock/engine/stages.py": ["tests/engine/test_stages.py", "tests/models/test_quadratic.py"],
    # the planner's own tests (numpy only; the file's simulation tests do not reach it)
    "twoclock/analysis/switch.py": [f"tests/engine/test_schedule.py::test_{t}" for t in (
        "planner_switches_before_failure_never_after", "no_switch_when_the_large_batch_never_fails",
        "no_plan_is_safe_reports_least_risky",
        "curve_planner_matches_fraction_model_on_proportional_curves", "planner_bad_input")]
    + ["tests/studies/test_studies_schedule.py::test_summarize_run_counts_failure_first_as_never_and_"
       "prices_each_stage"],
    "twoclock/models/quadratic/dynamics.py": [
        "tests/models/test_quadratic.py",
        "tests/engine/test_stages.py::test_every_seed_has_its_own_noise_stream"],
    "twoclock/analysis/results.py": ["tests/analysis/test_results_values.py"],
    # the store's own tests; the two that run whole sweeps twice (14 s each) are left out
    "twoclock/engine/store.py": ["tests/engine/test_store_parts.py", "tests/engine/test_store_isolation.py"] + [
        f"tests/engine/test_store.py::test_{t}" for t in (
            "the_key_fingerprints_every_source_file_and_the_jax_versions",
            "files_respect_the_umask", "corrupt_chunks_are_named_in_one_line_each_and_recomputed",
            "a_chunk_of_another_store_is_not_used", "identical_configuration_is_reused")],
    # references: every per-update record from a step-by-step replay, then the clocks from the
    # weights after every update with a float64 evaluation of the held-out pool
    "twoclock/models/bandit/dynamics.py": ["tests/models/test_bandit_records.py",
                                           "tests/models/test_bandit_reference.py"],
    # the theory modules: their own hand-value tests first (-x stops at the first failure), then
    # exact identities; simulations only where a module has no cheaper reference
    "twoclock/models/quadratic/scales.py": [
        "tests/models/test_theory_mutants.py::test_scales_*",
        "tests/models/test_theory.py::test_noise_scales_match_dense_formulas",
        "tests/models/test_theory.py::test_pareto_fit_recovers_front"],
    "twoclock/models/quadratic/moments.py": [
        "tests/models/test_theory_mutants.py::test_moments_*",
        "tests/models/test_theory.py::test_closed_form_equals_recursion",
        "tests/models/test_theory.py::test_closed_form_near_double_root",
        "tests/models/test_theory.py::test_adam_has_no_exact_moments"],
    "twoclock/models/quadratic/crossing.py": [
        "tests/models/test_theory_mutants.py::test_crossing_*",
        "tests/models/test_theory.py::test_steps_to_target_equals_scan_sgd",
        "tests/models/test_theory.py::test_first_crossing_of_oscillating_momentum",
        "tests/models/test_theory.py::test_steps_to_target_is_the_first_crossing",
        "tests/models/test_theory.py::test_steps_to_target_many_equals_single",
        "tests/models/test_theory.py::test_adam_has_no_exact_moments"],
    "twoclock/models/quadratic/adam_progress.py": [
        "tests/models/test_theory_mutants.py::test_adam_progress_*",
        "tests/models/test_theory.py::test_default_critical_batch_rises_with_lr0",
        "tests/models/test_theory.py::test_progress_gap_where_theory_crosses_critical_batch"],
    # drift: the hand values first, then the exact step law and crossing laws against float64
    # NumPy walks, then Adam's failure clock against its float64 reference (both regimes)
    "twoclock/models/quadratic/drift.py": [
        "tests/models/test_theory_mutants.py::test_drift_*",
        "tests/models/test_theory_hand.py",
        "tests/models/test_theory.py::test_failure_prediction_norm_stat_is_sooner",
        "tests/models/test_theory_passage.py::test_adam_step_law_matches_monte_carlo",
        "tests/models/test_theory_passage.py::test_adam_step_law_series_matches_direct_sums",
        "tests/models/test_theory_passage.py::test_brownian_law_monitored_per_update",
        "tests/models/test_theory_passage.py::test_crossing_of_an_ema_smoothed_walk",
        "tests/models/test_theory_passage.py::test_adam_failure_clock_inside_the_warm_up",
        "tests/models/test_theory_passage.py::test_adam_failure_clock_within_three_percent"],
    # first_passage: the hand values first, then the saddle point and the medians against float64
    # NumPy simulations (SGD: the two fixed cells; momentum: the property), and the slot pool
    "twoclock/models/quadratic/first_passage.py": PASSAGE_TESTS,
    # its Gaussian primitives (split out of first_passage.py): the same selection
    "twoclock/models/quadratic/gaussian.py": PASSAGE_TESTS,
    "twoclock/models/bandit/theory.py": [
        "tests/models/test_theory_mutants.py::test_bandit_*",
        "tests/models/test_bandit_reference.py::test_predicted_failure_by_hand",
        "tests/models/test_bandit.py::test_predicted_failure_clock_limits",
        "tests/models/test_bandit_drift.py::test_adam_noise_step",
        "tests/models/test_bandit.py::test_drift_noise_and_signal_are_the_configured_ones",
        "tests/models/test_bandit_drift.py::test_clipping_binds_below_the_predicted_boundary_only"],
}
PYTEST = (f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p mutation_no_shrink "
          "-m 'slow or not slow'")  # the slow-listed checks kill mutants too


def copy_tree(dst: str, ref: str | None) -> None:
    """The working tree's files (tracked and untracked, not ignored), or a commit's."""
    if ref:
        archive = subprocess.run(["git", "archive", ref], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", dst], input=archive, check=True)
        return
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    for f in files:
        if os.path.isfile(f):
            os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(f, os.path.join(dst, f))


def mutmut(args, cwd, **kw):
    env = {**os.environ, "PYTHONPATH": cwd, "TWOCLOCK_CACHE_DIR": "off"}
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, **kw)


def mutant_ids(source: str, module: str, types: set) -> list:
    """mutmut's mutants of a module in its own order (the order of the ids in its cache)."""
    from mutmut import ALL, Context, list_mutations  # optional dependency: only this tool needs it
    cfg = SimpleNamespace(mutation_types_to_apply=types, covered_lines_by_filename=None)
    return list_mutations(Context(source=source, filename=module, dict_synonyms=[], config=cfg,
                                  mutation_id=ALL))


def enabled_types(types: str | None) -> set:
    from mutmut import mutations_by_type
    return (set(types.split(",")) if types else set(mutations_by_type) - {"string", "fstring"})


def restrict(root: str, module: str, types: str | None, functions: str | None = None,
             sample: int | None = None, seed: int = 0, ids: str | None = None) -> int | None:
    """Only run some mutants: those on the lines of `functions`, a seeded uniform `sample` of
    them, or the mutmut `ids` given; a pre_mutation hook marks the rest skipped. Returns the
    number of mutants sampled from (None without --sample)."""
    hook = os.path.join(root, "mutmut_config.py")
    if os.path.exists(hook):
        os.remove(hook)
    if not (functions or sample or ids):
        return None
    src = open(os.path.join(root, module)).read()
    muts = list(enumerate(mutant_ids(src, module, enabled_types(types)), start=1))
    if functions:
        names = set(functions.split(","))
        spans = [(n.lineno, n.end_lineno) for n in ast.walk(ast.parse(src))
                 if isinstance(n, ast.FunctionDef) and n.name in names]
        muts = [(i, m) for i, m in muts if any(a <= m.line_number + 1 <= b for a, b in spans)]
    if ids:
        want = {int(i) for i in ids.split(",")}
        muts = [(i, m) for i, m in muts if i in want]
    pool = len(muts)
    if sample and sample < pool:
        muts = sorted(random.Random(seed).sample(muts, sample), key=lambda im: im[0])
    keep = sorted((m.line_number, m.index) for _, m in muts)
    with open(hook, "w") as f:
        f.write(f"KEEP = set({keep!r})\n\n\ndef pre_mutation(context):\n"
                "    m = context.mutation_id\n"
                "    context.skip = (m.line_number, m.index) not in KEEP\n")
    return pool if sample else None


def wilson(k: int, n: int, z: float = 1.96) -> tuple:
    """95% Wilson score interval for a binomial proportion k / n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n))


def node_ids(root: str, entry: str) -> list:
    """A TESTS entry as pytest node ids: a file, a node id (file::test), or file::pattern with
    a shell wildcard over the file's test functions; none if the file is not in this tree."""
    path, _, name = entry.partition("::")
    if not os.path.exists(os.path.join(root, path)):
        return []
    if not name:
        return [entry]
    tree = ast.parse(open(os.path.join(root, path)).read())
    if not any(c in name for c in "*?["):
        # a renamed test would make pytest exit 4 ("not found") on every mutant: all "killed"
        if not any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body):
            sys.exit(f"tools/mutation.py: TESTS names {entry}, which {path} does not define")
        return [entry]
    return [f"{path}::{n.name}" for n in tree.body
            if isinstance(n, ast.FunctionDef) and fnmatch.fnmatch(n.name, name)]


# A pytest plugin written into the copy: hypothesis stops at the first failing example instead
# of shrinking it (which can take minutes per mutant and never turns a kill into a survivor),
# and keeps no example database between mutants.
PLUGIN = """from hypothesis import Phase, settings


def pytest_configure(config):
    settings.register_profile("mutation", settings.default, database=None,
                              phases=[Phase.explicit, Phase.generate])
    settings.load_profile("mutation")
"""


def kill_after(root: str, tests: list) -> int:
    """Seconds after which a mutant's pytest is killed: 10x one unmutated run of the selection
    (mutmut's own limit, from its own baseline) plus a minute. Stops if the selection fails
    unmutated, where every mutant would count as killed."""
    t0 = time.perf_counter()
    run = subprocess.run(shlex.split(PYTEST) + tests, cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": root, "TWOCLOCK_CACHE_DIR": "off"})
    if run.returncode != 0:
        sys.exit(f"tools/mutation.py: the unmutated tests fail:\n{run.stdout[-2000:]}")
    return int(10 * (time.perf_counter() - t0)) + 60


def one_module(root: str, module: str, types: str | None) -> dict:
    tests = [t for entry in TESTS[module] for t in node_ids(root, entry)]
    with open(os.path.join(root, "mutation_no_shrink.py"), "w") as f:
        f.write(PLUGIN)
    # mutmut 2 counts only pytest's exit status 1 as a kill: a mutant that breaks the module's
    # import (status 2, collection error, or 4, "found no collectors" for a node id) would
    # count as a survivor. Any failure is a kill here. mutmut's own timeout (10x its unmutated
    # run) kills only the shell, and then waits for pytest's output to close: `timeout` ends
    # pytest too, a little after mutmut's limit, so a timeout stays a timeout. (A fixed 900 s
    # here once held a run on one hanging mutant for 15 minutes.)
    kill_s = kill_after(root, tests)
    runner = shlex.join(["sh", "-c",
                         f"timeout -s KILL {kill_s} {PYTEST} {' '.join(tests)} || exit 1"])
    opts = ["--paths-to-mutate", module, "--tests-dir", "tests/", "--runner", runner,
            "--simple-output", "--no-progress"]
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
    p.add_argument("--sample", type=int, help="run N mutants drawn at random (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="seed of the --sample draw (default 0)")
    p.add_argument("--ids", help="only these mutant ids (comma-separated, as printed)")
    p.add_argument("--out", help="write the surviving diffs here (Markdown)")
    ns = p.parse_args(argv)
    lines = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as root:
        copy_tree(root, ns.ref)
        for m in ns.modules:
            pool = restrict(root, m, ns.types, ns.functions, ns.sample, ns.seed, ns.ids)
            r = one_module(root, m, ns.types)
            c = r["counts"]
            # suspicious = killed, but slowly; a timeout is not counted as killed
            killed = c.get("ok_killed", 0) + c.get("ok_suspicious", 0)
            total = killed + c.get("bad_survived", 0) + c.get("bad_timeout", 0)
            line = (f"{m}: {killed}/{total} killed ({100 * killed / max(total, 1):.0f}%), "
                    f"survived {r['survived']}, timed out {r['timeout']}, "
                    f"skipped {c.get('skipped', 0)}")
            if pool is not None:
                lo, hi = wilson(killed, total)
                line += (f", sample {total} of {pool} (seed {ns.seed}), 95% Wilson CI "
                         f"[{100 * lo:.0f}%, {100 * hi:.0f}%]")
            line += f"  [tests: {' '.join(r['tests'])}]"
            print(line, flush=True)
            lines += [f"## {line}", "", *(f"```diff\n{d.strip()}\n```" for d in
                                            r["diffs"].values()), ""]
    if ns.out:
        with open(ns.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
