"""Resolve a stack's wheels once on the host, pin them by hash, keep them in a shared cache.

`pip download` resolves against the stack's index for the image's Python and glibc (not the
host's), into one wheel cache shared by every stack, so a wheel several stacks use is fetched
once. The lock (images/locks/<stack>.json) is what the image installs, with --require-hashes.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from harness import ids, proc
from harness.errors import ConfigError, HarnessError
from harness.fs import atomic_write, fault_from
from harness.inputs import read_json
from harness.model import Lock, LockedWheel, Stack

LOCK_LIMIT = 8 << 20
RESOLVE_TIMEOUT = 3600.0
# How long to wait for another build's hold on the shared cache. A download may hold its lock as
# long as pip may run (RESOLVE_TIMEOUT, then proc kills it), so a waiter outlasts that: giving up
# sooner would fail a build that is merely queued behind a big CUDA download. flock locks die with
# their process, so only a live, stuck holder makes a waiter reach this and see LockError.
DOWNLOAD_WAIT = RESOLVE_TIMEOUT + 300.0
# Unzipping one member, and rewriting a small JSON memo: seconds; minutes means something is stuck.
EXTRACT_WAIT = 600.0
MEMO_WAIT = 120.0
_PIP_SOURCES = frozenset(
    {
        "PIP_FIND_LINKS",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_NO_INDEX",
        "PIP_CONFIG_FILE",
        "PIP_REQUIRE_HASHES",
    }
)
_SAVED = re.compile(r"^(?:Saved|File was already downloaded) (\S+\.whl)\s*$")
_NO_DIST = re.compile(r"No matching distribution found for (\S+)")
# pip's retries name why the index could not be reached (urllib3's NewConnectionError,
# ConnectTimeoutError, ProxyError, SSLError): then "no matching distribution" says nothing of
# the index, only that this machine could not ask it
_UNREACHABLE = re.compile(
    r"(Failed to establish a new connection: [^')\n]*|Temporary failure in name resolution"
    r"|Network is unreachable|Connection refused|Connection to \S+ timed out[^')\n]*"
    r"|ProxyError\('[^'\n]*|SSLError\([^)\n]*|No route to host)"
)


class LockError(HarnessError):
    """A stack cannot be resolved: a version with no wheel, an unreachable index."""

    exit_code = 2


def cache_root(env: Mapping[str, str]) -> Path:
    """STACKMATRIX_CACHE, else $XDG_CACHE_HOME/stackmatrix, else ~/.cache/stackmatrix."""
    if env.get("STACKMATRIX_CACHE"):
        return Path(env["STACKMATRIX_CACHE"])
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "stackmatrix"


def platforms(glibc: str) -> tuple[str, ...]:
    """Wheel platform tags a glibc runs: manylinux_2_<minor> down to 2_17, and the old aliases."""
    minor = int(glibc.split(".")[1])
    tags = [f"manylinux_2_{m}_x86_64" for m in range(minor, 16, -1)]
    return (*tags, "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")


def wheel_identity(filename: str) -> tuple[str, str]:
    """The canonical project name and normalized version a wheel's file name carries."""
    try:
        name, version, _, _ = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise LockError(
            f"not a wheel file name: {filename} ({exc})",
            help="wheel names are <name>-<version>[-<build>]-<python>-<abi>-<platform>.whl",
        ) from None
    return str(name), str(version)


@contextmanager
def _holding(path: Path, wait: float, what: str) -> Iterator[None]:
    """Hold the cache lock file `path`, or raise LockError after `wait` seconds.

    Locks nest only in the order extract > download > memo; each is a separate file, and a
    second FileLock on a held file blocks even in the same thread, so the order must not loop.
    """
    lock = FileLock(path)
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        raise LockError(
            f"waited {wait:.0f}s for {path} ({what}): another stackmatrix build holds it",
            help="wait for the other build to finish, or give this one its own cache with "
            "STACKMATRIX_CACHE",
        ) from None
    try:
        yield
    finally:
        lock.release()


def _readers(wheels: Path) -> Path:
    """The lock file of those installing from the wheel folder `wheels`."""
    return wheels.parent / ".reading.lock"


