"""Test-wide settings: deterministic hypothesis, strict JAX rank promotion."""
import os

import jax
from hypothesis import HealthCheck, settings

# Deterministic examples in CI and locally; simulations are slow, so no deadline.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=10, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=25)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

jax.config.update("jax_numpy_rank_promotion", "raise")
