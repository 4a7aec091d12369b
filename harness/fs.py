"""Files that must never be half-written, and files read with a bound.

A derived file is written to a temp file in its own folder, fsynced, then `os.replace`d: a reader
sees the old file or the new one, never a torn one. A write that finds the disk full (or the
file system read-only) is a MachineFault naming the path, the bytes it needed and the space free:
the one place an OSError becomes "the machine failed".
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import ConfigError, MachineFault
from harness.inputs import kind

SUMMARY_TAIL = 1  # bytes of an existing step summary read (is there a final newline?)


DISK_FAULTS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
FULL_HELP = (
    "free space there (or write to another folder), then run the same command: "
    "finished cells are kept"
)


def free_bytes(path: Path) -> int | None:
    """Bytes free to an unprivileged writer on the file system of `path` (or of its nearest
    existing parent); None where it cannot be measured."""
    for p in (path, *path.parents):
        try:
            st = os.statvfs(p)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def fault_from(exc: OSError, path: Path, need: int | None = None) -> MachineFault | None:
    """The machine fault an OSError is (disk full, quota, read-only), or None for any other."""
    if exc.errno not in DISK_FAULTS:
        return None
    if exc.errno == errno.EROFS:
        return MachineFault(f"the file system of {path} is read-only", detail=str(exc.strerror))
    free = free_bytes(path)
    parts = [f"needs {need:,} bytes" if need is not None else "", _free(free)]
    return MachineFault(
        f"the disk is full: cannot write {path}",
        detail=", ".join(p for p in parts if p),
        help=FULL_HELP,
    )


def _free(free: int | None) -> str:
    return f"{free:,} bytes free there" if free is not None else ""


@contextmanager
def disk_guard(path: Path, need: int | None = None) -> Iterator[None]:
    """An OSError of a full or read-only disk, raised while writing `path`, as a MachineFault."""
    try:
        yield
    except OSError as exc:
        fault = fault_from(exc, path, need)
        if fault is None:
            raise
        raise fault from None


def atomic_write(path: Path, text: str) -> None:
    """Replace a regular file (or make one); anything else there (a FIFO, a device, a folder, a
    symlink to one) is refused, never replaced."""
    _refuse_special(path)
    data = text.encode("utf-8")
    with disk_guard(path, len(data)):
        path.parent.mkdir(parents=True, exist_ok=True)
        with new_file(path.parent, f".{path.name}.") as (fd, tmp):
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)


@contextmanager
def new_file(folder: Path, prefix: str) -> Iterator[tuple[int, Path]]:
    """A file made in `folder` (O_EXCL, mode 0644 whatever the umask), open for writing, and
    removed again when the body raises or is interrupted. Its name is chosen before it is made,
    and it is made inside the `try`: a SIGTERM or Ctrl-C (both unwind as exceptions here) that
    lands just as the file appears still finds its name to remove, where mkstemp's return value
    would be lost with the interrupted frame (seen: a temp file left by a report stopped so)."""
    tmp = folder / f"{prefix}{secrets.token_hex(8)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        os.fchmod(fd, 0o644)  # the umask may have taken bits away
        yield fd, tmp
    except BaseException as exc:
        if not (isinstance(exc, FileExistsError) and exc.filename == str(tmp)):
            tmp.unlink(missing_ok=True)  # a name taken by someone else is not ours to remove
        raise


def probe_writable(folder: Path) -> None:
    """Make a file in `folder` and remove it: an OSError says the folder cannot be written."""
    with new_file(folder, ".probe.") as (fd, tmp):
        os.close(fd)
        tmp.unlink()


def read_bounded(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file (OSError for a FIFO, a device or a folder, which
    could block or never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return f.read(limit)


def _refuse_special(path: Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(
            f"{path} is {kind(mode)}: it is not replaced",
            help="remove it, or write the output somewhere else",
        )


def writable_dir(path: Path, option: str) -> None:
    """Make the output folder `path` (and its parents), and prove a file can be made in it;
    a ConfigError naming `option` otherwise (a file, /dev/null, /proc/self, read-only)."""
    help = f"give {option} a folder you can write to"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe_writable(path)
    except FileExistsError:
        raise ConfigError(f"{option} {path} is a file, not a folder", help=help) from None
    except OSError as exc:
        raise ConfigError(
            f"{option} {path}: cannot write there: {exc.strerror}", help=help
        ) from None


def append_summary(path: Path, text: str, option: str = "GITHUB_STEP_SUMMARY") -> None:
    """Append `text` to the file `path` (made if missing), a newline first where the last writer
    left none. Of a regular file only the last byte is read; anything else that takes writes
    (/dev/null, a pipe) is only written to, never read and never replaced."""
    help = f"set {option} to a regular file (GitHub Actions sets it for each step)"
    try:
        fd = os.open(
            path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644
        )
    except OSError as exc:
        raise ConfigError(f"{option}={path}: cannot append: {exc.strerror}", help=help) from None
    try:
        st = os.fstat(fd)
        regular = stat.S_ISREG(st.st_mode)
        last = os.pread(fd, SUMMARY_TAIL, st.st_size - 1) if regular and st.st_size else b"\n"
        data = (b"" if last == b"\n" else b"\n") + text.encode("utf-8", "replace")
        os.write(fd, data)
    except OSError as exc:
        raise ConfigError(f"{option}={path}: cannot append: {exc.strerror}", help=help) from None
    finally:
        os.close(fd)
