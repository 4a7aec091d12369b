"""NVIDIA's user-space drivers from Debian's non-free and Ubuntu's restricted archives, fetched
once into the shared cache.

`DriverStore.folder(driver)` is a read-only folder holding what a run places: each locked library
(libcuda.so.<version>, libnvidia-ml.so.<version>, or the toolkit's stub libcuda.so) and the SONAME
symlink nvidia-container-cli would make (libcuda.so.1). A Debian .deb is fetched with Debian's
own `apt-get download` under a private apt configuration (non-free enabled for that fetch only;
the host's sources are never read or changed); an Ubuntu one (or any, without apt-get) is read
from the archive's pool over HTTP. Either is checked against the size and sha256 pinned in
images/locks/drivers/*.json and unpacked in Python (ar + tar, zstd through the `zstd` tool: only
the locked members are written).

`prefetch(drivers)` fetches them ahead of the cells that place them, in a thread; each driver has
its own lock, so a cell that needs one waits for the fetch in flight (never a second download)
and raises its failure. `close()` stops that fetch (its apt-get killed, its temp folder removed)
and waits for the thread.

`lock_drivers` writes the locks: each wanted package's record in the archive's own Packages index
(pool path, size, sha256; the index is the row's source), and the CUDA driver API version the
unpacked libcuda itself reports (cuDriverGetVersion through ctypes in a child process: no GPU).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
import threading
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from harness import proc
from harness.drivers import (
    DRIVER_LOCK,
    DRIVER_LOCKS,
    UBUNTU_LOCK,
    DebPackage,
    DriverLock,
    LockedDriver,
    merge_locks,
    parse_driver_lock,
    render_driver_lock,
)
from harness.errors import HarnessError
from harness.fs import atomic_write

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
ARCHIVE = "http://deb.debian.org/debian"
UBUNTU = "http://archive.ubuntu.com/ubuntu"
LIBDIR = "usr/lib/x86_64-linux-gnu"
# What a lock pins: (axis value, [(package, version, suite, {member: name})]).
_Pkg = tuple[str, str, str, dict[str, str]]
_Wanted = tuple[str, tuple[_Pkg, ...]]


def _pair(v: str, deb: str, suite: str, *, cuda: str, ml: str, folder: str) -> _Wanted:
    """A driver from two packages (libcuda, libnvidia-ml), its files in LIBDIR/`folder`."""
    d = f"{LIBDIR}/{folder}" if folder else LIBDIR
    return (
        v,
        (
            (cuda, deb, suite, {f"{d}/libcuda.so.{v}": f"libcuda.so.{v}"}),
            (ml, deb, suite, {f"{d}/libnvidia-ml.so.{v}": f"libnvidia-ml.so.{v}"}),
        ),
    )


def _one(v: str, package: str, deb: str, suite: str) -> _Wanted:
    """A driver from Ubuntu's libnvidia-compute-<branch>: libcuda and libnvidia-ml in LIBDIR."""
    files = {f"{LIBDIR}/{lib}.so.{v}": f"{lib}.so.{v}" for lib in ("libcuda", "libnvidia-ml")}
    return v, ((package, deb, suite, files),)


