"""The bounds every log reader keeps (docs/robustness.md, "Hostile trainer files"): JSON nested
at most MAX_DEPTH levels, at most MAX_KEYS keys in one logged object or columns in one file;
a JSON text is parsed here only, so a bad one is one PilotError naming the file and line, never
a library's exception. Each check reads its input once (time linear in its size)."""
import json

import numpy as np

from twoclock.pilot.plan import PilotError

MAX_DEPTH = 32      # nesting of JSON objects and arrays (a trainer_state.json needs 4, verl 2)
MAX_KEYS = 100_000  # keys of one logged object / columns of one file
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = (ord("{"), ord("[")), (ord("}"), ord("]")), 34, 92


def json_depth(text: str) -> int:
    """The deepest nesting of objects and arrays in a JSON text, brackets inside strings not
    counted (vectorised: one pass over the bytes, whatever the depth)."""
    b = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    opening = (b == _OPEN[0]) | (b == _OPEN[1])
    if int(np.count_nonzero(opening)) <= 1:
        return int(opening.any())
    quotes = np.flatnonzero(b == _QUOTE)
    backslash = b == _BACKSLASH
    if quotes.size and backslash.any():  # a quote after an odd run of backslashes is escaped
        pos = np.arange(b.size, dtype=np.int64)
        last_other = np.maximum.accumulate(np.where(backslash, -1, pos))
        before = quotes - 1
        run = np.where(before >= 0, before - last_other[np.maximum(before, 0)], 0)
        quotes = quotes[run % 2 == 0]
    brackets = np.flatnonzero(opening | (b == _CLOSE[0]) | (b == _CLOSE[1]))
    brackets = brackets[np.searchsorted(quotes, brackets) % 2 == 0]  # outside strings
    step = np.where(opening[brackets], 1, -1)
    return int(np.cumsum(step).max(initial=0))


def too_many_keys(n: int, where: str, what: str = "keys in one object"):
    if n > MAX_KEYS:
        raise PilotError(f"{where}: {n} {what}; the readers take at most {MAX_KEYS}")


def unique_keys(where: str):
    """json.loads' object_pairs_hook: a dict; PilotError for a key twice or too many keys."""
    def pairs(items):
        too_many_keys(len(items), where)
        out = {}
        for k, v in items:
            if k in out:
                raise PilotError(f"{where}: key {k!r} appears twice in one object")
            out[k] = v
        return out
    return pairs


def loads(text: str, where: str, hint: str = ""):
    """json.loads with the bounds: PilotError '{where}[ line N]: ...' for any bad text.
    `where` names the file (and line, for one line of JSON Lines); `hint` ends the message."""
    if json_depth(text) > MAX_DEPTH:
        raise PilotError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels (the readers' "
                         "bound; a trainer's log needs at most 4)")
    try:
        return json.loads(text, object_pairs_hook=unique_keys(where))
    except json.JSONDecodeError as e:
        at = f" line {e.lineno}" if "\n" in text.strip() else ""
        raise PilotError(f"{where}{at}: not JSON ({e.msg}, column {e.colno}){hint}") from None
    except PilotError:
        raise
    except (ValueError, RecursionError) as e:  # e.g. an integer of over 4300 digits
        raise PilotError(f"{where}: not a readable JSON value ({str(e).splitlines()[0]})") \
            from None


def first_repeat(names) -> tuple | None:
    """(j, i) of the first name that appears again, j < i its two indices; None when every
    name is distinct (one pass: a header may have MAX_KEYS columns)."""
    first: dict = {}
    for i, n in enumerate(names):
        j = first.setdefault(n, i)
        if j != i:
            return j, i
    return None


def listing(names, n: int = 12) -> str:
    """'a, b, c' for an error message, the first n and a count of the rest."""
    names = list(names)
    more = f", ... ({len(names) - n} more)" if len(names) > n else ""
    return ", ".join(names[:n]) + more


__all__ = ["MAX_DEPTH", "MAX_KEYS", "json_depth", "loads", "unique_keys", "first_repeat",
           "listing", "too_many_keys"]
