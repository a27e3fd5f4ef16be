"""The engine's estimate against a measured default run: `python benchmarks/default_runs.py MODEL`
prints one JSON line for `experiments/critical_batch.py --model MODEL` (its defaults, no store,
no figure), run in this fresh process, with the compilation cache that TWOCLOCK_CACHE_DIR names
(off unless set).

time: the estimate's "of updates" against the sweep's seconds less what JAX spent tracing,
lowering, compiling or loading compiled programs inside it (jax.monitoring's compile events; the
estimate leaves the compile out and says so). A program compiled in this process also costs
time outside those events at its first run (about 0.1 s for each of the bandit's five), so
`bench_policy.py` reads the time from a second process that loads the first one's programs from
a shared cache: what is left then is the updates. memory: the estimate's total (this process's
resident memory when it was made, the results, the analysis, the largest chunk, the program
constants, the compiler's estimated peak) against the process's peak resident set size at the
end (the analysis and the compiler included).
`bench_policy.py --default-runs` runs this for every model, twice, each in its own process.
"""
import json
import os
import sys
import time

COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                  "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration",
                  "/jax/compilation_cache/cache_retrieval_time_sec")


class SweepProbe:
    """Records each sweep the engine runs: its estimate, what the process held when the estimate
    was made, and its seconds less the compile events inside it. With reset_peak, VmHWM is reset
    (/proc/self/clear_refs) before each estimate, so a sweep's `peak` is its own."""

    def __init__(self, reset_peak: bool = False):
        self.reset_peak, self.sweeps = reset_peak, []
        self._inside, self._compile_s = False, 0.0

    def install(self):
        import jax
        from twoclock.engine import memory, sweep

        def on_event(event, secs, **_):
            if self._inside and event in COMPILE_EVENTS:
                self._compile_s += secs
        jax.monitoring.register_event_duration_secs_listener(on_event)
        real_estimate, real_run = sweep.estimate, sweep._run

        def estimate(*a, **k):
            reset = self.reset_peak and _reset_peak()
            held = memory.resident_bytes()
            e = real_estimate(*a, **k)
            self.sweeps.append({"est": e, "held": held, "peak_is_the_sweeps": reset})
            return e

        def run(*a, **k):  # the sweep after its estimate (the warm-up is prepared before it)
            self._inside, self._compile_s, t = True, 0.0, time.perf_counter()
            try:
                return real_run(*a, **k)
            finally:
                self._inside = False
                self.sweeps[-1].update(run_s=time.perf_counter() - t, compile_s=self._compile_s,
                                       peak=memory.peak_resident_bytes())
        sweep.estimate, sweep._run = estimate, run
        return self


def estimated_bytes(rec: dict) -> int:
    """The estimate's total: what the process held, the results, the analysis, the largest
    chunk, the program constants and the compiler's estimated peak."""
    e = rec["est"]
    return (rec["held"] + e.result_bytes + e.analysis_bytes + e.chunk_bytes + e.program_bytes
            + e.compile_bytes)


def _reset_peak() -> bool:
    """VmHWM back to the current resident set (Linux); False where it cannot be."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(model: str) -> dict:
    from twoclock.engine import estimate as est_mod, memory
    from twoclock.studies import STUDIES
    from twoclock.cli import run_study

    probe = SweepProbe().install()
    t0 = time.perf_counter()
    rc = run_study.main(STUDIES.headline, ["--model", model, "--no-store", "--no-figure",
                                           "--quiet"])
    wall = time.perf_counter() - t0
    rec = probe.sweeps[-1]
    e: est_mod.Estimate = rec["est"]
    est_bytes = estimated_bytes(rec)
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and execve, so a run started by
    # bench_policy.py would report the benchmark's own peak; read at the end, so the analysis
    # and the compiler are in it
    peak = memory.peak_resident_bytes()
    updates_s = rec["run_s"] - rec["compile_s"]
    return {"model": model, "rc": rc, "wall_s": wall, "estimate_line": e.line(),
            "estimated_s": e.seconds, "measured_s": updates_s, "compile_s": rec["compile_s"],
            "estimated_bytes": est_bytes, "peak_rss_bytes": peak,
            "time": e.seconds / updates_s, "memory": est_bytes / peak}


if __name__ == "__main__":
    os.environ.setdefault("TWOCLOCK_CACHE_DIR", "off")  # every program compiled, and timed
    # the policy's warm-up loaded from the default store, not trained again under --no-store
    os.environ.setdefault("TWOCLOCK_POLICY_CACHE", os.path.join("results", "store", "policy_warmup"))
    print(json.dumps(measure(sys.argv[1])), flush=True)
