"""The studies behind the experiment scripts, one module each (`twoclock.studies.protocol`):
a frozen config, run(model, model_cfg, opt, cfg, *, keep, quiet, engine) -> a JSON-ready
result, report(result) -> the text the command prints, figure(result); and the registry the
command line reads (`twoclock.cli.run_study`), listed by hand like `twoclock.models.MODELS`."""
from twoclock.studies import (bandit_regimes, clipping, damage_study, headline, phase_study,
                              plan_calibration, plan_check, policy_study, regime_map,
                              schedule_study, shapes, time_to_target, updates_cost)


class Registry(dict):
    """{name: Study}, each also an attribute (STUDIES.schedule)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


STUDIES = Registry((s.name, s) for s in (
    headline.STUDY,
    schedule_study.STUDY,
    time_to_target.STUDY,
    phase_study.STUDY,
    clipping.STUDY,
    bandit_regimes.STUDY,
    policy_study.STUDY,
    damage_study.STUDY,
    regime_map.STUDY,
    plan_check.STUDY,
    plan_calibration.STUDY,
    shapes.STUDY,
    updates_cost.STUDY,
))
