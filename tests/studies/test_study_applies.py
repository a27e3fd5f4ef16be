"""Which studies are offered for a model (issue 56, class 6): `applies(study, model)` is true
where the study declares no models or declares this one, AND its per-model defaults are not
None. Oracle: the truth table written out by hand over toy Study records, whichever way the
study stores its defaults (a `defaults` field of the record, or the config type's DEFAULTS).
Dropping the grouping (`not models or name in models and defaults is not None`) offers a
study with no declared models whatever its defaults say."""
from types import SimpleNamespace

import pytest

from twoclock.studies.protocol import Study, applies


def _study(models: tuple, offered: set, empty=False):
    """A toy study declaring `models`, whose defaults are None except for the models named in
    `offered` (there: an empty mapping when `empty`, falsy but not None, else a marker)."""
    def defaults(model):
        return None if model.name not in offered else ({} if empty else {"study": {"x": 1}})

    config = type("ToyConfig", (), {"DEFAULTS": staticmethod(defaults)})
    extra = {"defaults": defaults} if "defaults" in Study._fields else {}
    return Study("toy_applies", config, lambda *a, **k: {}, lambda out: "", models=models,
                 **extra)


TOY, OTHER = SimpleNamespace(name="toy"), SimpleNamespace(name="other")

# (declared models, models with defaults, model, offered?) - by hand, not by the formula
TABLE = [
    ((), set(), TOY, False),  # no declared models, defaults None: not offered
    ((), {"toy"}, TOY, True),  # no declared models, defaults given: offered
    ((), {"other"}, TOY, False),
    (("toy",), {"toy"}, TOY, True),  # declared and defaults given
    (("toy",), set(), TOY, False),  # declared, defaults None
    (("other",), {"toy"}, TOY, False),  # not declared, though defaults given
    (("other",), set(), TOY, False),
    (("toy", "other"), {"other"}, OTHER, True),
    (("toy", "other"), {"toy"}, OTHER, False),
]


@pytest.mark.parametrize("models, offered, model, want", TABLE)
def test_applies_needs_a_declared_model_and_defaults(models, offered, model, want):
    assert applies(_study(models, offered), model) is want


@pytest.mark.parametrize("models", [(), ("toy",)])
def test_empty_defaults_are_offered_only_none_refuses(models):
    """Defaults that are falsy but not None (an empty mapping) still offer the study."""
    assert applies(_study(models, {"toy"}, empty=True), TOY) is True
    assert applies(_study(models, set(), empty=True), TOY) is False