@contextmanager
def reading(wheels: Path) -> Iterator[None]:
    """While wheels of the folder `wheels` are installed: a shared flock that an eviction in any
    process (`--disk-budget`, `harness gc`) waits out by leaving the wheels alone (`evictable`).
    Without it, another harness's budget once removed a wheel under a venv's `pip install`."""
    with _readers(wheels).open("a") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        yield  # closing the file releases the lock


@contextmanager
def evictable(wheels: Path) -> Iterator[bool]:
    """Whether no process installs from `wheels` now (see `reading`); held while it says so."""
    with _readers(wheels).open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


class WheelCache:
    """The shared wheel folder, with a sha256 memo keyed by (size, mtime) so warm runs never
    re-read gigabytes."""

    def __init__(self, root: Path):
        self.root = root
        self.dir = root / "wheels"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._memo_path = root / "sha256.json"
        self._memo = self._read_memo()

    def holding(self, name: str, wait: float, what: str) -> AbstractContextManager[None]:
        """The cache-wide lock `name` (download, extract, memo), shared by every process."""
        return _holding(self.root / f".{name}.lock", wait, what)

    def _read_memo(self) -> dict[str, list[int | str]]:
        try:
            memo: dict[str, list[int | str]] = json.loads(self._memo_path.read_text())
        except (OSError, ValueError):
            return {}
        return memo

    def remember(self, filename: str, entry: list[int | str]) -> None:
        """Add one entry to the memo on disk, keeping what other processes wrote since we read
        it: re-read under the lock, merge, write atomically."""
        with self.holding("memo", MEMO_WAIT, "writing the sha256 memo"):
            memo = self._read_memo()
            memo[filename] = entry
            atomic_write(self._memo_path, json.dumps(memo, sort_keys=True))
        self._memo = memo

    def sha256(self, filename: str) -> str:
        path = self.dir / filename
        st = path.stat()
        known = self._memo.get(filename)
        if known and known[0] == st.st_size and known[1] == st.st_mtime_ns:
            return str(known[2])
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        self.remember(filename, [st.st_size, st.st_mtime_ns, h.hexdigest()])
        return h.hexdigest()

    def locked(self, filename: str) -> LockedWheel:
        name, version = wheel_identity(filename)
        size = (self.dir / filename).stat().st_size
        return LockedWheel(
            name=name, version=version, filename=filename, sha256=self.sha256(filename), size=size
        )


def _pip_download(
    args: Sequence[str], *, index: str, python: str, plats: Sequence[str], cache: WheelCache
) -> tuple[list[str], int]:
    """Run pip download; the wheel files it names and the bytes it newly saved."""
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-cache-dir",
        "--progress-bar",
        "off",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--index-url",
        index,
        "--python-version",
        python,
        "--implementation",
        "cp",
        "--abi",
        "cp" + python.replace(".", ""),
        "-d",
        str(cache.dir),
    ]
    for p in plats:
        argv += ["--platform", p]
    # Only the index we name: a machine's find-links or extra index must not leak into a lock.
    env = {k: v for k, v in os.environ.items() if k not in _PIP_SOURCES}
    # One pip at a time in the shared folder: two writing the same wheel could leave a torn one.
    with cache.holding("download", DOWNLOAD_WAIT, "downloading wheels"):
        res = proc.run([*argv, *args], timeout=RESOLVE_TIMEOUT, env=env)
    out = res.stdout + res.stderr
    if res.returncode != 0:
        if "no space left on device" in out.lower():  # pip's OSError, errno 28, as text
            fault = fault_from(OSError(errno.ENOSPC, "No space left on device"), cache.dir)
            assert fault is not None
            raise fault
        missing = _NO_DIST.search(out)
        # "(from versions: none)": pip got no listing at all (an index that answered lists the
        # versions it has), and its retries said why
        unreachable = _UNREACHABLE.search(out) if "(from versions: none)" in out else None
        if missing and unreachable:
            raise LockError(
                f"cannot reach {index} to fetch {missing.group(1)}: {unreachable.group(1)}",
                help="this machine is offline or the index is blocked: run where the index is "
                f"reachable, or bring the wheel into the wheel cache ({cache.dir}; "
                "STACKMATRIX_CACHE moves it) from a machine that reached it",
            )
        if missing:
            raise LockError(
                f"no wheel for {missing.group(1)} on {index} (Python {python}, "
                f"{plats[0]} or older)",
                help="check the version exists for this Python and platform, or pick another "
                "release in matrix.yaml",
            )
        tail = "\n".join(out.strip().splitlines()[-15:])
        raise LockError(
            f"pip download failed ({' '.join(args)}):\n{tail}",
            help="is the package index reachable from this machine?",
        )
    files, new_bytes = [], 0
    for line in res.stdout.splitlines():
        m = _SAVED.match(line.strip())
        if m:
            name = Path(m.group(1)).name
            files.append(name)
            if line.strip().startswith("Saved"):
                new_bytes += (cache.dir / name).stat().st_size
    return files, new_bytes


