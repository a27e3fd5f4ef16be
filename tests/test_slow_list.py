"""tests/slow_in_ci.txt names tests that exist: a renamed or deleted test would leave its line
marking nothing (and the renamed one back in the README's timed run)."""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tests", "slow_in_ci.txt")
NODE = re.compile(r"^(tests/[\w/]+\.py)::(\w+)(?:\[.+\])?$")


def _entries() -> list[str]:
    with open(LIST) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def _test_names(path: str) -> set[str]:
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef))}


def test_every_slow_listed_test_exists():
    entries = _entries()
    assert len(entries) == len(set(entries)), "a node id listed twice"
    bad = [e for e in entries if not NODE.match(e)]
    assert not bad, f"not a node id: {bad}"
    names = {}
    missing = []
    for e in entries:
        path, name = NODE.match(e).groups()
        if path not in names:
            names[path] = _test_names(path) if os.path.exists(os.path.join(ROOT, path)) else set()
        if name not in names[path]:
            missing.append(e)
    assert not missing, f"listed as slow but not defined: {missing}"
