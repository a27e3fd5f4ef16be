"""The layers one can see in the tree: what imports JAX, what imports what, and who may know a
model's name."""
import ast
import os
import pkgutil
import re
import subprocess
import sys

import pytest

import twoclock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "twoclock")

# the JAX-free layers: every module of these packages, and the shared command-line helpers
JAX_FREE = ["twoclock", "twoclock.clock", "twoclock.config", "twoclock.atomic",
            "twoclock.cli.common", "twoclock.cli.flags", "twoclock.cli.rescue",
            "twoclock.engine.result"] + [
    m.name for pkg in ("analysis", "pilot", "figures")
    for m in pkgutil.walk_packages([os.path.join(PKG, pkg)], f"twoclock.{pkg}.")]


def test_the_analysis_pilot_and_figure_layers_load_no_jax():
    code = ("import importlib, sys\n"
            f"for m in {JAX_FREE!r}: importlib.import_module(m)\n"
            "heavy = sorted(k for k in sys.modules if k.split('.')[0] in ('jax', 'jaxlib', "
            "'optax'))\n"
            "print(heavy[:5])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
    assert "twoclock.analysis.clocks" in JAX_FREE and "twoclock.pilot.fit" in JAX_FREE


def test_importing_twoclock_changes_nothing_in_jax():
    """No side effect at import: the engine installs its RNG lowering when it first runs."""
    code = ("import twoclock, twoclock.engine.sweep as s, twoclock.engine.runtime as r\n"
            "print(r._FAST_RNG)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def _imports(path: str, every: bool = False) -> set:
    """The twoclock modules (every: all modules) a file imports, anywhere in it (inside
    functions too): each `from a import b` as both a and a.b."""
    with open(path) as f:
        tree = ast.parse(f.read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out if every else {m for m in out if m.startswith("twoclock")}


def _modules(sub: str):
    for dirpath, _, files in os.walk(os.path.join(PKG, sub)):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


# layer -> the twoclock packages it must not import. Imports flow cli, experiments -> studies
# -> engine -> models -> core; pilot (plans from pilots and logs) sits beside analysis, below
# studies, with no engine, no model and no JAX; analysis (NumPy statistics, tables, result
# files) imports only the core, so every layer above the core may use it
FORBIDDEN = {
    "models": ("twoclock.engine", "twoclock.studies", "twoclock.pilot", "twoclock.cli",
               "twoclock.figures"),
    "engine": ("twoclock.analysis", "twoclock.studies", "twoclock.pilot", "twoclock.cli",
               "twoclock.figures"),
    "analysis": ("twoclock.engine", "twoclock.models", "twoclock.studies", "twoclock.pilot",
                 "twoclock.cli", "twoclock.figures"),
    "figures": ("twoclock.engine", "twoclock.studies", "twoclock.cli"),
    "pilot": ("twoclock.engine", "twoclock.model", "twoclock.models", "twoclock.studies",
              "twoclock.cli", "twoclock.figures", "jax", "jaxlib", "optax"),
}


def _forbidden(name: str, packages) -> bool:
    """name is one of the packages or inside one (twoclock.model, not twoclock.models)."""
    return any(name == p or name.startswith(p + ".") for p in packages)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_flow_one_way(layer):
    bad = [(os.path.relpath(p, ROOT), m) for p in _modules(layer) for m in _imports(p, every=True)
           if _forbidden(m, FORBIDDEN[layer])]
    assert not bad, bad


def test_the_layer_check_sees_imports_anywhere_in_a_module(tmp_path):
    """Inside a function or a method, or of a submodule: each is found; a name that only begins
    like a forbidden package is not."""
    p = tmp_path / "m.py"
    p.write_text("import numpy\nfrom twoclock.models import get\n"
                 "def f():\n    import jax.numpy as jnp\n"
                 "    from twoclock.engine.sweep import run_sweep\n"
                 "class C:\n    def g(self):\n        from twoclock import model\n"
                 "from twoclock.modelsx import y\n")
    found = _imports(str(p), every=True)
    bad = {m for m in found if _forbidden(m, FORBIDDEN["pilot"])}
    assert bad == {"twoclock.models", "twoclock.models.get", "jax.numpy",
                   "twoclock.engine.sweep", "twoclock.engine.sweep.run_sweep",
                   "twoclock.model"}, bad


def test_the_planners_fits_call_nothing_above_them():
    """pilot/fit.py (each form's fit and sampling band) imports no other planner module, and
    adam.py (Adam's form, fitted through fit.py) only fit.py; forms.py (a clock's form, fit and
    band) only those fits below it; plan.py reads its clocks from forms.py."""
    pilot = lambda name: {m.split(".")[2] for m in _imports(os.path.join(PKG, "pilot", name))
                          if m.startswith("twoclock.pilot.")}
    assert pilot("fit.py") == set()
    assert pilot("adam.py") == {"fit"}
    assert pilot("forms.py") == {"fit", "adam"}
    assert "forms" in pilot("plan.py")


# a model's name compared or used as a key: only the models' own packages may do that
NAME_USE = re.compile(r"(\b(model|spec)\.name\s*(==|!=|in\b))|(\w\[\s*(model|spec)\.name\s*\](?!\s*=))|"
                      r"(==\s*[\"'](quadratic|bandit|policy)[\"'])")


# a model looked up by its name in the registry: MODELS["bandit"]
NAME_LOOKUP = re.compile(r"\bMODELS\s*\[\s*[\"']|\bget_model\s*\(\s*[\"']")
# the one place a name is compared: a study's declaration of the models it is written for
# (beside it, protocol.per_model reads a study's table of per-model defaults by name)
DECLARATION = ("twoclock/studies/protocol.py",
               "return (not study.models or model.name in study.models) and "
               "defaults(study, model) is not None")


def _outside_the_models():
    places = [p for sub in ("engine", "analysis", "studies", "pilot", "cli", "figures")
              for p in _modules(sub)]
    return places + [os.path.join(ROOT, "experiments", f) for f in os.listdir(
        os.path.join(ROOT, "experiments")) if f.endswith(".py")]


def _lines_matching(pattern, places):
    bad = []
    for p in places:
        with open(p) as f:
            bad += [(os.path.relpath(p, ROOT), i + 1, line.strip())
                    for i, line in enumerate(f) if pattern.search(line)]
    return bad


def test_no_code_outside_the_models_branches_on_a_models_name():
    bad = [b for b in _lines_matching(NAME_USE, _outside_the_models())
           if (b[0], b[2]) != DECLARATION]
    assert not bad, bad
    assert NAME_USE.search('if model.name != "bandit":')  # the pattern finds what it must
    assert NAME_USE.search("DEFAULTS[model.name]")
    with open(os.path.join(ROOT, DECLARATION[0])) as f:  # the exception still exists
        assert DECLARATION[1] in f.read()


def test_no_code_outside_the_models_looks_a_model_up_by_name():
    bad = _lines_matching(NAME_LOOKUP, _outside_the_models())
    assert not bad, bad
    assert NAME_LOOKUP.search('EMERGENT = MODELS["bandit"].presets')
    assert NAME_LOOKUP.search("m = MODELS[ 'policy' ]") and not NAME_LOOKUP.search("MODELS[name]")


def _model_packages(path: str) -> set:
    """The model packages (twoclock.models.<name>) a module imports."""
    return {m.split(".")[2] for m in _imports(path)
            if m.startswith("twoclock.models.") and m.split(".")[2] != "__init__"}


def test_a_study_imports_only_the_model_packages_it_declares():
    """Each registered study's module (or package) may import the packages of the models in
    its `models` and no other; the studies' shared modules import none."""
    from twoclock.studies import STUDIES
    owned = {}
    for study in STUDIES.values():
        mod = sys.modules[study.run.__module__]
        home = os.path.dirname(mod.__file__) if mod.__file__.endswith("__init__.py") \
            else mod.__file__
        files = list(_modules(os.path.relpath(home, PKG))) if os.path.isdir(home) else [home]
        for f in files:
            owned[f] = set(study.models)
    bad = []
    for p in _modules("studies"):
        extra = _model_packages(p) - owned.get(p, set())
        if extra:
            bad.append((os.path.relpath(p, ROOT), sorted(extra)))
    assert not bad, bad
    assert owned and any(owned.values())  # some study declares its model


def test_the_public_api_resolves_lazily():
    for name in twoclock.__all__:
        assert getattr(twoclock, name) is not None
    with pytest.raises(AttributeError):
        twoclock.nonesuch  # noqa: B018
