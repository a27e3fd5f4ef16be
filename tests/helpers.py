"""Shared test helpers: the one tolerance check, the hypothesis example budget, the
first-crossing oracle, a script loaded from its file, a pre-registered file, and
experiments/plan.py's main."""
import importlib.util
import json
import os

import numpy as np

# "thorough" (HYPOTHESIS_PROFILE=thorough) runs 10x the examples of "ci", also for tests that
# set their own (smaller, because one example is expensive) max_examples through `examples`.
_FACTOR = {"thorough": 10}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 1)


# Threefry-2x32 with 20 rounds, (key, counter, output): its authors' known-answer vectors
# (Random123), for both of the project's implementations of the hash
THREEFRY_KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]


def examples(n: int) -> int:
    """max_examples for an expensive property: n in CI, 10 n in the thorough profile."""
    return n * _FACTOR


def assert_close(actual, expected, *, rtol: float, atol: float, what: str = "value") -> None:
    """|actual - expected| <= atol + rtol * |expected|, elementwise (shapes broadcast)."""
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    try:
        a, e = np.broadcast_arrays(a, e)
    except ValueError:
        raise AssertionError(f"{what}: shape {a.shape} cannot be compared with {e.shape}") \
            from None
    bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    if np.any(bad):
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} off; got {a[bad][:5]} "
                             f"expected {e[bad][:5]} (rtol={rtol}, atol={atol})")


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_script(path: str, name: str | None = None):
    """A script of tools/, experiments/ or benchmarks/ (not packages), loaded from its file as a
    module: `path` from the repository root, `name` the module's (default: the file's stem)."""
    name = name or os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def assert_claims_flip_alone(claims, doc: dict, flips: dict) -> None:
    """A pre-registered file's claims scored as written: every claim holds on `doc` (each
    bound met with equality where it is inclusive), and each edit flips[i] (one step past
    claim i's bound) makes claim i fail and no other; claims(doc) -> [(id, holds)]."""
    import copy
    n = len(flips)
    assert claims(doc) == [(i, True) for i in range(1, n + 1)]
    for i, flip in flips.items():
        d = copy.deepcopy(doc)
        flip(d)
        assert claims(d) == [(j, j != i) for j in range(1, n + 1)], i


def preregistered(name: str):
    """A file of docs/preregistered/, parsed."""
    with open(os.path.join(ROOT, "docs", "preregistered", name), encoding="utf-8") as f:
        return json.load(f)


def plan_main(name: str = "plan_script"):
    """experiments/plan.py's main, loaded from its file."""
    return load_script(os.path.join("experiments", "plan.py"), name).main


def first_crossing(m_T, m0) -> float:
    """The clock of a margin curve m_T (after updates 1..T; >= 0: the condition holds) from
    the start margin m0, in float64: the first update t with m_t >= 0, moved back to the zero
    of the line through m_{t-1} and m_t (t itself where m_{t-1} is NaN or >= 0); 0 = never."""
    m = np.concatenate([[m0], np.asarray(m_T, np.float64)])
    hit = m[1:] >= 0
    if not hit.any():
        return 0.0
    t = int(1 + np.argmax(hit))
    before, after = m[t - 1], m[t]
    return float(t - 1 + before / (before - after)) if before < 0 else float(t)
