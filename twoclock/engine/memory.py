"""How much host memory a sweep may use, and how much this process already holds."""
from contextlib import suppress
from functools import lru_cache
import math
import os
import re

from twoclock.atomic import Refused

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


def parse_size(text: str, name: str = "TWOCLOCK_MEMORY_LIMIT") -> int:
    """Bytes from '8G', '8GB', '8GiB', '512MiB', '1.5t' or '2000000000': K, M, G, T, P, with or
    without 'i' and 'B', are powers of 1024 (as `free -h`, SLURM's --mem and Docker read
    them). Refused (one line naming `name`) for anything else, and for sizes <= 0."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kmgtpKMGTP]?)(i?)([bB]?)\s*",
                     text)
    value = None
    if m and not (m.group(3) and not m.group(2)):  # "8iB" is not a unit
        value = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if value is None or not math.isfinite(value) or value < 1:
        raise Refused(f"{name} must be a size > 0 like 8G, 8GB, 512MiB or 2000000000 (bytes) "
                      f"(got {text!r})")
    return int(value)


def _explicit():
    text = os.environ.get("TWOCLOCK_MEMORY_LIMIT")
    return text if text is not None and text.strip() else None


def memory_limit() -> int:
    """TWOCLOCK_MEMORY_LIMIT (parse_size: 8G, 512MiB, bytes), else the smaller of the host's
    available memory and this process's cgroup allowance."""
    text = _explicit()
    if text is not None:
        return parse_size(text)
    limits = []
    with suppress(OSError, ValueError):
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        limits.append(int(info["MemAvailable"].split()[0]) * 1024)
    with suppress(OSError, ValueError):
        with open("/sys/fs/cgroup/memory.max") as f, open("/sys/fs/cgroup/memory.current") as g:
            limits.append(int(f.read()) - int(g.read()))
    return min(limits) if limits else 2**63


def resident_bytes() -> int:
    """This process's resident memory now (0 where /proc cannot tell)."""
    with suppress(OSError, ValueError, IndexError):
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


def peak_resident_bytes() -> int:
    """This process's peak resident memory so far, VmHWM (0 where /proc cannot tell).

    Not getrusage's ru_maxrss: Linux carries that across fork and execve, so a process started
    by a larger one reports its parent's peak."""
    with suppress(OSError, ValueError, IndexError):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return 0


@lru_cache(maxsize=1)
def _footprint() -> int:
    return resident_bytes()


def held_bytes() -> int:
    """What of memory_limit() this process holds before its sweep: against a
    TWOCLOCK_MEMORY_LIMIT (a budget for the whole process) its resident memory when first
    asked (the interpreter, JAX and the libraries: 231 MiB at the quadratic headline's
    estimate), measured once so that every estimate of a process, and the --max-lanes it
    suggests, agree; 0 against the host's available memory or the cgroup's allowance (they
    are measured with this process's memory already taken)."""
    return _footprint() if _explicit() is not None else 0
