"""The one command of every study (experiments/X.py is `run_study.main(STUDIES.X)`): flags
generated from the study's config type alone (its fields, nested configs in groups of their
own, and what it declares: `twoclock.studies.protocol`), the optimizer's and the model's, each
model's defaults for the study, the output and engine flags; then `study.run` inside the
rescue guard, `study.report` and `study.figure`."""
import argparse
from dataclasses import fields, is_dataclass
import os
import sys

from twoclock.atomic import check_file
from twoclock.cli.common import (OneLineParser, add_output_args, guard, model_config,
                                 parsed, publish, remove_stale_figure)
from twoclock.cli.engine_flags import (add_engine_args, add_max_lanes, check_engine_args,
                                       engine_from_args)
from twoclock.cli.flags import (add_config_flags, asdict_shallow, config_from_flags, dest,
                                flagged)
from twoclock.cli.rescue import loading
from twoclock.config import OptimConfig, SweepConfig
from twoclock.engine.runtime import setup
from twoclock.studies.protocol import (Study, StudyDefaults, applies, declared, defaults,
                                       description, output_name, several)


def _nested(cls) -> list:
    """[(field, its config class, its flag options)] of the config fields of cls."""
    return [(f, type(f.default), f.metadata["nested"]) for f in fields(cls)
            if "nested" in f.metadata and is_dataclass(f.default)]


def add_study_flags(group, cls, defaults) -> None:
    """The flags of cls's own fields: generated, or as a field's `option` says."""
    skip = ({f.name for f, _, _ in _nested(cls)} |
            {f.name for f in fields(cls) if f.metadata.get("internal")})
    add_config_flags(group, cls, skip=tuple(skip), defaults=defaults)


def nested_defaults(f, defaults) -> dict:
    """A nested config's defaults: its field's default, then defaults (the model's for the
    study, a preset's)."""
    return {**asdict_shallow(f.default), **(defaults or {})}


def study_config(ns, cls, defaults, overrides=None):
    """cls from the flags: its nested configs first (each with defaults[its name] and
    overrides[its name]), then its own fields (defaults["study"]; overrides: a preset's, the
    panels)."""
    overrides = dict(overrides or {})
    sub = {f.name: config_from_flags(ns, c, scalar=meta["scalar"], split=meta["split"],
                                     defaults=nested_defaults(f, {**(defaults.get(f.name) or {}),
                                                                  **overrides.pop(f.name, {})}))
           for f, c, meta in _nested(cls)}
    return config_from_flags(ns, cls, defaults={**defaults.get("study", {}), **overrides,
                                                **sub})


def _accepted(study: Study) -> list:
    """The names of the models the study applies to."""
    from twoclock.models import MODELS
    return [n for n, m in MODELS.items() if applies(study, m)]


def _refuse(study: Study, model) -> None:
    if not applies(study, model):
        ok = _accepted(study)
        raise ValueError(f"--model{'s' * several(study)} must be one of {', '.join(ok)} (the "
                         f"models {study.name} applies to) (got {model.name!r})")


def add_model_args(p, study: Study, model, defaults) -> None:
    """--model, the optimizer's flags and the model's (defaults: the study's for the model)."""
    p.add_argument("--model", default=model.name,  # the others are refused (_refuse)
                   help="the model: " + " | ".join(_accepted(study)))
    add_optim_args(p, study)
    add_config_flags(p.add_argument_group(f"{model.name} model"), model.config,
                     skip=declared(study, "SKIP_MODEL", ()), defaults=defaults)


def add_optim_args(p, study: Study) -> None:
    add_config_flags(p.add_argument_group("optimizer"), OptimConfig,
                     rename={"name": "optimizer"}, skip=declared(study, "SKIP_OPTIM", ()))


def pick_models(study: Study, argv, prog: str) -> list:
    """The models named by --models (a study over several) or --model (default: the study's
    first model, else quadratic); the study refuses one it does not apply to (ValueError)."""
    from twoclock.models import get as get_model
    pre = OneLineParser(prog=prog, add_help=False)
    if several(study):
        pre.add_argument("--models", nargs="+", default=list(study.config().models))
        names = pre.parse_known_args(argv)[0].models
    else:
        pre.add_argument("--model", default=study.models[0] if study.models else "quadratic")
        names = [pre.parse_known_args(argv)[0].model]
    models = [get_model(m) for m in names]
    for m in models:
        _refuse(study, m)
    return models