Progress = Callable[[str], None]


def resolve(
    slug: str,
    requirements: Sequence[str],
    overrides: Sequence[str],
    *,
    index: str,
    python: str,
    glibc: str,
    cache: WheelCache,
) -> tuple[Lock, int]:
    """Resolve requirements to wheels for the image's Python and glibc; swap overrides in."""
    plats = platforms(glibc)
    files, new_bytes = _pip_download(
        requirements, index=index, python=python, plats=plats, cache=cache
    )
    wheels = {wheel_identity(f)[0]: f for f in files}
    for pin in overrides:
        got, more = _pip_download(
            ["--no-deps", pin], index=index, python=python, plats=plats, cache=cache
        )
        new_bytes += more
        for f in got:
            wheels[wheel_identity(f)[0]] = f
    locked = tuple(cache.locked(wheels[k]) for k in sorted(wheels))
    lock = Lock(
        slug=slug,
        requirements=tuple(requirements),
        overrides=tuple(overrides),
        index=index,
        python=python,
        platforms=plats,
        wheels=locked,
    )
    return lock, new_bytes


def check_cached(lock: Lock, cache: WheelCache) -> None:
    """Every locked wheel is in the cache with the lock's sha256."""
    for w in lock.wheels:
        got = cache.sha256(w.filename)
        if got != w.sha256:
            raise LockError(
                f"{w.filename} in the wheel cache has sha256 {got[:16]}…, the lock says "
                f"{w.sha256[:16]}…",
                help=f"delete {cache.dir / w.filename} and build again (it will be fetched anew)",
            )


def read_lock(path: Path, slug: str | None = None) -> Lock | None:
    """The lock at path (None when there is none), every field checked: a lock becomes lines of
    requirements.txt and pip arguments, so nothing in it may carry a newline or an option.
    `slug`: the stack it must be for (default: the file's name, <slug>.json)."""
    help = "delete it and run `stackmatrix build --relock`"
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        lock = Lock.from_json(read_json(path, limit=LOCK_LIMIT, help=help))
        why = lock_problem(lock, path.stem if slug is None else slug)
    except ConfigError as exc:
        why = exc.message
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        why = f"{type(exc).__name__}: {str(exc)[:120]}"
    if why is not None:
        raise LockError(f"{path}: not a stackmatrix lock ({why})", help=help)
    return lock


_SHA256 = re.compile(r"[0-9a-f]{64}")
_PLATFORM = re.compile(r"[a-z0-9_]{1,80}")
_INDEX = re.compile(r"https?://[!-~]{1,500}")  # printable ASCII, no space
_REQUIREMENT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?([<>=!~]=?[A-Za-z0-9.*+!-]+)?(,[<>=!~]=?[A-Za-z0-9.*+!-]+)*"
)


def lock_problem(lock: Lock, slug: str) -> str | None:
    """Why a lock read from disk cannot be used, or None."""
    if lock.slug != slug:
        return f"it is the lock of {lock.slug!r}, not of {slug!r}"
    if not ids.is_version(lock.python) or not _INDEX.fullmatch(lock.index):
        return "python or index is malformed"
    for text in (*lock.requirements, *lock.overrides):
        if not isinstance(text, str) or not _REQUIREMENT.fullmatch(text):
            return f"requirement {str(text)[:60]!r} is not a plain name and version specifier"
    if not all(isinstance(p, str) and _PLATFORM.fullmatch(p) for p in lock.platforms):
        return "a platform tag is malformed"
    return next(filter(None, (_wheel_problem(w) for w in lock.wheels)), None)


