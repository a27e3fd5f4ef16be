"""The flax.nnx + optax peer of benchmarks/peer_policy.py computes twoclock's loss and gradient
on the same batch (the benchmark's ratio compares the same work), off policy so that the clip
binds. Skipped without flax, an optional extra: pip install -e '.[bench]'."""
import dataclasses
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("flax", reason="flax is not installed (optional: pip install -e '.[bench]')")

from twoclock.models.policy import surrogate  # noqa: E402
from twoclock.models.policy.dynamics import make_rollout, setup  # noqa: E402
from tests.models.test_policy import SMALL  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "peer_policy", Path(__file__).resolve().parents[2] / "benchmarks" / "peer_policy.py")
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)


def test_the_peer_computes_twoclocks_loss_and_gradient():
    from flax import nnx
    cfg = dataclasses.replace(SMALL, clip_low=0.2)
    s = setup(cfg)
    ro, _ = jax.jit(make_rollout(cfg, s, 64))(s.ref, jax.random.PRNGKey(3))
    rng = np.random.default_rng(0)  # off policy: ratios away from 1, some clipped
    w = jax.tree_util.tree_map(lambda v: v + 0.05 * jnp.asarray(rng.normal(size=v.shape),
                                                                 v.dtype), s.ref)
    (l_tc, (n_clip, _, _, _)), g_tc = jax.value_and_grad(surrogate.loss, has_aux=True)(
        w, ro, cfg, s.arch, cfg.clip)
    assert float(n_clip) > 0
    model = peer.from_twoclock(w, s.arch)
    batch = (ro.prompt, ro.resp, ro.mask, ro.adv, ro.logp_old)
    l_peer, g = nnx.value_and_grad(peer.grpo_loss)(model, *batch)
    np.testing.assert_allclose(float(l_peer), float(l_tc), rtol=1e-5)
    g_peer = peer.grads_as_twoclock(g, s.arch.n_layers)
    flat_tc, tree_tc = jax.tree_util.tree_flatten(g_tc)
    flat_peer, tree_peer = jax.tree_util.tree_flatten(g_peer)
    assert tree_tc == tree_peer
    for a, b in zip(flat_tc, flat_peer):
        scale = np.abs(np.asarray(a)).max()
        assert scale > 0
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5 * scale)
