"""The points a plan predicts at: a rollout batch B, or B:K for runs that take K optimizer
updates per rollout batch (`--predict 2048 8192:4`; `twoclock.plan_logs(..., predict=[2048,
(8192, 4)])` or `"8192:4"`; docs/plan.md, "Updates per rollout batch").

B alone takes the plan's default K: 1 with the Adam form (`--progress-form adam`), which
models K through m = B / K samples per update; the pilots' own K with the default forms, which
do not model K and so plan runs that take what their pilots took. A K the default forms cannot
plan is refused in one line naming `--progress-form adam` (`check_form`)."""
import math
import numbers

FLAG = "--predict"
MAX_BATCH = 2**53  # a batch is a count of samples (floats hold every integer up to 2^53)
# the form that models K, as the command line and the Python entry (which share these
# messages) spell it
ADAM = '--progress-form adam (progress_form="adam" in Python)'
SHAPE = ("B or B:K, B a batch in [1, 2^53] (a count of samples) and K a whole number >= 1 "
         "(optimizer updates per rollout batch), e.g. 8192:4")


def _bad(item) -> ValueError:
    return ValueError(f"{FLAG} must be {SHAPE} (got {item!r})")


def _batch(b, item) -> float:
    if not (math.isfinite(b) and 1 <= b <= MAX_BATCH):  # the message older callers match
        raise ValueError(f"{FLAG} must be batches in [1, 2^53], counts of samples (got {b!r})")
    if b != round(b):  # a rollout batch counts whole samples (512.0 is one)
        raise ValueError(f"{FLAG} must be a whole number of samples per rollout batch (got "
                         f"{item!r})")
    return float(b)


def _updates(k, item) -> float:
    if not (math.isfinite(k) and k >= 1 and k == round(k)):
        raise _bad(item)
    return float(k)


def _number(v, item) -> float:
    """A real number (not a bool) or the text of one, else the one-line refusal."""
    if isinstance(v, bool):
        raise _bad(item)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            raise _bad(item) from None
    raise _bad(item)


def point(item) -> tuple:
    """One item of --predict as (B, K or None): a number B, the text 'B' or 'B:K', or a pair
    (B, K) (K None: the plan's default); ValueError (one line naming --predict) otherwise."""
    if isinstance(item, str) and ":" in item:
        b, _, k = item.partition(":")
    elif isinstance(item, (tuple, list)):
        if len(item) != 2:
            raise _bad(item)
        b, k = item
    else:
        b, k = item, None
    b = _batch(_number(b, item), item)
    k = None if k is None else _updates(_number(k, item), item)
    if k is not None and k > b:
        raise ValueError(f"{FLAG} must be {SHAPE}, with K at most B: each update takes at "
                         f"least one sample (got {item!r})")
    return b, k


def parse(predict) -> tuple:
    """Every item of `predict` as (B, K or None), in the order given; () for None or empty."""
    if predict is None:
        return ()
    if isinstance(predict, (str, numbers.Real)):  # one item where a list was meant
        predict = [predict]
    return tuple(point(p) for p in predict)


def resolve(points, default_k: float) -> list:
    """The points with K filled in (None: default_k), each once, sorted by (B, K)."""
    return sorted({(b, default_k if k is None else k) for b, k in points})


def check_form(points, progress_form, default_k: float) -> None:
    """The default forms plan runs with the pilots' K only: a point at another K is refused in
    one line naming --progress-form adam."""
    if progress_form is not None:
        return
    other = [(b, k) for b, k in points if k != default_k]
    if other:
        b, k = other[0]
        raise ValueError(f"{FLAG} {b:g}:{k:g}: the default progress forms do not model K "
                         f"updates per rollout batch and plan runs with the pilots' K "
                         f"({default_k:g}); use {ADAM}")


def per_updates(points, f) -> list:
    """f(K, [B, ...]) -> one value per B, applied to each K's points at once: the values in
    the points' order (a plan's clock is made once per K, not once per point)."""
    out = [None] * len(points)
    for k in sorted({k for _, k in points}):
        at = [i for i, (_, kk) in enumerate(points) if kk == k]
        for i, v in zip(at, f(k, [points[i][0] for i in at])):
            out[i] = v
    return out


def plan_points(predict, updates_R, progress_form, source: str) -> tuple:
    """(the default K, the points asked for as sorted (B, K)) for pilots taking updates_R:
    B alone is K = 1 with the Adam form, the pilots' one K with the default forms; under
    those, pilots with unequal K or a point at another K are refused (ValueError, one line
    naming --progress-form adam)."""
    ks = sorted({float(k) for k in updates_R})
    if progress_form is None and len(ks) > 1:
        raise ValueError(f"{source}, column updates: the pilots take different optimizer "
                         f"updates per rollout batch (K {', '.join(f'{k:g}' for k in ks)}) and "
                         "the default progress forms do not account for K: plan runs with one "
                         f"K, or use {ADAM}")
    k_default = 1.0 if progress_form is not None or not ks else ks[0]
    points = resolve(parse(predict), k_default)
    check_form(points, progress_form, k_default)
    return k_default, points


def label(batch: float, updates: float, show: bool) -> str:
    """A prediction's batch as printed: 'B', or 'B:K' where the printout shows K."""
    return f"{batch:g}:{updates:g}" if show else f"{batch:g}"


def shows_k(rows) -> bool:
    """Whether a printout shows K: some row (a prediction or a run) takes K != 1."""
    return any(r.get("updates", 1.0) != 1 for r in rows)


__all__ = ["FLAG", "ADAM", "MAX_BATCH", "SHAPE", "point", "parse", "resolve", "check_form",
           "plan_points",
           "per_updates",
           "label",
           "shows_k"]
