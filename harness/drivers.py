"""Driver versions: the one rule for a driver string, and the locks of NVIDIA's user-space drivers
that runs can place (Debian's non-free and Ubuntu's restricted packages, one lock file per archive).

Pure: `driver_version` checks text, `parse_driver_lock` checks a parsed JSON document. Fetching and
unpacking the packages is harness.backends.driverstore's job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness import ids
from harness.errors import ConfigError
from harness.model import NO_DRIVER, STUB_DRIVER, Driver, Where

DRIVER_HELP = (
    "give a Linux driver version as nvidia-smi prints it (e.g. 535.104.05 or 570.26); a bare "
    "branch such as 580 means the oldest driver of that branch (it sorts below 580.65.06)"
)
_SHA256 = re.compile(r"[0-9a-f]{64}", re.ASCII)
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+", re.ASCII)
_DEB_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~-]*", re.ASCII)
_POOL = re.compile(r"pool/[A-Za-z0-9/._+~-]+\.deb", re.ASCII)
_MEMBER = re.compile(r"usr/(?:lib/x86_64-linux-gnu|share/keyrings)/[A-Za-z0-9/._+-]+", re.ASCII)
_LIB = re.compile(r"lib[a-z-]+\.so(?:\.[0-9]+)*|[a-z0-9-]+-keyring\.gpg", re.ASCII)
DRIVER_LOCK = "images/locks/drivers/debian-non-free.json"
UBUNTU_LOCK = "images/locks/drivers/ubuntu-restricted.json"
# Every driver lock, in the order their drivers are listed (each archive's file is written whole).
DRIVER_LOCKS = (DRIVER_LOCK, UBUNTU_LOCK)
DRIVER_LOCKS_TEXT = "images/locks/drivers/*.json"


def is_driver_version(text: object) -> bool:
    """The one driver rule (harness.ids.DRIVER): ASCII digits, matched whole."""
    return ids.is_driver(text)


def driver_version(text: object, where: Where | None, what: str = "driver") -> str:
    """`text` if it is a driver version, else a ConfigError at `where`."""
    if not is_driver_version(text):
        raise ConfigError(
            f"bad {what} {text!r}",
            where=where,
            help=f"{DRIVER_HELP}; or 'none' for a machine without a GPU",
        )
    assert isinstance(text, str)
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class DebPackage:
    """One pinned .deb: where it is in the archive, its sha256, and the files taken from it
    (member path in the package -> file name in the driver's folder)."""

    package: str
    version: str
    suite: str
    filename: str  # pool path, relative to the archive
    sha256: str
    size: int
    members: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LockedDriver:
    """A placeable driver: its version (or 'stub'), the CUDA driver API version its libcuda
    reports (cuDriverGetVersion; None for the stub), the packages, and the SONAME links."""

    driver: str
    cuda_api: int | None
    packages: tuple[DebPackage, ...]
    links: tuple[tuple[str, str], ...]
    source: str
    archive: str = ""  # the archive its packages come from (its lock file's)
    component: str = ""

    @property
    def branch(self) -> str:
        """NVIDIA's branch name (R580), or 'stub'."""
        return self.driver if self.driver == STUB_DRIVER else f"R{self.driver.split('.')[0]}"

    @property
    def cuda(self) -> str:
        """The CUDA version its libcuda reports (cuDriverGetVersion 12040 -> '12.4'), or ''."""
        if self.cuda_api is None:
            return ""
        return f"{self.cuda_api // 1000}.{self.cuda_api % 1000 // 10}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverLock:
    archive: str
    component: str
    drivers: tuple[LockedDriver, ...]

    def get(self, driver: str) -> LockedDriver | None:
        return next((d for d in self.drivers if d.driver == driver), None)

    def values(self) -> tuple[str, ...]:
        return tuple(d.driver for d in self.drivers)


def _bad(what: str, file: str) -> ConfigError:
    return ConfigError(
        f"{file}: {what}",
        help="regenerate it with `stackmatrix drivers --lock` (it is written, not edited by hand)",
    )


def _str(row: Mapping[str, Any], key: str, rule: re.Pattern[str], file: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or rule.fullmatch(value) is None:
        raise _bad(f"bad {key} {value!r}", file)
    return value


def parse_deb(row: Any, file: str) -> DebPackage:
    """One pinned .deb entry (a driver lock's, or a base recipe's keyring)."""
    return _package(row, file)


def _pool(row: Mapping[str, Any], file: str) -> str:
    name = _str(row, "filename", _POOL, file)
    if ".." in name.split("/"):
        raise _bad(f"bad filename {name!r}", file)
    return name


def _package(row: Any, file: str) -> DebPackage:
    if not isinstance(row, Mapping):
        raise _bad("a package entry is not an object", file)
    members = row.get("members")
    if not isinstance(members, Mapping) or not members:
        raise _bad("a package has no members", file)
    pairs = []
    for member, name in members.items():
        if not (
            isinstance(member, str)
            and _MEMBER.fullmatch(member)
            and ".." not in member.split("/")
            and isinstance(name, str)
            and _LIB.fullmatch(name)
        ):
            raise _bad(f"bad member {member!r} -> {name!r}", file)
        pairs.append((member, name))
    size = row.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 < size < 1 << 40:
        raise _bad(f"bad size {size!r}", file)
    return DebPackage(
        package=_str(row, "package", _PACKAGE, file),
        version=_str(row, "version", _DEB_VERSION, file),
        suite=_str(row, "suite", _PACKAGE, file),
        filename=_pool(row, file),
        sha256=_str(row, "sha256", _SHA256, file),
        size=size,
        members=tuple(pairs),
    )


def _links(files: list[str]) -> tuple[tuple[str, str], ...]:
    """Each library and the links nvidia-container-cli makes to it: its SONAME (libcuda.so.1),
    and for libcuda also the bare libcuda.so, "Many applications wrongly assume that libcuda.so
    exists (e.g. with dlopen)" (NVIDIA/libnvidia-container src/nvc_mount.c, symlink_libraries,
    https://github.com/NVIDIA/libnvidia-container/blob/main/src/nvc_mount.c): cuDNN 8's
    libcudnn_cnn_infer.so.8 dlopens libcuda.so."""
    out = []
    for name in files:
        stem = name.split(".so", 1)[0]
        out.append((name, f"{stem}.so.1"))
        if stem == "libcuda" and name != "libcuda.so":
            out.append((name, "libcuda.so"))
    return tuple(out)


def driver_op(value: str) -> Driver:
    """The operation that places driver `value` (a locked version, or 'stub'): the files its
    lock entry holds (parse_driver_lock checks the lock names exactly these)."""
    if value == STUB_DRIVER:
        return Driver(version=value, links=_links(["libcuda.so"]))
    return Driver(version=value, links=_links([f"libcuda.so.{value}", f"libnvidia-ml.so.{value}"]))


def parse_driver_lock(data: Any, file: str = DRIVER_LOCK) -> DriverLock:
    """One lock file: its archive, component and drivers (each carrying both)."""
    if not isinstance(data, Mapping) or data.get("schema") != 1:
        raise _bad("not a driver lock (schema 1)", file)
    rows = data.get("drivers")
    if not isinstance(rows, list):
        raise _bad("'drivers' must be a list", file)
    drivers = []
    for row in rows:
        if not isinstance(row, Mapping):
            raise _bad("a driver entry is not an object", file)
        name = row.get("driver")
        if name != STUB_DRIVER and not is_driver_version(name):
            raise _bad(f"bad driver {name!r}", file)
        api = row.get("cuda_api")
        if api is not None and (not isinstance(api, int) or isinstance(api, bool) or api <= 0):
            raise _bad(f"bad cuda_api {api!r}", file)
        source = row.get("source")
        if not (isinstance(source, str) and source.startswith("https://")):
            raise _bad(f"driver {name} has no https source", file)
        packages = tuple(_package(p, file) for p in row.get("packages") or ())
        if not packages:
            raise _bad(f"driver {name} has no packages", file)
        links = _links([n for p in packages for _, n in p.members])
        if links != driver_op(str(name)).links:
            raise _bad(f"driver {name}: its files are not libcuda (and libnvidia-ml) of it", file)
        drivers.append(
            LockedDriver(
                driver=str(name), cuda_api=api, packages=packages, links=links, source=source
            )
        )
    archive = data.get("archive")
    if not (isinstance(archive, str) and re.fullmatch(r"https?://[A-Za-z0-9./-]+", archive)):
        raise _bad(f"bad archive {archive!r}", file)
    component = data.get("component", "non-free")
    if not (isinstance(component, str) and _PACKAGE.fullmatch(component)):
        raise _bad(f"bad component {component!r}", file)
    if len({d.driver for d in drivers}) != len(drivers) or NO_DRIVER in {d.driver for d in drivers}:
        raise _bad("driver values must be unique and not 'none'", file)
    drivers = [replace(d, archive=archive, component=component) for d in drivers]
    return DriverLock(archive=archive, component=component, drivers=tuple(drivers))


def merge_locks(locks: Sequence[DriverLock], files: Sequence[str]) -> DriverLock:
    """Several lock files as one: every driver keeps its own archive; a value in two files is
    refused (a run could not tell which to place)."""
    seen: dict[str, str] = {}
    for lock, file in zip(locks, files, strict=True):
        for d in lock.drivers:
            if d.driver in seen:
                raise _bad(f"driver {d.driver} is also in {seen[d.driver]}", file)
            seen[d.driver] = file
    first = locks[0]
    return DriverLock(
        archive=first.archive,
        component=first.component,
        drivers=tuple(d for lock in locks for d in lock.drivers),
    )


def version_key_of(d: LockedDriver) -> tuple[int, ...]:
    """Sort key: drivers by version, the stub last."""
    if d.driver == STUB_DRIVER:
        return (1 << 30,)
    return tuple(int(x) for x in d.driver.split("."))


def driver_lock_doc(lock: DriverLock) -> dict[str, Any]:
    """The JSON document of one lock file (parse_driver_lock's inverse)."""
    return {
        "schema": 1,
        "archive": lock.archive,
        "component": lock.component,
        "drivers": [
            {
                "driver": d.driver,
                "cuda_api": d.cuda_api,
                "source": d.source,
                "packages": [
                    {
                        "package": p.package,
                        "version": p.version,
                        "suite": p.suite,
                        "filename": p.filename,
                        "sha256": p.sha256,
                        "size": p.size,
                        "members": dict(p.members),
                    }
                    for p in d.packages
                ],
            }
            for d in lock.drivers
        ],
    }


def render_driver_lock(lock: DriverLock) -> str:
    """One lock file's text, as `harness drivers --lock` writes it."""
    return json.dumps(driver_lock_doc(lock), indent=2) + "\n"
