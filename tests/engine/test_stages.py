"""The engine's clocks against their definitions: a crossing exactly at the last update, padding
that never sets a clock, and one noise stream per seed (twoclock.engine.stages, twoclock.engine.sweep).

The reference trajectory is a run of the same key with a checkpoint after every update: update
t's noise is fold_in(key, t) whatever the run length, so a shorter run repeats its first updates.
"""
import jax
import numpy as np
import pytest
from hypothesis import given, strategies as st

from twoclock import OptimConfig, QuadraticConfig, SweepConfig
from twoclock.engine.keys import seed_keys
from twoclock.models.quadratic import MODEL
from twoclock.engine.stages import constant_run, make_traced_run, samples_at, stage_layout
from twoclock.engine.sweep import run_sweep
from twoclock.trace import checkpoint_every
from twoclock.models import MODELS

CFG = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.5, drift_noise=0.05, target=0.3,
                      drift_threshold=0.4)
OPT = OptimConfig(name="sgd")
BATCH, LR, N_REF = 8.0, 0.05, 160


def _constant(n_steps, n_ckpt, key=0):
    run = jax.jit(constant_run(MODEL, CFG, OPT, n_steps, n_ckpt=n_ckpt))
    return jax.device_get(run(np.float32(BATCH), np.float32(LR), jax.random.PRNGKey(key)))


@pytest.fixture(scope="module")
def reference():
    """Per-update trajectory and the first crossings read off it (1-based; 0 = never)."""
    tr = _constant(N_REF, N_REF)
    frac, drift = tr.ckpt["progress_frac"], tr.ckpt["drift"]
    first = lambda hit: int(1 + np.argmax(hit)) if hit.any() else 0
    t = {"prog": first(frac <= CFG.target), "fail": first(drift >= CFG.drift_threshold)}
    assert 4 < t["prog"] < N_REF and 4 < t["fail"] < N_REF and t["prog"] != t["fail"], t
    return t


@pytest.mark.parametrize("clock", ["prog", "fail"])
def test_crossing_at_the_last_update_is_reported(reference, clock):
    t = reference[clock]
    for n_ckpt in (3, t):  # a padded last chunk; one update per chunk
        tr = _constant(t, n_ckpt)
        assert getattr(tr, f"{clock}_t") == t, (clock, n_ckpt)
        assert getattr(tr, f"{clock}_n") == BATCH * t
        # one update short: never, although the padded last chunk may run update t
        tr = _constant(t - 1, n_ckpt)
        assert getattr(tr, f"{clock}_t") == 0, (clock, n_ckpt)


@pytest.mark.parametrize("clock", ["prog", "fail"])
def test_traced_run_reports_a_crossing_at_its_last_update(reference, clock):
    t = reference[clock]
    run = jax.jit(make_traced_run(MODEL, CFG, OPT, n_ckpt=4))
    key = jax.random.PRNGKey(0)
    for n in (t, t - 1):
        every = checkpoint_every(n, 4)
        if n % every == 0:  # make the last chunk padded too: a longer chunk, same updates
            every += 1
        tr = jax.device_get(run(np.float32(BATCH), np.float32(LR), key, np.int32(n),
                                np.int32(every)))
        assert getattr(tr, f"{clock}_t") == (t if n == t else 0), (clock, n, every)


def test_every_seed_has_its_own_noise_stream():
    keys = np.asarray(seed_keys(3, 16))
    assert len({k.tobytes() for k in keys}) == 16
    sweep = SweepConfig(batches=(8,), lr0s=(LR,), seeds=6, budget=8 * N_REF, seed=3)
    opt = OptimConfig(name="sgd", lr_rule="fixed")
    res = run_sweep(MODELS["quadratic"], CFG, opt, sweep, quiet=True)
    # each seed's clocks are those of a run with that seed's key, and they differ between seeds
    run = jax.jit(constant_run(MODEL, CFG, opt, N_REF, n_ckpt=sweep.n_ckpt))
    for s in range(sweep.seeds):
        tr = jax.device_get(run(np.float32(8), np.float32(LR), keys[s]))
        assert res.prog_n[0, 0, s] == tr.prog_n and res.fail_n[0, 0, s] == tr.fail_n, s
    assert len(set(res.fail_n[0, 0].tolist())) > 1 and len(set(res.prog_n[0, 0].tolist())) > 1


@given(st.lists(st.integers(0, 50), min_size=1, max_size=3).filter(lambda n: sum(n) >= 1),
       st.lists(st.integers(1, 64), min_size=3, max_size=3), st.integers(1, 7))
def test_samples_and_checkpoints_of_stages_by_hand(n_K, b_K, every):
    """Update t of stage k costs B_k: samples(t) = sum_k B_k clip(t - t0_k, 0, n_k), the last
    stage unclipped above; checkpoints every `every` updates within each stage and at the end
    of every stage (a stage that is not the last ends on one; the last is padded)."""
    b_K = b_K[:len(n_K)]
    t_S = np.arange(154)  # past every run (<= 150 updates); one shape, one compile
    t0_K = np.concatenate([[0], np.cumsum(n_K)[:-1]])
    want = sum(b * np.clip(t_S - t0, 0, None if k == len(n_K) - 1 else n)
               for k, (n, b, t0) in enumerate(zip(n_K, b_K, t0_K)))
    assert np.array_equal(np.asarray(samples_at(t_S, tuple(n_K), tuple(b_K))), want)
    layout, t_C = stage_layout(n_K, every)
    ends = []
    for k, (n, t0) in enumerate(zip(n_K, t0_K)):
        last = k == len(n_K) - 1
        c = list(range(t0 + every, t0 + n + 1, every))
        if n % every and (c == [] or c[-1] != t0 + n):
            c.append(t0 + n)  # a stage's last (possibly partial) chunk ends at its last update
        ends += c
        # (first update - 1, whole chunks, remainder): the last stage is padded to whole chunks
        chunks = (-(-n // every), 0) if last else (n // every, n % every)
        assert layout[k] == (t0, *chunks)
    assert t_C.tolist() == ends
