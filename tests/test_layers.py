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
JAX_FREE = ["twoclock", "twoclock.config", "twoclock.atomic", "twoclock.cli.common",
            "twoclock.cli.flags", "twoclock.cli.rescue"] + [
    m.name for pkg in ("analysis", "pilot", "figures")
    for m in pkgutil.walk_packages([os.path.join(PKG, pkg)], f"twoclock.{pkg}.")
    if m.name != "twoclock.pilot.check"]  # the planner's check simulates its pilots


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


def _imports(path: str) -> set:
    with open(path) as f:
        tree = ast.parse(f.read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("twoclock")}


def _modules(sub: str):
    for dirpath, _, files in os.walk(os.path.join(PKG, sub)):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(dirpath, f)


# layer -> the twoclock packages it must not import. Imports flow cli, experiments -> studies,
# pilot -> engine -> models -> core; analysis (NumPy statistics, tables, result files) imports
# only the core, so every layer above the core may use it
FORBIDDEN = {
    "models": ("twoclock.engine", "twoclock.studies", "twoclock.pilot", "twoclock.cli",
               "twoclock.figures"),
    "engine": ("twoclock.analysis", "twoclock.studies", "twoclock.pilot", "twoclock.cli",
               "twoclock.figures"),
    "analysis": ("twoclock.engine", "twoclock.models", "twoclock.studies", "twoclock.pilot",
                 "twoclock.cli", "twoclock.figures"),
    "figures": ("twoclock.engine", "twoclock.studies", "twoclock.cli"),
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_flow_one_way(layer):
    bad = [(os.path.relpath(p, ROOT), m) for p in _modules(layer) for m in _imports(p)
           if m.startswith(FORBIDDEN[layer])]
    assert not bad, bad


# a model's name compared or used as a key: only the models' own packages may do that
NAME_USE = re.compile(r"(\b(model|spec)\.name\s*(==|!=|in\b))|(\w\[\s*(model|spec)\.name\s*\](?!\s*=))|"
                      r"(==\s*[\"'](quadratic|bandit|policy)[\"'])")


def test_no_code_outside_the_models_branches_on_a_models_name():
    places = [p for sub in ("engine", "analysis", "studies", "pilot", "cli", "figures")
              for p in _modules(sub)]
    places += [os.path.join(ROOT, "experiments", f) for f in os.listdir(
        os.path.join(ROOT, "experiments")) if f.endswith(".py")]
    bad = []
    for p in places:
        with open(p) as f:
            bad += [(os.path.relpath(p, ROOT), i + 1, line.strip())
                    for i, line in enumerate(f) if NAME_USE.search(line)]
    assert not bad, bad
    assert NAME_USE.search('if model.name != "bandit":')  # the pattern finds what it must
    assert NAME_USE.search("DEFAULTS[model.name]")


def test_the_public_api_resolves_lazily():
    for name in twoclock.__all__:
        assert getattr(twoclock, name) is not None
    with pytest.raises(AttributeError):
        twoclock.nonesuch  # noqa: B018
