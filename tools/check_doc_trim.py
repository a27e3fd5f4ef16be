"""Check a reference doc's trim against its history file.

    python tools/check_doc_trim.py BASE REF HIST [REF HIST ...]

For each pair: the lines removed from REF since git revision BASE; every number on them must
appear in the new REF or in HIST; each removed line is looked for word for word (spaces
normalised) in HIST or the new REF; every project path named in REF or HIST must exist (for
HIST, paths on lines added since BASE are errors, older ones are listed as notes: the history
files name modules as they were, docs/history/README.md maps them). Exit status 1 on an error.
"""
import difflib
import os
import re
import subprocess
import sys

NUM = re.compile(r"\d{1,3}(?: \d{3})+(?![\d.])|\d+(?:\.\d+)?(?:e[-+]?\d+)?")
PATH = re.compile(r"\b((?:twoclock|tests|experiments|benchmarks|docs|tools|paper_figures)"
                  r"/[\w./-]*\.(?:py|md|csv|sh|png|pdf|json))\b")


def git(*a):
    return subprocess.run(["git", *a], capture_output=True, text=True, check=True).stdout


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


def has_num(tok, text):
    return re.search(r"(?<![\d.])" + re.escape(tok) + r"(?![\d])", text) is not None


def check(base, ref, hist):
    old = git("show", f"{base}:{ref}").splitlines()
    new_lines = open(ref).read().splitlines()
    new, h = "\n".join(new_lines), open(hist).read()
    removed = []
    for op, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new_lines, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            removed += old[i1:i2]
    both = new + "\n" + h
    flat_h, flat_both = norm(h), norm(both)
    errors, nums, verbatim = [], 0, 0
    for ln in removed:
        for tok in NUM.findall(ln):
            nums += 1
            if not has_num(tok, both):
                errors.append(f"number {tok!r} of removed line {ln!r} is in neither doc")
        if not ln.strip():
            continue
        if norm(ln) in flat_h:
            verbatim += 1
        elif norm(ln) not in flat_both:
            print(f"  reworded (not word for word in {hist} or {ref}): {ln.strip()}")
    added_h = {l[1:] for l in git("diff", base, "--", hist).splitlines()
               if l.startswith("+") and not l.startswith("+++")}
    notes = []
    for doc, text in ((ref, new), (hist, h)):
        for ln in text.splitlines():
            for p in PATH.findall(ln):
                if "*" in p or os.path.exists(p):
                    continue
                if doc == hist and ln not in added_h:
                    notes.append(p)
                else:
                    errors.append(f"{doc} names {p}, which does not exist")
    print(f"{ref}: {len(old)} -> {len(new_lines)} lines; {len(removed)} lines removed or "
          f"rewritten, {verbatim} of the {sum(1 for l in removed if l.strip())} non-blank ones "
          f"word for word in {hist}; {nums} numbers on them, "
          f"{nums - sum(e.startswith('number') for e in errors)} found")
    if notes:
        print(f"  note: {hist} names {len(set(notes))} paths that no longer exist on lines "
              f"written before {base}: {', '.join(sorted(set(notes)))}")
    for e in errors:
        print("  ERROR", e)
    return errors


if __name__ == "__main__":
    base, pairs = sys.argv[1], sys.argv[2:]
    errs = sum((check(base, pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)), [])
    print("OK" if not errs else f"{len(errs)} errors")
    sys.exit(1 if errs else 0)
