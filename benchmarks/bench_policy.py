"""Throughput of the policy model (Model 3): rollouts and GRPO updates, responses per second.

`python benchmarks/bench_policy.py [--batches 64 256 1024] [--seeds 1 16] [--no-peer]
[--default-runs] [--json PATH]`

For each batch B (responses per update) and seed count S (vmapped, each seed with its own
params, as in a sweep): the rollout (prompt draw, KV-cache sampling with the behaviour
log-probabilities, verifier, advantages; "sampling" is the KV-cache sampler alone) and the
update (the surrogate's gradient at M = E = 1 and an Adam step) of the default PolicyConfig,
timed after compilation (best of --repeats). Each rate is also given in FLOP/s, from XLA's cost
analysis of the compiled program, as a fraction of the CPU's matmul FLOP rate measured in the
same run (a float32 --matmul x --matmul jnp.dot), and as a fraction of the rate of the
program's own matrix products: every dot_general it runs (read from its jaxpr, a scan's body
once per iteration), each timed alone at its shapes on random operands, weighted by how often
the program runs it.

Then the peer (benchmarks/peer_policy.py: the same network and update in flax.nnx + optax, one
model) at each B: its rates, twoclock's (one model, timed interleaved with it) over them, and
the check that it computes
twoclock's loss and gradient on the same batch. With --default-runs, each model's default
`critical_batch.py` run twice in fresh processes (benchmarks/default_runs.py): the engine's
estimate over the measured time of the updates (the second process, its programs loaded from the
first's compilation cache; the first's, compiled in-process, beside it) and over the first's
peak memory. The warm-up is loaded from (or trained into) its cache
first.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.models.policy import PolicyConfig, net, setup, surrogate, task
from twoclock.models.policy.dynamics import make_rollout


def best_time(f, *args, repeats: int) -> float:
    return best_times([(f, args)], repeats)[0]


def best_times(calls, repeats: int) -> list:
    """The best of `repeats` wall times of each (f, args) after one warm call, the calls
    interleaved so that a change in the machine's load falls on all of them alike."""
    for f, args in calls:
        jax.block_until_ready(f(*args))
    best = [np.inf] * len(calls)
    for _ in range(repeats):
        for i, (f, args) in enumerate(calls):
            t = time.perf_counter()
            jax.block_until_ready(f(*args))
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def cost_of(jitted, *args) -> tuple:
    """(FLOPs, bytes accessed) of the compiled program, from XLA's cost analysis."""
    try:
        cost = jitted.lower(*args).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        return float(cost.get("flops", np.nan)), float(cost.get("bytes accessed", np.nan))
    except Exception:  # cost analysis is best-effort on some backends
        return float("nan"), float("nan")


def stream_rate(mib: int, repeats: int) -> float:
    """Bytes per second of an elementwise pass (read and write) over mib MiB of float32."""
    a = jnp.ones((mib * 2**18,), jnp.float32)
    return 2.0 * a.nbytes / best_time(jax.jit(lambda a: a * 2 + 1), a, repeats=repeats)


def matmul_rate(n: int, repeats: int) -> float:
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    f = jax.jit(lambda a: a @ a)
    return 2.0 * n ** 3 / best_time(f, a, repeats=repeats)


