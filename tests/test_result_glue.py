"""Every number of a headline result that comes from a formula is that formula, called directly
at the row's parameters: the quadratic's theory columns (under the sqrt rule, away from b0, so
lr != lr0), the bandit's theory and noise-scale columns (two lr0s, clocks that stop at
different checkpoints, a signal that varies), the critical batches of a sweep given its batches
out of order, and the lr rules' companions away from b0."""
import math
from types import SimpleNamespace

import numpy as np

from tests.helpers import assert_close
from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.analysis import clocks, results
from twoclock.models import MODELS
from twoclock.models.bandit import BanditConfig
from twoclock.models.bandit import theory as bt
from twoclock.models.quadratic import theory as qt
from twoclock.scaling import companions
from twoclock.studies.assemble import assemble

QCFG = QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.2, target=0.3, drift_threshold=0.5,
                       sigma=3.0)  # noisy enough that the median and mean crossings differ
QSWEEP = SweepConfig(batches=(32, 4, 16), lr0s=(1e-2, 3e-2), seeds=5, budget=3200, n_ckpt=8)


def _headline(opt, cfg=QCFG, sweep=QSWEEP):
    """The headline's pipeline (twoclock.studies.assemble): sweep, entries, critical batches,
    theory."""
    res = run_sweep(MODELS["quadratic"], cfg, opt, sweep, quiet=True)
    runs, crit = assemble(MODELS["quadratic"], cfg, opt, sweep, res, extra=(), describe=False)
    return res, runs, crit


def test_quadratic_theory_columns_are_the_theory_at_each_rows_parameters():
    opt = OptimConfig(name="momentum", lr_rule="sqrt", momentum=0.5)
    res, runs, crit = _headline(opt)
    assert len(runs) == 6
    for r in runs:
        B, lr0 = r["batch"], r["lr0"]
        lr = lr0 * math.sqrt(B / 8)  # by hand: the sqrt rule, b0 = 8
        assert_close(r["lr"], lr, rtol=1e-12, atol=0, what="lr")
        steps = QSWEEP.budget // B
        t = qt.median_steps(QCFG, opt, B, lr, steps)
        t_mean = qt.steps_to_target(QCFG, opt, B, lr, steps)
        th = r["theory"]
        assert th["progress_samples"] == (t * B if t else None)
        assert th["progress_samples_mean"] == (t_mean * B if t_mean else None)
        # N_fail = B thr (1 - mu) / (lr b), by hand and as the function computes it
        assert_close(th["failure_samples"], B * 0.5 * 0.5 / (lr * 0.2), rtol=1e-12, atol=0,
                     what="failure theory")
        assert th["failure_samples"] == qt.linear_failure_samples(QCFG, opt, lr0, B)
    assert any(r["theory"]["progress_samples"] for r in runs)
    assert any(r["theory"]["progress_samples"] != r["theory"]["progress_samples_mean"]
               for r in runs)
    for j, cb in enumerate(crit):
        # measured: the clocks' critical batch of this lr0's per-seed progress clocks, sorted
        order = np.argsort(res.batches)
        want = clocks.critical_batch([res.batches[i] for i in order], res.prog_n[order, j],
                                     idx=clocks.bootstrap_indices(QSWEEP.seeds))
        assert {k: cb[k] for k in want} == want and cb["lr0"] == QSWEEP.lr0s[j]
        # theory: the same rule on the first-passage clocks of this lr0's rows
        rows = sorted((r for r in runs if r["lr0"] == cb["lr0"]), key=lambda r: r["batch"])
        pred = [[r["theory"]["progress_samples"] or 0] for r in rows]
        assert cb["theory"]["batch"] == clocks.critical_batch([r["batch"] for r in rows],
                                                              pred)["batch"]


def test_quadratic_adam_failure_column_is_the_theory_at_lr0_and_batch():
    opt = OptimConfig(name="adam", lr_rule="sqrt")
    cfg = QuadraticConfig(dim=8, drift_dim=4, drift_bias=0.2, target=0.3, rotate=True)
    sweep = SweepConfig(batches=(32, 4), lr0s=(1e-2,), seeds=3, budget=640, n_ckpt=4)
    _, runs, _ = _headline(opt, cfg, sweep)
    for r in runs:
        pred = qt.adam_failure_samples(cfg, opt, r["lr0"], r["batch"])
        assert r["theory"]["failure_samples"] == pred["samples"]
        assert r["theory"]["failure_regime"] == pred["regime"]
    a, b = (r["theory"]["failure_samples"] for r in runs)
    assert a != b


