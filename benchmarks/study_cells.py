"""The engine's estimate against each cell of the policy study: `python benchmarks/study_cells.py
[--json FILE] [policy_study flags]` runs `experiments/policy_study.py` in this process (its
flags passed on; the warm-up loaded from the store under the working directory when it is
there) and prints, per cell, the estimate's time and memory against the measured ones.

time: as `default_runs.py` measures it, the estimate's "of updates" against the sweep's seconds
less what JAX spent tracing, lowering, compiling or loading programs inside it. The first cell
to use a program compiles it, so its time also carries the compiled program's first-run cost.
memory: the estimate's total (what the process held when it was made, the results, the
largest chunk, the program constants, the compiler's estimated peak) against the peak resident
set size of the sweep alone: VmHWM is reset (/proc/self/clear_refs) when its estimate is made.
The process keeps the programs of earlier cells, so both sides include them.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from default_runs import SweepProbe, estimated_bytes  # noqa: E402


def measure(argv: list) -> list:
    from twoclock.studies import STUDIES
    from twoclock.cli import run_study
    import twoclock.studies.policy_study as study

    probe, names = SweepProbe(reset_peak=True).install(), []
    real_cells = study.run_cells

    def run_cells(model, todo, **k):  # the cells' names, in the order their sweeps run
        names[:] = [name for name, *_ in todo]
        return real_cells(model, todo, **k)

    study.run_cells = run_cells
    rc = run_study.main(STUDIES.policy_study, [*argv, "--no-figure"])
    if rc != 0:
        raise SystemExit(f"study_cells.py: the study exited {rc}")
    rows = []
    for i, rec in enumerate(probe.sweeps):
        e, secs, est = rec["est"], rec["run_s"] - rec["compile_s"], estimated_bytes(rec)
        rows.append({"cell": names[i] if i < len(names) else "?", "estimate_line": e.line(),
                     "estimated_s": e.seconds, "measured_s": secs,
                     "compile_s": rec["compile_s"], "time": e.seconds / secs,
                     "estimated_bytes": est, "peak_rss_bytes": rec["peak"],
                     "memory": est / rec["peak"],
                     "peak_is_the_sweeps": rec["peak_is_the_sweeps"]})
    return rows


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out = None
    if "--json" in argv:
        i = argv.index("--json")
        out, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    rows = measure(argv)
    print("\n| cell | updates estimated | measured | ratio | memory estimated | peak | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.get('cell', '?')} | {r['estimated_s']:.1f} s | {r['measured_s']:.1f} s | "
              f"{r['time']:.2f} | {r['estimated_bytes'] / 2**20:.0f} MiB | "
              f"{r['peak_rss_bytes'] / 2**20:.0f} MiB | {r['memory']:.2f} |")
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
