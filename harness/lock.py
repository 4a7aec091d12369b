"""Resolve a stack's wheels once on the host, pin them by hash, keep them in a shared cache.

`pip download` resolves against the stack's index for the image's Python and glibc (not the
host's), into one wheel cache shared by every stack, so a wheel several stacks use is fetched
once. The lock (images/locks/<stack>.json) is what the image installs, with --require-hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness import proc
from harness.errors import HarnessError
from harness.fs import atomic_write
from harness.model import Lock, LockedWheel, Stack

RESOLVE_TIMEOUT = 3600.0
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
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


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


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_identity(filename: str) -> tuple[str, str]:
    m = _WHEEL.match(filename)
    if m is None:
        raise LockError(f"not a wheel file name: {filename}")
    return _norm(m["name"]), m["version"]


class WheelCache:
    """The shared wheel folder, with a sha256 memo keyed by (size, mtime) so warm runs never
    re-read gigabytes."""

    def __init__(self, root: Path):
        self.dir = root / "wheels"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._memo_path = root / "sha256.json"
        try:
            self._memo: dict[str, list[int | str]] = json.loads(self._memo_path.read_text())
        except (OSError, ValueError):
            self._memo = {}

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
        self._memo[filename] = [st.st_size, st.st_mtime_ns, h.hexdigest()]
        atomic_write(self._memo_path, json.dumps(self._memo, sort_keys=True))
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
    res = proc.run([*argv, *args], timeout=RESOLVE_TIMEOUT, env=env)
    out = res.stdout + res.stderr
    if res.returncode != 0:
        missing = _NO_DIST.search(out)
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


def fetch(lock: Lock, cache: WheelCache) -> int:
    """Make sure every locked wheel is in the cache with its hash; the bytes downloaded."""
    missing = [w for w in lock.wheels if not (cache.dir / w.filename).exists()]
    new_bytes = 0
    if missing:
        pins = [f"{w.name}=={w.version}" for w in missing]
        _, new_bytes = _pip_download(
            ["--no-deps", *pins],
            index=lock.index,
            python=lock.python,
            plats=lock.platforms,
            cache=cache,
        )
    for w in lock.wheels:
        got = cache.sha256(w.filename)
        if got != w.sha256:
            raise LockError(
                f"{w.filename} in the wheel cache has sha256 {got[:16]}…, the lock says "
                f"{w.sha256[:16]}…",
                help=f"delete {cache.dir / w.filename} and build again (it will be fetched anew)",
            )
    return new_bytes


def read_lock(path: Path) -> Lock | None:
    try:
        return Lock.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise LockError(
            f"{path}: not a stackmatrix lock ({exc})",
            help="delete it and run `harness build --relock`",
        ) from None


def write_lock(path: Path, lock: Lock) -> None:
    atomic_write(path, json.dumps(lock.to_json(), indent=1) + "\n")


def extract(cache: WheelCache, lock: Lock, pin: str, member: str) -> Path:
    """A file (or, for a member ending in '/', a folder) from another wheel, unpacked once into
    the cache: the material for a 'replace this library with another version's' fault."""
    name, _, version = pin.partition("==")
    want = (_norm(name), version)
    found = [f.name for f in cache.dir.glob("*.whl") if wheel_identity(f.name) == want]
    if not found:
        _pip_download(
            ["--no-deps", pin],
            index=lock.index,
            python=lock.python,
            plats=lock.platforms,
            cache=cache,
        )
        found = [f.name for f in cache.dir.glob("*.whl") if wheel_identity(f.name) == want]
    if not found:
        raise LockError(f"{pin}: not in the wheel cache after download")
    # One folder per member: a file taken earlier from a folder must not pass for the folder.
    key = member.rstrip("/").replace("/", "__") + ("__dir" if member.endswith("/") else "")
    root = cache.dir.parent / "extracted" / found[0] / key
    target = root / member.rstrip("/")
    if not target.exists():
        with zipfile.ZipFile(cache.dir / found[0]) as whl:
            names = [
                n
                for n in whl.namelist()
                if n == member or (member.endswith("/") and n.startswith(member))
            ]
            if not names:
                raise LockError(f"{found[0]} has no {member}")
            tmp = Path(tempfile.mkdtemp(dir=root.parent if root.parent.exists() else None))
            try:
                for n in names:
                    whl.extract(n, tmp)
                    os.chmod(tmp / n, 0o755)
                root.mkdir(parents=True, exist_ok=True)
                (root / member.rstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / member.rstrip("/"), target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return target


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
