"""A cache the machine will not let us write is one line naming it, exit 3 (issue 24). The fault is
real: as root (where permission bits do not stop a write) a read-only tmpfs mounted for the test
(EROFS); otherwise a folder without write permission (EACCES)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
        try:
            yield folder, "Permission denied"
        finally:
            folder.chmod(0o700)
        return
    mount = ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)]
    if subprocess.run(mount, capture_output=True, check=False).returncode != 0:
        pytest.skip("root without the right to mount a read-only tmpfs here")
    try:
        yield folder, "Read-only file system"
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("argv", [("run", "--backend", "local"), ("run",), ("drivers",)])
def test_an_unwritable_cache_is_one_line_exit_3(
    unwritable: tuple[Path, str], argv: tuple[str, ...]
) -> None:
    folder, strerror = unwritable
    cache = folder / "cache"
    env = {**os.environ, "STACKMATRIX_CACHE": str(cache)}
    res = subprocess.run(
        [sys.executable, "-m", "harness", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 3, res.stdout + res.stderr
    lines = res.stderr.splitlines()
    assert lines[0] == f"error: cannot write the cache {cache} ({strerror})", res.stderr
    assert lines[1:] == [
        "help: make it writable, or set STACKMATRIX_CACHE to a folder you can write"
    ]
