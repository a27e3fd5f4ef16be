"""Every non-string mutmut mutant inside the named functions of a module, run against tests.

    python tools/mutation_functions.py twoclock/stages.py crossed,samples_at,stage_layout \
        tests/test_stages.py tests/test_quadratic.py

The same mutants as `tools/mutation.py MODULE --functions ...` (mutmut's own generator), in
a throwaway copy, one pytest process per mutant with a 600 s limit; prints one line per
mutant. Used where mutmut's own loop is too slow on a loaded machine.
"""
import ast, os, shutil, subprocess, sys, tempfile, time
from mutmut import Context, list_mutations, mutate, mutations_by_type
module, fns, tests = sys.argv[1], set(sys.argv[2].split(",")), sys.argv[3:]
for t in ("string", "fstring"):
    mutations_by_type.pop(t)
root = tempfile.mkdtemp(prefix="fnmut-")
files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], capture_output=True,
                       text=True, check=True).stdout.split()
for f in files:
    if os.path.isfile(f):
        os.makedirs(os.path.join(root, os.path.dirname(f)), exist_ok=True); shutil.copy2(f, os.path.join(root, f))
src = open(os.path.join(root, module)).read()
spans = [(n.lineno, n.end_lineno) for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef) and n.name in fns]
muts = [m for m in list_mutations(Context(source=src, filename=module, dict_synonyms=[]))
        if any(a <= m.line_number + 1 <= b for a, b in spans)]
print(len(muts), "mutants", flush=True)
for m in muts:
    new, n = mutate(Context(source=src, filename=module, dict_synonyms=[], mutation_id=m))
    open(os.path.join(root, module), "w").write(new)
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                           cwd=root, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONPATH": root, "TWOCLOCK_CACHE_DIR": "off"})
        status = "killed" if r.returncode == 1 else f"SURVIVED(rc={r.returncode})"
    except subprocess.TimeoutExpired:
        status = "TIMEOUT"
    open(os.path.join(root, module), "w").write(src)
    diff = [l.strip() for l in new.splitlines() if l not in src.splitlines()]
    print(m.line_number + 1, status, f"{time.time() - t0:.0f}s", diff, flush=True)
shutil.rmtree(root)
