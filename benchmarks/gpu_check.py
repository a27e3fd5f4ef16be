"""GPU check: the fast tests and a quick benchmark on the accelerator, one table, < 5 minutes.

    python benchmarks/gpu_check.py            # on a machine with a GPU (or any JAX backend)

It prints which device ran it first and last, so a log can never be mistaken for a CPU run.
"""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST_TESTS = ["tests/test_quadratic.py", "tests/test_sweep.py", "tests/test_clocks.py",
              "tests/test_objectives.py", "tests/test_store.py::test_chunked_sweep_equals_one_program"]


def main() -> int:
    import jax
    dev = jax.devices()[0]
    label = f"{jax.default_backend()}: {dev.device_kind} x{jax.device_count()}"
    print(f"device: {label}", flush=True)
    rows = []
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FAST_TESTS],
                       cwd=ROOT, capture_output=True, text=True, timeout=240)
    last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
    rows.append(("fast tests", "pass" if p.returncode == 0 else "FAIL", last,
                 time.perf_counter() - t0))
    if p.returncode != 0:
        print(p.stdout[-4000:], p.stderr[-2000:])

    from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
    for name, seeds in (("quadratic headline grid", 16), ("quadratic 4x seeds", 64),
                        ("quadratic 64x seeds", 1024)):
        sweep = SweepConfig(seeds=seeds)
        t = time.perf_counter()
        res = run_sweep("quadratic", QuadraticConfig(), OptimConfig(), sweep, quiet=True)
        sec = time.perf_counter() - t
        upd = sum(sweep.budget // b for b in sweep.batches) * len(sweep.lr0s) * seeds
        rows.append((name, f"{res.prog_n.size} runs", f"{upd * 72 / sec:.3g} coord-updates/s "
                     f"(compile incl.)", sec))
    print(f"\n{'check':<26} {'result':<12} {'detail':<44} {'seconds':>8}")
    for r in rows:
        print(f"{r[0]:<26} {r[1]:<12} {r[2]:<44} {r[3]:>8.1f}")
    print(f"\nran on {label}; total {time.perf_counter() - t0:.0f} s")
    return 0 if rows[0][1] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
