"""What the harness keeps and how `harness gc` and a disk budget trim it (real folders, the
real uv and its cache, no engine)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from harness.backends import keep
from harness.backends.envs import MARK, EnvStore, uv_tool
from harness.cli import main, parse_size
from harness.errors import ConfigError
from harness.lock import WheelCache


def wheel(folder: Path, name: str, payload: bytes) -> None:
    """A real wheel of one data file, `name`-1.0 (uv installs it from a local folder)."""
    dist = f"{name}-1.0.dist-info"
    files = {
        f"{name}/lib.so": payload,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = "".join(f"{n},,\n" for n in files) + f"{dist}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as z:
        for n, data in {**files, f"{dist}/RECORD": record.encode()}.items():
            z.writestr(n, data)


def env(store: EnvStore, name: str, *, linked: bytes = b"", own: bytes = b"") -> Path:
    """An environment whose package is installed by the real uv, hard-linked from its cache."""
    path = store.envs / name
    path.mkdir(parents=True)
    (path / MARK).write_text(f'{{"lock": "{name.rpartition("-")[0]}"}}')
    if linked:
        pkg = "p_" + name.rpartition("-")[2]
        wheel(store.root / "wheels", pkg, linked)
        uv, _ = uv_tool()
        done = subprocess.run(
            [str(uv), "pip", "install", "--quiet", "--offline", "--no-index", "--find-links",
             str(store.root / "wheels"), "--link-mode", "hardlink", "--python", sys.executable,
             "--target", str(path), pkg],
            env={**os.environ, "UV_CACHE_DIR": str(store.uv_cache)}, capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    if own:
        (path / "own.pyc").write_bytes(own)
    return path


def archived(store: EnvStore) -> list[str]:
    """The packages uv's cache holds unpacked."""
    folder = store.uv_cache / "archive-v0"
    return sorted(keep._package(p) or "" for p in folder.iterdir()) if folder.is_dir() else []


def test_gc_removes_environments_no_stack_has_and_what_only_they_linked(tmp_path: Path) -> None:
    store = EnvStore(tmp_path)
    env(store, "torch-2.15.0_x-aaaaaaaaaaaa", linked=b"t" * 50_000)
    env(store, "torch-2.15.0_x-bbbbbbbbbbbb", linked=b"o" * 50_000, own=b"p" * 10_000)
    assert archived(store) == ["p_aaaaaaaaaaaa", "p_bbbbbbbbbbbb"]
    removed = keep.collect(store, wanted={"torch-2.15.0_x-aaaaaaaaaaaa"})
    assert [(r.what, r.name) for r in removed] == [
        ("environment", "torch-2.15.0_x-bbbbbbbbbbbb"),
        ("uv's cache", "1 packages unpacked"),
    ]
    assert 10_000 <= removed[0].bytes < 50_000  # its own files: the rest was uv's
    assert [n for n, _ in store.listed()] == ["torch-2.15.0_x-aaaaaaaaaaaa"]
    assert archived(store) == ["p_aaaaaaaaaaaa"]
    # uv's index is whole: the package it no longer has installs again
    env(store, "torch-2.15.0_x-bbbbbbbbbbbb", linked=b"o" * 50_000)
    assert archived(store) == ["p_aaaaaaaaaaaa", "p_bbbbbbbbbbbb"]


def test_gc_stack_removes_that_stacks_environments_and_keeps_uvs_cache(tmp_path: Path) -> None:
    store = EnvStore(tmp_path)
    env(store, "torch-2.15.0_x-aaaaaaaaaaaa", linked=b"t" * 1000)
    env(store, "tensorflow-2.21.0_y-cccccccccccc", linked=b"f" * 1000)
    gone: list[str] = []
    images = [("stackmatrix/stack:torch-2.15.0_x-123456789abc", 5), ("stackmatrix/stack:tf-1", 7)]
    removed = keep.collect(
        store, wanted=set(), stacks=["torch-*"], images=images, remove_image=gone.append
    )
    assert [r.name for r in removed] == [
        "torch-2.15.0_x-aaaaaaaaaaaa",
        "stackmatrix/stack:torch-2.15.0_x-123456789abc",
    ]
    assert gone == ["stackmatrix/stack:torch-2.15.0_x-123456789abc"]
    assert [n for n, _ in store.listed()] == ["tensorflow-2.21.0_y-cccccccccccc"]
    # the next build of that stack links from uv's cache again: its entry stays
    assert archived(store) == ["p_aaaaaaaaaaaa", "p_cccccccccccc"]


def test_over_budget_frees_wheels_no_later_stack_needs_then_the_oldest_environment(
    tmp_path: Path,
) -> None:
    store = EnvStore(tmp_path)
    wheels = WheelCache(tmp_path)
    for name in ("a-1.whl", "later-1.whl"):
        (wheels.dir / name).write_bytes(b"w" * 100_000)
    old = env(store, "old-aaaaaaaaaaaa", linked=b"o" * 200_000)
    env(store, "held-bbbbbbbbbbbb", linked=b"h" * 200_000)
    env(store, "new-cccccccccccc", linked=b"n" * 200_000)
    past = time.time() - 3600
    os.utime(old / MARK, (past, past))
    total = sum(keep.usage(store, wheels).values())
    budget = total - 250_000  # one wheel is not enough: one environment and its uv entry go
    removed = keep.over_budget(
        store, wheels, budget, keep={"held-bbbbbbbbbbbb"}, needed_wheels={"later-1.whl"}
    )
    assert [(r.what, r.name) for r in removed] == [
        ("wheels", "1 wheel"),
        ("environment", "old-aaaaaaaaaaaa"),
        ("uv's cache", "1 packages unpacked"),
    ]
    assert (wheels.dir / "later-1.whl").exists()
    assert sorted(n for n, _ in store.listed()) == ["held-bbbbbbbbbbbb", "new-cccccccccccc"]
    assert sum(keep.usage(store, wheels).values()) <= budget
    assert all(r.line().startswith(f"removed {r.what} {r.name} (") for r in removed)


