"""Sweep throughput against a NumPy reference, a loop of single runs and the RNG's draw rate.

    python benchmarks/bench_sweep.py [--quick] [--only quadratic|bandit]
                                     [--prng threefry2x32|rbg|unsafe_rbg] [--devices N]
                                     [--json PATH] [--cold-repeats N]

Prints one table. Rates count useful updates only (not the padding of the last checkpoint
chunk): coordinate-updates = updates x (dim + drift_dim), one Gaussian draw each; samples =
updates x batch. "steady" times a compiled program (compilation reported separately);
"run_sweep" is the end-to-end call a user makes, compilation included. "x draw" is the
effective rate (coordinate-updates/s) as a multiple of the machine's normal-draw rate: above 1
where runs share one draw of the noise (every lr0 of a seed does). The sharing section times a
warm run_sweep with 1 and with 5 lr0 values on the same batches and seeds; the cold/warm section
runs the headline command twice in fresh processes, with an empty and then a filled
compilation cache; the cold small grid section times the small grid's first run_sweep against
the NumPy reference in N fresh processes (default 5) with run_sweep's own choice of XLA code
generator and in N more forced to "fused", and reports the median ratios. The code-generator
table compares XLA's two CPU code generators per grid, and run_sweep's estimate of the update
time with the time measured. --json writes every number of the table, to compare a change with
the last.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller budget, for a smoke test")
    p.add_argument("--prng", default=None, choices=("threefry2x32", "rbg", "unsafe_rbg"),
                   help="JAX PRNG implementation (default: JAX's default)")
    p.add_argument("--devices", type=int, default=None,
                   help="split the CPU into this many XLA host devices (default: one per core, "
                        "as the experiments do; the sweep shards its lanes over them and the "
                        "results are identical)")
    p.add_argument("--only", choices=("quadratic", "bandit"), default=None,
                   help="run one model's section only (the draw rates are always measured)")
    p.add_argument("--json", help="also write the table's numbers to this JSON file")
    p.add_argument("--loop-runs", type=int, default=48,
                   help="at most this many runs timed in the single-run loop (spread over the grid)")
    p.add_argument("--cold-repeats", type=int, default=5,
                   help="fresh processes timing the small grid's first run_sweep against NumPy "
                        "(0: skip)")
    p.add_argument("--cold-child", choices=("auto", "fused"), default=None,
                   help=argparse.SUPPRESS)  # the codegen of one fresh process's small grid
    return p.parse_args()


ARGS = _args() if __name__ == "__main__" else None
if ARGS is not None:
    from twoclock.engine.runtime import use_cpu_cores
    use_cpu_cores(ARGS.devices)  # before JAX starts; the same default as the experiments

import jax  # noqa: E402

if ARGS is not None and ARGS.prng:
    jax.config.update("jax_default_prng_impl", ARGS.prng)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import twoclock  # noqa: E402
from twoclock.config import OptimConfig, SweepConfig  # noqa: E402
from twoclock.models import MODELS  # noqa: E402
from twoclock.models.bandit import BanditConfig  # noqa: E402
from twoclock.models.quadratic import QuadraticConfig, theory  # noqa: E402
from twoclock.engine.stages import constant_run  # noqa: E402
from twoclock.engine.keys import seed_keys  # noqa: E402
from twoclock.engine.sweep import (DEFAULT_MAX_LANES, check_fits, lane_sharding,  # noqa: E402
                            length_args, n_steps_for, program, run_sweep)


def _load_reference():
    spec = importlib.util.spec_from_file_location("numpy_reference", HERE / "numpy_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


nr = _load_reference()
TREE = Path(twoclock.__file__).resolve().parent.parent  # the tree being timed (PYTHONPATH)
ALL_BATCHES = (8, 16, 32, 64, 128, 256)
LR0S = (5e-3, 1e-2, 2e-2)


def grids(budget: int) -> dict:
    """small / medium / large: 48, 288 and 1152 runs."""
    return {
        "small": SweepConfig(batches=(8, 32, 128), lr0s=(1e-2,), seeds=16, budget=budget),
        "medium": SweepConfig(batches=ALL_BATCHES, lr0s=LR0S, seeds=16, budget=budget),
        "large": SweepConfig(batches=ALL_BATCHES, lr0s=LR0S, seeds=64, budget=budget),
    }


def best_of(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


# ---------------------------------------------------------------- draw rates
def jax_draw_rates() -> dict:
    """Standard normals per second from jax.random.normal (float32, jitted), by batch size,
    drawn on every device at once (one key per device, as the sweep's lanes are)."""
    out = {}
    nd = jax.device_count()
    keys = jax.device_put(jax.random.split(jax.random.PRNGKey(0), nd), lane_sharding())
    for log2n in (16, 20, 24):
        n = 1 << log2n
        f = jax.jit(jax.vmap(lambda k, m=n // nd: jax.random.normal(k, (m,), jnp.float32)))
        jax.block_until_ready(f(keys))
        out[f"jax normal f32, batch 2^{log2n}"] = n / best_of(
            lambda: jax.block_until_ready(f(keys)), 5)
    return out


def numpy_draw_rates() -> dict:
    out = {}
    rng = np.random.default_rng(0)
    n = 1 << 22
    for dt in (np.float32, np.float64):
        buf = np.empty(n, dt)
        rng.standard_normal(out=buf, dtype=dt)
        out[f"numpy standard_normal {dt.__name__}, batch 2^22"] = n / best_of(
            lambda: rng.standard_normal(out=buf, dtype=dt), 5)
    return out


# ---------------------------------------------------------------- quadratic sweep
def work(sweep: SweepConfig, dims: int) -> tuple:
    """(coordinate-updates, samples) of the useful updates of a grid."""
    runs_per_batch = len(sweep.lr0s) * sweep.seeds
    updates = sum(n_steps_for(sweep.budget, b) for b in sweep.batches) * runs_per_batch
    samples = sum(n_steps_for(sweep.budget, b) * b for b in sweep.batches) * runs_per_batch
    return updates * dims, samples


def lanes(sweep: SweepConfig, opt: OptimConfig, b: int):
    """(batch_N, lr_N, key_N) of one batch, ordered (lr0, seed) as in run_sweep."""
    nL, S = len(sweep.lr0s), sweep.seeds
    lr_N = np.repeat(opt.lr_grid([b], sweep.lr0s)[0], S)
    return (np.full(nL * S, b, np.float32), lr_N.astype(np.float32),
            jnp.tile(seed_keys(sweep.seed, S), (nL, 1)))


def streams(sweep: SweepConfig, opt: OptimConfig, b: int):
    """(batch_S, lr_SxL, key_S) of one batch as run_sweep lays it out: one noise stream per
    seed, each carrying every lr0."""
    S = sweep.seeds
    lr_L = np.array(opt.lr_grid([b], sweep.lr0s)[0], np.float32)
    return np.full(S, b, np.float32), np.tile(lr_L, (S, 1)), np.asarray(seed_keys(sweep.seed, S))


def jax_steady(model: str, cfg, opt, sweep: SweepConfig, codegen: str = "fused") -> tuple:
    """(run seconds, compile seconds) of the engine's programs, one call per batch.

    As in run_sweep, one program serves every batch of a model whose batch is traced, so only
    its first call compiles; the compile seconds are each first call less its run time (the
    trace and lowering included)."""
    spec = MODELS[model]
    t_run = t_compile = 0.0
    nd = jax.device_count()
    progs: dict = {}
    for b in sweep.batches:
        n = n_steps_for(sweep.budget, b)
        key = b if spec.static_batch else None
        if key not in progs:
            progs[key] = program(spec, cfg, opt, n, sweep.n_ckpt, key, codegen)
        f, extra = progs[key], length_args(spec, n, sweep.n_ckpt)
        args = [jax.device_put(a, lane_sharding()) if len(a) % nd == 0 else a
                for a in streams(sweep, opt, b)]  # sharded over the streams, as run_sweep does
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args, *extra))
        t_first = time.perf_counter() - t0
        t_b = best_of(lambda: jax.block_until_ready(f(*args, *extra)), 2)
        t_run += t_b
        t_compile += max(t_first - t_b, 0.0)
    return t_run, t_compile


def jax_loop(model: str, cfg, opt, sweep: SweepConfig, max_runs: int) -> tuple:
    """(seconds, coordinate-updates, runs) of a Python loop of single jitted runs.

    At most max_runs runs are timed, spread evenly over the grid; compilation excluded.
    """
    spec = MODELS[model]
    dims = cfg.dim + cfg.drift_dim
    nL, S = len(sweep.lr0s), sweep.seeds
    all_runs = [(b, j) for b in sweep.batches for j in range(nL * S)]
    pick = all_runs[:: max(1, len(all_runs) // max_runs)][:max_runs]
    fns = {}
    for b in sorted({b for b, _ in pick}):
        n = n_steps_for(sweep.budget, b)
        fns[b] = jax.jit(constant_run(spec, cfg, opt, n, sweep.n_ckpt,
                                      b if spec.static_batch else None))
        batch_N, lr_N, key_N = lanes(sweep, opt, b)
        jax.block_until_ready(fns[b](batch_N[0], lr_N[0], key_N[0]))
    args = {b: lanes(sweep, opt, b) for b in fns}
    t0 = time.perf_counter()
    coord = 0
    for b, j in pick:
        batch_N, lr_N, key_N = args[b]
        jax.block_until_ready(fns[b](batch_N[j], lr_N[j], key_N[j]))
        coord += n_steps_for(sweep.budget, b) * dims
    return time.perf_counter() - t0, coord, len(pick)


def bench_quadratic(budget: int, max_loop: int, rows: list) -> None:
    cfg, opt = QuadraticConfig(), OptimConfig()
    dims = cfg.dim + cfg.drift_dim
    for name, sweep in grids(budget).items():
        runs = len(sweep.batches) * len(sweep.lr0s) * sweep.seeds
        coord, samples = work(sweep, dims)
        # quick first: the trace caches it warms favour fused, the one it is compared with
        t_quick, t_comp_quick = jax_steady("quadratic", cfg, opt, sweep, "quick")
        t_jax, t_comp = jax_steady("quadratic", cfg, opt, sweep)
        est = check_fits(MODELS["quadratic"], cfg, opt, sweep, DEFAULT_MAX_LANES,
                         jax.device_count())
        t0 = time.perf_counter()
        res = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True)
        t_e2e = time.perf_counter() - t0
        t0 = time.perf_counter()
        nr.quadratic_sweep(cfg, opt, sweep)
        t_np = time.perf_counter() - t0
        t_loop, coord_loop, n_loop = jax_loop("quadratic", cfg, opt, sweep, max_loop)
        rows.append({
            "grid": f"{name} ({runs} runs)", "coord": coord, "samples": samples,
            "jax": coord / t_jax, "jax_samples": samples / t_jax, "compile": t_comp,
            "e2e": coord / t_e2e, "e2e_s": t_e2e, "numpy": coord / t_np, "np_s": t_np,
            "loop": coord_loop / t_loop, "loop_runs": n_loop,
            "run_s": t_jax, "quick_run_s": t_quick, "quick_compile": t_comp_quick,
            "estimated_run_s": est.seconds, "codegen": res.codegen,
        })
        print(f"  quadratic {name}: {runs} runs done", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- bandit
def bench_bandit(budget: int, rows: list) -> None:
    """The bandit sweep against its NumPy reference."""
    cfg, opt = BanditConfig(), OptimConfig()
    sweep = SweepConfig(batches=(64, 256), lr0s=(0.02,), seeds=32, budget=budget // 2)
    updates = sum(n_steps_for(sweep.budget, b) for b in sweep.batches) * sweep.seeds
    samples = sum(n_steps_for(sweep.budget, b) * b for b in sweep.batches) * sweep.seeds
    t_jax, t_comp = jax_steady("bandit", cfg, opt, sweep)
    t0 = time.perf_counter()
    res = run_sweep(MODELS["bandit"], cfg, opt, sweep, quiet=True)
    t_e2e = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = nr.bandit_sweep(cfg, opt, sweep)
    t_np = time.perf_counter() - t0
    med = lambda x: np.median(x, axis=-1).ravel().astype(int).tolist()
    rows.append({"grid": f"bandit, batches 64 and 256 x {sweep.seeds} seeds, budget {sweep.budget}",
                 "jax_samples": samples / t_jax, "jax_updates": updates / t_jax,
                 "np_samples": samples / t_np, "compile": t_comp, "np_s": t_np, "jax_s": t_jax,
                 "e2e_s": t_e2e,
                 "clocks": f"median N_prog JAX {med(res.prog_n)} vs NumPy {med(ref['prog_n'])}, "
                           f"N_fail JAX {med(res.fail_n)} vs NumPy {med(ref['fail_n'])} "
                           f"(batches {list(sweep.batches)})"})


# ---------------------------------------------------------------- shared noise, cold start
def bench_sharing(budget: int, seeds: int = 32) -> dict:
    """Warm run_sweep seconds with 1 and with 5 lr0 values (default batches, same seeds)."""
    cfg, opt = QuadraticConfig(), OptimConfig()
    out = {}
    for lr0s in ((1e-2,), (5e-3, 7e-3, 1e-2, 1.4e-2, 2e-2)):
        sweep = SweepConfig(batches=ALL_BATCHES, lr0s=lr0s, seeds=seeds, budget=budget)
        run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True)  # compile (and fill the cache)
        out[len(lr0s)] = best_of(lambda: run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True), 3)
    return {"seeds": seeds, "one_lr0_s": out[1], "five_lr0_s": out[5], "ratio": out[5] / out[1]}


# A child process must not preallocate GPU memory, which this one holds: on an H200 each headline
# child logged 11 failed allocations (104.85 GiB down to 36.56 GiB) before it fell back.
CHILD_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def cold_small_child(budget: int, codegen: str) -> None:
    """In a fresh process: the small grid's first run_sweep (its compile the process's first
    beyond JAX's start-up), then the NumPy reference; prints both seconds as JSON."""
    jax.devices()  # backend start-up is not the sweep's
    sweep = grids(budget)["small"]
    cfg, opt = QuadraticConfig(), OptimConfig()
    t0 = time.perf_counter()
    res = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True, codegen=codegen)
    t_jax = time.perf_counter() - t0
    t0 = time.perf_counter()
    nr.quadratic_sweep(cfg, opt, sweep)
    print(json.dumps({"run_sweep_s": t_jax, "numpy_s": time.perf_counter() - t0,
                      "codegen": res.codegen}))


def bench_cold_small(repeats: int, quick: bool) -> dict:
    """The cold small grid against NumPy in `repeats` fresh processes (no compilation cache)
    with run_sweep's own codegen choice, alternating with as many forced to fused: its ratio
    moves with the load, since the compile runs on one thread."""
    env = {**os.environ, "TWOCLOCK_CACHE_DIR": "off", **CHILD_ENV}
    runs: dict = {"auto": [], "fused": []}
    for _ in range(repeats):
        for codegen, out in runs.items():
            cmd = [sys.executable, str(HERE / "bench_sweep.py"), "--cold-child", codegen] + (
                ["--quick"] if quick else [])
            p = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
            out.append(json.loads(p.stdout.strip().splitlines()[-1]))
    summary = {}
    for codegen, out in runs.items():
        ratios = sorted(r["numpy_s"] / r["run_sweep_s"] for r in out)
        summary[codegen] = {"runs": out, "ratios": ratios,
                            "median_ratio": float(np.median(ratios))}
    return summary


def bench_cold_warm(quick: bool) -> dict:
    """The headline command in two fresh processes: an empty compilation cache, then filled."""
    extra = ["--budget", "20000"] if quick else []
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TWOCLOCK_CACHE_DIR": os.path.join(tmp, "cache"), **CHILD_ENV}
        for name in ("cold", "warm"):
            path = os.path.join(tmp, f"{name}.json")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(TREE / "experiments" / "critical_batch.py"),
                            "--quiet", "--no-store", "--no-figure", "--json", path, *extra],
                           check=True, env=env, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            with open(path) as f:
                out[name] = {"wall_s": wall, "simulation_s": json.load(f)["seconds"]["simulation"]}
    out["ratio_simulation"] = out["cold"]["simulation_s"] / out["warm"]["simulation_s"]
    out["ratio_wall"] = out["cold"]["wall_s"] / out["warm"]["wall_s"]
    return out