def dots_of(fn, *args) -> dict:
    """{(lhs shape, rhs shape, dtype, dimension numbers): times run} of every dot_general that
    fn(*args) runs (a scan's body counted once per iteration)."""
    out: dict = {}

    def walk(jaxpr, times):
        for e in jaxpr.eqns:
            if e.primitive.name == "dot_general":
                (lc, rc), (lb, rb) = e.params["dimension_numbers"]
                key = (e.invars[0].aval.shape, e.invars[1].aval.shape, str(e.invars[0].aval.dtype),
                       ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
                out[key] = out.get(key, 0) + times
            n = times * e.params["length"] if e.primitive.name == "scan" else times
            for p in e.params.values():
                for q in p if isinstance(p, (tuple, list)) else (p,):
                    if hasattr(q, "jaxpr") and hasattr(q, "consts"):
                        walk(q.jaxpr, n)
                    elif type(q).__name__ == "Jaxpr":
                        walk(q, n)

    walk(jax.make_jaxpr(fn)(*args).jaxpr, 1)
    return out


def dot_flops(key) -> float:
    lhs, rhs, _, ((lc, rc), (lb, rb)) = key
    free_l = [d for i, d in enumerate(lhs) if i not in lc + lb]
    free_r = [d for i, d in enumerate(rhs) if i not in rc + rb]
    return 2.0 * float(np.prod([lhs[i] for i in lb + lc]) * np.prod(free_l) * np.prod(free_r))


def own_shape_rate(dots: dict, repeats: int) -> tuple:
    """(FLOP/s of the network's own matrix products, their seconds per call): each distinct
    product timed alone on random operands (best of repeats), weighted by how often the
    program runs it."""
    flops = secs = 0.0
    for key, times in dots.items():
        lhs, rhs, dtype, dn = key
        a, b = (jax.random.normal(jax.random.PRNGKey(i), s, dtype) for i, s in enumerate((lhs, rhs)))
        f = jax.jit(lambda a, b, dn=dn: jax.lax.dot_general(a, b, dn))
        flops += times * dot_flops(key)
        secs += times * best_time(f, a, b, repeats=repeats)
    return flops / secs, secs


def bench(cfg: PolicyConfig, B: int, S: int, repeats: int) -> dict:
    s = setup(cfg)
    rollout = make_rollout(cfg, s, B)
    params = jax.tree_util.tree_map(lambda v: jnp.broadcast_to(v, (S,) + v.shape), s.ref)
    keys = jax.random.split(jax.random.PRNGKey(1), S)
    ro_fn = jax.jit(jax.vmap(lambda w, k: rollout(w, k)[0]))
    # the sampler alone as the rollout calls it: P prompts, each prefilled once for its G
    P = cfg.prompts(B)
    prompt = s.train.prompt[jnp.arange(P) % s.train.prompt.shape[0]]
    sample_fn = jax.jit(jax.vmap(lambda w, k: net.sample(w, s.arch, prompt, task.ANSWER_LEN,
                                                          k, cfg.group)[0]))
    ro = ro_fn(params, keys)
    tx = optax.adam(1e-4)
    opt_state = jax.vmap(tx.init)(params)

    def update(w, st, ro):
        g, _ = jax.grad(surrogate.loss, has_aux=True)(w, ro, cfg, s.arch)
        upd, st = tx.update(g, st, w)
        return optax.apply_updates(w, upd), st

    up_fn = jax.jit(jax.vmap(update))
    # the rollout and the sampler interleaved, apart from the update (whose memory traffic
    # would fall on whichever call follows it)
    t_ro, t_sa = best_times([(ro_fn, (params, keys)), (sample_fn, (params, keys))], repeats)
    t_up = best_time(up_fn, params, opt_state, ro, repeats=repeats)
    (f_ro, _), (f_up, by_up) = cost_of(ro_fn, params, keys), cost_of(up_fn, params, opt_state, ro)
    ro_dots, up_dots = dots_of(ro_fn, params, keys), dots_of(up_fn, params, opt_state, ro)
    own_ro, own_ro_s = own_shape_rate(ro_dots, repeats)
    own_up, own_up_s = own_shape_rate(up_dots, repeats)
    return {"batch": B, "seeds": S, "rollout_per_s": B * S / t_ro, "update_per_s": B * S / t_up,
            "sample_per_s": B * S / t_sa, "rollout_over_sampler": t_sa / t_ro,
            "rollout_flops_per_s": f_ro / t_ro, "update_flops_per_s": f_up / t_up,
            "own_shape_rollout_flops_per_s": own_ro, "own_shape_update_flops_per_s": own_up,
            # what the matrix products would take alone at their own rate, of the whole
            "rollout_dot_time_frac": own_ro_s / t_ro, "update_dot_time_frac": own_up_s / t_up,
            "rollout_dot_flop_frac": sum(n * dot_flops(k) for k, n in ro_dots.items()) / f_ro,
            "update_dot_flop_frac": sum(n * dot_flops(k) for k, n in up_dots.items()) / f_up,
            "update_bytes_per_s": by_up / t_up}


def bench_peer(cfg: PolicyConfig, B: int, repeats: int) -> dict:
    """The flax.nnx + optax peer (benchmarks/peer_policy.py) at B, one model: its rollout and
    update rates, and the check that it computes twoclock's loss and gradient on one batch."""
    import peer_policy as peer
    from flax import nnx
    s = setup(cfg)
    model = peer.from_twoclock(s.ref, s.arch)
    rollout = peer.make_rollout(s.train, cfg.group, B)
    make_opt, update = peer.make_update()
    optimizer = make_opt(model)
    key = jax.random.PRNGKey(1)
    batch = rollout(model, key)
    ro, _ = jax.jit(make_rollout(cfg, s, B))(s.ref, key)
    loss_tc, g_tc = jax.value_and_grad(lambda w: surrogate.loss(w, ro, cfg, s.arch)[0])(s.ref)
    loss_peer, g = nnx.value_and_grad(peer.grpo_loss)(
        model, ro.prompt, ro.resp, ro.mask, ro.adv, ro.logp_old)
    g_peer = peer.grads_as_twoclock(g, s.arch.n_layers)
    err = max(float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(a)), 1e-30))
              for a, b in zip(jax.tree.leaves(g_tc), jax.tree.leaves(g_peer)))
    # twoclock's own, one model (no seed axis), timed interleaved with the peer's
    tc_ro = jax.jit(lambda w, k: make_rollout(cfg, s, B)(w, k)[0])
    tx = optax.adam(1e-4)

    def tc_update(w, st, ro):
        g, _ = jax.grad(surrogate.loss, has_aux=True)(w, ro, cfg, s.arch)
        upd, st = tx.update(g, st, w)
        return optax.apply_updates(w, upd), st

    tc_up = jax.jit(tc_update)
    t_tc_ro, t_ro = best_times([(tc_ro, (s.ref, key)), (rollout, (model, key))], repeats)
    t_tc_up, t_up = best_times([(tc_up, (s.ref, tx.init(s.ref), ro)),
                                (update, (model, optimizer, batch))], repeats)
    # what nnx.jit itself costs a call that passes the model and its optimizer and does nothing
    t_call = best_time(nnx.jit(lambda m, o: jnp.zeros(())), model, optimizer, repeats=repeats)
    return {"batch": B, "rollout_per_s": B / t_ro, "update_per_s": B / t_up,
            "rollout_ratio": t_ro / t_tc_ro, "update_ratio": t_up / t_tc_up,
            "nnx_call_s": t_call, "update_s": t_up,
            "loss_rel_err": abs(float(loss_peer) - float(loss_tc)) / abs(float(loss_tc)),
            "grad_max_rel_err": err}


