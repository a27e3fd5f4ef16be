"""The one command of every study (experiments/X.py is `run_study.main(STUDIES.X)`): flags
generated from the study's config (nested configs in groups of their own), the optimizer's and
the model's, each model's defaults for the study, the output and engine flags; then
`study.run` inside the rescue guard, `study.report` and `study.figure`."""
import argparse
from dataclasses import fields, is_dataclass, replace
import os
import sys

from twoclock.cli.common import (OneLineParser, add_output_args, guard, model_config,
                                 parsed, publish)
from twoclock.cli.engine_flags import add_engine_args, check_engine_args, engine_from_args
from twoclock.cli.flags import add_config_flags, config_from_flags, dest
from twoclock.config import OptimConfig, SweepConfig
from twoclock.engine.runtime import setup
from twoclock.studies.protocol import Study, applies, output_name


def _nested(cls) -> list:
    """[(field, its config class, its flag options)] of the config fields of cls."""
    return [(f, type(f.default), f.metadata["nested"]) for f in fields(cls)
            if "nested" in f.metadata and is_dataclass(f.default)]


def add_study_flags(group, cls, defaults) -> None:
    """The flags of cls's own fields: generated, or as a field's `option` says."""
    skip = ({f.name for f, _, _ in _nested(cls)} |
            {f.name for f in fields(cls) if f.metadata.get("internal")})
    add_config_flags(group, cls, skip=tuple(skip), defaults=defaults)


def study_config(ns, cls, defaults, overrides=None):
    """cls from the flags: its nested configs first (each with defaults[its name]), then its
    own fields (defaults["study"]; overrides: a preset's)."""
    sub = {f.name: config_from_flags(ns, c, defaults=defaults.get(f.name))
           for f, c, _ in _nested(cls)}
    return config_from_flags(ns, cls, defaults={**defaults.get("study", {}), **(overrides or {}),
                                                **sub})


def _refuse(study: Study, model) -> None:
    from twoclock.models import MODELS
    if not applies(study, model):
        ok = [n for n, m in MODELS.items() if applies(study, m)]
        raise ValueError(f"model must be one of {', '.join(ok)} (the models {study.name} "
                         f"applies to) (got {model.name!r})")


def add_model_args(p, study: Study, model, defaults) -> None:
    """--model, the optimizer's flags and the model's (defaults: the study's for the model)."""
    from twoclock.models import MODELS
    p.add_argument("--model", default=model.name, help=" | ".join(MODELS))
    add_optim_args(p, study)
    add_config_flags(p.add_argument_group(f"{model.name} model"), model.config,
                     skip=study.skip_model, defaults=defaults)


def add_optim_args(p, study: Study) -> None:
    add_config_flags(p.add_argument_group("optimizer"), OptimConfig,
                     rename={"name": "optimizer"}, skip=study.skip_optim)


def pick_model(study: Study, argv, prog: str):
    """The model named by --model (default: the study's first model, else quadratic); the
    study refuses one it does not apply to (ValueError)."""
    from twoclock.models import get as get_model
    pre = OneLineParser(prog=prog, add_help=False)
    pre.add_argument("--model", default=study.models[0] if study.models else "quadratic")
    model = get_model(pre.parse_known_args(argv)[0].model)
    _refuse(study, model)
    return model


def given(ns, cls) -> set:
    """The fields of cls given on the command line."""
    return {f.name for f in fields(cls) if hasattr(ns, dest(cls, f.name))}


