"""Locks: platform tags, wheel names, the JSON round trip, the hash memo."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.lock import LockError, WheelCache, platforms, read_lock, wheel_identity, write_lock
from harness.model import Lock, LockedWheel
from tests.conftest import ROOT


def test_platforms_for_a_glibc() -> None:
    tags = platforms("2.36")
    assert tags[0] == "manylinux_2_36_x86_64"
    assert "manylinux_2_17_x86_64" in tags and "manylinux_2_16_x86_64" not in tags
    assert tags[-3:] == ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")


@pytest.mark.parametrize(
    ("filename", "name", "version"),
    [
        ("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl", "torch", "2.15.0"),
        (
            "nvidia_cudnn_cu13-9.26.0.51-py3-none-manylinux_2_27_x86_64.whl",
            "nvidia-cudnn-cu13",
            "9.26.0.51",
        ),
        ("MarkupSafe-3.0.4-1build-cp311-cp311-manylinux2014_x86_64.whl", "markupsafe", "3.0.4"),
    ],
)
def test_wheel_identity(filename: str, name: str, version: str) -> None:
    assert wheel_identity(filename) == (name, version)


def test_not_a_wheel() -> None:
    with pytest.raises(LockError):
        wheel_identity("numpy-2.0.0.tar.gz")


def test_lock_round_trip(tmp_path: Path) -> None:
    lock = Lock(
        slug="s",
        requirements=("a==1",),
        overrides=(),
        index="https://pypi.org/simple",
        python="3.11",
        platforms=platforms("2.36"),
        wheels=(
            LockedWheel(
                name="a", version="1", filename="a-1-py3-none-any.whl", sha256="0" * 64, size=3
            ),
        ),
    )
    path = tmp_path / "locks" / "s.json"
    write_lock(path, lock)
    assert read_lock(path) == lock
    assert path.stat().st_mode & 0o777 == 0o644
    assert lock.requirements_txt().splitlines()[1] == f"a==1 --hash=sha256:{'0' * 64}"
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(LockError, match="not a stackmatrix lock"):
        read_lock(tmp_path / "bad.json")
    assert read_lock(tmp_path / "missing.json") is None


def test_hash_memo_rehashes_a_changed_file(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path)
    f = cache.dir / "a-1-py3-none-any.whl"
    f.write_bytes(b"one")
    assert cache.sha256(f.name) == hashlib.sha256(b"one").hexdigest()
    f.write_bytes(b"two!")
    assert WheelCache(tmp_path).sha256(f.name) == hashlib.sha256(b"two!").hexdigest()


@pytest.mark.parametrize(
    "path", sorted((ROOT / "images" / "locks").glob("*.json")), ids=lambda p: p.stem
)
def test_committed_locks_are_complete(path: Path) -> None:
    lock = read_lock(path)
    assert lock is not None
    assert lock.slug == path.stem
    assert lock.wheels and all(len(w.sha256) == 64 for w in lock.wheels)
    names = [w.name for w in lock.wheels]
    assert len(names) == len(set(names)), "one wheel per distribution"
    assert json.loads(path.read_text())["total_bytes"] == lock.total_bytes


def test_a_folder_is_extracted_whole_after_one_of_its_files(tmp_path: Path) -> None:
    """The conflicting-installs fault takes a wheel's whole lib folder; an earlier fault took
    one file from it. Each member gets its own extraction, so the folder is complete."""
    import zipfile

    from harness.lock import extract

    cache = WheelCache(tmp_path)
    with zipfile.ZipFile(cache.dir / "nvidia_cudnn_cu12-9.13.0.50-py3-none-any.whl", "w") as z:
        z.writestr("nvidia/cudnn/lib/libcudnn.so.9", b"shim")
        z.writestr("nvidia/cudnn/lib/libcudnn_graph.so.9", b"graph")
    lock = read_lock(next((ROOT / "images" / "locks").glob("torch-*.json")))
    pin = "nvidia-cudnn-cu12==9.13.0.50"
    one = extract(cache, lock, pin, "nvidia/cudnn/lib/libcudnn_graph.so.9")
    assert one.read_bytes() == b"graph"
    folder = extract(cache, lock, pin, "nvidia/cudnn/lib/")
    assert sorted(p.name for p in folder.iterdir()) == ["libcudnn.so.9", "libcudnn_graph.so.9"]
