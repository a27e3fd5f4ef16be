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
