"""The engine's reading of this process's memory (twoclock/engine/memory.py)."""
import subprocess
import sys

import numpy as np
import pytest

from twoclock.engine import memory

pytestmark = pytest.mark.skipif(memory.peak_resident_bytes() == 0, reason="no /proc here")


def test_the_peak_grows_by_what_is_touched():
    before = memory.peak_resident_bytes()
    a = np.ones(64 * 2**20 // 8 + before // 8)  # more than the whole peak so far, touched
    assert memory.peak_resident_bytes() >= a.nbytes > before
    assert memory.peak_resident_bytes() >= memory.resident_bytes()


def test_a_child_does_not_report_its_parents_peak():
    """ru_maxrss would: Linux carries it over fork and execve. A child started after this
    process touched 256 MiB more reports its own, smaller peak."""
    a = np.ones(256 * 2**20 // 8)
    parent = memory.peak_resident_bytes()
    code = "from twoclock.engine import memory; print(memory.peak_resident_bytes())"
    child = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True).stdout)
    assert 0 < child < parent - 128 * 2**20, (child, parent, a.nbytes)