def _bandit_result(seed=0):
    """A bandit result by hand: batches 64, 128; lr0s 0.01, 0.03; 3 seeds; 6 checkpoints every
    B samples; noise and signal that differ per lr0, seed and checkpoint."""
    rng = np.random.default_rng(seed)
    batches, lr0s = (64, 128), (0.01, 0.03)
    ckpt = []
    for b in batches:
        c = {"samples": np.broadcast_to(b * np.arange(1, 7), (2, 3, 6)).copy()}
        for d in ("skill", "drift"):
            c[f"noise_{d}"] = rng.uniform(10, 1000, (2, 3, 6))
            c[f"signal_{d}"] = rng.uniform(0.5, 2.0, (2, 3, 6))
        ckpt.append(c)
    runs = [{"batch": b, "lr0": l, "progress_samples": {"median": 2.5 * b},
             "failure_samples": {"median": None if (b, l) == (128, 0.03) else 4.0 * b}}
            for b in batches for l in lr0s]
    return SimpleNamespace(batches=batches, lr0s=lr0s, ckpt=ckpt), runs


def test_bandit_theory_and_noise_scales_are_their_definitions():
    cfg = BanditConfig(minibatches=2, drift_bias=0.05, drift_noise=25.0)
    opt = OptimConfig(name="adam", lr_rule="sqrt")
    res, runs = _bandit_result()
    MODELS["bandit"].predict(cfg, opt, None, res, runs, [])
    for r in runs:
        i, j = res.batches.index(r["batch"]), res.lr0s.index(r["lr0"])
        lr = r["lr0"] * math.sqrt(r["batch"] / 8)
        step = lr * 0.05 / (math.sqrt(25.0 * 2 / r["batch"] + 0.05**2) + 1e-8 / 1.0)
        assert_close(r["theory"]["failure_samples"], r["batch"] * cfg.drift_threshold
                     / (2 * step), rtol=1e-9, atol=0, what="bandit failure theory")
        for d, clock in (("skill", "progress_samples"), ("drift", "failure_samples")):
            until = r[clock]["median"]
            n = 6 if until is None else int(until // r["batch"])  # checkpoints at k B, k = 1..6
            noise = res.ckpt[i][f"noise_{d}"][j, :, :n]
            signal = res.ckpt[i][f"signal_{d}"][j, :, :n]
            want = noise.mean() / signal.mean()  # mean first, then the ratio
            assert_close(r["noise_scale"][d], want, rtol=1e-12, atol=0, what=f"{d} {r['batch']}")
            assert r["regime"][d] == ("noise" if want > r["batch"] else "signal")
    assert {r["regime"]["skill"] for r in runs} == {"noise"}


def test_bandit_configured_drift_scale_by_hand():
    assert_close(bt.drift_noise_scale(BanditConfig(drift_bias=0.05, drift_noise=25.0)),
                 25.0 / 0.05**2, rtol=1e-12, atol=0, what="c_d / b^2")
    assert bt.drift_noise_scale(BanditConfig(drift_bias=0.0)) == math.inf


def test_malladi_companions_away_from_b0_by_hand():
    """k = B / b0 = 4: 1 - beta -> 4 (1 - beta), eps -> eps / 2; at B = b0 nothing changes."""
    opt = OptimConfig(malladi=True, b0=8.0, beta1=0.9, beta2=0.999, eps=1e-6)
    want = (1 - 4 * 0.1, 1 - 4 * 0.001, 1e-6 / 2)
    assert_close(companions(opt, 32.0), want, rtol=1e-12, atol=0, what="companions")
    assert_close([float(v) for v in companions(opt, np.float32(32.0), traced=True)], want,
                 rtol=1e-6, atol=0, what="traced companions")
    assert_close(companions(opt, 8.0), (0.9, 0.999, 1e-6), rtol=1e-12, atol=0)
    assert companions(opt, 160.0)[0] == 0.0  # k (1 - beta1) = 2 capped at 1
    assert_close(OptimConfig(lr_rule="linear", b0=8.0).lr(0.01, 32.0), 0.04, rtol=1e-12, atol=0)
