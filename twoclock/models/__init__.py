"""The models, one package each, and the registry the engine and the command line read."""
from twoclock.models import bandit, policy, quadratic

MODELS = {m.name: m for m in (quadratic.MODEL, bandit.MODEL, policy.MODEL)}


def get(name: str):
    """The Model called name; ValueError naming the choices otherwise."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)} (got {name!r})")
    return MODELS[name]
