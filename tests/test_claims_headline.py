"""The README's and docs/bandit.md's headline contrasts are what the default runs recompute to:
each ratio of medians N(B) / N(B_min) and its paired 95% CI (the same resampled seeds at both
batches), from `run_sweep` at the model's default sweep, to the digits the docs print. Slow: two
sweeps (about 10 s and 20 s on 2 cores)."""
import os
import re

import numpy as np
import pytest

from twoclock import OptimConfig, SweepConfig, run_sweep
from twoclock.models import MODELS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_BOOT = 2000  # the resamples the docs CIs use (analysis.clocks), drawn the same way (seed 0)


def _text(doc):
    with open(os.path.join(ROOT, doc)) as f:
        return re.sub(r"\s+", " ", f.read())


def _ratio(x_S, y_S):
    """med(x) / med(y) and its paired percentile CI, written out again here (NumPy only): a
    run that never crossed is +inf; a resample's ratio inf / inf counts as inf."""
    x = np.where(x_S > 0, x_S, np.inf).astype(np.float64)
    y = np.where(y_S > 0, y_S, np.inf).astype(np.float64)
    idx = np.random.default_rng(0).integers(0, x.size, size=(N_BOOT, x.size))
    with np.errstate(invalid="ignore"):
        boot = np.median(x[idx], -1) / np.median(y[idx], -1)
    boot = np.where(np.isnan(boot), np.inf, boot)
    lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
    return np.median(x) / np.median(y), lo, hi


def _fmt(r, digits):
    return "{0:.{3}f} [{1:.{3}f}, {2:.{3}f}]".format(*r, digits)


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name in ("quadratic", "bandit"):
        m = MODELS[name]
        sweep = SweepConfig(**{k: tuple(v) if isinstance(v, list) else v
                               for k, v in m.default_sweep.items()})
        out[name] = run_sweep(m, m.config(), OptimConfig(lr_rule="sqrt"), sweep, quiet=True)
    return out


@pytest.mark.slow
def test_the_readmes_quadratic_ratios_are_the_default_runs(runs):
    res, text = runs["quadratic"], _text("README.md")
    lr0 = {v: j for j, v in enumerate(res.lr0s)}
    i = list(res.batches).index(256)
    prog = [_ratio(res.prog_n[i, lr0[v]], res.prog_n[0, lr0[v]]) for v in (1e-2, 5e-3)]
    fail = {v: _ratio(res.fail_n[i, lr0[v]], res.fail_n[0, lr0[v]]) for v in (1e-2, 2e-2, 5e-3)}
    assert f"progress slows {_fmt(prog[0], 2)}x ({_fmt(prog[1], 2)}x at lr0 = 5e-3)" in text
    assert (f"failure clock's ratio is {_fmt(fail[1e-2], 2)} at lr0 = 1e-2 and "
            f"{_fmt(fail[2e-2], 2)} at 2e-2") in text
    assert f"{_fmt(fail[5e-3], 2)} at 5e-3 (a 12% rise, established)" in text
    assert fail[5e-3][1] > 1 and fail[1e-2][1] < 1 < fail[1e-2][2]  # the words' premises


@pytest.mark.slow
def test_the_bandit_ratios_in_the_readme_and_bandit_md_are_the_default_runs(runs):
    res = runs["bandit"]
    b = list(res.batches)
    fail = {B: _ratio(res.fail_n[b.index(B), 0], res.fail_n[0, 0]) for B in b[1:]}
    prog = _ratio(res.prog_n[b.index(1024), 0], res.prog_n[0, 0])
    col = _ratio(res.extra["collapse_n"][b.index(1024), 0], res.extra["collapse_n"][0, 0])
    readme, doc = _text("README.md"), _text("docs/bandit.md")
    assert (f"N_fail(1024) / N_fail(64) {_fmt(fail[1024], 2)} (flat not rejected; within the "
            f"claimed +-25%) while N_prog grows {_fmt(prog, 2)}x") in readme
    assert ("0.99 [0.85, 1.16] at 128" in doc and _fmt(fail[128], 2) == "0.99 [0.85, 1.16]")
    for B in (256, 512):
        assert f"{_fmt(fail[B], 2)} at {B}" in doc
    assert all(0.75 <= lo and hi <= 1.25 for _, lo, hi in fail.values())  # "inside +-25%"
    assert f"N_prog(1024) / N_prog(64) = {_fmt(prog, 2)}, paired" in doc
    assert f"1024 / 64 is {_fmt(col, 2)} paired over seeds (established)" in doc
    assert col[2] < 1
