"""Test-wide settings: deterministic hypothesis, strict JAX rank promotion.

Profiles (HYPOTHESIS_PROFILE): "ci" (default) runs 25 derandomized examples per property;
"thorough" runs 10x as many (250); "dev" is randomized. An expensive property sets its own
smaller budget with `tests.helpers.examples(n)`: n in "ci", 10 n in "thorough".

Hypothesis draws a few of each example's values from the numeric literals of the project's
modules loaded so far (its "local constants"), so the derandomized examples of a property would
depend on which test files a run collects: one file alone drew other examples than the whole
suite. Every module of the package and of paper_figures is imported here first, so a file run
alone draws what the whole suite draws.
"""
import importlib
import os
import pkgutil

import jax
import pytest
from hypothesis import HealthCheck, settings

import paper_figures
import twoclock

for _pkg in (twoclock, paper_figures):
    for _mod in pkgutil.walk_packages(_pkg.__path__, _pkg.__name__ + "."):
        importlib.import_module(_mod.name)

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


_SLOW_LIST = os.path.join(os.path.dirname(__file__), "slow_in_ci.txt")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark `slow` the default run's tests listed in tests/slow_in_ci.txt (each took >= 3 s on 2
    cores): .ci/run runs them after the README's command, whose budget is 7 minutes."""
    with open(_SLOW_LIST) as f:
        slow = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    # on a whole run, a listed test that was not collected was renamed or renumbered (a case
    # inserted into a parametrize list shifts the ids after it): it would run unmarked
    if not config.option.file_or_dir:
        stale = sorted(slow - {item.nodeid for item in items})
        if stale:
            raise pytest.UsageError(f"tests/slow_in_ci.txt names {len(stale)} test(s) that "
                                    f"were not collected (renamed or renumbered?): {stale[0]}")
