"""Throughput of the policy model (Model 3): rollouts and GRPO updates, responses per second.

`python benchmarks/bench_policy.py [--batches 64 256 1024] [--seeds 1 16] [--json PATH]`

For each batch B (responses per update) and seed count S (vmapped, each seed with its own
params, as in a sweep): the rollout (prompt draw, KV-cache sampling, verifier, advantages,
behaviour log-probabilities; "sampling" is the KV-cache sampler alone) and the update (the surrogate's gradient at M = E = 1 and an Adam
step) of the default PolicyConfig, timed after compilation (best of --repeats). Each rate is
also given in FLOP/s, from XLA's cost analysis of the compiled program, and as a fraction of
the CPU's matmul FLOP rate measured in the same run (a float32 --matmul x --matmul jnp.dot).
The warm-up is loaded from (or trained into) its cache first.
"""
import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.models.policy import PolicyConfig, net, setup, surrogate, task
from twoclock.models.policy.dynamics import make_rollout


def best_time(f, *args, repeats: int) -> float:
    jax.block_until_ready(f(*args))
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        best = min(best, time.perf_counter() - t)
    return best


def flops_of(jitted, *args) -> float:
    try:
        cost = jitted.lower(*args).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        return float(cost.get("flops", np.nan))
    except Exception:  # cost analysis is best-effort on some backends
        return float("nan")


def matmul_rate(n: int, repeats: int) -> float:
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    f = jax.jit(lambda a: a @ a)
    return 2.0 * n ** 3 / best_time(f, a, repeats=repeats)


def bench(cfg: PolicyConfig, B: int, S: int, repeats: int) -> dict:
    s = setup(cfg)
    rollout = make_rollout(cfg, s, B)
    params = jax.tree_util.tree_map(lambda v: jnp.broadcast_to(v, (S,) + v.shape), s.ref)
    keys = jax.random.split(jax.random.PRNGKey(1), S)
    ro_fn = jax.jit(jax.vmap(lambda w, k: rollout(w, k)[0]))
    prompt = s.train.prompt[jnp.arange(B) % s.train.prompt.shape[0]]
    sample_fn = jax.jit(jax.vmap(lambda w, k: net.sample(w, s.arch, prompt, task.ANSWER_LEN,
                                                          k)[0]))
    ro = ro_fn(params, keys)
    tx = optax.adam(1e-4)
    opt_state = jax.vmap(tx.init)(params)

    def update(w, st, ro):
        g, _ = jax.grad(surrogate.loss, has_aux=True)(w, ro, cfg, s.arch)
        upd, st = tx.update(g, st, w)
        return optax.apply_updates(w, upd), st

    up_fn = jax.jit(jax.vmap(update))
    t_ro = best_time(ro_fn, params, keys, repeats=repeats)
    t_sa = best_time(sample_fn, params, keys, repeats=repeats)
    t_up = best_time(up_fn, params, opt_state, ro, repeats=repeats)
    f_ro, f_up = flops_of(ro_fn, params, keys), flops_of(up_fn, params, opt_state, ro)
    return {"batch": B, "seeds": S, "rollout_per_s": B * S / t_ro, "update_per_s": B * S / t_up,
            "sample_per_s": B * S / t_sa,
            "rollout_flops_per_s": f_ro / t_ro, "update_flops_per_s": f_up / t_up}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--matmul", type=int, default=2048)
    ap.add_argument("--json", default=None, help="also write the rows here")
    ns = ap.parse_args(argv)
    cfg = PolicyConfig()
    setup(cfg)
    peak = matmul_rate(ns.matmul, ns.repeats)
    rows = [bench(cfg, B, S, ns.repeats) for B in ns.batches for S in ns.seeds]
    peak_after = matmul_rate(ns.matmul, ns.repeats)
    print(f"matmul {ns.matmul}^2 float32: {peak / 1e9:.1f} GFLOP/s before, "
          f"{peak_after / 1e9:.1f} after ({jax.devices()[0].platform}, "
          f"{jax.device_count()} device)")
    head = (f"{'B':>5} {'seeds':>5} | {'sampling':>8} | {'rollout resp/s':>14} {'GFLOP/s':>8} "
            f"{'of mm':>6} | {'update resp/s':>13} {'GFLOP/s':>8} {'of mm':>6}")
    print(head + "\n" + "-" * len(head))
    for r in rows:
        r["rollout_frac_matmul"] = r["rollout_flops_per_s"] / peak
        r["update_frac_matmul"] = r["update_flops_per_s"] / peak
        print(f"{r['batch']:>5} {r['seeds']:>5} | {r['sample_per_s']:>8.0f} | "
              f"{r['rollout_per_s']:>14.0f} "
              f"{r['rollout_flops_per_s'] / 1e9:>8.2f} {r['rollout_frac_matmul']:>6.1%} | "
              f"{r['update_per_s']:>13.0f} {r['update_flops_per_s'] / 1e9:>8.2f} "
              f"{r['update_frac_matmul']:>6.1%}")
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump({"matmul_flops_per_s": [peak, peak_after], "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