def given(ns, cls) -> set:
    """The fields of cls given on the command line."""
    return {f.name for f in fields(cls) if hasattr(ns, dest(cls, f.name))}


def parse(study: Study, argv, prog: str) -> tuple:
    """(model, model_cfg, opt, cfg, ns); ValueError for invalid values, before any work.

    A study over several models (--models, one panel each) takes, with one model, its sweep
    and model flags at its defaults for the study; with several, each model's defaults, and of
    the sweep only the fields every panel shares (`SHARED`); model and model_cfg are then
    None, and the panels go into the config's `panels` as it is built."""
    cls, many = study.config, several(study)
    models = pick_models(study, argv, prog)
    one = models[0] if len(models) == 1 else None
    d = defaults(study, one) if one is not None else StudyDefaults()
    shared = declared(study, "SHARED")
    p = OneLineParser(prog=prog, description=description(study),
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    groups = {"study": p.add_argument_group("study")}
    add_study_flags(groups["study"], cls, {} if many else d.study)
    for f, c, meta in _nested(cls):
        if meta["group"] not in groups:
            groups[meta["group"]] = p.add_argument_group(meta["group"])
        add_config_flags(groups[meta["group"]], c, rename=meta["rename"], skip=meta["skip"],
                         defaults=nested_defaults(f, getattr(d, f.name, None)),
                         help=meta["help"], scalar=meta["scalar"], split=meta["split"])
    if many and shared is not None:
        shown, helps = _sweep_defaults(study, models) if one is None else (d.sweep, {})
        fixed = declared(study, "FIXED_SWEEP", {})
        add_config_flags(p.add_argument_group("sweep (each model's defaults for the study)"),
                         SweepConfig, rename={"lr0s": "lr0"}, defaults=shown or None,
                         help=helps, skip=tuple(fixed))
        for name in fixed:  # not in the help; given, refused in one line saying why
            p.add_argument("--" + name.replace("_", "-"), dest=f"fixed.{name}",
                           default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for name, (help_, _) in declared(study, "PRESETS", {}).items():
        p.add_argument(f"--{name}", action="store_true", help=help_)
    if one is not None and declared(study, "MODEL_FLAGS", True):
        add_model_args(p, study, one, d.model)
    elif one is None:
        add_optim_args(p, study)
    o = add_output_args(p, output_name(study, one, cls()), figure=study.figure is not None)
    engine = declared(study, "ENGINE_FLAGS", False)
    if engine is True:
        add_engine_args(o, declared(study, "MAX_LANES"))
    elif engine:  # {"max_lanes": the study's default}: the engine flag it offers
        add_max_lanes(o, engine["max_lanes"])
    ns = p.parse_args(argv)
    try:
        return _configs(study, ns, models, one, d, engine)
    except ValueError as e:  # a config's refusal names the flag the user typed, not its field
        raise ValueError(flagged(str(e), p, ns)) from None


def _configs(study: Study, ns, models, one, d, engine) -> tuple:
    """parse's (model, model_cfg, opt, cfg, ns) from the parsed flags; ValueError names a bad
    value (by its config's field: parse puts the flag in its place)."""
    cls, many = study.config, several(study)
    for name, why in declared(study, "FIXED_SWEEP", {}).items():
        if hasattr(ns, f"fixed.{name}"):
            raise ValueError(f"--{name.replace('_', '-')} is not offered by {study.name}: "
                             f"{why}; drop it")
    preset = presets_given(study, ns)
    if many:
        panels = _panels(study, ns, models, one)
        model_cfg = panels[0][1] if one is not None else None
        cfg = study_config(ns, cls, {}, {**preset, "panels": panels})
    else:
        cfg = study_config(ns, cls, {"study": d.study, "sweep": d.sweep}, preset)
        model_cfg = model_config(ns, one, getattr(cfg, "batches", ()), d.model)
    opt = config_from_flags(ns, OptimConfig)
    if engine:
        check_engine_args(ns)
    if hasattr(cfg, "check"):
        cfg.check(one, model_cfg, opt)
    for what, path in (cfg.outputs() if hasattr(cfg, "outputs") else {}).items():
        check_file(path, what)  # the study's own files, writable before any work
    return one, model_cfg, opt, cfg, ns


def _sweep_defaults(study: Study, models) -> tuple:
    """({field: default}, {field: help}) of the sweep flags of a study over several models:
    a value every model's defaults for the study share is the flag's default; one they do not
    share is said in the help, model by model (each panel runs its model's own)."""
    runs = {m.name: SweepConfig(**{**asdict_shallow(SweepConfig()), **defaults(study, m).sweep})
            for m in models}
    shown, helps = {}, {}
    for f in fields(SweepConfig):
        values = {name: getattr(sweep, f.name) for name, sweep in runs.items()}
        if len(set(values.values())) == 1:
            shown[f.name] = next(iter(values.values()))
        else:
            helps[f.name] = (f"{f.metadata['help']} (default: each model's own: "
                             + "; ".join(f"{n} {v}" for n, v in values.items()) + ")")
    return shown, helps


def presets_given(study: Study, ns) -> dict:
    """The config overrides of the presets given (--NAME); two that set the same field are
    refused (ValueError), rather than one silently dropping the other's."""
    out, by = {}, {}
    for name, (_, over) in declared(study, "PRESETS", {}).items():
        if getattr(ns, name):
            both = [k for k in over if k in out and out[k] != over[k]]
            if both:
                raise ValueError(f"--{by[both[0]]} and --{name} cannot be given together (both "
                                 f"set {', '.join(both)}): drop one of them")
            out.update(over)
            by.update(dict.fromkeys(over, name))
    return out


def _panels(study: Study, ns, models, one) -> tuple:
    """Each model's panel: (model, model config, SweepConfig), or (model, model config) where
    the models bring their own runs (SHARED None); with one model its flags, else each
    model's defaults for the study (and the sweep fields given for every panel)."""
    shared = declared(study, "SHARED")
    panels = []
    if shared is not None and one is None:
        alone = sorted(given(ns, SweepConfig) - set(shared))
        if alone:
            raise ValueError(f"--{alone[0].replace('_', '-').replace('lr0s', 'lr0')} "
                             "changes one model's grid: give a single --models entry")
    common = {f: getattr(ns, dest(SweepConfig, f)) for f in given(ns, SweepConfig)}
    for m in models:
        d = defaults(study, m)
        sweep = (() if shared is None else
                 (config_from_flags(ns, SweepConfig, defaults={**d.sweep, **common}),))
        model_cfg = (model_config(ns, m, sweep[0].batches if sweep else (), d.model)
                     if one is not None else m.config(**d.model))
        panels.append((m, model_cfg, *sweep))
    return tuple(panels)


def main(study: Study, argv=None, prog: str | None = None) -> int:
    """Parse (one line and exit 2 for bad input), run, report, write the JSON and the figure."""
    prog = prog or declared(study, "SCRIPT") or os.path.basename(sys.argv[0])
    argv = sys.argv[1:] if argv is None else argv
    with loading(prog):  # a signal before the first simulation: one line, exit 130 or 143
        setup()  # all cores as devices, persistent compilation cache
        model, model_cfg, opt, cfg, ns = parsed(prog, lambda a: parse(study, a, prog), argv)
        name = output_name(study, model, cfg, given(ns, study.config)
                           | {n for n in declared(study, "PRESETS", {}) if getattr(ns, n)})
    with guard(ns, name, prog) as rescue:
        out = study.run(model, model_cfg, opt, cfg, keep=rescue.keep, quiet=ns.quiet,
                        engine=engine_from_args(ns, rescue.save_ahead))
        if out is None:  # nothing to publish (a multi-host run's other processes)
            return 0
        publish(ns, name, out, study.report, rescue=rescue)
        fig = None if study.figure is None or ns.no_figure else study.figure(out)
        if isinstance(fig, str):  # nothing to draw, and why: said, and no older figure kept
            stale = remove_stale_figure(ns, name)
            print(f"no figure: {fig}" + (f"; removed {', '.join(stale)} (an earlier run's "
                                         "figure)" if stale else ""), flush=True)
        elif fig is not None:  # (a result with nothing to draw gives None)
            from twoclock.figures.style import save
            print("figure: " + ", ".join(save(fig, os.path.join(ns.out, name))))
    return 0
