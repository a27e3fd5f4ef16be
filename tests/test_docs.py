"""Docs for readers: every file a doc names exists, and no doc sends a reader outside the
project."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "paper_figures/README.md", "twoclock/data/README.md"] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
# a path inside the project: a top-level folder, then a file name with an extension
PATH = re.compile(r"\b((?:twoclock|tests|experiments|benchmarks|docs|tools|paper_figures)"
                  r"/[\w./-]*\.(?:py|md|csv|sh|png|pdf|json))\b")


@pytest.mark.parametrize("doc", DOCS)
def test_every_file_a_doc_names_exists(doc):
    with open(os.path.join(ROOT, doc)) as f:
        text = f.read()
    missing = sorted({p for p in PATH.findall(text) if not os.path.exists(os.path.join(ROOT, p))
                      and "*" not in p})
    assert not missing, missing
    assert PATH.findall("see `twoclock/engine/sweep.py`") == ["twoclock/engine/sweep.py"]


@pytest.mark.parametrize("doc", DOCS)
def test_no_doc_points_outside_the_project(doc):
    with open(os.path.join(ROOT, doc)) as f:
        text = f.read()
    # machine folders, spelt in parts so that this file does not name one itself
    machine = ["/" + "work" + "/", "/" + "tmp" + "/"]
    for bad in ["../shared", *machine, "this session", "an earlier session"]:
        assert bad not in text, bad


def _tree_block() -> dict:
    """{folder under twoclock/ ('' for the core): the .py and folder names its entry in
    docs/architecture.md's tree names}."""
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        text = f.read()
    block = text.split("## The tree", 1)[1].split("```", 2)[1]
    entries, folder = {}, None
    for line in block.splitlines():
        if not line.startswith("  ") or not line.strip():  # twoclock/, experiments/, ...
            folder = None
            continue
        head = re.match(r"  (\w+)/\s", line)
        if head:  # "  engine/   stages.py ...": a folder's entry starts
            folder = head.group(1)
            line = line[head.end():]
        elif not line.startswith("   "):  # "  config.py model.py ...": the core's files
            folder = ""
        entries.setdefault(folder, set()).update(re.findall(r"\b(\w+\.py|\w+/)", line))
    return entries


def _on_disk(folder: str) -> set:
    path = os.path.join(ROOT, "twoclock", folder)
    names = set()
    for n in os.listdir(path):
        if os.path.isdir(os.path.join(path, n)) and n != "__pycache__":
            names.add(n + "/")
        elif n.endswith(".py") and n != "__init__.py":
            names.add(n)
    return names


def test_the_architecture_tree_is_the_tree_on_disk():
    entries = _tree_block()
    folders = {n.rstrip("/") for n in _on_disk("") if n.endswith("/")}
    assert set(entries) == folders | {""}, "a folder of twoclock/ missing from the tree"
    assert entries[""] | {f + "/" for f in folders} == _on_disk(""), "the core's files"
    for folder in sorted(folders):
        named = entries[folder] - {"__init__.py"}
        assert named == _on_disk(folder), (folder, sorted(named ^ _on_disk(folder)))
