"""The ratio band of PPO/GRPO clipping (twoclock.objectives.ClipBand): built once from the flags
by clip_band, the one place that reads None as unclipped, and taken as it is by every
objective and kernel."""
import ast
import dataclasses
import math
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.helpers import assert_close
from twoclock import objectives as obj
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.grpo import GRPOConfig

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "twoclock")


def test_the_band_of_the_flags_by_hand():
    # eps 0.2: (1 - 0.2, 1 + 0.2); clip-higher 0.2 / 0.28: (0.8, 1.28) (DAPO's)
    assert obj.clip_band(0.2) == (0.8, 1.2) and obj.clip_band(0.2, None) == (0.8, 1.2)
    assert obj.clip_band(0.2, 0.28) == (0.8, 1.28)
    assert obj.clip_band(0.1, 0.3) == (0.9, 1.3)
    assert (obj.clip_band(0.2).lo, obj.clip_band(0.2).hi) == (0.8, 1.2)
    # None: the band that never binds, and only it
    assert obj.clip_band(None) == (-math.inf, math.inf) == obj.UNCLIPPED
    assert not obj.clip_band(None).binds
    assert obj.clip_band(0.2).binds and obj.clip_band(0.999, 100.0).binds
    # the configs expose it under one name, their fields (flags, JSON keys) as they were
    assert GRPOConfig(clip_low=0.2, clip_high=0.28).clip == (0.8, 1.28)
    assert BanditConfig(clip_low=None).clip is obj.UNCLIPPED
    assert GRPOConfig().clip == (0.8, 1.2)  # the default clip_low 0.2
    keys = dataclasses.asdict(GRPOConfig())
    assert "clip_low" in keys and "clip_high" in keys and "clip" not in keys


@pytest.mark.parametrize("low,high,name", [
    (0.0, None, "clip_low"), (1.0, None, "clip_low"), (-0.1, None, "clip_low"),
    (math.nan, None, "clip_low"), (0.2, 0.0, "clip_high"), (0.2, math.inf, "clip_high"),
    (None, 0.2, "clip_high")])
