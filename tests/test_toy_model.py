"""A model is one package: a toy third model, registered in a registry built for the test, runs
the headline, the schedule study, time-to-target and the phase study through their library
entries, and its clocks are the hand-computed ones.

The toy: one coordinate theta on the loss h theta^2 / 2 (h = 1, theta0 = 1) and one drift
coordinate w pulled by a constant gradient -b, both noiseless, under SGD. Update t moves theta
to (1 - lr)^t and w to t lr b, so the progress clock (loss ratio (1 - lr)^(2t) <= target) and
the failure clock (w >= threshold) are known in closed form: each is the first update t whose
margin (target - loss ratio; w - threshold) is >= 0, interpolated linearly from update t - 1.
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
from twoclock.model import Dynamics, Model, RunState, initial_clocks, initial_margins
from twoclock.models import MODELS
from twoclock.scaling import make_optimizer
from twoclock.studies import STUDIES, phase_study, schedule_study, time_to_target
from twoclock.studies.protocol import StudyDefaults, applies


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
            hits = {"prog": cfg.target - loss_T, "fail": p_T[:, 1] - cfg.drift_threshold,
                    "div": ~jnp.all(jnp.isfinite(p_T), axis=-1)}
            return state._replace(params=p, opt_state=s), hits, {
                "progress_frac": loss_T[-1], "drift": p_T[-1, 1]}

        def init(tx):
            p0 = jnp.array([1.0, 0.0], jnp.result_type(float))
            return RunState(p0, tx.init(p0), initial_clocks(), margins=initial_margins(
                {"prog": cfg.target - 1.0, "fail": -cfg.drift_threshold}))
        return Dynamics(lambda lr: make_optimizer(opt, lr, batch), init,
                        lambda ts_T: jnp.zeros_like(ts_T), advance)
    return dyn


TOY = Model(
    name="toy", config=ToyConfig, dynamics=toy_dynamics,
    predict=lambda cfg, opt, sweep, res, runs, crit: None,
    describe_batch=lambda cfg, b: {}, static_batch=False, title="toy",
    default_sweep=dict(batches=(8, 32), lr0s=(0.1,), seeds=2, budget=2000))
# the toy's defaults in the studies that need some: each study owns its table of them
TOY_DEFAULTS = {
    schedule_study: StudyDefaults(sweep=dict(batches=(8, 32), lr0s=(0.1,), seeds=2,
                                             budget=2000, n_ckpt=8)),
    phase_study: StudyDefaults(sweep=dict(batches=(8, 32), lr0s=(0.05, 0.1), seeds=2,
                                          budget=2000, n_ckpt=8))}
SGD = OptimConfig(name="sgd")


def hand_clocks(batch: int, lr0: float = 0.1, cfg: ToyConfig = ToyConfig()) -> tuple:
    """(N_prog, N_fail) in samples, from the closed form (sqrt rule, b0 = 8): the first update
    t past each threshold, and the line through the margins after updates t - 1 and t."""
    lr = lr0 * math.sqrt(batch / 8)

    def first(margin, t):
        return t - 1 + margin(t - 1) / (margin(t - 1) - margin(t))
    t_prog = math.ceil(math.log(cfg.target) / (2 * math.log(1 - lr)))
    t_fail = math.ceil(cfg.drift_threshold / (lr * cfg.pull))
    prog = first(lambda t: cfg.target - (1 - lr) ** (2 * t), t_prog)
    fail = first(lambda t: t * lr * cfg.pull - cfg.drift_threshold, t_fail)  # linear: exact
    return prog * batch, fail * batch


def hand_schedule_progress(switch: int, lr0: float = 0.1, cfg: ToyConfig = ToyConfig()) -> float:
    """N_prog in samples of B = 8 for switch // 8 updates, then B = 32 (sqrt rule), from the
    closed form: theta_t = (1 - lr_8)^min(t, n1) (1 - lr_32)^max(t - n1, 0)."""
    n1, lr8, lr32 = switch // 8, lr0, lr0 * 2

    def margin(t):
        return cfg.target - ((1 - lr8) ** min(t, n1) * (1 - lr32) ** max(t - n1, 0)) ** 2
    t = next(t for t in range(1, 10_000) if margin(t) >= 0)
    f = margin(t - 1) / (margin(t - 1) - margin(t))
    return 8 * min(t - 1, n1) + 32 * max(t - 1 - n1, 0) + f * (8 if t <= n1 else 32)


def close(a, b) -> bool:
    """The engine's float32 clocks against the float64 closed form."""
    return a == pytest.approx(b, rel=1e-5)


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setitem(MODELS, "toy", TOY)  # the registry of this test: the two models + toy
    for study, d in TOY_DEFAULTS.items():  # one line in each study that needs defaults
        monkeypatch.setitem(study.DEFAULTS, "toy", d)


