"""The contract every study keeps, so that one command-line runner (`twoclock.cli.run_study`)
serves them all and adding a study touches one file and one registry line.

A study is a frozen config (fields made with `twoclock.config.param`, checked in
`__post_init__`; a field whose value is itself a config, such as the sweep, is marked with
`nested`) and the functions of a `Study` record:

    run(model, model_cfg, opt, cfg, *, keep, quiet, engine) -> JSON-ready dict (None: nothing
        to publish, as on the other processes of a multi-host run)
    report(result) -> the text the command prints
    figure(result) -> a matplotlib Figure; or, where the result has nothing to draw, a str
        saying why (the command prints it in one line) or None

A study declares the models it is written for (`models`: it may import their packages and
nothing else of twoclock.models) or takes any model whose `defaults` are not None. A study
owns its per-model defaults: models do not know which studies exist.

The config type declares the rest, each optional (class attributes and methods; the command
line reads them, the study's functions need not):
    DEFAULTS: {model name: StudyDefaults} or model -> StudyDefaults (None: not offered for
        it); none: every model as it is
    SCRIPT: the command's name in messages (experiments/<SCRIPT>)
    DESCRIPTION: the command's description (default: the study module's docstring)
    OUTPUT: the output name, OUT/<OUTPUT>.json (default: the study's name), or a method
        output_name(model, given) -> name (given: the fields and presets given)
    check(model, model_cfg, opt): ValueError before any work
    outputs() -> {flag: path}: the files the study writes besides its JSON, checked writable
        (`twoclock.atomic.check_file`) with its check, before any work
    MODEL_FLAGS = False: no --model, optimizer or model flags; SKIP_OPTIM, SKIP_MODEL: the
        optimizer's and model's fields the study sets itself
    ENGINE_FLAGS = True: offer the engine flags (--store, --resume, --max-lanes, ...), with
        MAX_LANES the study's default runs per chunk where it has its own; or {"max_lanes":
        the study's default}: offer --max-lanes alone (`Engine.max_lanes`)
    PRESETS: {NAME: (help, config overrides)}, each a flag --NAME (e.g. --quick)
    a `panels` field: a study over several models (--models), one panel each, built by the
        command line; SHARED: the sweep fields one command line sets for every panel (None: no
        sweep flags, the models bring their own runs and the panels are (model, model config));
        FIXED_SWEEP: {sweep field: why}, the fields the study sets itself (their flags are
        refused in one line saying why)
"""
from dataclasses import field, fields, replace
import sys
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple

from twoclock.config import require

_EMPTY = MappingProxyType({})


class StudyDefaults(NamedTuple):
    """A model's defaults in one study, each a {field: value} of one config (flags given win):
    the study's own config, its sweep (SweepConfig) and the model's config."""
    study: Mapping = _EMPTY
    sweep: Mapping = _EMPTY
    model: Mapping = _EMPTY


def nested(default, group: str, rename: dict | None = None, skip: tuple = (),
           help: dict | None = None, scalar: tuple = (), split: dict | None = None):
    """A config field holding another frozen config (the sweep, the throughput model): its
    fields become flags of their own group ("study": the study's own), at the default's
    values, renamed, skipped or with the help given; a `scalar` field (a tuple) is given as
    one value (the sweep's lr0s of a study at one lr0: --lr0 X); a `split` field (a tuple,
    {field: (one name per item)}) as one flag per item, each helped by help[its name] (the
    schedule's two batches: --batch-small B1 --batch-large B2)."""
    return field(default=default, metadata={"nested": {
        "group": group, "rename": rename or {}, "skip": tuple(skip), "help": help or {},
        "scalar": tuple(scalar), "split": dict(split or {})}})


class SweepView:
    """A study config's nested sweep (at one lr0) read under the names its cells and its JSON
    use: cfg.batches, .seeds, .budget, .lr0, .seed."""
    batches = property(lambda self: self.sweep.batches)
    seeds = property(lambda self: self.sweep.seeds)
    budget = property(lambda self: self.sweep.budget)
    lr0 = property(lambda self: self.sweep.lr0s[0])
    seed = property(lambda self: self.sweep.seed)

    @property
    def reach(self) -> int:
        """The responses every run reaches: a run at batch B stops after budget // B updates,
        so the shortest spends min over B of B x (budget // B) (its last checkpoint)."""
        return min(b * (self.budget // b) for b in self.batches)

    def require_reached(self, name: str, most: int, value) -> None:
        """ValueError naming `name` unless most (its largest response count) <= `reach`."""
        require(most <= self.reach, name, f"<= {self.reach}, the responses every run reaches "
                f"(budget {self.budget} in whole updates of batches {tuple(self.batches)})",
                value)


# a study of cells: runs per compiled chunk, unless --max-lanes says otherwise (the policy
# study's numbers in docs/policy.md were run at 8)
CELL_LANES = 8


class CellsView(SweepView):
    """A study of cells (the policy and damage studies): each cell sets its own model and
    optimizer configs, so the command offers no --model or optimizer flags, and the cells run
    at the engine's --max-lanes, CELL_LANES unless given."""
    MODEL_FLAGS = False
    ENGINE_FLAGS = {"max_lanes": CELL_LANES}

    @staticmethod
    def lanes(engine) -> int:
        """The runs per compiled chunk the cells run at: --max-lanes, else CELL_LANES."""
        return engine.max_lanes or CELL_LANES


def overridden(cfg, overrides: Mapping):
    """cfg with overrides (a preset's), a nested config's given as {field: value} of it."""
    return replace(cfg, **{k: replace(getattr(cfg, k), **v) if isinstance(v, Mapping) else v
                           for k, v in overrides.items()})


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


class Study(NamedTuple):
    """What a study is: its config and its functions, and the models it is written for (their
    packages it may import; () = any model its config's DEFAULTS do not rule out). How its
    command looks is declared by the config type (`Config.SCRIPT`, `Config.PRESETS`, ...)."""
    name: str  # the registry key (STUDIES.<name>)
    config: type  # the frozen config of the study's own parameters
    run: Callable
    report: Callable
    figure: Callable | None = None
    models: tuple = ()


def declared(study: Study, name: str, default=None):
    """What the study's config type declares for the command line (a class attribute)."""
    return getattr(study.config, name, default)


def defaults(study: Study, model):
    """The study's defaults for model (None: not offered for it): its config's DEFAULTS, a
    table {model name: StudyDefaults} or a function of the model; none declared: the model as
    it is."""
    table = declared(study, "DEFAULTS")
    if table is None:
        return StudyDefaults()
    return table(model) if callable(table) else per_model(table, model)


def description(study: Study) -> str:
    """The command's description: the config's DESCRIPTION, else the study module's docstring."""
    return declared(study, "DESCRIPTION") or sys.modules[study.run.__module__].__doc__ or ""


def several(study: Study) -> bool:
    """A study over several models (--models): its config has the `panels` the command line
    builds, one per model."""
    return any(f.name == "panels" for f in fields(study.config))


def output_name(study: Study, model, cfg, given=frozenset()) -> str:
    """The name of the study's JSON and figure for this model, config and given fields (the
    config's `output_name(model, given)`, else its OUTPUT, else the study's name)."""
    if hasattr(cfg, "output_name"):
        return cfg.output_name(model, given)
    return declared(study, "OUTPUT") or study.name


def per_model(table: Mapping, model):
    """A study's defaults for model from its table {model name: defaults}; None (not offered)
    for a model the table does not list."""
    return table.get(model.name)


def applies(study: Study, model) -> bool:
    """Whether the study is offered for this model."""
    return (not study.models or model.name in study.models) and defaults(study, model) is not None
