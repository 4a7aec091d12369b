"""A tiny real stack for the local backend: one small wheel (MarkupSafe, with a C extension),
locked by hash, built into a venv once per session in a cache of the session's own."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest

from harness.backends.local import LocalBackend
from harness.fetcher import fetch
from harness.lock import WheelCache, cache_root
from harness.model import Lock, LockedWheel, Stack

TINY_WHEEL = LockedWheel(
    name="markupsafe",
    version="3.0.4",
    filename="markupsafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64."
    "manylinux_2_28_x86_64.whl",
    sha256="6da83a088f8ef93b2d483a8232a4dbf4d69d3d8496b568a03c56becac43e1808",
    size=22961,
)
TINY_LOCK = Lock(
    slug="markupsafe-3.0.4_py3.11_local-test",
    requirements=("markupsafe==3.0.4",),
    overrides=(),
    index="https://pypi.org/simple",
    python="3.11",
    platforms=("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
    wheels=(TINY_WHEEL,),
)
# What faults.placeholders needs from a stack (the framework part is not used by file faults).
TINY_STACK = Stack(
    framework="markupsafe",
    framework_version="3.0.4",
    cuda="13.2",
    cudnn="9.26.0.51",
    python="3.11",
    base="local",
)


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under root: kind, mode and content (files) or target (links)."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = str(path.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[rel] = f"link {os.readlink(path)}"
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = f"dir {stat.S_IMODE(st.st_mode):o}"
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[rel] = f"file {stat.S_IMODE(st.st_mode):o} {digest}"
    return out


def stat_digest(root: Path) -> dict[str, tuple[int, ...]]:
    """Cheaper than tree_digest for gigabytes: any write in place changes size or mtime."""
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(path := os.path.join(top, name))
            out[path] = (st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def leftovers(*parents: Path) -> list[str]:
    return [str(p) for parent in parents if parent.is_dir() for p in parent.iterdir()]


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> WheelCache:
    """The session's wheel cache, seeded from the shared one (else fetched from PyPI)."""
    cache = WheelCache(tmp_path_factory.mktemp("cache"))
    shared = cache_root(os.environ) / "wheels" / TINY_WHEEL.filename
    if shared.exists():
        shutil.copy(shared, cache.dir / TINY_WHEEL.filename)
    fetch(TINY_LOCK, cache)
    return cache


@pytest.fixture(scope="session")
def tiny_venv(tiny_cache: WheelCache) -> str:
    backend = LocalBackend(root=tiny_cache.dir.parent, env=os.environ)
    return backend.ensure_venv(TINY_LOCK, tiny_cache)


@pytest.fixture
def backend(tiny_cache: WheelCache, tmp_path: Path) -> LocalBackend:
    env = {**os.environ, "TMPDIR": str(tmp_path), "STACKMATRIX_TEST_UNSET": "1"}
    return LocalBackend(root=tiny_cache.dir.parent, env=env)
