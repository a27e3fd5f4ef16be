"""The tolerance helper itself: it must fail with a message, whatever the shapes."""
import numpy as np
import pytest

from tests.helpers import assert_close


def test_array_against_scalar_fails_with_a_message():
    with pytest.raises(AssertionError, match="ratio: 1 of 3 off"):
        assert_close(np.array([1.0, 1.0, 2.0]), 1.0, rtol=1e-3, atol=0, what="ratio")
    with pytest.raises(AssertionError, match="ratio: 1 of 2 off"):
        assert_close(1.0, np.array([1.0, 1.5]), rtol=1e-3, atol=0, what="ratio")
    with pytest.raises(AssertionError, match="cannot be compared"):
        assert_close(np.ones(3), np.ones(2), rtol=0, atol=1, what="shapes")
    assert_close(np.array([1.0, 1.0005]), 1.0, rtol=1e-3, atol=0)


def test_nan_is_never_close():
    with pytest.raises(AssertionError):
        assert_close(np.nan, 1.0, rtol=1, atol=1)
