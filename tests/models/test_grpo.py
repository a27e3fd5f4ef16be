"""The GRPO layer both policies share (twoclock.models.grpo), against hand values and a NumPy
loop."""
import argparse
from dataclasses import fields

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from twoclock.cli.flags import add_config_flags, config_from_flags
from twoclock.models.bandit import BanditConfig
from twoclock.models.grpo import (GRPOConfig, inner_scan, measured_until, noise_scale,
                                  regime_of)
from twoclock.models.policy import PolicyConfig

# the GRPO fields and their defaults, as both models have always spelled them (flags, JSON keys)
SHARED = {"group": 8, "advantage": "grpo", "adv_eps": 1e-6, "minibatches": 1, "epochs": 1,
          "clip_low": 0.2, "clip_high": None, "kl_coef": 0.0, "clip_ratio_c": None}
FLAGS = ["--group", "4", "--advantage", "grpo_bessel", "--adv-eps", "1e-5", "--minibatches", "2",
         "--epochs", "3", "--clip-low", "0.1", "--clip-high", "0.3", "--kl-coef", "0.5",
         "--clip-ratio-c", "3"]
GIVEN = {"group": 4, "advantage": "grpo_bessel", "adv_eps": 1e-5, "minibatches": 2, "epochs": 3,
         "clip_low": 0.1, "clip_high": 0.3, "kl_coef": 0.5, "clip_ratio_c": 3.0}


@pytest.mark.parametrize("cls", [GRPOConfig, BanditConfig, PolicyConfig])
def test_both_models_keep_the_shared_fields_flags_and_defaults(cls):
    names = [f.name for f in fields(cls)]
    assert names[:len(SHARED)] == list(SHARED)
    assert {k: getattr(cls(), k) for k in SHARED} == SHARED
    p = argparse.ArgumentParser()
    add_config_flags(p, cls)
    cfg = config_from_flags(p.parse_args(FLAGS), cls)
    assert {k: getattr(cfg, k) for k in SHARED} == GIVEN


@pytest.mark.parametrize("kw, name", [
    (dict(group=1), "group"), (dict(advantage="ppo"), "advantage"), (dict(adv_eps=0.0), "adv_eps"),
    (dict(minibatches=0), "minibatches"), (dict(epochs=0), "epochs"),
    (dict(clip_low=1.0), "clip_low"), (dict(clip_low=None, clip_high=0.2), "clip_high"),
    (dict(kl_coef=-1.0), "kl_coef"), (dict(clip_ratio_c=1.0), "clip_ratio_c"),
    (dict(clip_ratio_c=float("inf")), "clip_ratio_c")])
@pytest.mark.parametrize("cls", [GRPOConfig, BanditConfig, PolicyConfig])
def test_the_shared_validation_names_the_field(cls, kw, name):
    with pytest.raises(ValueError, match=f"^{name} must be [^\n]*$"):
        cls(**kw)


def test_prompts_and_inner_steps_by_hand():
    c = GRPOConfig(group=4, minibatches=2, epochs=3)
    assert c.prompts(16) == 4 and c.inner_steps(16) == 6 and c.inner_steps() == 6
    with pytest.raises(ValueError, match="^batch must be a multiple of group G = 4"):
        c.prompts(18)
    with pytest.raises(ValueError, match="^minibatches must be .* P = 3 .* here M = 2"):
        c.prompts(12)
    with pytest.raises(ValueError, match="^minibatches must be"):  # P = 1 < M = 2
        c.prompts(4)
    # the policy's fixed_size convention: M = minibatches B / mb_ref, so B is needed
    p = PolicyConfig(minibatches=2, epochs=2, mb_convention="fixed_size", mb_ref=64)
    assert [p.inner_steps(b) for b in (64, 256)] == [4, 16]
    with pytest.raises(ValueError, match="^batch must be given"):
        p.inner_steps()


@pytest.mark.parametrize("M, E", [(1, 1), (2, 1), (3, 2), (1, 3)])
def test_inner_scan_is_M_minibatch_steps_per_epoch_in_order(M, E):
    """SGD at lr 0.1 on least squares, per minibatch 0.5 mean((x w - y)^2), against a NumPy
    loop over E epochs of the M minibatches in order; aux records which minibatch each step
    saw."""
    rng = np.random.default_rng(M * 10 + E)
    P = 6
    x, y = rng.normal(size=(P, 3)), rng.normal(size=P)
    ro = {"x": jnp.asarray(x, jnp.float32), "y": jnp.asarray(y, jnp.float32),
          "id": jnp.repeat(jnp.arange(M), P // M)}

    def grad(w, mb):
        return mb["x"].T @ (mb["x"] @ w - mb["y"]) / mb["y"].shape[0], mb["id"][0]

    tx = optax.sgd(0.1)
    w0 = jnp.zeros(3, jnp.float32)
    w, _, aux = inner_scan(tx, w0, tx.init(w0), ro, M, M * E, grad)
    want = np.zeros(3)
    for _ in range(E):
        for xm, ym in zip(np.split(x, M), np.split(y, M)):
            want = want - 0.1 * xm.T @ (xm @ want - ym) / len(ym)
    np.testing.assert_allclose(np.asarray(w), want, rtol=1e-5, atol=1e-6)
    assert np.asarray(aux).tolist() == list(range(M)) * E


def test_noise_scale_measured_until_and_regimes_by_hand():
    # mean first, then the ratio: (2 + 6) / 2 over (1 + 3) / 2 = 2, not mean(2, 2)
    assert float(noise_scale(np.array([2.0, 6.0]), np.array([1.0, 3.0]))) == 2.0
    assert float(noise_scale(np.array([2.0]), np.array([-1.0]))) == np.inf
    samples = np.array([64, 128, 192, 256])
    assert measured_until(samples, 130).tolist() == [True, True, False, False]
    assert measured_until(samples, 10).tolist() == [True, False, False, False]
    assert measured_until(samples, None).tolist() == [True] * 4
    fresh = np.array([False, True, False, True])
    assert measured_until(samples, 200, fresh).tolist() == [False, True, False, False]
    assert measured_until(samples, 10, fresh).tolist() == [False, True, False, False]
    assert regime_of(100.0, 64) == "noise" and regime_of(10.0, 64) == "signal"
    assert regime_of(np.inf, 64) == "random walk" and regime_of(np.inf, 64, walk=False) == "noise"
