"""Locks: platform tags, wheel names, the JSON round trip, the hash memo."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import tempfile
import zipfile
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest
from filelock import FileLock

from harness import lock as lockmod
from harness.lock import (
    LockError,
    WheelCache,
    extract,
    platforms,
    read_lock,
    wheel_identity,
    write_lock,
)
from harness.model import Lock, LockedWheel, version_key
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


@pytest.mark.parametrize(
    "filename",
    [
        "numpy-2.0.0.tar.gz",
        "torch-2.15.0-cp311.whl",
        "torch-not.a.version-cp311-cp311-linux_x86_64.whl",
        "torch-2.15.0-build-cp311-cp311-linux_x86_64.whl",
    ],
)
def test_not_a_wheel(filename: str) -> None:
    with pytest.raises(LockError, match="not a wheel file name") as err:
        wheel_identity(filename)
    assert err.value.help


def test_wheel_identity_normalizes_the_version() -> None:
    assert wheel_identity("Foo.Bar-1.0-py3-none-any.whl") == ("foo-bar", "1.0")
    assert wheel_identity("foo-1.0.0-py3-none-any.whl") == ("foo", "1.0.0")


def test_version_key_follows_pep_440() -> None:
    assert version_key("2.15.0rc1") < version_key("2.15.0") < version_key("2.15.1")
    assert version_key("12.9") < version_key("12.10")
    assert version_key("535.104.05") < version_key("580.65.06")


def test_version_key_sorts_mixed_inputs_without_raising() -> None:
    texts = ["12.10", "not-a-version!", "2.15.0rc1", "", "12.9", "weird_1", "535.104.05"]
    ordered = sorted(texts, key=version_key)
    assert ordered[:4] == ["2.15.0rc1", "12.9", "12.10", "535.104.05"]
    assert set(ordered[4:]) == {"not-a-version!", "", "weird_1"}


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


def _offline_lock() -> Lock:
    """A lock whose index cannot be reached: a test that downloads fails instead of going out."""
    return Lock(
        slug="s",
        requirements=(),
        overrides=(),
        index="http://127.0.0.1:9/simple",
        python="3.11",
        platforms=platforms("2.36"),
        wheels=(),
    )


def _wheel(cache: WheelCache, filename: str, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(cache.dir / filename, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_extract_makes_its_temp_dir_inside_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$TMPDIR may be a tmpfs: a temp dir there cannot be renamed into the cache (EXDEV)."""
    elsewhere = tmp_path / "tmpdir"
    elsewhere.mkdir()
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    monkeypatch.setattr(tempfile, "tempdir", str(elsewhere))
    cache = WheelCache(tmp_path / "cache")
    _wheel(cache, "libfoo-1.2-py3-none-any.whl", {"foo/lib/libfoo.so.1": b"foo"})
    renames: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        renames.append((Path(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    got = extract(cache, _offline_lock(), "libfoo==1.2", "foo/lib/libfoo.so.1")
    assert got.read_bytes() == b"foo"
    assert renames, "extract renames its temp copy into place"
    for src, dst in renames:
        assert src.is_relative_to(cache.root / "extracted"), src
        assert dst.is_relative_to(cache.root / "extracted"), dst
    assert not any(elsewhere.iterdir())
    assert not list(got.parent.glob(".extract-*")), "the temp dir is removed"


def test_extract_matches_pep_440_equal_versions_and_skips_stray_files(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path)
    (cache.dir / "not-a-wheel.whl").write_bytes(b"")
    _wheel(cache, "Lib_Foo-9.1.0-py3-none-any.whl", {"lib/a.so": b"a"})
    assert extract(cache, _offline_lock(), "lib.foo==9.1", "lib/a.so").read_bytes() == b"a"
    with pytest.raises(LockError, match="not a pinned version"):
        extract(cache, _offline_lock(), "lib-foo", "lib/a.so")


def _hash_many(root: str, prefix: str, count: int, go: Event) -> None:
    """One build's worth of memo writes, started together with the other builds'."""
    cache = WheelCache(Path(root))
    go.wait(30)
    for i in range(count):
        cache.sha256(f"{prefix}{i}-1-py3-none-any.whl")


def test_concurrent_memo_updates_lose_no_entry(tmp_path: Path) -> None:
    """Two processes share one wheel cache; each memo write keeps what the other wrote."""
    count = 25
    seed = WheelCache(tmp_path)
    for prefix in ("a", "b"):
        for i in range(count):
            (seed.dir / f"{prefix}{i}-1-py3-none-any.whl").write_bytes(f"{prefix}{i}".encode())
    ctx = multiprocessing.get_context("spawn")  # fork in a threaded pytest warns (an error here)
    go = ctx.Event()
    procs = [ctx.Process(target=_hash_many, args=(str(tmp_path), p, count, go)) for p in ("a", "b")]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    memo = json.loads((tmp_path / "sha256.json").read_text())
    assert len(memo) == 2 * count
    assert memo["b7-1-py3-none-any.whl"][2] == hashlib.sha256(b"b7").hexdigest()


def test_memo_merges_what_another_cache_wrote(tmp_path: Path) -> None:
    first, second = WheelCache(tmp_path), WheelCache(tmp_path)
    for name in ("a-1-py3-none-any.whl", "b-1-py3-none-any.whl"):
        (first.dir / name).write_bytes(name.encode())
    first.sha256("a-1-py3-none-any.whl")
    second.sha256("b-1-py3-none-any.whl")  # read its memo before `first` wrote
    assert sorted(json.loads((tmp_path / "sha256.json").read_text())) == [
        "a-1-py3-none-any.whl",
        "b-1-py3-none-any.whl",
    ]


def test_a_held_cache_lock_ends_in_a_lock_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lockmod, "MEMO_WAIT", 0.2)
    cache = WheelCache(tmp_path)
    (cache.dir / "a-1-py3-none-any.whl").write_bytes(b"a")
    with FileLock(tmp_path / ".memo.lock"), pytest.raises(LockError, match="waited") as err:
        cache.sha256("a-1-py3-none-any.whl")
    assert "STACKMATRIX_CACHE" in (err.value.help or "")


def test_an_unreachable_index_is_named_as_such_not_as_a_missing_wheel(tmp_path: Path) -> None:
    """Real pip against an index nothing listens on (as on a machine with no network): the
    error says the index could not be reached and why, not that the version has no wheel."""
    cache = WheelCache(tmp_path / "wheels")
    index = "http://127.0.0.1:9/simple"
    with pytest.raises(LockError) as err:
        lockmod._pip_download(
            ["--retries", "1", "--no-deps", "nvidia-cudnn-cu13==9.13.0.50"],
            index=index,
            python="3.11",
            plats=["manylinux_2_17_x86_64"],
            cache=cache,
        )
    text = str(err.value)
    assert text.startswith(f"cannot reach {index} to fetch nvidia-cudnn-cu13==9.13.0.50: ")
    assert "Connection refused" in text
    assert "no wheel for" not in text
    assert "offline" in (err.value.help or "")