# ---------------------------------------------------------------- exact engine
def theory_timing() -> str:
    """1000 configurations (40 batches x 25 lrs) of steps_to_target_many, SGD and momentum, and
    100 of median_steps_many, momentum and SGD."""
    cfg = QuadraticConfig()
    b_K = np.geomspace(1, 1024, 40)[:, None]
    lines = []
    for opt, top in ((OptimConfig(name="sgd"), 1.5), (OptimConfig(name="momentum"), 0.15)):
        lr_K = np.geomspace(top / 1000, top, 25)[None, :]
        t0 = time.perf_counter()
        n_first = theory.steps_to_target_many(cfg, opt, b_K, lr_K, max_steps=10**7)
        t_first = time.perf_counter() - t0
        t_again = best_of(lambda: theory.steps_to_target_many(cfg, opt, b_K, lr_K * 0.9,
                                                              max_steps=10**7), 3)
        lines.append(f"exact engine ({opt.name}): steps_to_target_many on {n_first.size} "
                     f"configurations ({int((n_first > 0).sum())} reach the target): "
                     f"{t_first:.2f} s first call (with compile), "
                     f"{t_again:.3f} s after")
    rng = np.random.default_rng(2)
    b, lr = rng.integers(1, 256, 100), 10 ** rng.uniform(-2, -0.5, 100)
    for opt in (OptimConfig(name="momentum"), OptimConfig(name="sgd")):
        theory.median_steps_many(cfg, opt, b, lr, 20_000)  # compile
        t = best_of(lambda o=opt: theory.median_steps_many(cfg, o, b, lr, 20_000), 3)
        lines.append(f"first-passage progress clock ({opt.name}): median_steps_many on 100 "
                     f"configurations: {t:.3f} s after compilation ({1e3 * t / 100:.1f} ms each)")
    return "\n".join(lines)


