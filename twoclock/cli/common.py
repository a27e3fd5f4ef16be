"""What every command shares: one-line errors (exit 2), the output flags, `check_outputs`
(paths checked before simulating), `guard` (the explicit rescue of results), `publish`, and the
model flags. Loads no JAX: a command that plans from a CSV stays light.
"""
import argparse
from contextlib import contextmanager
import os
import re
import sys

from twoclock.atomic import Refused, check_file, check_folder, check_reusable_folder
from twoclock.cli.flags import add_config_flags, config_from_flags
from twoclock.cli.rescue import Rescue
from twoclock.config import OptimConfig


# what argparse takes for a negative number rather than an option: its own -1 and -.5, and
# also -1e-4, -2.5E3, -inf and -nan, so that `--lr0 -1e-4` reaches the range check
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$",
                             re.IGNORECASE)


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input as one line and exit code 2 (no usage dump), and reads
    every negative number (`NEGATIVE_NUMBER`) as a value, for nargs flags too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def fail(prog: str, message: str):
    print(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(2)


def parsed(prog: str, parse, argv=None):
    """parse(argv) (default: the command line), a ValueError turned into a one-line error
    naming the parameter and exit code 2, before anything is simulated."""
    try:
        return parse(sys.argv[1:] if argv is None else argv)
    except ValueError as e:
        fail(prog, str(e))


def add_output_args(p, name: str, figure: bool = True):
    """--out, --json, --no-figure, --quiet: the output flags every experiment shares. A
    command that draws no figure (figure False) does not offer --no-figure: it still takes it
    (a caller may pass it to every study) but says nothing of it, and never draws one."""
    o = p.add_argument_group("output")
    o.add_argument("--out", default="results",
                   help="folder for the JSON and the figure" if figure else "folder for the JSON")
    o.add_argument("--json", help=f"JSON path (default OUT/{name}.json)")
    if figure:
        o.add_argument("--no-figure", action="store_true",
                       help=f"do not draw the figure ({name}.png, {name}.pdf in OUT)")
    else:
        o.add_argument("--no-figure", action="store_true", default=True, help=argparse.SUPPRESS)
    o.add_argument("--quiet", action="store_true", help="no progress output")
    return o


def json_path(ns, name: str) -> str:
    return ns.json or os.path.join(ns.out, f"{name}.json")


def check_outputs(ns, name: str, prog: str | None = None) -> None:
    """Before simulating: exit 2 with one line unless the JSON path, the figure folder (unless
    --no-figure), the store folder (where used) and the model's cache folders (Model.prepare)
    can be written; a store or cache folder that exists but cannot be written is accepted, for
    what it holds."""
    prog = prog or os.path.basename(sys.argv[0])
    try:
        check_file(json_path(ns, name), "--json" if ns.json else f"--out ({name}.json)")
        if not ns.no_figure:
            check_folder(ns.out, "--out")
            for ext in ("pdf", "png"):
                check_file(os.path.join(ns.out, f"{name}.{ext}"), "the figure")
        root = None
        if hasattr(ns, "no_store") and not ns.no_store:  # the store: --store, or OUT/store
            root = ns.store or os.path.join(ns.out, "store")
            # a read-only one is accepted: its finished chunks are still read, and new ones
            # stay in memory (the sweep says so)
            check_reusable_folder(root, "--store" if ns.store else "--out (its store/)")
        if isinstance(getattr(ns, "model", None), str):  # the model's caches (by its rules)
            from twoclock.models import get as get_model
            model = get_model(ns.model)
            if model.prepare is not None:
                model.prepare(None, root, None)
    except Refused as e:
        fail(prog, str(e))


@contextmanager
def guard(ns, name: str, prog: str):
    """Around everything from the first simulation to publish; yields the `Rescue` whose `keep`
    every simulation gets. Outputs are checked first (exit 2); a sweep refused before simulating
    exits 2 with one line; any failure after simulating saves the kept clocks to
    OUT/name.partial.json and exits 3 with one line (`twoclock.cli.rescue`)."""
    check_outputs(ns, name, prog)
    with Rescue(prog, json_path(ns, name), fallback=(ns.out,),
                resume_flag=hasattr(ns, "resume")) as rescue:
        yield rescue


def publish(ns, name: str, out: dict, text, figure=None, rescue: Rescue | None = None) -> str:
    """Print text (a string, or text(out)), write out as strict JSON to ns.json (default
    OUT/name.json), print the path, and unless --no-figure draw figure(out) to
    OUT/name.{pdf,png}. The JSON is written even if text(out) fails (which is then raised).
    rescue (the guard's) learns of the result and of its file. Returns the JSON path."""
    from twoclock.analysis import results  # here: importing this module stays light
    from twoclock.figures.style import save
    path = json_path(ns, name)
    if rescue is not None:
        rescue.note_result(out)
    table_error = None
    try:
        print(text(out) if callable(text) else text, flush=True)
    except Exception as e:  # the results matter more than their table: write them, then raise
        table_error = e
    results.write_json(path, out)
    if rescue is not None:
        rescue.note_written(path)
    print(f"wrote {path}", flush=True)
    if table_error is not None:
        raise table_error
    if figure is not None and not ns.no_figure:
        print("figure: " + ", ".join(save(figure(out), os.path.join(ns.out, name))))
    elif figure is not None:  # an earlier run's figure is not of these results: not kept
        stale = remove_stale_figure(ns, name)
        if stale:
            print(f"removed {', '.join(stale)}: an earlier run's figure, not of these results "
                  "(--no-figure)", flush=True)
    return path


def remove_stale_figure(ns, name: str) -> list:
    """Remove OUT/name.{png,pdf} (an earlier run's figure, where this run draws none);
    the paths removed."""
    stale = [f for f in (os.path.join(ns.out, f"{name}.{ext}") for ext in ("png", "pdf"))
             if os.path.isfile(f)]
    for f in stale:
        os.remove(f)
    return stale


def add_model_flags(p, model, defaults: dict | None = None, skip_optim=()) -> None:
    """--model and the optimizer's and the model's flags (generated from their configs);
    defaults: the model-config defaults of this command, where they differ from the config's."""
    from twoclock.models import MODELS
    p.add_argument("--model", default="quadratic", help=" | ".join(MODELS))
    add_config_flags(p.add_argument_group("optimizer"), OptimConfig, rename={"name": "optimizer"},
                     skip=skip_optim)
    add_config_flags(p.add_argument_group(f"{model.name} model"), model.config, defaults=defaults)


def model_config(ns, model, batches, defaults: dict | None = None):
    """The model's config from its flags, checked against every batch it will run (a batch the
    bandit cannot split into P x G fails here, before any simulation)."""
    cfg = config_from_flags(ns, model.config, defaults=defaults)
    for b in batches:
        model.describe_batch(cfg, b)
    return cfg


def model_from_argv(argv, prog: str):
    """The Model named by --model (default quadratic), read before the other flags."""
    pre = OneLineParser(prog=prog, add_help=False)
    pre.add_argument("--model", default="quadratic")
    known, _ = pre.parse_known_args(argv)
    from twoclock.models import get as get_model
    return get_model(known.model)