def parse(study: Study, argv, prog: str) -> tuple:
    """(model, model_cfg, opt, cfg, ns); ValueError for invalid values, before any work."""
    if study.several:
        return parse_several(study, argv, prog)
    model = pick_model(study, argv, prog)
    d = study.defaults(model)
    p = OneLineParser(prog=prog, description=study.doc,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_flags(p.add_argument_group("study"), study.config, d.study)
    for f, cls, meta in _nested(study.config):
        add_config_flags(p.add_argument_group(meta["group"]), cls, rename=meta["rename"],
                         skip=meta["skip"], defaults=getattr(d, f.name, None))
    for name, (help_, _) in study.presets.items():
        p.add_argument(f"--{name}", action="store_true", help=help_)
    if study.model_flags:
        add_model_args(p, study, model, d.model)
    o = add_output_args(p, output_name(study, model, study.config()))
    if study.engine:
        add_engine_args(o)
    ns = p.parse_args(argv)
    preset = {k: v for name, (_, over) in study.presets.items() if getattr(ns, name)
              for k, v in over.items()}
    cfg = study_config(ns, study.config, {"study": d.study, "sweep": d.sweep}, preset)
    model_cfg = model_config(ns, model, getattr(cfg, "batches", ()), d.model)
    opt = config_from_flags(ns, OptimConfig)
    if study.engine:
        check_engine_args(ns)
    if study.check is not None:
        study.check(model, model_cfg, opt, cfg)
    return model, model_cfg, opt, cfg, ns


def parse_several(study: Study, argv, prog: str) -> tuple:
    """A study over several models (--models, one panel each): with one model, its sweep and
    model flags at its defaults for the study; with several, each model's defaults, and of the
    sweep only the fields every panel shares (`study.shared`). The panels go into the config's
    `panels` as (model, model config, SweepConfig, failure clock)."""
    from twoclock.models import get as get_model
    pre = OneLineParser(prog=prog, add_help=False)
    pre.add_argument("--models", nargs="+", default=list(study.config().models))
    models = [get_model(m) for m in pre.parse_known_args(argv)[0].models]
    for m in models:
        _refuse(study, m)
    one = models[0] if len(models) == 1 else None
    p = OneLineParser(prog=prog, description=study.doc,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_flags(p.add_argument_group("study"), study.config, {})
    if study.sweep:
        g = p.add_argument_group("sweep (each model's defaults for the study)")
        add_config_flags(g, SweepConfig, rename={"lr0s": "lr0"},
                         defaults=study.defaults(one).sweep if one else None)
    if one is not None:
        add_model_args(p, study, one, study.defaults(one).model)
    else:
        add_optim_args(p, study)
    add_output_args(p, output_name(study, one, study.config()))
    ns = p.parse_args(argv)
    if not study.sweep:  # the models bring their own runs: (model, model config) panels
        opt = config_from_flags(ns, OptimConfig)
        cfg = study_config(ns, study.config, {})
        cfg = replace(cfg, panels=tuple(
            (m, model_config(ns, m, (), study.defaults(m).model) if one is not None
             else m.config(**study.defaults(m).model)) for m in models))
        if study.check is not None:
            study.check(one, cfg.panels[0][1] if one else None, opt, cfg)
        return one, cfg.panels[0][1] if one else None, opt, cfg, ns
    if one is None:
        alone = sorted(given(ns, SweepConfig) - set(study.shared))
        if alone:
            raise ValueError(f"--{alone[0].replace('_', '-').replace('lr0s', 'lr0')} "
                             "changes one model's grid: give a single --models entry")
    shared = {f: getattr(ns, dest(SweepConfig, f)) for f in given(ns, SweepConfig)}
    panels = []
    for m in models:
        d = study.defaults(m)
        sweep = config_from_flags(ns, SweepConfig, defaults={**d.sweep, **shared})
        model_cfg = (model_config(ns, m, sweep.batches, d.model) if one is not None
                     else m.config(**d.model))
        panels.append((m, model_cfg, sweep))
    cfg = study_config(ns, study.config, {})
    cfg = replace(cfg, panels=tuple((*p_, cfg.failure_clock) for p_ in panels))
    opt = config_from_flags(ns, OptimConfig)
    if study.check is not None:
        study.check(one, panels[0][1] if one else None, opt, cfg)
    return one, panels[0][1] if one else None, opt, cfg, ns


def main(study: Study, argv=None, prog: str | None = None) -> int:
    """Parse (one line and exit 2 for bad input), run, report, write the JSON and the figure."""
    prog = prog or study.script or os.path.basename(sys.argv[0])
    argv = sys.argv[1:] if argv is None else argv
    setup()  # all cores as devices, persistent compilation cache
    model, model_cfg, opt, cfg, ns = parsed(prog, lambda a: parse(study, a, prog), argv)
    name = output_name(study, model, cfg, given(ns, study.config)
                       | {n for n in study.presets if getattr(ns, n)})
    with guard(ns, name, prog) as rescue:
        out = study.run(model, model_cfg, opt, cfg, keep=rescue.keep, quiet=ns.quiet,
                        engine=engine_from_args(ns, rescue.save_ahead))
        if out is None:  # nothing to publish (a multi-host run's other processes)
            return 0
        publish(ns, name, out, study.report, rescue=rescue)
        fig = None if study.figure is None or ns.no_figure else study.figure(out)
        if fig is not None:  # (a result with nothing to draw gives None)
            from twoclock.figures.style import save
            print("figure: " + ", ".join(save(fig, os.path.join(ns.out, name))))
    return 0