def test_a_study_is_offered_for_the_toy_where_it_lists_defaults_or_needs_none(registry):
    """Applicability: a study is offered iff it declares no models or lists the toy, and its
    defaults for the toy are not None."""
    offered = {name for name, s in STUDIES.items() if applies(s, TOY)}
    # headline: no declared models, defaults from every model; schedule and phase: the toy is
    # in their tables; time_to_target: its table lacks the toy; the rest declare their models
    assert offered == {"headline", "schedule", "phase"}, offered
    assert not applies(STUDIES.time_to_target, TOY)


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
        assert close(r["progress_samples"]["median"], n_prog)
        assert close(r["failure_samples"]["median"], n_fail)


def test_the_schedule_study_runs_the_toy(registry):
    d = schedule_study.defaults(TOY)
    study = schedule_study.Config(**d.study, switches=2, responses_per_sample=1.0,
                                  sweep=SweepConfig(**d.sweep), throughput=ThroughputModel())
    out = schedule_study.run(TOY, ToyConfig(), SGD, study, quiet=True)
    const = {r["kind"]: r for r in out["runs"]}
    assert close(const["constant_small"]["progress_samples"]["median"], hand_clocks(8)[0])
    assert close(const["constant_large"]["failure_samples"]["median"], hand_clocks(32)[1])
    assert out["model"] == "toy" and out["curve_target"] == ToyConfig().target
    # each switch's progress clock, the top one inside B = 8's last update before the target
    # (the crossing then falls in the first update at B = 32)
    rows = out["switch_sweep"]
    assert rows[0]["switch"] == 0 and hand_clocks(8)[0] - 8 < rows[-1]["switch"] < hand_clocks(8)[0]
    assert close(hand_schedule_progress(0), hand_clocks(32)[0])
    for r in rows:
        assert close(r["progress_samples"]["median"], hand_schedule_progress(r["switch"])), r


def test_time_to_target_runs_the_toy(registry):
    sweep = SweepConfig(batches=(8, 32), lr0s=(0.1,), seeds=2, budget=2000, n_ckpt=8)
    study = time_to_target.Config(lr_rules=("sqrt",), responses_per_sample=1.0,
                                  sweep=sweep)
    out = time_to_target.run(TOY, ToyConfig(), SGD, study, quiet=True)
    got = {r["batch"]: r["progress_samples"]["median"] for r in out["runs"]}
    assert set(got) == {8, 32} and all(close(got[b], hand_clocks(b)[0]) for b in got)


def test_the_phase_study_runs_the_toy(registry):
    cfg = phase_study.Config(models=("toy",), panels=((TOY, None, None, None),))
    out = phase_study.run(None, None, SGD, cfg, quiet=True)
    (panel,) = out["panels"]
    assert panel["title"] == "toy" and "theory" not in panel  # the toy has no boundary
    for j, lr0 in enumerate(panel["lr0s"]):
        for i, b in enumerate(panel["batches"]):
            n_prog, n_fail = hand_clocks(b, lr0)
            assert panel["margin"][j][i] == pytest.approx(n_fail - n_prog, rel=1e-4)
