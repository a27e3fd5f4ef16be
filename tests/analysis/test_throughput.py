"""Throughput model: calibration to the published GRPO measurements, monotone with a plateau, fits recover parameters."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tests.helpers import assert_close
from twoclock.analysis import throughput as tp


def test_defaults_reproduce_the_article_measurements():
    m = tp.ThroughputModel()
    g = m.gen_throughput(np.array([1024.0, 2048.0, 4096.0]))
    assert_close(g[1:] / g[0], [1.31, 1.36], rtol=2e-3, atol=0, what="GRPO generation gains")
    assert_close(m.train_seconds(np.array([1024.0, 2048.0])), [101.3, 208.6], rtol=0.025,
                 atol=0, what="GRPO actor update seconds")
    # 11.90 h for 122.88K responses at P = 128 (1024 responses per step)
    assert_close(m.seconds_for(122880, 1024) / 3600, 11.90, rtol=2e-3, atol=0, what="hours")
    ppo = tp.calibrate_ppo()
    assert_close(ppo.gen_seconds(np.array([256.0, 1024.0])), [39.0, 68.0], rtol=1e-6, atol=0,
                 what="PPO collection seconds")


def test_calibration_rederives_the_defaults():
    c, d = tp.calibrate_grpo(), tp.ThroughputModel()
    assert_close([c.gen_latency, c.critical_gen_batch, c.knee, c.train_per_sample],
                 [d.gen_latency, d.critical_gen_batch, d.knee, d.train_per_sample],
                 rtol=2e-3, atol=0, what="article calibration")


models = st.builds(
    tp.ThroughputModel,
    gen_latency=st.floats(1.0, 1e3), critical_gen_batch=st.floats(16.0, 1e4),
    knee=st.floats(1.0, 20.0), train_per_sample=st.floats(0.0, 1.0),
    train_overhead=st.floats(0.0, 100.0),
    max_concurrent=st.one_of(st.none(), st.floats(16.0, 1e4)))


@given(models)
def test_monotone_with_a_plateau(m):
    B = np.geomspace(1.0, 1e8, 200)
    t_gen, thr_gen, thr = m.gen_seconds(B), m.gen_throughput(B), m.throughput(B)
    assert np.all(np.diff(t_gen) >= -1e-12 * t_gen[1:]), "generation time must not fall"
    assert np.all(np.diff(thr_gen) >= -1e-9 * thr_gen[1:]), "generation throughput must not fall"
    assert np.all(thr_gen <= m.gen_plateau() * (1 + 1e-9)), "throughput above its plateau"
    assert_close(thr_gen[-1], m.gen_plateau(), rtol=1e-3, atol=0, what="plateau")
    assert np.all(np.diff(m.train_seconds(B)) >= 0)
    assert np.all(np.diff(thr) >= -1e-9 * thr[1:]), "end-to-end throughput must not fall"
    # far below the knee throughput grows almost linearly: doubling B gains > x1.9
    b = min(m.critical_gen_batch, m.max_concurrent or np.inf) / 1000
    assert m.gen_throughput(2 * b) / m.gen_throughput(b) > 1.9


@given(st.floats(30.0, 500.0), st.floats(100.0, 5000.0), st.floats(0.7, 12.0))
def test_fit_generation_recovers_parameters(t_lat, b_gen, k):
    m = tp.ThroughputModel(gen_latency=t_lat, critical_gen_batch=b_gen, knee=k)
    B = b_gen * np.geomspace(1 / 16, 16, 9)
    got = tp.fit_generation(B, m.gen_seconds(B))
    assert_close(got, [t_lat, b_gen, k], rtol=0.02, atol=0, what="fitted (t_lat, B_gen, k)")


@given(st.floats(1e-3, 1.0), st.floats(0.0, 50.0))
def test_fit_training_recovers_parameters(slope, overhead):
    B = np.array([64.0, 128.0, 512.0, 2048.0])
    got = tp.fit_training(B, overhead + slope * B)
    assert_close(got, [slope, overhead], rtol=1e-6, atol=1e-6, what="(slope, overhead)")


def test_fit_roundtrip_and_memory_cap():
    d = tp.ThroughputModel(max_concurrent=2048)
    B = np.array([256.0, 512, 1024, 2048])
    m = tp.fit(B, d.gen_seconds(B), B, d.train_seconds(B), max_concurrent=2048)
    assert_close(m.throughput(np.array([512.0, 8192.0])), d.throughput(np.array([512.0, 8192.0])),
                 rtol=0.02, atol=0, what="refitted throughput")
    # above the cap generation runs in waves at the cap's throughput
    assert_close(d.gen_throughput(8192.0), d.gen_throughput(2048.0), rtol=1e-12, atol=0)
    assert not d.feasible(4096.0) and d.feasible(1024.0)


@pytest.mark.parametrize("kw, name", [({"gen_latency": 0.0}, "gen_latency"),
                                      ({"knee": -1.0}, "knee"),
                                      ({"train_per_sample": -1.0}, "train_per_sample"),
                                      ({"max_concurrent": 0.0}, "max_concurrent")])
def test_bad_parameters_name_themselves(kw, name):
    with pytest.raises(ValueError, match=name):
        tp.ThroughputModel(**kw)


def test_bad_batch_and_fit_input():
    with pytest.raises(ValueError, match="batch"):
        tp.ThroughputModel().throughput(0.0)
    with pytest.raises(ValueError, match="seconds"):
        tp.fit_training([1.0, 2.0], [1.0, -1.0])


def _step_seconds_by_hand(m, B):
    """t_gen + t_train from the module docstring's formula, b = min(B, cap)."""
    b = B if m.max_concurrent is None else min(B, m.max_concurrent)
    gen = m.gen_latency * (1 + (b / m.critical_gen_batch) ** m.knee) ** (1 / m.knee) * B / b
    return gen + m.train_overhead + B * m.train_per_sample