def default_runs(models) -> dict:
    """benchmarks/default_runs.py for each model, twice, each in a fresh process sharing a new
    compilation cache: the first compiles (its peak memory includes the compiler's, which the
    estimate counts), the second loads those programs (its time is the updates alone, which is
    what the estimate's seconds are). {model: the first's record, with the second's time}."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = {}
    for m in models:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TWOCLOCK_CACHE_DIR": cache}
            cold, warm = (_default_run(here, m, env) for _ in range(2))
        out[m] = {**cold, "cold_measured_s": cold["measured_s"], "cold_time": cold["time"],
                  "measured_s": warm["measured_s"], "time": warm["time"]}
    return out


def _default_run(here: str, model: str, env: dict) -> dict:
    r = subprocess.run([sys.executable, os.path.join(here, "default_runs.py"), model],
                       capture_output=True, text=True, check=False, env=env)
    if r.returncode != 0:
        raise SystemExit(f"default run of {model} failed: {r.stderr.strip().splitlines()[-1:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--matmul", type=int, default=2048)
    ap.add_argument("--no-peer", action="store_true", help="leave out the flax.nnx peer")
    ap.add_argument("--default-runs", action="store_true",
                    help="also run each model's default critical_batch.py run (minutes) and "
                         "print the engine's estimate / measured time and memory")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ns = ap.parse_args(argv)
    if any(b < 1 for b in ns.batches) or any(s < 1 for s in ns.seeds) or ns.repeats < 1:
        ap.error("--batches, --seeds and --repeats must be positive")
    cfg = PolicyConfig()
    setup(cfg)
    peak = matmul_rate(ns.matmul, ns.repeats)
    stream = stream_rate(256, ns.repeats)
    rows = [bench(cfg, B, S, ns.repeats) for B in ns.batches for S in ns.seeds]
    peers = []
    if not ns.no_peer and importlib.util.find_spec("flax") is None:
        print("peer: left out, flax is not installed (pip install -e '.[bench]')")
    elif not ns.no_peer:
        peers = [bench_peer(cfg, B, ns.repeats) for B in ns.batches]
    peak_after = matmul_rate(ns.matmul, ns.repeats)
    print(f"matmul {ns.matmul}^2 float32: {peak / 1e9:.1f} GFLOP/s before, "
          f"{peak_after / 1e9:.1f} after ({jax.devices()[0].platform}, "
          f"{jax.device_count()} device); an elementwise pass over 256 MiB: "
          f"{stream / 1e9:.1f} GB/s")
    head = (f"{'B':>5} {'seeds':>5} | {'sampling':>8} | {'rollout':>7} {'/samp':>5} {'GFLOP/s':>7} "
            f"{'of mm':>5} {'of own':>6} | {'update':>6} {'GFLOP/s':>7} {'of mm':>5} "
            f"{'of own':>6} {'own':>5} {'dots':>5} {'bytes':>5}")
    print("responses/s; of mm: of the 2048^2 rate; of own: of the rate of the program's own "
          "matrix products\n(own: that rate, GFLOP/s); dots: the time its products take alone at "
          "that rate, of the update's;\nbytes: the update's bytes accessed (XLA's count) at the "
          "elementwise pass's rate, of its time")
    print(head + "\n" + "-" * len(head))
    for r in rows:
        r["rollout_frac_matmul"] = r["rollout_flops_per_s"] / peak
        r["update_frac_matmul"] = r["update_flops_per_s"] / peak
        r["rollout_frac_own"] = r["rollout_flops_per_s"] / r["own_shape_rollout_flops_per_s"]
        r["update_frac_own"] = r["update_flops_per_s"] / r["own_shape_update_flops_per_s"]
        print(f"{r['batch']:>5} {r['seeds']:>5} | {r['sample_per_s']:>8.0f} | "
              f"{r['rollout_per_s']:>7.0f} {r['rollout_over_sampler']:>5.2f} "
              f"{r['rollout_flops_per_s'] / 1e9:>7.2f} {r['rollout_frac_matmul']:>5.0%} "
              f"{r['rollout_frac_own']:>6.0%} | {r['update_per_s']:>6.0f} "
              f"{r['update_flops_per_s'] / 1e9:>7.2f} {r['update_frac_matmul']:>5.0%} "
              f"{r['update_frac_own']:>6.0%} {r['own_shape_update_flops_per_s'] / 1e9:>5.0f} "
              f"{r['update_dot_time_frac']:>5.0%} {r['update_bytes_per_s'] / stream:>5.0%}")
    out = {"matmul_flops_per_s": [peak, peak_after], "stream_bytes_per_s": stream, "rows": rows,
           "rollout_over_sampler": min(r["rollout_over_sampler"] for r in rows),
           "update_over_own_shape_matmul": min(r["update_frac_own"] for r in rows)}
    if peers:
        print("\npeer (flax.nnx + optax, one model; benchmarks/peer_policy.py): twoclock's rate, one "
              "model, / the peer's (timed interleaved);\nnnx.jit call: an empty nnx.jit call on the model and "
              "optimizer, of the peer's update time")
        print(f"{'B':>5} | {'peer rollout':>12} {'ratio':>6} | {'peer update':>11} {'ratio':>6} | "
              f"{'nnx.jit call':>12} | {'loss rel err':>12} {'grad rel err':>12}")
        for p in peers:
            print(f"{p['batch']:>5} | {p['rollout_per_s']:>12.0f} {p['rollout_ratio']:>5.2f}x | "
                  f"{p['update_per_s']:>11.0f} {p['update_ratio']:>5.2f}x "
                  f"{p['nnx_call_s'] / p['update_s']:>11.0%} | "
                  f"{p['loss_rel_err']:>12.1e} {p['grad_max_rel_err']:>12.1e}")
        out["peer"] = peers
        out["peer_ratio"] = {"rollout": min(p["rollout_ratio"] for p in peers),
                             "update": min(p["update_ratio"] for p in peers)}
    if ns.default_runs:
        runs = default_runs(("quadratic", "bandit", "policy"))
        print("\nthe engine's estimate of each model's default run (critical_batch.py --model M) "
              "/ measured")
        print(f"{'model':>9} | {'updates est':>11} {'measured':>8} {'ratio':>6} "
              f"{'compiled here':>13} | {'memory est':>10} {'peak RSS':>8} {'ratio':>6}")
        for m, r in runs.items():
            print(f"{m:>9} | {r['estimated_s']:>10.2f}s {r['measured_s']:>7.2f}s "
                  f"{r['time']:>6.2f} {r['cold_measured_s']:>7.2f}s {r['cold_time']:>5.2f} | "
                  f"{r['estimated_bytes'] / 2**20:>7.0f}MiB "
                  f"{r['peak_rss_bytes'] / 2**20:>5.0f}MiB {r['memory']:>6.2f}")
        out["default_runs"] = runs
        out["estimate_over_measured"] = {m: {"time": r["time"], "memory": r["memory"]}
                                         for m, r in runs.items()}
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