def test_within_budget_nothing_is_removed(tmp_path: Path) -> None:
    store = EnvStore(tmp_path)
    env(store, "a-aaaaaaaaaaaa", linked=b"x" * 1000)
    assert (
        keep.over_budget(store, WheelCache(tmp_path), 10**12, keep=set(), needed_wheels=set()) == []
    )


@pytest.mark.parametrize(
    ("text", "size"),
    [("40GB", 40 * 10**9), ("40G", 40 * 10**9), ("40GiB", 40 * 2**30), ("500MB", 5 * 10**8),
     ("1.5T", 15 * 10**11), ("123", 123), ("2 kb", 2000)],
)  # fmt: skip
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text, "--budget", ["gc", "--budget", text]) == size


@pytest.mark.parametrize("text", ["forty", "-1GB", "10XB", ""])
def test_a_bad_size_is_a_clear_error(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_size(text, "--budget", ["gc", "--budget", text])
    assert "not a size" in err.value.message and err.value.exit_code == 2


def test_gc_with_a_bad_budget_exits_2_before_touching_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["gc", "--budget", "lots"]) == 2
    err = capsys.readouterr().err
    assert "--budget 'lots': not a size" in err and "Traceback" not in err


def test_nothing_of_uvs_cache_is_pruned_while_an_environment_is_being_made(tmp_path: Path) -> None:
    """What uv unpacked for an environment in the making is not linked yet: it is not unused."""
    store = EnvStore(tmp_path)
    made = env(store, "a-aaaaaaaaaaaa", linked=b"x" * 1000)
    store.remove(made.name)
    with store.making():
        assert keep.prune_uv(store) is None
        assert archived(store) == ["p_aaaaaaaaaaaa"]
    pruned = keep.prune_uv(store)
    assert pruned is not None and archived(store) == []


def test_beside_a_download_no_wheel_is_evicted(tmp_path: Path) -> None:
    store = EnvStore(tmp_path)
    wheels = WheelCache(tmp_path)
    (wheels.dir / "a-1.whl").write_bytes(b"w" * 100_000)
    env(store, "old-aaaaaaaaaaaa", linked=b"o" * 200_000)
    removed = keep.over_budget(store, wheels, 1, keep=set(), needed_wheels=None)
    assert [r.what for r in removed] == ["environment", "uv's cache"]
    assert (wheels.dir / "a-1.whl").exists()


def test_what_a_trim_beside_a_make_left_unlinked_is_pruned_by_the_next_trim(
    tmp_path: Path,
) -> None:
    """The releases run's uv cache grew to 18.6 GB before one prune: each environment was
    removed while the next was being made, and a later trim that removed no environment never
    pruned. A trim prunes what nothing links to even when every environment is kept."""
    store = EnvStore(tmp_path)
    wheels = WheelCache(tmp_path)
    env(store, "done-aaaaaaaaaaaa", linked=b"d" * 200_000)
    env(store, "held-bbbbbbbbbbbb", linked=b"h" * 200_000)
    with store.making():
        removed = keep.over_budget(store, wheels, 1, keep={"held-bbbbbbbbbbbb"}, needed_wheels=None)
    assert [r.what for r in removed] == ["environment"]
    assert archived(store) == ["p_aaaaaaaaaaaa", "p_bbbbbbbbbbbb"]
    removed = keep.over_budget(store, wheels, 1, keep={"held-bbbbbbbbbbbb"}, needed_wheels=None)
    assert [(r.what, r.name) for r in removed] == [("uv's cache", "1 packages unpacked")]
    assert archived(store) == ["p_bbbbbbbbbbbb"]


def test_no_wheel_is_evicted_while_another_process_installs_from_the_cache(
    tmp_path: Path,
) -> None:
    """A budget run evicted tensorflow's wheel while another harness's local backend installed
    it (`pip install` then found no file: a clean-clone CI run beside a releases run here). A
    process installing holds the cache's reading lock; an eviction meanwhile removes no wheel,
    and the next one, once the install is done, does."""
    store = EnvStore(tmp_path)
    wheels = WheelCache(tmp_path)
    (wheels.dir / "a-1.whl").write_bytes(b"w" * 100_000)
    script = (
        "import sys; from pathlib import Path; from harness.lock import reading\n"
        f"with reading(Path({str(wheels.dir)!r})):\n"
        "    print('reading', flush=True); sys.stdin.read()\n"
    )
    argv = [sys.executable, "-c", script]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            assert child.stdout.readline().strip() == "reading"
            assert keep.over_budget(store, wheels, 1, keep=set(), needed_wheels=set()) == []
            assert (wheels.dir / "a-1.whl").exists()
        finally:
            child.stdin.close()
            assert child.wait(timeout=30) == 0
    removed = keep.over_budget(store, wheels, 1, keep=set(), needed_wheels=set())
    assert [(r.what, r.name) for r in removed] == [("wheels", "1 wheel")]
    assert not (wheels.dir / "a-1.whl").exists()
