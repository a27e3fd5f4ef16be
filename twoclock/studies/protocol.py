"""The contract every study keeps, so that one command-line runner (`twoclock.cli.run_study`)
serves them all and adding a study touches one file and one registry line.

A study is a frozen config (fields made with `twoclock.config.param`, checked in
`__post_init__`; a field whose value is itself a config, such as the sweep, is marked with
`nested`) and the functions of a `Study` record:

    run(model, model_cfg, opt, cfg, *, keep, quiet, engine) -> JSON-ready dict (None: nothing
        to publish, as on the other processes of a multi-host run)
    report(result) -> the text the command prints
    figure(result) -> a matplotlib Figure, or None where the result has nothing to draw

A study declares the models it is written for (`models`: it may import their packages and
nothing else of twoclock.models) or takes any model whose `defaults` are not None. A study
owns its per-model defaults (`StudyDefaults`, a table {model name: defaults} or a function of
the model): models do not know which studies exist.
"""
from dataclasses import field
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple

_EMPTY = MappingProxyType({})


class StudyDefaults(NamedTuple):
    """A model's defaults in one study, each a {field: value} of one config (flags given win):
    the study's own config, its sweep (SweepConfig) and the model's config."""
    study: Mapping = _EMPTY
    sweep: Mapping = _EMPTY
    model: Mapping = _EMPTY


def nested(default, group: str, rename: dict | None = None, skip: tuple = ()):
    """A config field holding another frozen config (the sweep, the throughput model): its
    fields become flags of their own group, renamed or skipped as given."""
    return field(default=default, metadata={"nested": {"group": group, "rename": rename or {},
                                                       "skip": tuple(skip)}})


class Engine(NamedTuple):
    """How a study's sweeps use the engine: the command's engine flags (only studies that
    offer them read more than `store`)."""
    out: str = "results"  # the output folder (files a study writes beside its JSON)
    store: str | None = None  # the results store folder (None: keep nothing between runs)
    resume: bool = False
    max_lanes: int | None = None
    codegen: str = "auto"
    x64: bool = False
    distributed: tuple | None = None  # (coordinator, processes, index) to join first
    save_ahead: Callable = lambda note: None  # the rescue's: write the kept clocks now


def any_model(model) -> StudyDefaults:
    """No per-model defaults: the study takes every model as it is."""
    del model
    return StudyDefaults()


class Study(NamedTuple):
    """One study: its config, its functions, and how its command line looks."""
    name: str  # the registry key (STUDIES.<name>)
    config: type  # the frozen config of the study's own parameters
    run: Callable
    report: Callable
    figure: Callable | None = None
    doc: str = ""  # the command's description
    script: str = ""  # the command's name in messages (experiments/<script>)
    # the models the study is written for (their packages it may import); () = any model
    # whose defaults(model) is not None
    models: tuple = ()
    defaults: Callable = any_model  # model -> StudyDefaults (None: not offered for it)
    output: str = ""  # the output name, OUT/<output>.json ("": the study's name)
    out: Callable | None = None  # (model, cfg, given) -> output name; given: fields given
    check: Callable | None = None  # (model, model_cfg, opt, cfg): ValueError before any work
    model_flags: bool = True  # offer --model and the optimizer's and model's flags
    skip_optim: tuple = ()  # optimizer fields the study sets itself
    skip_model: tuple = ()  # model-config fields the study sets itself
    engine: bool = False  # offer the engine flags (--store, --resume, --max-lanes, ...)
    presets: Mapping = MappingProxyType({})  # --NAME: (help, config overrides), e.g. --quick
    # a study over several models (--models, the config's `models` and `panels`), of whose
    # sweep flags only `shared` apply to every model
    several: bool = False
    shared: tuple = ()
    sweep: bool = True  # several: offer sweep flags (False: each model brings its own runs,
    #                     and the panels are (model, model config))


def output_name(study: Study, model, cfg, given=frozenset()) -> str:
    """The name of the study's JSON and figure for this model, config and given fields."""
    return (study.output or study.name) if study.out is None else study.out(model, cfg, given)


def per_model(table: Mapping, model):
    """A study's defaults for model from its table {model name: defaults}; None (not offered)
    for a model the table does not list."""
    return table.get(model.name)


def applies(study: Study, model) -> bool:
    """Whether the study is offered for this model."""
    return (not study.models or model.name in study.models) and study.defaults(model) is not None
