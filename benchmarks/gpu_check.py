"""GPU check: the fast tests, every model's headline sweep, the policy model's rollout and update
rates and the shared-noise cost on the accelerator, one table (it runs on a CPU-only machine
too, without the policy's sweep).

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
# the policy model: (batch, seeds vmapped) of its rate rows, and the seeds of its headline sweep
# (on an accelerator only: about 3 minutes on 2 CPU cores)
POLICY_RATES = ((64, 1), (1024, 1), (1024, 16))
POLICY_SWEEP_SEEDS = (4, 16)


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


def policy_rows() -> list:
    """Rollout and update responses/s of the policy (benchmarks/bench_policy.py) as rows."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_policy  # a script beside this one
    from twoclock.models.policy import PolicyConfig
    rows = []
    for B, S in POLICY_RATES:
        t = time.perf_counter()
        r = bench_policy.bench(PolicyConfig(), B, S, repeats=3)
        rows.append((f"policy rates B {B} x{S}", f"{r['rollout_per_s']:.3g} roll/s",
                     f"update {r['update_per_s']:.3g} resp/s", time.perf_counter() - t))
    return rows


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
    rows += policy_rows()
    if jax.default_backend() != "cpu":
        rows += [sweep_row(MODELS["policy"], k) for k in POLICY_SWEEP_SEEDS]
    rows.append(sharing_row())
    print(f"\n{'check':<26} {'result':<12} {'detail':<44} {'seconds':>8}")
    for r in rows:
        print(f"{r[0]:<26} {r[1]:<12} {r[2]:<44} {r[3]:>8.1f}")
    print(f"\nran on {label}; total {time.perf_counter() - t0:.0f} s")
    return 0 if rows[0][1] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