def _wheel_problem(w: LockedWheel) -> str | None:
    if not all(isinstance(x, str) for x in (w.name, w.version, w.filename, w.sha256)):
        return "a wheel field is not a string"
    if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", w.name):
        return f"wheel name {w.name[:60]!r} is not a project name"
    if "/" in w.filename or not re.fullmatch(r"[A-Za-z0-9._+!-]+\.whl", w.filename):
        return f"wheel file name {w.filename[:60]!r} is malformed"
    try:
        name, version, _, _ = parse_wheel_filename(w.filename)
        same = name == canonicalize_name(w.name) and version == Version(w.version)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        return f"{w.filename[:60]!r}: {exc}"
    if not same:
        return f"{w.filename} is not {w.name}=={w.version}"
    if not _SHA256.fullmatch(w.sha256):
        return f"the sha256 of {w.filename} is not 64 lower-case hex digits"
    if isinstance(w.size, bool) or not isinstance(w.size, int) or w.size < 0:
        return f"the size of {w.filename} is not a byte count"
    return None


def write_lock(path: Path, lock: Lock) -> None:
    atomic_write(path, json.dumps(lock.to_json(), indent=1) + "\n")


def _pin(pin: str) -> tuple[str, Version]:
    name, _, version = pin.partition("==")
    try:
        return canonicalize_name(name), Version(version)
    except InvalidVersion:
        raise LockError(
            f"{pin}: not a pinned version", help="write the wheel as <name>==<version>"
        ) from None


def _cached(cache: WheelCache, name: str, version: Version) -> list[str]:
    """Wheels of name==version already in the cache (PEP 440 equality: '9.1' is '9.1.0')."""
    found = []
    for f in sorted(cache.dir.glob("*.whl")):
        try:
            got = parse_wheel_filename(f.name)
        except (InvalidWheelFilename, InvalidVersion):
            continue  # a stray file in a shared folder must not stop every extraction
        if got[0] == name and got[1] == version:
            found.append(f.name)
    return found


def extract(cache: WheelCache, lock: Lock, pin: str, member: str) -> Path:
    """A file (or, for a member ending in '/', a folder) from another wheel, unpacked once into
    the cache: the material for a 'replace this library with another version's' fault."""
    name, version = _pin(pin)
    found = _cached(cache, name, version)
    if not found:
        _pip_download(
            ["--no-deps", pin],
            index=lock.index,
            python=lock.python,
            plats=lock.platforms,
            cache=cache,
        )
        found = _cached(cache, name, version)
    if not found:
        raise LockError(f"{pin}: not in the wheel cache after download")
    # One folder per member: a file taken earlier from a folder must not pass for the folder.
    key = member.rstrip("/").replace("/", "__") + ("__dir" if member.endswith("/") else "")
    target = cache.root / "extracted" / found[0] / key / member.rstrip("/")
    if not target.exists():
        with cache.holding("extract", EXTRACT_WAIT, f"extracting {member} from {found[0]}"):
            if not target.exists():  # another process may have unpacked it while we waited
                _unpack(cache.dir / found[0], member, target)
    return target


def _unpack(wheel: Path, member: str, target: Path) -> None:
    """Unpack member into a temp folder beside target, then rename it into place: the rename
    stays on the cache's file system ($TMPDIR may be a tmpfs: EXDEV) and is all or nothing."""
    with zipfile.ZipFile(wheel) as whl:
        names = [
            n
            for n in whl.namelist()
            if n == member or (member.endswith("/") and n.startswith(member))
        ]
        if not names:
            raise LockError(f"{wheel.name} has no {member}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
        try:
            for n in names:
                whl.extract(n, tmp)
                os.chmod(tmp / n, 0o755)
            os.replace(tmp / member.rstrip("/"), target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def host_lock(stack: Stack) -> Lock:
    """A lock with no wheels, for an interpreter found on this machine (`--python`): what fault
    wheels are fetched for (PyPI, its Python, this host's glibc)."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") or "glibc 2.17"
    return Lock(
        slug=stack.slug,
        requirements=(),
        overrides=(),
        index="https://pypi.org/simple",
        python=stack.python,
        platforms=platforms(libc.split()[-1]),
        wheels=(),
    )
