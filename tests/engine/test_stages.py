"""The engine's clocks against their definitions: the first crossing interpolated between
updates, by hand on known margin curves; a crossing exactly at the last update, padding that
never sets a clock, and one noise stream per seed (twoclock.engine.stages, twoclock.engine.sweep).

The reference trajectory is a run of the same key with a checkpoint after every update: update
t's noise is fold_in(key, t) whatever the run length, so a shorter run repeats its first updates.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, strategies as st

from tests.helpers import first_crossing
from twoclock import OptimConfig, QuadraticConfig, SweepConfig
from twoclock.engine.keys import seed_keys
from twoclock.model import Dynamics, Model, RunState, initial_clocks, initial_margins
from twoclock.models.quadratic import MODEL
from twoclock.engine.stages import (constant_run, crossed, make_run, make_traced_run,
                                    samples_at, stage_layout)
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


def _first_crossing(m_T, m0):
    """(t, clock): the first update t with margin >= 0, and the interpolated clock."""
    c = first_crossing(m_T, m0)
    return math.ceil(c), c


@pytest.fixture(scope="module")
def reference():
    """Per-update trajectory and the first crossings read off it: {clock: (update, clock)}.

    The margins on the checkpoints' scale (loss / initial loss against the target; drift
    against its threshold) have the zeros of the engine's (the loss's margin is L0 times
    this one), from the start state: loss / L0 = 1, drift 0."""
    tr = _constant(N_REF, N_REF)
    frac, drift = tr.ckpt["progress_frac"], tr.ckpt["drift"]
    t = {"prog": _first_crossing(CFG.target - frac, CFG.target - 1.0),
         "fail": _first_crossing(drift - CFG.drift_threshold, -CFG.drift_threshold)}
    assert all(4 < u < N_REF and u - 1 < c < u for u, c in t.values()), t
    assert t["prog"][0] != t["fail"][0], t
    return t


@pytest.mark.parametrize("clock", ["prog", "fail"])
def test_crossing_at_the_last_update_is_reported(reference, clock):
    t, want = reference[clock]
    for n_ckpt in (3, t):  # a padded last chunk; one update per chunk
        tr = _constant(t, n_ckpt)
        np.testing.assert_allclose(getattr(tr, f"{clock}_t"), want, rtol=1e-5, err_msg=clock)
        np.testing.assert_allclose(getattr(tr, f"{clock}_n"), BATCH * want, rtol=1e-5)
        # one update short: never, although the padded last chunk may run update t
        tr = _constant(t - 1, n_ckpt)
        assert getattr(tr, f"{clock}_t") == 0, (clock, n_ckpt)


@pytest.mark.parametrize("clock", ["prog", "fail"])
def test_traced_run_reports_a_crossing_at_its_last_update(reference, clock):
    t, want = reference[clock]
    run = jax.jit(make_traced_run(MODEL, CFG, OPT, n_ckpt=4))
    key = jax.random.PRNGKey(0)
    for n in (t, t - 1):
        every = checkpoint_every(n, 4)
        if n % every == 0:  # make the last chunk padded too: a longer chunk, same updates
            every += 1
        tr = jax.device_get(run(np.float32(BATCH), np.float32(LR), key, np.int32(n),
                                np.int32(every)))
        if n == t:
            np.testing.assert_allclose(getattr(tr, f"{clock}_t"), want, rtol=1e-5)
        else:
            assert getattr(tr, f"{clock}_t") == 0, (clock, n, every)


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
        # to float32 rounding: the sweep's program is compiled vmapped, and a fractional clock
        # shows the last bit of the loss
        np.testing.assert_allclose(res.prog_n[0, 0, s], tr.prog_n, rtol=1e-5, err_msg=str(s))
        np.testing.assert_allclose(res.fail_n[0, 0, s], tr.fail_n, rtol=1e-5, err_msg=str(s))
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
    # a fractional t = i - 1 + f inside update i costs f of the batch of update i's stage
    f = 0.375
    stage_i = np.searchsorted(np.cumsum(n_K), t_S[1:], side="left").clip(max=len(n_K) - 1)
    frac = samples_at(np.float32(t_S[1:] - 1 + f), tuple(n_K), tuple(b_K))
    np.testing.assert_array_equal(np.asarray(frac),
                                  want[:-1] + f * np.asarray(b_K)[stage_i])
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


# A toy model whose margins are known curves of the update index t: every clock's crossing is
# a hand computation. Stages (5, 9) at batches 64 then 128 with checkpoints every 2 updates:
# chunks [1, 2] [3, 4] [5] | [6, 7] ... [14, 15], update 15 padding (n_total = 14).
N_K, B_K, N_CKPT_TOY = (5, 9), (64, 128), 8
T_PAD = 16  # curves cover updates 0 (the start) .. 15
CURVES = {
    # linear through (5, -0.3) and (6, 0.1), across the stages and a chunk boundary: 5.75
    "prog": -0.3 + 0.4 * (np.arange(T_PAD) - 5.0),
    # non-monotone: crosses in update 3 (2 + 0.2 / 0.4 = 2.5), falls back, crosses again
    "fail": np.array([-1.0, -0.5, -0.2, 0.2, -0.1, 0.3] + [-1.0] * 10),
    # exactly 0 at update 7 (a checkpoint): the crossing is update 7 itself
    "edge": np.array([-1.0] * 6 + [-0.2, 0.0] + [0.5] * 8),
    # from a known start margin -0.1 to 0.3 in the first update: 0.25
    "first": np.array([-0.1, 0.3] + [1.0] * 14),
    # an unknown start margin (NaN): the first update itself
    "unknown": np.array([np.nan, 0.3] + [1.0] * 14),
    # crosses only in update 15, which is padding: never
    "late": np.array([-1.0] * 15 + [1.0]),
}
EXTRA = ("edge", "first", "unknown", "late")
DIV_AT = 9  # a bool clock: whole updates


def _toy_dynamics(cfg, opt, batch=None):
    curve = {k: jnp.asarray(v, jnp.float32) for k, v in CURVES.items()}

    def dyn(batch, key):
        def advance(tx, state, ts_T, noise):
            hits = {k: curve[k][ts_T] for k in curve}
            hits["div"] = ts_T >= DIV_AT
            return state, hits, {"progress_frac": hits["prog"][-1]}

        def init(tx):
            p = jnp.zeros(())
            return RunState(p, tx.init(p), initial_clocks(EXTRA),
                            margins=initial_margins({k: float(v[0]) for k, v in CURVES.items()}))
        return Dynamics(optax.sgd, init, lambda ts_T: ts_T, advance)
    return dyn


TOY = Model(name="curves", config=object, dynamics=_toy_dynamics,
            predict=lambda *a: None, describe_batch=lambda cfg, b: {}, default_sweep={},
            static_batch=False, extra_clocks=EXTRA)


def _toy(n_K=N_K, b_K=B_K):
    run = make_run(TOY, None, OPT, n_K, N_CKPT_TOY)
    return jax.device_get(jax.jit(run)(tuple(jnp.float32(b) for b in b_K),
                                       (jnp.float32(0.1),) * len(n_K), jax.random.PRNGKey(0)))


def test_interpolated_clocks_of_known_curves_by_hand():
    tr = _toy()
    assert checkpoint_every(sum(N_K), N_CKPT_TOY) == 2
    # (updates, samples): stage 1's updates cost 64, stage 2's 128
    want = {"prog": (5.75, 5 * 64 + 0.75 * 128), "fail": (2.5, 2.5 * 64),
            "div": (DIV_AT, 5 * 64 + 4 * 128)}
    for c, (t, n) in want.items():
        np.testing.assert_allclose(getattr(tr, f"{c}_t"), t, rtol=1e-6, err_msg=c)
        np.testing.assert_allclose(getattr(tr, f"{c}_n"), n, rtol=1e-6, err_msg=c)
    want_n = {"edge": 5 * 64 + 2 * 128, "first": 0.25 * 64, "unknown": 64, "late": 0}
    for c, n in want_n.items():
        np.testing.assert_allclose(tr.extra[f"{c}_n"], n, rtol=1e-6, err_msg=c)


def test_interpolated_clocks_of_equal_stages_are_the_one_stage_run():
    two, one = _toy(b_K=(64, 64)), _toy((sum(N_K),), (64,))
    for f in ("prog_t", "fail_t", "div_t", "prog_n", "fail_n", "div_n"):
        np.testing.assert_array_equal(getattr(two, f), getattr(one, f), err_msg=f)
    for k in one.extra:
        np.testing.assert_array_equal(two.extra[k], one.extra[k], err_msg=k)
    np.testing.assert_allclose(one.prog_n, 5.75 * 64, rtol=1e-6)


def test_crossed_of_one_chunk_by_hand():
    """-0.3 then +0.1 at update 7: update 6.75; a clock already set stays; a margin clock's
    last margin is carried, a bool clock needs none."""
    state = RunState((), (), {"prog": jnp.float32(0), "fail": jnp.float32(3.5),
                              "div": jnp.float32(0)},
                     margins={"prog": jnp.float32(-1.0), "fail": jnp.float32(-1.0)})
    ts = jnp.arange(5, 9, dtype=jnp.int32)  # updates 5..8
    hits = {"prog": jnp.array([-0.6, -0.3, 0.1, 0.4]), "fail": jnp.array([1.0, 1.0, 1.0, 1.0]),
            "div": jnp.array([False, False, True, True])}
    out = crossed(state, hits, ts, n_total=8)
    np.testing.assert_allclose(out.clocks["prog"], 6.75, rtol=1e-6)
    assert out.clocks["fail"] == 3.5 and out.clocks["div"] == 7
    assert out.clocks["prog"].dtype == jnp.result_type(float)
    assert float(out.margins["prog"]) == pytest.approx(0.4) and set(out.margins) == {"prog", "fail"}
    # update 7 is padding (n_total = 6): nothing is set
    out = crossed(state, hits, ts, n_total=6)
    assert out.clocks["prog"] == 0 and out.clocks["div"] == 0
    # the crossing in the chunk's first update reads the carried margin: -1 -> -0.6 never;
    # from -0.2 to 0.6 it is 4 + 0.25
    out = crossed(state._replace(margins={"prog": jnp.float32(-0.2), "fail": jnp.float32(0)}),
                  {**hits, "prog": jnp.array([0.6, -0.3, 0.1, 0.4])}, ts, n_total=8)
    np.testing.assert_allclose(out.clocks["prog"], 4.25, rtol=1e-6)
    with pytest.raises(KeyError, match="start margin"):
        crossed(state._replace(margins={}), hits, ts, n_total=8)
    assert math.isclose(0.3 / 0.4, 0.75)
