"""Command-line flags generated from the frozen configs: one spelling per field, help from its
metadata, values validated by the config itself (one-line errors). A field that is itself a
config (the policy's `warmup: WarmupConfig`) gives one flag per field of it, prefixed with the
field's name: --warmup-lr sets warmup.lr."""
import argparse
from dataclasses import MISSING, fields, is_dataclass
import re
import types
import typing

from twoclock.config import NUMBER_OR_NONE


def float_or_none(text: str):
    """A float, or None for 'none' (an unclipped surrogate, say)."""
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none' (got {text!r})") from None


class _NumberGiven(float):
    """A number an integer flag was given that is not whole (2.5), with the flag (`.flag`)."""


class _TextGiven(str):
    """Text an integer flag was given that is no number ('x'), with the flag (`.flag`)."""


def whole_number(text: str, flag: str | None = None):
    """An integer flag's value: the int it spells ('8', and '1e5' or '8.0' too); else the
    number (2.5) or the text itself, for the config to refuse with its flag and its allowed
    range ("--seeds must be an integer >= 1 (got 2.5)") where argparse's "invalid int value"
    named no range. A config that does not check the value is covered by config_from_flags
    (`_require_whole`), which names the flag (given) the value carries."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        v = _TextGiven(text)
    else:
        if v.is_integer():
            return int(v)
        v = _NumberGiven(v)
    v.flag = flag
    return v


def _whole_for(flag: str):
    """whole_number for one flag (the value it refuses carries the flag)."""
    return lambda text: whole_number(text, flag)


def _type(f, flag: str):
    """The argparse type of a field's flag: an int's reads whole numbers for that flag."""
    kind = _kind(f)[0]
    return _whole_for(flag) if kind is whole_number else kind


def _kind(f):
    """(argparse type, nargs) for a dataclass field (an int's: whole_number)."""
    t = f.type if not isinstance(f.type, str) else eval(f.type, vars(typing))  # noqa: S307
    args = typing.get_args(t)
    if typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in args:
        return (str, None) if str in args else (float_or_none, None)
    if t is tuple:
        elem = type(f.default[0]) if f.default is not MISSING and f.default else float
        return (whole_number if elem is int else elem), "+"
    return (whole_number if t is int else t), None


def _require_whole(cls, kw: dict) -> None:
    """ValueError naming the flag (else the field) where an integer flag's value is not an
    int (2.5, 'x'): for a config that takes such a value without checking it."""
    for f in fields(cls):
        v = kw.get(f.name)
        bad = [x for x in (v if isinstance(v, (tuple, list)) else (v,))
               if isinstance(x, (_NumberGiven, _TextGiven))]
        if bad:
            raise ValueError(f"{bad[0].flag or f.name} must be a whole number (got {bad[0]!r})")


# a help text that states its own default: "(default: ...", "; default: ...", "(default 4; ..."
STATES_DEFAULT = re.compile(r"(^|[(;,]\s*)default\b")


def with_default(help: str, value, switch: bool = False, none: bool = False) -> str:
    """help, and "(default VALUE)" where the default says something: not None (unless the
    flag takes 'none': then "(default none)"), not an empty tuple or list, not a switch's
    False, and not where help already states its default."""
    if STATES_DEFAULT.search(help) or (switch and value is False):
        return help
    if value is None:
        return f"{help} (default none)" if none else help
    if isinstance(value, (tuple, list)) and not value:
        return help
    if none and isinstance(value, (tuple, list)):  # None typed as 'none' in a list too
        value = "(" + ", ".join("none" if v is None else str(v) for v in value) + ")"
    return f"{help} (default {value})"


def _takes_none(f) -> bool:
    """Whether a field's flag reads 'none' as None (so None is a value the user can type)."""
    if "argparse" in f.metadata:
        return f.metadata["argparse"].get("type") == NUMBER_OR_NONE
    return _kind(f)[0] is float_or_none


def dest(cls, name: str) -> str:
    """Where a field's value lands in the namespace (prefixed: two configs may share a name)."""
    return f"{cls.__name__}.{name}"


def _nested(f) -> bool:
    """A field whose value is a config of its own (its default a dataclass instance)."""
    return is_dataclass(f.default) and not isinstance(f.default, type)


def add_config_flags(group, cls, rename: dict | None = None, skip=(),
                     defaults: dict | None = None, prefix: str = "", where: str = "",
                     help: dict | None = None, scalar=(), split: dict | None = None):
    """One flag per field of cls: --field-name (or --rename[field]), help from the metadata
    (or help[field]); a nested config's fields as --field-subfield; a `scalar` field (a tuple)
    as one value; a `split` field (a tuple) as one flag per item, split[field] naming them
    (help[name] their help).

    A flag left out keeps the config's default (or defaults[field]), shown in the help where
    it says something (`with_default`).
    """
    rename, defaults, helps, split = rename or {}, defaults or {}, help or {}, split or {}
    for f in fields(cls):
        if f.name in skip:
            continue
        if _nested(f):
            add_config_flags(group, type(f.default), prefix=f"{prefix}{f.name}_",
                             where=f"{where}{cls.__name__}.{f.name}/",
                             defaults=asdict_shallow(defaults.get(f.name, f.default)))
            continue
        flag = "--" + (prefix + rename.get(f.name, f.name)).replace("_", "-")
        shown = defaults.get(f.name, f.default)
        if f.name in split:
            for i, item in enumerate(split[f.name]):
                one = "--" + (prefix + item).replace("_", "-")
                group.add_argument(one, dest=_item(where, cls, f.name, i), type=_type(f, one),
                                   default=argparse.SUPPRESS, metavar=(prefix + item).upper(),
                                   help=with_default(helps.get(item, item), shown[i]))
            continue
        if f.name in scalar:
            shown = shown[0]
        help_ = with_default(helps.get(f.name, f.metadata.get("help", f.name)), shown,
                             switch=f.type in (bool, "bool"), none=_takes_none(f))
        if "argparse" in f.metadata:  # a field's `option`: how argparse reads it
            kw = {"metavar": f.name.upper(), **f.metadata["argparse"]}
            if kw.get("type") == NUMBER_OR_NONE:
                kw["type"] = float_or_none
            elif kw.get("type") is int:
                kw["type"] = _whole_for(flag)
            # a positional argument's name is its destination
            name = ((where + dest(cls, f.name),) if kw.pop("positional", False) else
                    (flag,))
            kw.update({} if name[0] != flag else {"dest": where + dest(cls, f.name)})
            group.add_argument(*name, default=argparse.SUPPRESS, help=help_, **kw)
            continue
        if f.type in (bool, "bool"):
            group.add_argument(flag, dest=where + dest(cls, f.name), action="store_true",
                               default=argparse.SUPPRESS, help=help_)
            continue
        nargs = None if f.name in scalar else _kind(f)[1]
        group.add_argument(flag, dest=where + dest(cls, f.name), type=_type(f, flag), nargs=nargs,
                           default=argparse.SUPPRESS,
                           metavar=(prefix + rename.get(f.name, f.name)).upper(), help=help_)


def _item(where: str, cls, name: str, i: int) -> str:
    """Where item i of a split field's value lands in the namespace."""
    return f"{where}{dest(cls, name)}[{i}]"


# a config's refusal, `twoclock.config.require`: "<name> must be <allowed> (got <value>)"
REFUSAL = re.compile(r"^([A-Za-z_]\w*) must be ")


def flag_names(parser) -> tuple:
    """({name: {flag: dest}}, {name: {flag: dest}}): the names a refusal may start with, each
    with the flags of the parser it may mean. First (exact) each flag's field (its
    destination's last part: SweepConfig.seeds -> seeds) and its own spelling (--lr-rule ->
    lr_rule); then (a fallback) a list flag's item, its field's singular (batches -> batch,
    lr0s -> lr0)."""
    exact, items = {}, {}
    for a in parser._actions:
        longs = [o for o in a.option_strings if o.startswith("--")]
        if not longs or longs[0] == "--help":
            continue
        field = re.sub(r"\[\d+\]$", "", a.dest.rsplit("/", 1)[-1]).rsplit(".", 1)[-1]
        for name in (field, longs[0][2:].replace("-", "_")):
            exact.setdefault(name, {})[longs[0]] = a.dest
            for end in ("s", "es"):
                if name.endswith(end) and len(name) > len(end):
                    items.setdefault(name[:-len(end)], {})[longs[0]] = a.dest
    return exact, items


def flagged(message: str, parser, ns=None) -> str:
    """A config's refusal as the command line's user reads it: its leading field name
    replaced by the flag they typed (lr_rule -> --lr-rule, batch -> --batches), and a field
    with an underscore that its allowed range names by its flag too. Where several flags
    answer to the leading name (the schedule's --batch-small and --batch-large for batch), the
    one whose value (in ns) the refusal quotes; a name no flag, or no one flag, answers to is
    left as it is."""
    m = REFUSAL.match(message)
    if m is None:
        return message
    exact, items = flag_names(parser)
    head, rest = m.group(1), message[m.end(1):]
    # a field the allowed range names ("> batch_small (512)"): its flag where it has one
    cut = rest.rfind(" (got ")
    cut = len(rest) if cut < 0 else cut
    one = lambda w: next(iter(exact[w[0]])) if len(exact.get(w[0], ())) == 1 else w[0]
    rest = re.sub(r"\b[a-z]\w*_\w+\b", one, rest[:cut]) + rest[cut:]
    for table in (exact, items):
        flags = table.get(head)
        if not flags:
            continue
        if len(flags) > 1 and ns is not None:
            flags = {f: d for f, d in flags.items()
                     if hasattr(ns, d) and message.endswith(f"(got {getattr(ns, d)!r})")}
        return next(iter(flags)) + rest if len(flags) == 1 else head + rest
    return head + rest


def asdict_shallow(cfg) -> dict:
    """A config's fields as a dict, nested configs left as they are."""
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}


