"""Time of the planner's log readers against the width and length of their input.

`python benchmarks/bench_readers.py [--cols 5000] [--rows 200] [--repeats 3]`

Three inputs, each read by `twoclock.pilot.reader.read_logs` at 1x, 2x and 4x the columns (at
--rows rows) and at 1x, 2x, 4x the rows (at --cols columns): a CSV, a verl file logger .jsonl
(one {"step", "data"} line per step) and a JSON Lines log. Printed: the best of --repeats in
seconds and each time over the 1x time. Reading is linear when the ratios are near 2 and 4
(a quadratic reader gives 4 and 16: the column checks once were). Nothing is written.
"""
import argparse
import json
import os
import tempfile
import time

from twoclock.pilot.reader import read_logs


def _csv(path, cols, rows):
    head = ["run", "batch", "lr", "samples", "acc"] + [f"c{i}" for i in range(cols)]
    with open(path, "w") as f:
        f.write(",".join(head) + "\n")
        for s in range(rows):
            f.write(",".join(["a", "8", "0.1", str(8 * s), str(s / rows)] + ["0.5"] * cols)
                    + "\n")
    return {}


def _jsonl(path, cols, rows):
    with open(path, "w") as f:
        for s in range(rows):
            row = {"run": "a", "batch": 8, "lr": 0.1, "samples": 8 * s, "acc": s / rows}
            row.update({f"c{i}": 0.5 for i in range(cols)})
            f.write(json.dumps(row) + "\n")
    return {}


def _verl(path, cols, rows):
    with open(path, "w") as f:
        for s in range(1, rows + 1):
            data = {"actor/lr": 0.1, "critic/score/mean": s / rows}
            data.update({f"k/{i}": 0.5 for i in range(cols)})
            f.write(json.dumps({"step": s, "data": data}) + "\n")
    return {"preset": "verl", "batch": {"a": 8.0}}


KINDS = {"csv": ("a.csv", _csv), "jsonl": ("a.ndjson", _jsonl), "verl": ("a.jsonl", _verl)}


def best(path, kw, repeats):
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        read_logs(path, ("acc",), **kw)
        out.append(time.perf_counter() - t)
    return min(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cols", type=int, default=5000)
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    print(f"{'input':6} {'grows':5} {'x':>2} {'cols':>7} {'rows':>6} {'seconds':>8} {'/ 1x':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, (name, write) in KINDS.items():
            path = os.path.join(tmp, name)
            for grows in ("cols", "rows"):
                base = None
                for k in (1, 2, 4):
                    cols, rows = (a.cols * k, a.rows) if grows == "cols" else \
                        (a.cols, a.rows * k)
                    kw = write(path, cols, rows)
                    t = best(path, kw, a.repeats)
                    base = base or t
                    print(f"{kind:6} {grows:5} {k:>2} {cols:>7} {rows:>6} {t:8.3f} "
                          f"{t / base:6.2f}")


if __name__ == "__main__":
    main()
