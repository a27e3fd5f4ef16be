"""Compare two folders of experiment JSON files, ignoring what changes run to run.

`python tools/compare_outputs.py OLD NEW`: for each NAME.json in OLD, the same file in NEW must
hold the same values once every "seconds", "versions", "simulation_seconds" and "store" entry is
removed; prints one line per file and exits 1 on any difference.
"""
import json
import os
import sys

VOLATILE = {"seconds", "versions", "simulation_seconds", "store"}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def first_difference(a, b, where=""):
    if type(a) is not type(b):
        return f"{where or '/'}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}/{k}: only in {'new' if k in b else 'old'}"
            d = first_difference(a[k], b[k], f"{where}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{where}/{i}")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def main(old: str, new: str) -> int:
    bad = 0
    for name in sorted(f for f in os.listdir(old) if f.endswith(".json")):
        with open(os.path.join(old, name)) as f:
            a = strip(json.load(f))
        path = os.path.join(new, name)
        if not os.path.exists(path):
            print(f"{name}: missing in {new}")
            bad += 1
            continue
        with open(path) as f:
            b = strip(json.load(f))
        d = first_difference(a, b)
        print(f"{name}: {'identical' if d is None else 'differs at ' + d}")
        bad += d is not None
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
