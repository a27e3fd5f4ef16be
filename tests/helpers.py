"""The one tolerance helper: explicit rtol and atol, a message that shows both numbers."""
import numpy as np


def assert_close(actual, expected, *, rtol: float, atol: float, what: str = "value") -> None:
    """|actual - expected| <= atol + rtol * |expected|, elementwise."""
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    if np.any(bad):
        raise AssertionError(f"{what}: got {a[bad][:5]} expected {e[bad][:5]} "
                             f"(rtol={rtol}, atol={atol})")