_CURRENT = {"cuda": "libcuda1", "ml": "libnvidia-ml1", "folder": "nvidia/current"}
# Debian non-free: the newest real (not transitional) libcuda of each branch Debian ships,
# libcuda1/libnvidia-ml1 (the default driver) or libnvidia-tesla-*-cuda1/-ml1 (the Tesla ones).
DEBIAN: tuple[_Wanted, ...] = (
    _pair(
        "450.248.02", "450.248.02-7~deb11u1", "bullseye",
        cuda="libnvidia-tesla-450-cuda1", ml="libnvidia-tesla-450-ml1", folder="nvidia/tesla-450",
    ),
    _pair("470.256.02", "470.256.02-2", "bullseye", **_CURRENT),
    _pair(
        "525.147.05", "525.147.05-15~deb12u1", "bookworm",
        cuda="libnvidia-tesla-cuda1", ml="libnvidia-tesla-ml1", folder="nvidia/tesla",
    ),
    _pair("535.261.03", "535.261.03-1", "bookworm", **_CURRENT),
    _pair("550.163.01", "550.163.01-2", "trixie", **_CURRENT),
    (
        "stub",
        (
            (
                "nvidia-cuda-dev",
                "11.8.89~11.8.0-5~deb12u1",
                "bookworm",
                {f"{LIBDIR}/stubs/libcuda.so": "libcuda.so"},
            ),
        ),
    ),
)  # fmt: skip
# Ubuntu restricted: the branches Debian lacks, each from the newest real libnvidia-compute-<b>
# the indexes still list (many newer versions of a branch are transitional, a few KB, depending on
# the next branch: shared/research/driverlab.md). No real R515 or R590 package is indexed there.
UBUNTU_WANTED: tuple[_Wanted, ...] = (
    _one("510.60.02", "libnvidia-compute-510", "510.60.02-0ubuntu1", "jammy"),
    _one("545.29.06", "libnvidia-compute-545", "545.29.06-0ubuntu0.22.04.2", "jammy-updates"),
    _one(
        "565.57.01", "libnvidia-compute-565-server", "565.57.01-0ubuntu0.20.04.2", "focal-updates"
    ),
    _one("570.133.07", "libnvidia-compute-570", "570.133.07-0ubuntu0.20.04.1", "focal-updates"),
    _one("580.178.04", "libnvidia-compute-580", "580.178.04-0ubuntu0.22.04.1", "jammy-updates"),
    _one("595.99.02", "libnvidia-compute-595", "595.99.02-0ubuntu0.24.04.1", "noble-updates"),
)
# (lock file, archive, component, drivers): what `harness drivers --lock` writes.
LOCKS: tuple[tuple[str, str, str, tuple[_Wanted, ...]], ...] = (
    (DRIVER_LOCK, ARCHIVE, "non-free", DEBIAN),
    (UBUNTU_LOCK, UBUNTU, "restricted", UBUNTU_WANTED),
)
WANTED = DEBIAN  # the Debian lock's drivers (kept for callers of the old name)


class DriverFetchError(HarnessError):
    exit_code = 3


class FetchStopped(DriverFetchError):
    """A fetch stopped because its run ended (Ctrl-C, or the run finished first)."""


_HTTP_CHUNK = 1 << 20