def config_from_flags(ns, cls, defaults: dict | None = None, where: str = "", scalar=(),
                      split: dict | None = None, **overrides):
    """cls built from the flags add_config_flags added: given flags, then `defaults`, then the
    config's own defaults; overrides win. ValueError (from the config) names a bad value."""
    kw, split = dict(defaults or {}), split or {}
    for f in fields(cls):
        if _nested(f):
            inner = kw.get(f.name, f.default)
            kw[f.name] = config_from_flags(ns, type(inner), asdict_shallow(inner),
                                           f"{where}{cls.__name__}.{f.name}/")
        elif f.name in split:  # each item's flag, given or at its default
            items = dict(enumerate(kw.get(f.name, f.default)))
            items.update({i: getattr(ns, _item(where, cls, f.name, i))
                          for i in range(len(split[f.name]))
                          if hasattr(ns, _item(where, cls, f.name, i))})
            kw[f.name] = tuple(items[i] for i in sorted(items))
        elif hasattr(ns, where + dest(cls, f.name)):  # given on the command line
            v = getattr(ns, where + dest(cls, f.name))
            kw[f.name] = tuple(v) if isinstance(v, list) else (v,) if f.name in scalar else v
    kw.update(overrides)
    try:
        cfg = cls(**kw)
    except TypeError:  # a config that compared 'x' with a number: refused by its field
        _require_whole(cls, kw)
        raise
    _require_whole(cls, kw)  # a config that took 2.5 for an int
    return cfg
