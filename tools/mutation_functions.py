"""Every non-string mutmut mutant of a module (or of some of its functions), one pytest each.

    python tools/mutation_functions.py twoclock/engine/stages.py crossed,samples_at,stage_layout \
        tests/engine/test_stages.py tests/models/test_quadratic.py
    python tools/mutation_functions.py twoclock/engine/store.py ALL            # TESTS[module] of mutation.py
    python tools/mutation_functions.py twoclock/engine/store.py ALL --only 3,17  # re-run mutants 3 and 17

The same mutants as `tools/mutation.py MODULE [--functions ...]` (mutmut's own generator; ALL
means every line of the module), in a throwaway copy of the working tree, one pytest process
per mutant (-x, cache off) with a time limit (--timeout, 600 s). Without test paths it runs the
module's selection in tools/mutation.py's TESTS (files this tree lacks are skipped). Prints
one line per mutant (its number, line, status, seconds, the changed line) and a summary line.
A mutant is killed when pytest fails (exit 1) or cannot collect the mutated module (exit 2);
a timeout is not killed. Used where mutmut's own loop is too slow on a loaded machine.
"""
import argparse, ast, os, shutil, subprocess, sys, tempfile, time
from mutmut import Context, list_mutations, mutate, mutations_by_type
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
from mutation import TESTS

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("module"), p.add_argument("functions", help="comma-separated names, or ALL")
p.add_argument("tests", nargs="*"), p.add_argument("--only", help="mutant numbers, e.g. 3,17")
p.add_argument("--timeout", type=float, default=600)
ns = p.parse_args()
module, tests = ns.module, ns.tests or TESTS[ns.module]
for t in ("string", "fstring"):
    mutations_by_type.pop(t)
root = tempfile.mkdtemp(prefix="fnmut-")
files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], capture_output=True,
                       text=True, check=True).stdout.split()
for f in files:
    if os.path.isfile(f):
        os.makedirs(os.path.join(root, os.path.dirname(f)), exist_ok=True); shutil.copy2(f, os.path.join(root, f))
# a test may be a node id (file::test); files missing from this tree (a new test) are skipped
tests = [t for t in tests if os.path.exists(os.path.join(root, t.split("::")[0]))]
src = open(os.path.join(root, module)).read()
spans = ([(1, len(src.splitlines()))] if ns.functions == "ALL" else
         [(n.lineno, n.end_lineno) for n in ast.walk(ast.parse(src))
          if isinstance(n, ast.FunctionDef) and n.name in ns.functions.split(",")])
# numbered as in the whole module, so that a function's mutant keeps its number
muts = [(k, m) for k, m in enumerate(list_mutations(
    Context(source=src, filename=module, dict_synonyms=[])), 1)
    if any(a <= m.line_number + 1 <= b for a, b in spans)]
only = None if ns.only is None else {int(i) for i in ns.only.split(",")}
print(len(muts), "mutants", "" if only is None else f"(running {sorted(only)})", "tests:",
      " ".join(tests), flush=True)
t_start, killed, survived, timeout = time.time(), [], [], []
for k, m in muts:
    if only is not None and k not in only:
        continue
    new, n = mutate(Context(source=src, filename=module, dict_synonyms=[], mutation_id=m))
    open(os.path.join(root, module), "w").write(new)
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                           cwd=root, capture_output=True, text=True, timeout=ns.timeout,
                           env={**os.environ, "PYTHONPATH": root, "TWOCLOCK_CACHE_DIR": "off"})
        status = ("killed" if r.returncode == 1 else f"killed(rc={r.returncode})"
                  if r.returncode == 2 else f"SURVIVED(rc={r.returncode})")
    except subprocess.TimeoutExpired:
        status = "TIMEOUT"
    (killed if status.startswith("killed") else timeout if status == "TIMEOUT" else survived).append(k)
    open(os.path.join(root, module), "w").write(src)
    diff = [l.strip() for l in new.splitlines() if l not in src.splitlines()]
    print(k, m.line_number + 1, status, f"{time.time() - t0:.0f}s", diff, flush=True)
ran = len(killed) + len(survived) + len(timeout)
print(f"{module}: {len(killed)}/{ran} killed ({100 * len(killed) / max(ran, 1):.0f}%), survived "
      f"{survived}, timed out {timeout}, {time.time() - t_start:.0f} s wall", flush=True)
shutil.rmtree(root)
