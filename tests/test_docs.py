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
