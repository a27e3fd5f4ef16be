"""Result-file values are the clocks' summaries of the matching arrays (twoclock.analysis.results).

Every per-(batch, lr0) field must summarise its own array: progress from prog_n, failure from
fail_n, updates from prog_t, each model extra from its own array, with the seeds' shared
bootstrap resamples; a field computed from another clock's array fails here.
"""
import dataclasses
from types import SimpleNamespace

import numpy as np
from hypothesis import given, strategies as st

from twoclock import OptimConfig
from twoclock.analysis import clocks, results
from twoclock.engine.sweep import SweepResult


def _result(nB, nL, S, seed):
    """A SweepResult of distinct random clocks (0 = never) for every field."""
    rng = np.random.default_rng(seed)
    arr = lambda p0: np.where(rng.uniform(size=(nB, nL, S)) < p0, 0,
                              rng.integers(1, 10**5, size=(nB, nL, S)))
    batches = tuple(8 * 2**i for i in range(nB))
    lr0s = tuple(0.01 * (i + 1) for i in range(nL))
    lrs = np.array([[lr * (b / 8) ** 0.5 for lr in lr0s] for b in batches])
    return SweepResult(batches, lr0s, lrs, np.full(nB, 100), arr(0.2), arr(0.3), arr(0.7),
                       arr(0.2), {"collapse_n": arr(0.4)}, [None] * nB, 0.0, 0.0)


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 12), st.integers(0, 10**6))
def test_entries_summarise_their_own_arrays(nB, nL, S, seed):
    res = _result(nB, nL, S, seed)
    opt = OptimConfig(name="momentum", lr_rule="sqrt")
    runs = results.run_entries(res, opt, extra_summaries=("collapse_n",))
    assert len(runs) == nB * nL
    idx = clocks.bootstrap_indices(S)
    k = 0
    for i, b in enumerate(res.batches):
        for j, lr0 in enumerate(res.lr0s):
            e = runs[k]
            k += 1
            assert (e["batch"], e["lr0"], e["lr"]) == (b, lr0, res.lrs_BxL[i, j])
            assert (e["optimizer"], e["lr_rule"]) == ("momentum", "sqrt")
            for field, arr in (("progress_samples", res.prog_n), ("failure_samples", res.fail_n),
                               ("progress_updates", res.prog_t),
                               ("collapse_samples", res.extra["collapse_n"])):
                assert e[field] == clocks.summarize(arr[i, j], idx=idx), field
            div = res.div_n[i, j]
            assert e["diverged"]["runs"] == int(np.sum(div > 0))
            med = e["diverged"]["median_samples"]
            assert med == (float(np.median(div[div > 0])) if np.any(div > 0) else None)


@given(st.integers(2, 4), st.integers(1, 2), st.integers(2, 12), st.integers(0, 10**6))
def test_critical_batches_are_those_of_each_lr0s_progress_clock(nB, nL, S, seed):
    res = _result(nB, nL, S, seed)
    crit = results.critical_batches(res, delta=0.3)
    assert [c["lr0"] for c in crit] == list(res.lr0s)
    for j, c in enumerate(crit):
        want = clocks.critical_batch(list(res.batches), res.prog_n[:, j], delta=0.3,
                                     idx=clocks.bootstrap_indices(S))
        assert c == {"lr0": res.lr0s[j], **want}


def test_critical_batches_use_the_clocks_default_delta():
    res = _result(3, 2, 9, 7)
    want = [{"lr0": lr0, **clocks.critical_batch(list(res.batches), res.prog_n[:, j],
                                                  idx=clocks.bootstrap_indices(9))}
            for j, lr0 in enumerate(res.lr0s)]
    assert results.critical_batches(res) == want


def test_config_dict_is_the_json_of_each_part():
    opt = OptimConfig(name="sgd", lr_rule="linear")
    got = results.config_dict(optimizer=opt, batches=(8, 16), seeds=np.int64(3),
                              grid=np.array([0.5, 2.0]), note=None)
    assert got == {"optimizer": {f.name: getattr(opt, f.name) for f in dataclasses.fields(opt)},
                   "batches": [8, 16], "seeds": 3, "grid": [0.5, 2.0], "note": None}
    assert type(got["seeds"]) is int


def test_analysis_bytes_is_two_and_a_half_copies_of_the_resampled_clocks():
    # the docstring's definition: float64 resamples [batches, N_BOOT, seeds], x2.5 (measured)
    sweep = SimpleNamespace(batches=(8, 16, 32), seeds=5)
    resampled = np.zeros((3, 5))[:, clocks.bootstrap_indices(5)]
    assert resampled.shape == (3, clocks.N_BOOT, 5)
    assert results.analysis_bytes(sweep) == int(2.5 * resampled.nbytes)


def test_write_json_round_trips_and_lists_non_finite_numbers(tmp_path):
    path = str(tmp_path / "r.json")
    results.write_json(path, {"a": 1.5, "b": [1, float("inf")], "c": {"d": float("nan")}})
    assert results.read_json(path) == {"a": 1.5, "b": [1, None], "c": {"d": None},
                                       "non_finite": {"/b/1": "inf", "/c/d": "nan"}}