def test_a_bad_band_names_its_flag(low, high, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        obj.clip_band(low, high)
    with pytest.raises(ValueError, match=f"^{name} must be"):
        GRPOConfig(clip_low=low, clip_high=high)


def test_the_objective_inside_and_outside_the_band_by_hand():
    """Band (0.8, 1.28). A 2, r 1.5: min(3, 2.56) = 2.56 (clipped); A 2, r 0.5: min(1, 1.6) = 1
    (a positive advantage below the band is live); A -1, r 0.5: min(-0.5, -0.8) = -0.8
    (clipped); A -1, r 1.5: min(-1.5, -1.28) = -1.5 (live); A 2, r 1.1: 2.2 and A -1, r 0.9:
    -0.9 inside. Unclipped: r A everywhere, nothing clipped."""
    r = jnp.asarray([1.5, 0.5, 0.5, 1.5, 1.1, 0.9])
    a = jnp.asarray([2.0, 2.0, -1.0, -1.0, 2.0, -1.0])
    band = obj.clip_band(0.2, 0.28)
    assert_close(obj.ppo_objective(r, a, band), [2.56, 1.0, -0.8, -1.5, 2.2, -0.9], rtol=1e-6,
                 atol=0, what="clipped surrogate")
    assert np.asarray(obj.clipped_mask(r, a, band)).tolist() == [
        True, False, True, False, False, False]
    assert_close(obj.ppo_objective(r, a, obj.UNCLIPPED), [3.0, 1.0, -0.5, -1.5, 2.2, -0.9],
                 rtol=1e-6, atol=0, what="unclipped surrogate")
    assert not np.any(np.asarray(obj.clipped_mask(r, a, obj.UNCLIPPED)))
    # the unclipped mask takes the broadcast shape of ratio and advantage
    m = obj.clipped_mask(jnp.full((3, 1), 5.0), jnp.ones((3, 4)), obj.UNCLIPPED)
    assert m.shape == (3, 4) and not np.any(np.asarray(m))
    # a traced band (a compiled program's argument, the policy's knobs) gives the same numbers
    traced = jax.jit(lambda band: obj.log_ratio_objective(jnp.log(r), jnp.zeros(6), a, band))
    for b in (band, obj.UNCLIPPED):
        j, m = traced(obj.ClipBand(*(np.float32(v) for v in b)))
        np.testing.assert_array_equal(j, obj.ppo_objective(r, a, b))
        np.testing.assert_array_equal(m, obj.clipped_mask(r, a, b))


def test_the_unclipped_band_is_ratio_times_advantage_bit_for_bit():
    """The band that never binds gives the plain surrogate r A and its gradient exactly (the
    min of two equal values splits the gradient in halves that add up), float32, on ratios far
    outside any band, with the dual clip too, under jit."""
    rng = np.random.default_rng(0)
    logr = jnp.asarray(rng.normal(0, 1.5, 4096), jnp.float32)
    a = jnp.asarray(rng.normal(0, 2, 4096), jnp.float32)
    logp_old = jnp.asarray(rng.normal(-2, 1, 4096), jnp.float32)
    for c in (None, 3.0):
        def plain(lr):
            j = jnp.exp(lr) * a
            return j if c is None else jnp.where(a < 0, jnp.maximum(j, c * a), j)
        band = jax.jit(lambda lr: obj.ppo_objective(jnp.exp(lr), a, obj.UNCLIPPED, c))
        np.testing.assert_array_equal(band(logr), jax.jit(plain)(logr))
        g_band = jax.jit(jax.grad(lambda lr: jnp.sum(band(lr))))(logr)
        g_plain = jax.jit(jax.grad(lambda lr: jnp.sum(plain(lr))))(logr)
        np.testing.assert_array_equal(g_band, g_plain)
        lp = logp_old + logr
        g = jax.grad(lambda lp: jnp.sum(obj.log_ratio_objective(lp, logp_old, a, obj.UNCLIPPED,
                                                                c)[0]))(lp)
        np.testing.assert_array_equal(g, jax.grad(lambda lp: jnp.sum(plain(lp - logp_old)))(lp))


# the names the ratio band went by before it had one: a None test on any of them reads
# "unclipped" (lo and hi alone are every confidence interval's bounds too)
CLIP_NAMES = {"clip_low", "clip_high", "clip", "band", "eps", "clip_lo", "clip_hi", "cl", "ch"}
# the JAX-free layers' bands are confidence bands: no ratio is clipped there
NO_RATIO_BAND = ("analysis", "figures", "pilot")
INFINITE_BAND = re.compile(r"-\s*(np|jnp|math)\.inf\s*,\s*(np|jnp|math)\.inf|float\(.-inf.\)")


def unclipped_decisions(root: str) -> set:
    """{(file, function)}: where a band-like name is tested against None, or an infinite band is
    spelled, in the package at root."""
    found = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if not f.endswith(".py") or rel.split(os.sep)[0] in NO_RATIO_BAND:
                continue
            with open(path) as fh:
                src = fh.read()
            segment = _segments(src)
            for node, where in _walk(ast.parse(src), "<module>"):
                if (isinstance(node, ast.Compare) and len(node.ops) == 1
                        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
                        and isinstance(node.comparators[0], ast.Constant)
                        and node.comparators[0].value is None
                        and _name(node.left) in CLIP_NAMES):
                    found.add((rel, where))
                if (isinstance(node, ast.stmt) and not isinstance(
                        node, (ast.FunctionDef, ast.ClassDef))
                        and INFINITE_BAND.search(segment(node))):
                    found.add((rel, where))
    return found


def _segments(src: str):
    """node -> its source text, as ast.get_source_segment gives it, without re-splitting the
    file at every call (that made the scan quadratic in a module's length: 7 s a run)."""
    raw = src.encode()
    starts = [0]
    for line in raw.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def segment(node) -> str:  # ast's offsets are UTF-8 byte offsets
        return raw[starts[node.lineno - 1] + node.col_offset:
                   starts[node.end_lineno - 1] + node.end_col_offset].decode()
    return segment


def _walk(node, where):
    for child in ast.iter_child_nodes(node):
        inner = (child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                 else where)
        yield child, inner
        yield from _walk(child, inner)


def _name(node):
    return node.id if isinstance(node, ast.Name) else (
        node.attr if isinstance(node, ast.Attribute) else None)


def test_unclipped_is_decided_in_one_function():
    """clip_band alone reads None as unclipped and spells the band that never binds (its
    UNCLIPPED, at module level beside it); every other module asks the band (clip.binds)."""
    assert unclipped_decisions(PKG) == {("objectives.py", "clip_band"),
                                        ("objectives.py", "<module>")}
    with open(os.path.join(PKG, "objectives.py")) as f:
        assert len(INFINITE_BAND.findall(f.read())) == 1  # UNCLIPPED's definition


def test_the_scan_finds_a_second_decision(tmp_path):
    """The scan is not vacuous: each spelling the tree used before the band had one is found."""
    for i, line in enumerate(["if eps is None:\n        return 1.0",
                              "band = clip_band(a, b) or (-np.inf, np.inf)",
                              "lo = 0.0 if cfg.clip_low is not None else -1.0"]):
        (tmp_path / f"m{i}.py").write_text(f"def f(cfg, a, b, eps):\n    {line}\n")
    assert unclipped_decisions(str(tmp_path)) == {(f"m{i}.py", "f") for i in range(3)}


def test_a_one_sided_band_binds():
    """binds is 'some ratio can leave the band': true of a band finite at either end alone
    (each clips a ratio on its side: A < 0 below lo, A > 0 above hi), false of UNCLIPPED."""
    r, a = jnp.asarray([0.5, 1.5]), jnp.asarray([-1.0, 1.0])
    for band, clipped in ((obj.ClipBand(0.8, math.inf), [True, False]),
                          (obj.ClipBand(-math.inf, 1.2), [False, True])):
        assert band.binds
        assert np.asarray(obj.clipped_mask(r, a, band)).tolist() == clipped
    assert not obj.UNCLIPPED.binds


def test_a_zero_advantage_is_never_on_a_clipped_branch():
    """TRL's clip ratio (ratio > 1 + eps_high and A > 0, ratio < 1 - eps_low and A < 0) and
    verl's (the clipped loss strictly above the unclipped one) count no sample of advantage 0
    as clipped, whatever its ratio: a group whose rewards are all equal moves nothing either
    way. Band (0.8, 1.28); ratios far outside it on both sides."""
    r = jnp.asarray([0.1, 0.5, 1.0, 1.5, 3.0])
    a = jnp.zeros(5)
    band = obj.clip_band(0.2, 0.28)
    assert not np.any(np.asarray(obj.clipped_mask(r, a, band)))
    assert not np.any(np.asarray(obj.clipped_mask(r, a, band, clip_c=3.0)))
    assert np.asarray(obj.ppo_objective(r, a, band)).tolist() == [0.0] * 5
