"""The one atomic file write: a temporary file in the target's folder, then os.replace, so a
reader (or a killed run) only ever sees the old file or the whole new one."""
import os
import tempfile


def atomic_write(path: str, write, binary: bool = False) -> str:
    """Call write(file) on a temporary file next to path, then move it onto path; returns path.

    write(f) gets a text file (binary=False) or a binary one; on any error the temporary file
    is removed and path is left as it was.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-",
                               suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path
