"""Store isolation: a sweep reuses only chunks of its own configuration (twoclock.engine.store)."""
import numpy as np
from hypothesis import given, strategies as st

from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.analysis.results import config_dict
from twoclock.engine.store import Store
from twoclock.models import MODELS

BASE = config_dict(model=QuadraticConfig(), optimizer=OptimConfig(),
                   sweep=SweepConfig(batches=(8, 16), seeds=4, budget=4000))
FIELDS = [(part, k) for part in ("model", "optimizer", "sweep") for k in BASE[part]]


def _changed(part, k):
    cfg = {p: dict(v) for p, v in BASE.items()}
    v = cfg[part][k]
    cfg[part][k] = (not v if isinstance(v, bool) else v + 1 if isinstance(v, (int, float))
                    else v + [8] if isinstance(v, list) else v + "x")
    return cfg


@given(st.sampled_from(FIELDS))
def test_any_changed_field_gets_its_own_folder(field):
    other = _changed(*field)
    a, b = Store("root", "quadratic", BASE), Store("root", "quadratic", other)
    assert a.key != b.key and a.path != b.path, field
    # the same configuration in another key order is the same store
    shuffled = {p: dict(reversed(list(v.items()))) for p, v in reversed(list(BASE.items()))}
    assert Store("root", "quadratic", shuffled).path == a.path == Store("root", "quadratic",
                                                                       BASE).path
    assert a.key in a.path and "quadratic" in a.path
    assert Store("root", "bandit", BASE).path != a.path


def test_a_sweep_never_reuses_another_configurations_results(tmp_path):
    opt = OptimConfig(name="sgd")
    sweep = SweepConfig(batches=(8, 16), lr0s=(0.05,), seeds=3, budget=1600, n_ckpt=8)
    cfg_a = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.5, target=0.3)
    cfg_b = QuadraticConfig(dim=4, drift_dim=2, drift_bias=0.5, target=0.6)
    key = lambda cfg: config_dict(model=cfg, optimizer=opt, sweep=sweep)
    run_sweep(MODELS["quadratic"], cfg_a, opt, sweep, quiet=True,
              store=Store(str(tmp_path), "quadratic", key(cfg_a)))
    got = run_sweep(MODELS["quadratic"], cfg_b, opt, sweep, quiet=True,
                    store=Store(str(tmp_path), "quadratic", key(cfg_b)))
    fresh = run_sweep(MODELS["quadratic"], cfg_b, opt, sweep, quiet=True)
    assert got.reused_chunks == 0
    assert np.array_equal(got.prog_n, fresh.prog_n) and np.array_equal(got.fail_n, fresh.fail_n)
    again = run_sweep(MODELS["quadratic"], cfg_a, opt, sweep, quiet=True,
                      store=Store(str(tmp_path), "quadratic", key(cfg_a)))
    assert again.reused_chunks > 0 and not np.array_equal(again.prog_n, got.prog_n)
