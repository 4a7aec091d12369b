"""Files that must never be half-written, and files read with a bound.

A derived file is written to a temp file in its own folder, fsynced, then `os.replace`d: a reader
sees the old file or the new one, never a torn one.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these are ordinary project files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_bounded(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file (OSError for a FIFO, a device or a folder, which
    could block or never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return f.read(limit)