# ---------------------------------------------------------------- report
def fmt(x: float) -> str:
    return f"{x:.3g}"


def main() -> int:
    args = ARGS
    budget = 20_000 if args.quick else 200_000
    if args.cold_child:
        cold_small_child(budget, args.cold_child)
        return 0
    t_all = time.perf_counter()
    print(f"load average at start {os.getloadavg()[0]:.1f}")
    print(f"twoclock from {TREE.name}")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} x{len(jax.devices())}, "
          f"{os.cpu_count()} CPU cores, PRNG {jax.config.jax_default_prng_impl}, "
          f"numpy {np.__version__}, budget {budget} samples/run")
    draws = {**jax_draw_rates(), **numpy_draw_rates()}
    jax_peak = max(v for k, v in draws.items() if k.startswith("jax"))
    np_peak = max(v for k, v in draws.items() if k.startswith("numpy"))
    print("\nStandard normals per second (best of 5):")
    for k, v in draws.items():
        print(f"  {k:42s} {fmt(v)}")

    rows: list = []
    if args.only != "bandit":
        bench_quadratic(budget, args.loop_runs, rows)
    if rows:
        print("\nQuadratic Adam sweep (dim 64 + drift 8; batches x lr0 x seeds; coordinate-updates/s):")
        hdr = ("| grid | JAX sweep (steady) | samples/s | run_sweep (with compile) | NumPy | "
               "single-run loop | JAX/NumPy | run_sweep/NumPy | JAX/loop | x draw peak | "
               "x draw 2^24 |")
        print(hdr)
        print("|" + "---|" * (hdr.count("|") - 1))
        d24 = draws["jax normal f32, batch 2^24"]
        for r in rows:
            print(f"| {r['grid']} | {fmt(r['jax'])} | {fmt(r['jax_samples'])} | "
                  f"{fmt(r['e2e'])} ({r['e2e_s']:.1f} s) | {fmt(r['numpy'])} ({r['np_s']:.1f} s) | "
                  f"{fmt(r['loop'])} ({r['loop_runs']} runs) | {r['jax'] / r['numpy']:.1f}x | "
                  f"{r['np_s'] / r['e2e_s']:.2f}x | {r['jax'] / r['loop']:.1f}x | "
                  f"{r['jax'] / jax_peak:.2f}x | {r['jax'] / d24:.2f}x |")
        print(f"compile seconds per grid: " + ", ".join(f"{r['grid']}: {r['compile']:.1f}"
                                                       for r in rows))
        print("\nXLA code generators (twoclock.engine.layout), run_sweep's estimate of the updates:\n"
              "| grid | compile fused / quick | run fused / quick | quick run / fused run | "
              "estimated run | estimated / fused run | run_sweep chose |\n"
              "|---|---|---|---|---|---|---|")
        for r in rows:
            est_s = r["estimated_run_s"]
            print(f"| {r['grid']} | {r['compile']:.2f} / {r['quick_compile']:.2f} s | "
                  f"{r['run_s']:.3f} / {r['quick_run_s']:.3f} s | "
                  f"{r['quick_run_s'] / r['run_s']:.2f}x | "
                  + ("- | - |" if est_s is None else
                     f"{est_s:.3f} s | {est_s / r['run_s']:.2f}x |")
                  + f" {r['codegen']} |")
    print(f"JAX draw peak {fmt(jax_peak)}/s, NumPy draw peak {fmt(np_peak)}/s")

    brows: list = []
    if args.only != "quadratic":
        bench_bandit(budget, brows)
    for r in brows:
        print(f"\nBandit sweep (default BanditConfig, Adam, M = E = 1; responses/s):\n"
              f"| grid | JAX sweep (steady) | JAX updates/s | run_sweep (with compile) | "
              f"NumPy | JAX/NumPy (steady) | run_sweep/NumPy |\n"
              f"|---|---|---|---|---|---|---|\n"
              f"| {r['grid']} | {fmt(r['jax_samples'])} ({r['jax_s']:.2f} s) | "
              f"{fmt(r['jax_updates'])} | {r['e2e_s']:.2f} s | "
              f"{fmt(r['np_samples'])} ({r['np_s']:.2f} s) | "
              f"{r['jax_samples'] / r['np_samples']:.1f}x | {r['np_s'] / r['e2e_s']:.2f}x |\n"
              f"bandit compile seconds (both programs): {r['compile']:.1f}\n{r['clocks']}")
    sharing = cold_warm = None
    if args.only != "bandit":
        sharing = bench_sharing(budget)
        print(f"\nShared noise: warm run_sweep, default batches, {sharing['seeds']} seeds: "
              f"1 lr0 {sharing['one_lr0_s']:.2f} s, 5 lr0 {sharing['five_lr0_s']:.2f} s, "
              f"ratio {sharing['ratio']:.2f}")
        cold_warm = bench_cold_warm(args.quick)
        print(f"Headline cold/warm (fresh processes; empty, then filled compilation cache): "
              f"simulation {cold_warm['cold']['simulation_s']:.2f} s / "
              f"{cold_warm['warm']['simulation_s']:.2f} s = {cold_warm['ratio_simulation']:.2f}x, "
              f"wall {cold_warm['cold']['wall_s']:.1f} s / {cold_warm['warm']['wall_s']:.1f} s = "
              f"{cold_warm['ratio_wall']:.2f}x")
    cold_small = None
    if args.only != "bandit" and args.cold_repeats > 0:
        cold_small = bench_cold_small(args.cold_repeats, args.quick)
        for codegen, c in cold_small.items():
            print(f"Cold small grid in {args.cold_repeats} fresh processes, codegen {codegen} "
                  f"({c['runs'][0]['codegen']}; run_sweep, then NumPy): "
                  + ", ".join(f"{r['run_sweep_s']:.2f} s vs {r['numpy_s']:.2f} s"
                              for r in c["runs"])
                  + f"; NumPy / run_sweep median {c['median_ratio']:.2f}x "
                  f"(range {c['ratios'][0]:.2f}-{c['ratios'][-1]:.2f}x)")
    timing = theory_timing()
    print("\n" + timing)
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"budget": budget, "devices": jax.device_count(), "draws": draws,
                       "quadratic": rows, "bandit": brows, "sharing": sharing,
                       "cold_warm": cold_warm, "cold_small": cold_small,
                       "theory": timing.splitlines()}, f, indent=1)
        print(f"wrote {args.json}")
    print(f"\nbenchmark wall time {time.perf_counter() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
