"""NVIDIA's user-space drivers from Debian's non-free archive, fetched once into the shared cache.

`DriverStore.folder(driver)` is a read-only folder holding what a run places: each locked library
(libcuda.so.<version>, libnvidia-ml.so.<version>, or the toolkit's stub libcuda.so) and the SONAME
symlink nvidia-container-cli would make (libcuda.so.1). The .deb is fetched with Debian's own
`apt-get download` under a private apt configuration (non-free enabled for that fetch only; the
host's sources are never read or changed), checked against the sha256 pinned in
images/locks/drivers/debian-non-free.json, and unpacked in Python (ar + tar: only the locked
members). Without apt-get the same pool file is read over HTTP and checked the same way.

`prefetch(drivers)` fetches them ahead of the cells that place them, in a thread; each driver has
its own lock, so a cell that needs one waits for the fetch in flight (never a second download)
and raises its failure. `close()` stops that fetch (its apt-get killed, its temp folder removed)
and waits for the thread.

`lock_drivers` writes that lock: apt-cache's record of each wanted package (pool path, size,
sha256), and the CUDA driver API version the unpacked libcuda itself reports (cuDriverGetVersion
through ctypes: it needs no GPU).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
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
from harness.drivers import DebPackage, DriverLock, LockedDriver, parse_driver_lock
from harness.errors import HarnessError
from harness.fs import atomic_write

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
ARCHIVE = "http://deb.debian.org/debian"
LIBDIR = "usr/lib/x86_64-linux-gnu"
# What the lock pins: (axis value, [(package, Debian version, suite, {member: name})]).
_Wanted = tuple[str, tuple[tuple[str, str, str, dict[str, str]], ...]]
_RELEASES: tuple[_Wanted, ...] = tuple(
    (
        v,
        tuple(
            (pkg, deb, suite, {f"{LIBDIR}/nvidia/current/{lib}.so.{v}": f"{lib}.so.{v}"})
            for pkg, lib in (("libcuda1", "libcuda"), ("libnvidia-ml1", "libnvidia-ml"))
        ),
    )
    for v, deb, suite in (
        ("470.256.02", "470.256.02-2", "bullseye"),
        ("535.261.03", "535.261.03-1", "bookworm"),
        ("550.163.01", "550.163.01-2", "trixie"),
    )
)
WANTED: tuple[_Wanted, ...] = (
    *_RELEASES,
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
)
SOURCE = "https://packages.debian.org/{suite}/{package}"


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
        blob = _Slice(f, size)
        with tarfile.open(fileobj=blob, mode="r|*") as tar:  # type: ignore[call-overload]
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
                archive=self.lock.archive,
                component=self.lock.component,
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
    """Each pinned .deb into `into`, by apt-get download (else HTTP), checked by sha256;
    `cancel` set stops it (FetchStopped)."""
    out = []
    apt = None
    if shutil.which("apt-get"):
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


def _record(apt: _Apt, package: str, version: str) -> dict[str, str]:
    text = apt("apt-cache", "show", f"{package}={version}")
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(": ")
        if sep and not line.startswith(" "):
            fields[key] = value.strip()
    return fields


def cuda_api(lib: Path) -> int | None:
    """cuDriverGetVersion of a libcuda (no GPU needed); None when it will not say."""
    try:
        cuda = ctypes.CDLL(str(lib))
    except OSError:
        return None
    v = ctypes.c_int(0)
    return v.value if cuda.cuDriverGetVersion(ctypes.byref(v)) == 0 else None


def lock_drivers(dest: Path, cache: Path) -> DriverLock:
    """Resolve WANTED through apt, fetch each to measure its libcuda, write the lock."""
    scratch = Path(tempfile.mkdtemp(prefix="stackmatrix-drivers-"))
    try:
        apt = _Apt(scratch / "apt", [s for _, pkgs in WANTED for _, _, s, _ in pkgs])
        apt("apt-get", "-q", "update")
        rows: list[dict[str, Any]] = []
        for driver, pkgs in WANTED:
            packages = []
            for package, version, suite, members in pkgs:
                rec = _record(apt, package, version)
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
            rows.append(
                {
                    "driver": driver,
                    "cuda_api": None,
                    "source": SOURCE.format(suite=pkgs[0][2], package=pkgs[0][0]),
                    "packages": packages,
                }
            )
        doc = {"schema": 1, "archive": ARCHIVE, "component": "non-free", "drivers": rows}
        store = DriverStore(parse_driver_lock(doc), cache)
        for row in rows:
            if row["driver"] != "stub":
                folder = store.folder(str(row["driver"]))
                row["cuda_api"] = cuda_api(folder / "libcuda.so.1")
        text = json.dumps(doc, indent=2, sort_keys=False) + "\n"
        atomic_write(dest, text)
        return parse_driver_lock(json.loads(text), str(dest))
    finally:
        _remove(scratch)
