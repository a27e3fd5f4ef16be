"""A model is one package: a toy third model, registered in a registry built for the test, runs
the headline, the schedule study, time-to-target and the phase study through their library
entries, and its clocks are the hand-computed ones.

The toy: one coordinate theta on the loss h theta^2 / 2 (h = 1, theta0 = 1) and one drift
coordinate w pulled by a constant gradient -b, both noiseless, under SGD. Update t moves theta
to (1 - lr)^t and w to t lr b, so the progress clock (loss ratio (1 - lr)^(2t) <= target) and
the failure clock (w >= threshold) are known in closed form.
"""
from dataclasses import dataclass
import json
import math
from unittest import mock

import jax
import jax.numpy as jnp
import optax
import pytest

from twoclock.analysis.throughput import ThroughputModel
from twoclock.cli import run_study
from twoclock.config import OptimConfig, SweepConfig, param, require
from twoclock.model import Dynamics, Model, RunState, Studies, StudyDefaults, initial_clocks
from twoclock.models import MODELS
from twoclock.scaling import make_optimizer
from twoclock.studies import STUDIES, phase_study, schedule_study, time_to_target


@dataclass(frozen=True)
class ToyConfig:
    target: float = param(0.1, "loss / initial loss target")
    pull: float = param(0.3, "drift pull b")
    drift_threshold: float = param(1.0, "failure threshold on w")

    def __post_init__(self):
        require(0 < self.target < 1, "target", "in (0, 1)", self.target)


def toy_dynamics(cfg: ToyConfig, opt: OptimConfig, batch=None):
    def dyn(batch, key) -> Dynamics:
        def advance(tx, state, ts_T, noise):
            def update(carry, _):
                p, s = carry
                upd, s = tx.update(jnp.stack([p[0], -cfg.pull]), s, p)
                p = optax.apply_updates(p, upd)
                return (p, s), p
            (p, s), p_T = jax.lax.scan(update, (state.params, state.opt_state), noise)
            loss_T = p_T[:, 0] ** 2  # loss / initial loss
            hits = {"prog": loss_T <= cfg.target, "fail": p_T[:, 1] >= cfg.drift_threshold,
                    "div": ~jnp.all(jnp.isfinite(p_T), axis=-1)}
            return state._replace(params=p, opt_state=s), hits, {
                "progress_frac": loss_T[-1], "drift": p_T[-1, 1]}

        def init(tx):
            p0 = jnp.array([1.0, 0.0], jnp.result_type(float))
            return RunState(p0, tx.init(p0), initial_clocks())
        return Dynamics(lambda lr: make_optimizer(opt, lr, batch), init,
                        lambda ts_T: jnp.zeros_like(ts_T), advance)
    return dyn


TOY = Model(
    name="toy", config=ToyConfig, dynamics=toy_dynamics,
    predict=lambda cfg, opt, sweep, res, runs, crit: None,
    describe_batch=lambda cfg, b: {}, static_batch=False, title="toy",
    default_sweep=dict(batches=(8, 32), lr0s=(0.1,), seeds=2, budget=2000),
    studies=Studies(
        schedule=StudyDefaults(study=dict(batch_small=8, batch_large=32, lr0=0.1),
                               sweep=dict(seeds=2, budget=2000, n_ckpt=8)),
        phase=StudyDefaults(sweep=dict(batches=(8, 32), lr0s=(0.05, 0.1), seeds=2,
                                       budget=2000, n_ckpt=8))))
SGD = OptimConfig(name="sgd")


def hand_clocks(batch: int, lr0: float = 0.1, cfg: ToyConfig = ToyConfig()) -> tuple:
    """(N_prog, N_fail) in samples, from the closed form (sqrt rule, b0 = 8)."""
    lr = lr0 * math.sqrt(batch / 8)
    t_prog = math.ceil(math.log(cfg.target) / (2 * math.log(1 - lr)))
    t_fail = math.ceil(cfg.drift_threshold / (lr * cfg.pull))
    return t_prog * batch, t_fail * batch


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setitem(MODELS, "toy", TOY)  # the registry of this test: the two models + toy


def test_hand_clocks_sit_away_from_a_rounding_boundary():
    """The oracle's crossings are at least 1% away from an integer update count."""
    for b in (8, 32):
        lr = 0.1 * math.sqrt(b / 8)
        for x in (math.log(0.1) / (2 * math.log(1 - lr)), 1.0 / (lr * 0.3)):
            assert 0.01 < x - math.floor(x) < 0.99


def test_the_headline_runs_the_toy_and_finds_its_clocks(registry, tmp_path):
    path = tmp_path / "toy.json"
    with mock.patch("twoclock.cli.run_study.setup"):
        code = run_study.main(STUDIES.headline, ["--model", "toy", "--optimizer", "sgd", "--no-store", "--quiet",
                              "--no-figure", "--json", str(path), "--out", str(tmp_path)])
    assert code == 0
    out = json.loads(path.read_text())
    assert out["model"] == "toy" and [r["batch"] for r in out["runs"]] == [8, 32]
    for r in out["runs"]:
        n_prog, n_fail = hand_clocks(r["batch"])
        assert r["progress_samples"]["median"] == n_prog
        assert r["failure_samples"]["median"] == n_fail


def test_the_schedule_study_runs_the_toy(registry):
    d = schedule_study.defaults(TOY)
    study = schedule_study.Config(**d.study, switches=2, responses_per_sample=1.0,
                                  sweep=SweepConfig(**d.sweep), throughput=ThroughputModel())
    out = schedule_study.run(TOY, ToyConfig(), SGD, study, quiet=True)
    const = {r["kind"]: r for r in out["runs"]}
    assert const["constant_small"]["progress_samples"]["median"] == hand_clocks(8)[0]
    assert const["constant_large"]["failure_samples"]["median"] == hand_clocks(32)[1]
    assert out["model"] == "toy" and out["curve_target"] == ToyConfig().target
    # a schedule that switches after all of B = 8's progress is B = 8's progress clock
    late = [r for r in out["switch_sweep"] if r["switch"] >= hand_clocks(8)[0]]
    assert all(r["progress_samples"]["median"] == hand_clocks(8)[0] for r in late)


def test_time_to_target_runs_the_toy(registry):
    sweep = SweepConfig(batches=(8, 32), lr0s=(0.1,), seeds=2, budget=2000, n_ckpt=8)
    study = time_to_target.Config(lr0=0.1, lr_rules=("sqrt",), responses_per_sample=1.0,
                                  sweep=sweep)
    out = time_to_target.run(TOY, ToyConfig(), SGD, study, quiet=True)
    got = {r["batch"]: r["progress_samples"]["median"] for r in out["runs"]}
    assert got == {b: hand_clocks(b)[0] for b in (8, 32)}


def test_the_phase_study_runs_the_toy(registry):
    cfg = phase_study.Config(models=("toy",), panels=((TOY, None, None, None),))
    out = phase_study.run(None, None, SGD, cfg, quiet=True)
    (panel,) = out["panels"]
    assert panel["title"] == "toy" and "theory" not in panel  # the toy has no boundary
    for j, lr0 in enumerate(panel["lr0s"]):
        for i, b in enumerate(panel["batches"]):
            n_prog, n_fail = hand_clocks(b, lr0)
            assert panel["margin"][j][i] == n_fail - n_prog
