"""Test-wide settings: deterministic hypothesis, strict JAX rank promotion.

Profiles (HYPOTHESIS_PROFILE): "ci" (default) runs 25 derandomized examples per property;
"thorough" runs 10x as many (250); "dev" is randomized. An expensive property sets its own
smaller budget with `tests.helpers.examples(n)`: n in "ci", 10 n in "thorough".
"""
import os

import jax
from hypothesis import HealthCheck, settings

CI_EXAMPLES = 25

# Deterministic examples in CI and locally; simulations are slow, so no deadline.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=CI_EXAMPLES, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", derandomize=True, deadline=None, max_examples=10 * CI_EXAMPLES,
    print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile("dev", deadline=None, max_examples=CI_EXAMPLES)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)

jax.config.update("jax_numpy_rank_promotion", "raise")
