"""The engine's grouping: batches that share a scan length run as one group, split into chunks
of whole device multiples, each stream (batch in group, seed) with its own batch, lr and key.

Batches 99 and 100 at a budget of 5000 both run 50 updates, so they form one group of two;
with several lr0s and a small max_lanes the group is split into chunks (and padded on more
than one device). In a group of one batch, or one chunk, a stream-order bug does nothing.
"""
import math

import jax
import numpy as np
from hypothesis import example, given, strategies as st

from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.engine.keys import seed_keys
from twoclock.engine.estimate import estimate
from twoclock.engine.layout import chunk_layout, groups
from twoclock.engine.stages import constant_run
from twoclock.models import MODELS
from twoclock.models.quadratic import MODEL
from twoclock.trace import checkpoint_every

CFG = QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.2, target=0.2)
OPT = OptimConfig()
SWEEP = SweepConfig(batches=(100, 8, 99), lr0s=(2e-2, 5e-2), seeds=3, budget=5000, n_ckpt=8)
QUAD = MODELS["quadratic"]


def test_chunks_by_hand():
    """batches 4, 8 (100 and 50 updates), 3 lr0s, 10 seeds: at most 12 runs per chunk is 4
    streams; devices round a chunk up to their multiple."""
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2, 2e-2, 3e-2), seeds=10, budget=400)
    spans = lambda cs: [(c.n_steps, c.batch_idx, c.start, c.stop, c.lanes) for c in cs]
    four = [(n, (i,), a, b, 4) for n, i in ((100, 0), (50, 1))
            for a, b in ((0, 4), (4, 8), (8, 10))]
    assert spans(chunk_layout(QUAD, sweep, 12, 1)) == four
    assert spans(chunk_layout(QUAD, sweep, 12, 4)) == four
    assert spans(chunk_layout(QUAD, sweep, 12, 3)) == [
        (n, (i,), a, b, 6) for n, i in ((100, 0), (50, 1)) for a, b in ((0, 6), (6, 10))]
    assert spans(chunk_layout(QUAD, sweep, 10**4, 4)) == [(100, (0,), 0, 10, 12),
                                                           (50, (1,), 0, 10, 12)]


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 12), st.integers(1, 40))
@example(4, 3, 10, 12)   # 4 streams per chunk, a multiple of the devices: no rounding
@example(3, 3, 10, 12)   # 4 streams rounded up to 6 on 3 devices
@example(4, 1, 5, 37)     # one lr0: 5 streams padded to 8 on 4 devices
def test_chunks_tile_each_group_in_device_multiples(n_dev, nL, seeds, max_lanes):
    sweep = SweepConfig(batches=(99, 100, 8, 16), lr0s=tuple(0.01 * (k + 1) for k in range(nL)),
                        seeds=seeds, budget=5000)
    chunks = chunk_layout(QUAD, sweep, max_lanes, n_dev)
    groups = {}
    for c in chunks:
        groups.setdefault((c.n_steps, c.batch_idx), []).append(c)
    assert sorted(groups) == [(50, (0, 1)), (312, (3,)), (625, (2,))]
    per_chunk = max(1, max_lanes // nL)  # streams a chunk may hold, before the device rounding
    for (n, idx), cs in groups.items():
        assert [(c.start, c.stop) for c in cs] == [(a, b) for a, b in zip(
            [0] + [c.stop for c in cs[:-1]], [c.stop for c in cs])]
        assert cs[-1].stop == len(idx) * seeds
        for c in cs:
            assert c.lanes % n_dev == 0 and c.lanes >= c.stop - c.start
            assert c.lanes <= n_dev * math.ceil(per_chunk / n_dev)
            assert c.lanes - (c.stop - c.start) < n_dev or c is cs[-1]


def test_estimate_counts_the_runs_and_their_updates_without_padding():
    sweep = SweepConfig(batches=(4, 8), lr0s=(1e-2, 2e-2, 3e-2), seeds=10, budget=400, n_ckpt=4)
    grouped = groups(QUAD, sweep, 12, 3)  # lanes 6 for 4 streams in the last chunks
    est = estimate(QUAD, QuadraticConfig(dim=4, drift_dim=2), OPT, sweep, grouped, 3)
    assert est.runs == 2 * 3 * 10 and est.chunks == 4
    assert est.run_updates == 3 * 10 * (100 + 50)


def test_a_group_of_two_batches_in_chunks_is_each_run_alone():
    """Every (batch, lr0, seed) of a sweep whose batches 99 and 100 share a scan length, split
    into padded chunks, equals a single run with that batch's lr and that seed's key."""
    res = run_sweep(QUAD, CFG, OPT, SWEEP, quiet=True, max_lanes=4)
    chunks = chunk_layout(QUAD, SWEEP, 4, jax.device_count())
    assert any(len(c.batch_idx) == 2 for c in chunks) and len(chunks) > 2
    keys = seed_keys(SWEEP.seed, SWEEP.seeds)
    runs = {n: jax.jit(constant_run(MODEL, CFG, OPT, n, SWEEP.n_ckpt)) for n in (50, 625)}
    for i, b in enumerate(SWEEP.batches):
        for j, lr0 in enumerate(SWEEP.lr0s):
            lr = np.float32(OPT.lr(lr0, b))
            for s in range(SWEEP.seeds):
                tr = jax.device_get(runs[SWEEP.budget // b](np.float32(b), lr, keys[s]))
                got = [res.prog_n[i, j, s], res.fail_n[i, j, s], res.prog_t[i, j, s]]
                # to float32 rounding: a fractional clock shows the loss's last bit
                np.testing.assert_allclose(got, [tr.prog_n, tr.fail_n, tr.prog_t], rtol=1e-5,
                                           err_msg=f"{(b, lr0, s)}")
                np.testing.assert_allclose(res.ckpt[i]["progress_frac"][j, s],
                                           np.asarray(tr.ckpt["progress_frac"]), rtol=1e-6,
                                           atol=0, err_msg=f"{(b, lr0, s)}")
    # the streams differ: seeds and the two batches of the group do not share a trajectory
    assert len({res.ckpt[i]["progress_frac"][0, s, -1] for i in (0, 2) for s in range(3)}) == 6
    # padding: updates scanned (every lane, whole checkpoint intervals) over the useful ones
    nL = len(SWEEP.lr0s)
    every = lambda n: checkpoint_every(n, SWEEP.n_ckpt)
    scanned = sum(c.lanes * nL * every(c.n_steps) * math.ceil(c.n_steps / every(c.n_steps))
                  for c in chunks)
    useful = sum(SWEEP.seeds * nL * (SWEEP.budget // b) for b in SWEEP.batches)
    assert abs(res.padded_fraction - (scanned / useful - 1)) < 1e-12
