"""The one atomic file write: a temporary file in the target's folder, then os.replace, so a
reader (or a killed run) only ever sees the old file or the whole new one. The file gets the
mode an ordinary open() would give it (0666 & ~umask, so 0644 under umask 022): mkstemp's
own 0600 would hide results, figures and stores from collaborators on a shared cluster."""
from contextlib import suppress
import os
import tempfile


def umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    with suppress(OSError, ValueError):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but nowhere else)
    os.umask(mask)
    return mask


TMP_PREFIX = ".tmp-"  # what a write killed before its rename leaves behind


def atomic_write(path: str, write, binary: bool = False) -> str:
    """Call write(file) on a temporary file next to path, then move it onto path; returns path.

    write(f) gets a text file (binary=False) or a binary one; on any error the temporary file
    is removed and path is left as it was.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX,
                               suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())  # the rename must not reach the disk before the data
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path
