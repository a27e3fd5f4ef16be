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
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from default_runs import COMPILE_EVENTS  # noqa: E402


def _reset_peak() -> bool:
    """VmHWM back to the current resident set (Linux); False where it cannot be."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(argv: list) -> list:
    import jax
    from twoclock.engine import memory, sweep
    from twoclock.studies import STUDIES
    from twoclock.cli import run_study

    rows, now = [], {"compile_s": 0.0, "inside": False}

    def on_event(event, secs, **_):
        if now["inside"] and event in COMPILE_EVENTS:
            now["compile_s"] += secs
    jax.monitoring.register_event_duration_secs_listener(on_event)
    real_estimate, real_run = sweep.estimate, sweep._run

    def estimate(*a, **k):
        reset = _reset_peak()
        held = memory.resident_bytes()
        e = real_estimate(*a, **k)
        now.update(est=e, held=held, reset=reset, compile_s=0.0)
        return e

    def run(*a, **k):
        now["inside"], t = True, time.perf_counter()
        try:
            return real_run(*a, **k)
        finally:
            now["inside"] = False
            e = now["est"]
            est_bytes = (now["held"] + e.result_bytes + e.analysis_bytes + e.chunk_bytes
                         + e.program_bytes + e.compile_bytes)
            secs = time.perf_counter() - t - now["compile_s"]
            peak = memory.peak_resident_bytes()
            rows.append({"estimate_line": e.line(), "estimated_s": e.seconds,
                         "measured_s": secs, "compile_s": now["compile_s"],
                         "time": e.seconds / secs, "estimated_bytes": est_bytes,
                         "peak_rss_bytes": peak, "memory": est_bytes / peak,
                         "peak_is_the_sweeps": now["reset"]})

    import twoclock.studies.policy_study as study
    real_cells = study.run_cells

    def run_cells(model, todo, **k):  # the cells' names, in the order their sweeps run
        now["names"] = [name for name, *_ in todo]
        return real_cells(model, todo, **k)

    sweep.estimate, sweep._run, study.run_cells = estimate, run, run_cells
    rc = run_study.main(STUDIES.policy_study, [*argv, "--no-figure"])
    if rc != 0:
        raise SystemExit(f"study_cells.py: the study exited {rc}")
    for name, r in zip(now.get("names", []), rows):
        r["cell"] = name
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
