"""GPU check: the fast tests, every model's headline sweep and the shared-noise cost on the
accelerator, one table (it runs on a CPU-only machine too).

    python benchmarks/gpu_check.py            # on a machine with a GPU (or any JAX backend)

It prints which device ran it first and last, so a log can never be mistaken for a CPU run.
"""
from dataclasses import replace
import os
import subprocess
import sys
import time

import jax

from twoclock.config import OptimConfig, SweepConfig
from twoclock.models import MODELS
from twoclock.engine.sweep import n_steps_for, run_sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST_TESTS = ["tests/models/test_quadratic.py", "tests/engine/test_sweep.py",
              "tests/analysis/test_clocks.py", "tests/test_objectives.py",
              "tests/engine/test_store.py::test_chunked_sweep_equals_one_program"]
SEED_FACTORS = {"quadratic": (1, 4, 64), "bandit": (1, 4)}  # x the headline's seeds
# on an accelerator also 4096 seeds (73 728 runs): where a latency-bound loop of small kernels
# stops being free to widen (an H200 ran 1152 and 18 432 runs in 2.3 s and 2.5 s)
WIDE = {"quadratic": (256,)}


def sweep_row(model, seeds: int) -> tuple:
    """(name, runs, rate, seconds) of the model's headline grid at `seeds` seeds, compile incl."""
    sweep = replace(SweepConfig(**model.default_sweep), seeds=seeds)
    t = time.perf_counter()
    res = run_sweep(model, model.config(), OptimConfig(), sweep, quiet=True)
    sec = time.perf_counter() - t
    samples = sum(n_steps_for(sweep.budget, b) * b for b in sweep.batches) * len(sweep.lr0s) * seeds
    return (f"{model.name} {seeds} seeds", f"{res.prog_n.size} runs",
            f"{samples / sec:.3g} {model.unit}/s (compile incl.)", sec)


def sharing_row(seeds: int = 32) -> tuple:
    """Warm seconds of the quadratic grid with 5 lr0 values over 1: the shared-noise path."""
    model = MODELS["quadratic"]
    t = {}
    for lr0s in ((1e-2,), (5e-3, 7e-3, 1e-2, 1.4e-2, 2e-2)):
        sweep = replace(SweepConfig(**model.default_sweep), lr0s=lr0s, seeds=seeds)
        run_sweep(MODELS["quadratic"], model.config(), OptimConfig(), sweep, quiet=True)  # compile
        t0 = time.perf_counter()
        run_sweep(MODELS["quadratic"], model.config(), OptimConfig(), sweep, quiet=True)
        t[len(lr0s)] = time.perf_counter() - t0
    return ("quadratic 5 lr0 / 1 lr0", f"x{t[5] / t[1]:.2f}",
            f"warm {t[1]:.2f} s -> {t[5]:.2f} s, {seeds} seeds", t[1] + t[5])


def main() -> int:
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
    for name, factors in SEED_FACTORS.items():
        model = MODELS[name]
        if jax.default_backend() != "cpu":
            factors += WIDE.get(name, ())
        rows += [sweep_row(model, k * model.default_sweep["seeds"]) for k in factors]
    rows.append(sharing_row())
    print(f"\n{'check':<26} {'result':<12} {'detail':<44} {'seconds':>8}")
    for r in rows:
        print(f"{r[0]:<26} {r[1]:<12} {r[2]:<44} {r[3]:>8.1f}")
    print(f"\nran on {label}; total {time.perf_counter() - t0:.0f} s")
    return 0 if rows[0][1] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
