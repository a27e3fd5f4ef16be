"""Bad input is rejected before anything is traced, with the parameter and range named."""
import pytest
from hypothesis import given, strategies as st

from twoclock import OptimConfig, QuadraticConfig, SweepConfig


@pytest.mark.parametrize("kwargs, name", [
    (dict(dim=0), "dim"), (dict(target=0.0), "target"), (dict(target=1.0), "target"),
    (dict(drift_threshold=0.0), "drift_threshold"), (dict(sigma=-1.0), "sigma"),
    (dict(drift_dim=-1), "drift_dim"), (dict(drift_stat="max"), "drift_stat"),
    (dict(alpha=float("nan")), "alpha"),
])
def test_quadratic_config_rejects(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        QuadraticConfig(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    (dict(name="rmsprop"), "optimizer"), (dict(lr_rule="cubic"), "lr_rule"),
    (dict(b0=0.0), "b0"), (dict(beta1=1.0), "beta1"), (dict(eps=-1e-8), "eps"),
])
def test_optim_config_rejects(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        OptimConfig(**kwargs)


@given(st.integers(max_value=0))
def test_batch_below_one_rejected(b):
    with pytest.raises(ValueError, match=r"^batch must be an integer >= 1"):
        SweepConfig(batches=(8, b))


@given(st.floats(max_value=0.0, allow_nan=False))
def test_lr_not_positive_rejected(lr):
    with pytest.raises(ValueError, match=r"^lr0 must be a finite number > 0"):
        SweepConfig(lr0s=(lr,))


@given(st.integers(min_value=1, max_value=255))
def test_budget_below_batch_rejected(budget):
    with pytest.raises(ValueError, match=r"^budget must be >= the largest batch \(256\)"):
        SweepConfig(batches=(8, 256), budget=budget)


@given(st.floats(allow_nan=False).filter(lambda t: not 0 < t < 1))
def test_target_outside_unit_interval_rejected(t):
    with pytest.raises(ValueError, match=r"^target must be in \(0, 1\)"):
        QuadraticConfig(target=t)


def test_message_shows_value():
    with pytest.raises(ValueError, match=r"\(got 0\)$"):
        QuadraticConfig(dim=0)


def test_the_learning_rate_rule_is_written_once_and_gives_the_hand_values():
    """lr(B) = lr0 (B / b0)^p lives in config.scaled_lr: the optimizer, the engine's float
    checks and the planner's rule read from logs call it, and no other module writes it."""
    import os
    import re
    from twoclock.config import scaled_lr
    assert scaled_lr(0.01, 32, 8, 0.5) == pytest.approx(0.02)  # 0.01 sqrt(4)
    assert OptimConfig(lr_rule="linear", b0=4.0).lr(0.5, 12) == pytest.approx(1.5)  # 0.5 * 3
    assert OptimConfig(lr_rule="fixed").lr(0.5, 1024) == 0.5
    rule = re.compile(r"lr0\W*\s*\*\s*\(\s*\w+\s*/[^)]*b0[^)]*\)\s*\*\*")
    assert rule.search('lr_of = lambda B: rule["lr0"] * (B / rule["b0"]) ** rule["p"]')
    assert rule.search("return lr0 * (batch / self.b0) ** self.exponent")
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "twoclock")
    bad = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            if f.endswith(".py") and path != os.path.join(root, "config.py"):
                with open(path) as fh:
                    bad += [(f, line.strip()) for line in fh if rule.search(line)]
    assert not bad, bad
