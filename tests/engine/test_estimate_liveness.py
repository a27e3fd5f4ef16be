"""The estimate's working set is a liveness walk of the traced update (counted by hand here),
a model whose batch sets the shapes has each batch priced at its own trace, and the compile's
memory counts against the limit (issue 32)."""
import dataclasses
import math

import jax
import numpy as np

from twoclock import OptimConfig, SweepConfig
from twoclock.engine import estimate
from twoclock.engine.sweep import check_fits
from twoclock.models import MODELS

X = np.zeros(1000, np.float32)  # 4000 bytes


def _peak(f, *args):
    return estimate._peak_bytes(jax.make_jaxpr(f)(*args).jaxpr)


def test_a_chain_holds_two_values_and_a_fan_out_holds_them_all():
    # y = 2x; z = y + 1 (y dies); w = 3z: never more than two [1000] values
    assert _peak(lambda x: (x * 2 + 1) * 3, X) == 8000
    # a, b, c all alive when t = a + b is made: four values; then c, t and r: three

    def fan(x):
        a, b, c = x * 2, x * 3, x * 4
        return (a + b) + c
    assert _peak(fan, X) == 16000


def test_a_loop_body_adds_its_own_peak():
    """A scan's body (c -> 2c -> 2c + 1: two values, 8000 bytes) runs in buffers of its own,
    added to its caller's: the carry out (4000) and the body (8000)."""
    def loop(x):
        return jax.lax.scan(lambda c, _: (c * 2 + 1, None), x, None, length=5)[0]
    assert _peak(loop, X) == 4000 + 8000
    # a value made before the loop and read after it stays alive across it: y, the loop's
    # carry and their sum at once (12000), and the body's 8000

    def around(x):
        y = x * 2
        return loop(x) + y
    assert _peak(around, X) == 3 * 4000 + 8000


def _seconds(monkeypatch, sweep):
    spec = MODELS["bandit"]
    for name in ("BYTES_PER_SECOND", "DOT_BYTES_PER_SECOND", "CONST_READ_BYTES_PER_SECOND"):
        monkeypatch.setitem(getattr(estimate, name), jax.default_backend(), 1e9)
    return check_fits(spec, spec.config(), OptimConfig(), sweep, 1024, jax.device_count()).seconds


def test_each_batch_is_priced_at_its_own_shapes(monkeypatch):
    """The bandit's batch sets its shapes: a sweep of B 64 and 1024 takes what the two take
    apart. Priced at the largest batch (before issue 32) B 64's 16x more updates each cost a
    B 1024 update, and the sum was several times the parts."""
    sweep = SweepConfig(batches=(64, 1024), lr0s=(1e-2,), seeds=2, budget=8192, n_ckpt=4)
    both = _seconds(monkeypatch, sweep)
    parts = [_seconds(monkeypatch, dataclasses.replace(sweep, batches=(b,))) for b in (64, 1024)]
    assert math.isclose(both, sum(parts), rel_tol=1e-9), (both, parts)
    assert parts[0] < 16 * parts[1]  # a B 64 update costs less than a B 1024 one


def test_the_compile_counts_against_the_memory_limit():
    est = estimate.Estimate(runs=1, chunks=1, run_updates=1, chunk_bytes=100, result_bytes=100,
                            seconds=None, limit_bytes=1000, device_bytes=None,
                            compile_bytes=700)
    assert est.fits(100) and not est.fits(201)
    assert not dataclasses.replace(est, compile_bytes=900).fits()
    assert "700 B compiling" in est.line()


def test_each_branch_of_a_cond_adds_its_own_peak():
    """Both branches (each 2 values, 8000 bytes) have buffers of their own: 16000 beside the
    cond's output (4000) and its int32 branch index (4; the slice and the comparison that made
    it are gone); an inlined pjit instead holds its peak only while it runs."""
    def branches(x):
        return jax.lax.cond(x[0] > 0, lambda v: v * 2 + 1, lambda v: v * 3 - 1, x)
    assert _peak(branches, X) == 4 + 4000 + 2 * 8000
    inlined = jax.jit(lambda v: v * 2 + 1)
    assert _peak(lambda x: inlined(x) * 3, X) == 8000


def test_a_loop_counts_as_often_as_it_runs_and_a_cond_its_costliest_branch():
    walk = lambda f, *a: estimate._walk_bytes(jax.make_jaxpr(f)(*a).jaxpr)
    dots = lambda f, *a: estimate._dot_bytes(jax.make_jaxpr(f)(*a).jaxpr)[0]
    # the body makes one [1000] float32 (4000 bytes) per step, 7 steps; the scan's own outputs
    # (the carry and the stacked [7, 1000]) are made once
    one_step = walk(lambda x: x * 2.0, X)
    assert one_step == 4000
    scan = lambda x: jax.lax.scan(lambda c, _: (c * 2.0, c), x, None, length=7)
    assert walk(scan, X) == 7 * 4000 + 4000 + 7 * 4000
    # a [10, 20] x [20, 30] product: 6000 multiply-adds of 4 bytes, 5 times
    A, B = np.zeros((10, 20), np.float32), np.zeros((20, 30), np.float32)
    assert dots(lambda a, b: a @ b, A, B) == 6000 * 4
    looped = lambda a, b: jax.lax.scan(lambda c, _: (c, c @ b), a, None, length=5)[1]
    assert dots(looped, A, B) == 5 * 6000 * 4
    # a cond: the branch making 3 [1000] values, not the sum of both, nor the cheaper one (and
    # the cond's output, and its predicate as an int32 index)
    cond = lambda p, x: jax.lax.cond(p, lambda: x * 2.0, lambda: (x * 2.0 + 1.0) * 3.0)
    assert walk(cond, True, X) == 3 * 4000 + 4000 + 4
    # a while loop's trip count is known only at run time: its body once
    wl = lambda x: jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0),
                                      (0, x))[1]
    assert walk(wl, X) == 4004 + 1 + 4004  # its outputs, its test (a bool), its body once