def read_driver_lock(path: Path) -> DriverLock | None:
    """The lock, or None when the repository has none (no driver axis)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DriverFetchError(f"{path}: not JSON ({exc})") from None
    return parse_driver_lock(data, str(path))


def read_driver_locks(root: Path) -> DriverLock | None:
    """Every driver lock under `root` (DRIVER_LOCKS) as one; None when there is none."""
    found = [(f, read_driver_lock(root / f)) for f in DRIVER_LOCKS]
    got = [(f, lock) for f, lock in found if lock is not None]
    if not got:
        return None
    return merge_locks([lock for _, lock in got], [f for f, _ in got])


# ---------------------------------------------------------------- apt, privately


class _Apt:
    """apt-get and apt-cache with their own sources, lists and cache in `root`."""

    def __init__(
        self,
        root: Path,
        suites: Sequence[str],
        component: str = "non-free",
        cancel: threading.Event | None = None,
    ):
        self.root, self.cancel = root, cancel
        for d in ("lists/partial", "cache/archives/partial", "parts", "prefs"):
            (root / d).mkdir(parents=True, exist_ok=True)
        signed = f" [signed-by={KEYRING}]" if os.path.exists(KEYRING) else ""
        (root / "sources.list").write_text(
            "".join(f"deb{signed} {ARCHIVE} {s} {component}\n" for s in sorted(set(suites)))
        )
        self.opts = [
            f"-oDir::Etc::SourceList={root}/sources.list",
            f"-oDir::Etc::SourceParts={root}/parts",
            f"-oDir::Etc::PreferencesParts={root}/prefs",
            f"-oDir::State::Lists={root}/lists",
            f"-oDir::Cache={root}/cache",
            "-oDir::State::status=/dev/null",
            "-oAPT::Architecture=amd64",
            "-oDebug::NoLocking=1",
        ]
        if os.geteuid() == 0:
            self.opts.append("-oAPT::Sandbox::User=root")

    def __call__(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        argv = [tool, *self.opts, *args]
        if cwd is not None:  # apt-get download writes to the working folder
            argv = ["sh", "-c", 'cd "$0" && exec "$@"', str(cwd), *argv]
        try:  # its own process group: its download methods are stopped with it
            res = proc.run(argv, timeout=900, group=True, cancel=self.cancel)
        except proc.Cancelled:
            raise FetchStopped(f"{tool} {' '.join(args)}: stopped") from None
        if res.returncode != 0:
            raise DriverFetchError(
                f"{tool} {' '.join(args)} failed ({res.returncode}): "
                f"{(res.stderr or res.stdout)[-800:]}",
                help="Debian's archive (deb.debian.org) must be reachable to fetch a driver once; "
                "later runs use the cache",
            )
        return res.stdout


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _ar_members(f: IO[bytes]) -> dict[str, tuple[int, int]]:
    """A .deb (an ar archive): member name -> (offset, size)."""
    if f.read(8) != b"!<arch>\n":
        raise DriverFetchError("not a .deb (no ar header)")
    out = {}
    while header := f.read(60):
        if len(header) < 60:
            break
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        out[name] = (f.tell(), size)
        f.seek(size + (size & 1), os.SEEK_CUR)
    return out


def unpack(
    deb: Path,
    members: Sequence[tuple[str, str]],
    into: Path,
    cancel: threading.Event | None = None,
) -> None:
    """Copy the named regular files out of a .deb's data.tar.* (nothing else is written);
    `cancel` set stops it between members."""
    wanted = {m.lstrip("./"): name for m, name in members}
    with deb.open("rb") as f:
        parts = _ar_members(f)
        data = next((n for n in parts if n.startswith("data.tar")), None)
        if data is None:
            raise DriverFetchError(f"{deb.name}: no data.tar member")
        offset, size = parts[data]
        f.seek(offset)
        blob: IO[bytes] | _Slice = _Slice(f, size)
        with (
            _plain_tar(blob, data, into, deb.name) as plain,
            tarfile.open(fileobj=plain, mode="r|*") as tar,  # type: ignore[call-overload]
        ):
            for info in tar:
                _check(cancel, deb.name)
                key = info.name.lstrip("./")
                if key in wanted and info.isfile():
                    src = tar.extractfile(info)
                    assert src is not None
                    with (into / wanted.pop(key)).open("wb") as out:
                        shutil.copyfileobj(src, out)
    if wanted:
        raise DriverFetchError(f"{deb.name}: missing {', '.join(sorted(wanted))}")


@contextmanager
def _plain_tar(
    blob: IO[bytes] | _Slice, member: str, scratch: Path, what: str
) -> Iterator[IO[bytes] | _Slice]:
    """The data member as tarfile reads it: as it is (gz, xz, bz2), or for zstd (Ubuntu's
    packages since 21.10; Python's tarfile cannot read it) decompressed by `zstd` into a
    scratch file that is removed after."""
    if not member.endswith(".zst"):
        yield blob
        return
    packed, plain = scratch / ".data.tar.zst", scratch / ".data.tar"
    try:
        with packed.open("wb") as out:
            shutil.copyfileobj(blob, out)
        res = proc.run(["zstd", "-d", "-q", "-f", "-o", str(plain), str(packed)], timeout=600)
        if res.returncode != 0:
            raise DriverFetchError(
                f"{what}: zstd -d failed ({res.returncode}): {(res.stderr or '')[-400:]}",
                help="Ubuntu's packages are zstd-compressed: install zstd (apt-get install zstd)",
            )
        packed.unlink()
        with plain.open("rb") as f:
            yield f
    finally:
        packed.unlink(missing_ok=True)
        plain.unlink(missing_ok=True)


class _Slice:
    """A read-only window of a file, for tarfile's stream mode."""

    def __init__(self, f: IO[bytes], size: int):
        self.f, self.left = f, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data


# ---------------------------------------------------------------- the store


class DriverStore:
    """The placed drivers' folders in the cache: fetched on first use, or ahead of it."""

    def __init__(self, lock: DriverLock, cache: Path):
        self.lock = lock
        self.root = cache / "drivers"
        self._guard = threading.Lock()  # guards _locks
        self._locks: dict[str, threading.Lock] = {}  # one per driver: one fetch at a time
        # What a background fetch raised, by driver, with where it was raised.
        self._failed: dict[str, tuple[Exception, TracebackType | None]] = {}
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._ended = threading.Event()  # set as the prefetch thread returns

    def folder(self, driver: str) -> Path:
        """The driver's folder, fetched and unpacked on first use. A fetch of it in flight (a
        prefetch) is waited for; if that one failed, its error is raised here."""
        entry = self._entry(driver)
        with self._holding(driver):
            failed = self._failed.get(driver)
            if failed is not None:
                raise failed[0].with_traceback(failed[1])
            return self._fetch(driver, entry)

    def prefetch(self, drivers: Sequence[str]) -> None:
        """Start fetching, one after the other in a thread, each driver of `drivers` that the
        lock has and the cache has not (the first cell to need one then waits for it)."""
        wanted = [
            d
            for d in dict.fromkeys(drivers)
            if (entry := self.lock.get(d)) is not None and not self._final(d, entry).is_dir()
        ]
        if not wanted or self._thread is not None or self._cancel.is_set():
            return
        self._thread = threading.Thread(
            target=self._fetch_all, args=(wanted,), name="driver-prefetch", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop a fetch in flight (its apt-get killed, its temp folder removed) and wait for
        its thread: nothing is left half-written when the process exits. No fetch starts after."""
        self._cancel.set()
        if self._thread is not None:
            # Timed waits, never a bare join: Ctrl-C interrupting `Thread.join` can mark a live
            # thread as ended (CPython 3.11).
            while not self._ended.wait(0.5):
                pass
            self._thread.join()
            self._thread = None

    def _fetch_all(self, drivers: Sequence[str]) -> None:
        try:
            self._fetch_each(drivers)
        finally:
            self._ended.set()

    def _fetch_each(self, drivers: Sequence[str]) -> None:
        for driver in drivers:
            entry = self.lock.get(driver)
            assert entry is not None  # prefetch kept only the lock's drivers
            with self._holding(driver):
                try:
                    self._fetch(driver, entry)
                except FetchStopped:
                    return
                except Exception as exc:  # the cell that needs it raises it: never lost, once
                    self._failed[driver] = (exc, exc.__traceback__)

    @contextmanager
    def _holding(self, driver: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(driver, threading.Lock())
        with lock:
            yield

    def _entry(self, driver: str) -> LockedDriver:
        entry = self.lock.get(driver)
        if entry is None:
            raise DriverFetchError(
                f"driver {driver!r} is not in the driver lock",
                help="the placeable drivers are: " + ", ".join(self.lock.values()),
            )
        return entry

    def _final(self, driver: str, entry: LockedDriver) -> Path:
        return self.root / f"{driver}-{_digest(entry)}"

    def _fetch(self, driver: str, entry: LockedDriver) -> Path:
        """The folder, fetched now if it is not there (the caller holds the driver's lock)."""
        final = self._final(driver, entry)
        if final.is_dir():
            return final
        _check(self._cancel, f"driver {driver}")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{driver}.", dir=self.root))
        try:
            debs = fetch_debs(
                entry.packages,
                tmp,
                archive=entry.archive or self.lock.archive,
                component=entry.component or self.lock.component,
                cancel=self._cancel,
            )
            for pkg, deb in zip(entry.packages, debs, strict=True):
                unpack(deb, pkg.members, tmp, self._cancel)
                deb.unlink()
            for name, link in entry.links:
                if name != link:
                    os.symlink(name, tmp / link)
            for p in tmp.iterdir():
                if not p.is_symlink():
                    p.chmod(0o444)
            tmp.chmod(0o555)
            os.rename(tmp, final)
        except BaseException:
            _remove(tmp)
            raise
        return final


def _check(cancel: threading.Event | None, what: str) -> None:
    if cancel is not None and cancel.is_set():
        raise FetchStopped(f"{what}: fetch stopped")


def fetch_debs(
    packages: Sequence[DebPackage],
    into: Path,
    *,
    archive: str,
    component: str,
    cancel: threading.Event | None = None,
) -> list[Path]:
    """Each pinned .deb into `into`, by apt-get download from Debian's archive (else HTTP, always
    for Ubuntu's: its keyring is not the host's), checked by sha256; `cancel` set stops it
    (FetchStopped)."""
    out = []
    apt = None
    if archive == ARCHIVE and shutil.which("apt-get"):
        apt = _Apt(into / "apt", [p.suite for p in packages], component, cancel)
        apt("apt-get", "-q", "update")
    for p in packages:
        deb = into / f"{p.package}.deb"
        if apt is not None:
            apt("apt-get", "-q", "download", f"{p.package}={p.version}", cwd=into / "apt")
            got = list((into / "apt").glob(f"{p.package}_*.deb"))
            if len(got) != 1:
                raise DriverFetchError(f"apt-get download {p.package}: no .deb")
            got[0].rename(deb)
        else:
            _http(f"{archive}/{p.filename}", deb, cancel)
        if deb.stat().st_size != p.size or _sha256(deb) != p.sha256:
            raise DriverFetchError(
                f"{p.package} {p.version}: the fetched .deb does not match its pinned sha256",
                help="the archive changed or the download was corrupted; re-pin it (the driver "
                "lock, or the base recipe's keyring) only if the change is expected",
            )
        out.append(deb)
    if apt is not None:
        _remove(into / "apt")
    return out


def debian_files(pkg: DebPackage, cache: Path, *, archive: str, component: str) -> Path:
    """A folder with the pinned package's locked members (e.g. a keyring), fetched once."""
    final = cache / "debs" / f"{pkg.package}-{pkg.sha256[:12]}"
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{pkg.package}.", dir=final.parent))
    try:
        (deb,) = fetch_debs([pkg], tmp, archive=archive, component=component)
        unpack(deb, pkg.members, tmp)
        deb.unlink()
        tmp.chmod(0o755)  # apt reads a keyring as its unprivileged _apt user
        os.rename(tmp, final)
    except BaseException:
        _remove(tmp)
        raise
    return final


def _digest(entry: LockedDriver) -> str:
    return hashlib.sha256("".join(p.sha256 for p in entry.packages).encode()).hexdigest()[:12]


def _remove(path: Path) -> None:
    if path.exists():
        for p in [path, *path.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o700 if p.is_dir() else 0o600)
        shutil.rmtree(path, ignore_errors=True)


def _http(url: str, dest: Path, cancel: threading.Event | None = None) -> None:
    try:
        with urllib.request.urlopen(url, timeout=120) as r, dest.open("wb") as f:
            while block := r.read(_HTTP_CHUNK):
                _check(cancel, url)
                f.write(block)
    except OSError as exc:
        raise DriverFetchError(f"fetching {url}: {exc}") from None


# ---------------------------------------------------------------- locking


def index_url(archive: str, suite: str, component: str, ext: str) -> str:
    """The archive's Packages index for a suite and component (amd64), over https."""
    base = archive.replace("http://", "https://", 1)
    return f"{base}/dists/{suite}/{component}/binary-amd64/Packages.{ext}"


def parse_packages(text: str) -> dict[tuple[str, str], dict[str, str]]:
    """A Packages index: (package, version) -> its single-line fields."""
    out = {}
    for para in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in para.splitlines():
            key, sep, value = line.partition(": ")
            if sep and not line.startswith((" ", "\t")):
                fields[key] = value.strip()
        if "Package" in fields and "Version" in fields:
            out[(fields["Package"], fields["Version"])] = fields
    return out


class _Indexes:
    """Packages indexes read over https once per (suite, component): .xz, else .gz."""

    def __init__(self, archive: str, component: str):
        self.archive, self.component = archive, component
        self._seen: dict[str, tuple[str, dict[tuple[str, str], dict[str, str]]]] = {}

    def record(self, package: str, version: str, suite: str) -> tuple[str, dict[str, str]]:
        if suite not in self._seen:
            self._seen[suite] = self._read(suite)
        url, rows = self._seen[suite]
        rec = rows.get((package, version))
        if rec is None:
            raise DriverFetchError(f"{package} {version} is not in {url}")
        return url, rec

    def _read(self, suite: str) -> tuple[str, dict[tuple[str, str], dict[str, str]]]:
        for ext, open_ in (("xz", lzma.decompress), ("gz", gzip.decompress)):
            url = index_url(self.archive, suite, self.component, ext)
            try:
                with urllib.request.urlopen(url, timeout=120) as r:
                    blob = r.read()
            except OSError:
                continue
            return url, parse_packages(open_(blob).decode("utf-8"))
        raise DriverFetchError(f"no Packages index for {suite}/{self.component} in {self.archive}")


_MEASURE = (
    "import ctypes, sys\n"
    "v = ctypes.c_int(0)\n"
    "rc = ctypes.CDLL(sys.argv[1]).cuDriverGetVersion(ctypes.byref(v))\n"
    "print(v.value if rc == 0 else '')\n"
)


def cuda_api(lib: Path) -> int | None:
    """cuDriverGetVersion of a libcuda (no GPU needed), in a child process of its own (two
    libcuda in one process would share symbols); None when it will not load or say."""
    res = proc.run([sys.executable, "-c", _MEASURE, str(lib)], timeout=120)
    out = (res.stdout or "").strip()
    return int(out) if res.returncode == 0 and out.isdigit() else None


def lock_file(
    dest: Path, cache: Path, archive: str, component: str, wanted: Sequence[_Wanted]
) -> DriverLock:
    """One lock file: each wanted package's record in the archive's own Packages index (pool
    path, size, sha256), fetched and checked against it, its libcuda measured."""
    indexes = _Indexes(archive, component)
    rows: list[dict[str, Any]] = []
    for driver, pkgs in wanted:
        packages, source = [], ""
        for package, version, suite, members in pkgs:
            url, rec = indexes.record(package, version, suite)
            source = source or url
            packages.append(
                {
                    "package": package,
                    "version": version,
                    "suite": suite,
                    "filename": rec["Filename"],
                    "sha256": rec["SHA256"],
                    "size": int(rec["Size"]),
                    "members": members,
                }
            )
        rows.append({"driver": driver, "cuda_api": None, "source": source, "packages": packages})
    doc = {"schema": 1, "archive": archive, "component": component, "drivers": rows}
    store = DriverStore(parse_driver_lock(doc, str(dest)), cache)
    for row in rows:
        if row["driver"] != "stub":
            row["cuda_api"] = cuda_api(store.folder(str(row["driver"])) / "libcuda.so.1")
    lock = parse_driver_lock(doc, str(dest))
    atomic_write(dest, render_driver_lock(lock))
    return lock


def lock_drivers(root: Path, cache: Path) -> DriverLock:
    """Write every driver lock under `root` (LOCKS); the merged lock."""
    locks = [lock_file(root / f, cache, a, c, w) for f, a, c, w in LOCKS]
    return merge_locks(locks, [f for f, _, _, _ in LOCKS])