def test_scaled_throughput_counts_a_sample_as_its_responses_by_hand():
    # 8 simulated samples of 32 responses each are a real batch of 256 responses
    m = tp.ThroughputModel(gen_latency=100.0, critical_gen_batch=500.0, knee=2.0,
                           train_per_sample=0.05, train_overhead=3.0, max_concurrent=200.0)
    s = m.scaled(32.0)
    for B in (2.0, 8.0, 64.0):
        want = (B * 32 / _step_seconds_by_hand(m, B * 32)) / 32   # samples per second
        assert_close(s.throughput(B), want, rtol=1e-12, atol=0, what=f"samples/s at {B}")
        assert_close(s.seconds_for(1000.0, B), 1000.0 / want, rtol=1e-12, atol=0)
    # the knee in simulated samples: 500 / 32, or the cap's 200 / 32 when that is lower
    assert_close(tp.ThroughputModel(critical_gen_batch=500.0).scaled(32.0).critical_gen_batch(),
                 500 / 32, rtol=1e-12, atol=0)
    assert_close(s.critical_gen_batch(), 200 / 32, rtol=1e-12, atol=0)


def test_plateau_batch_by_hand_and_by_its_definition():
    # u^k = f^k / (1 - f^k): k = 2, f = 0.9 gives u = sqrt(0.81 / 0.19), B = 100 u
    m = tp.ThroughputModel(gen_latency=10.0, critical_gen_batch=100.0, knee=2.0)
    assert_close(m.plateau_batch(0.9), 100 * (0.81 / 0.19) ** 0.5, rtol=1e-12, atol=0)
    for k in (2.0, 3.74, 7.0):
        m = tp.ThroughputModel(gen_latency=10.0, critical_gen_batch=100.0, knee=k)
        b = m.plateau_batch(0.8)
        assert_close(m.gen_throughput(b), 0.8 * m.gen_plateau(), rtol=1e-9, atol=0,
                     what=f"throughput at the plateau batch, k = {k}")


def test_fit_training_through_the_origin_is_least_squares():
    # a negative intercept (noisy data): the slope through the origin sum(B y) / sum(B^2)
    B, y = np.array([100.0, 200.0, 400.0]), np.array([5.0, 19.0, 41.0])
    assert np.linalg.lstsq(np.stack([B, np.ones(3)], 1), y, rcond=None)[0][1] < 0
    slope, overhead = tp.fit_training(B, y)
    want = (100 * 5 + 200 * 19 + 400 * 41) / (100**2 + 200**2 + 400**2)
    assert_close([slope, overhead], [want, 0.0], rtol=1e-12, atol=0, what="(slope, overhead)")
