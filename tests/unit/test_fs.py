"""harness.fs's temp files: made by a name chosen first, so an interrupt at any point leaves
none behind (the seen case: a SIGTERM as mkstemp returned left `.COMPATIBILITY.md.*`)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from harness.fs import atomic_write, new_file


def test_an_interrupt_as_the_temp_file_appears_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.open

    def made_then_interrupted(path: object, flags: int, mode: int = 0o777) -> int:
        os.close(real(path, flags, mode))  # the file exists; the signal lands before the caller
        raise KeyboardInterrupt  # sees its descriptor (SIGTERM unwinds the same way here)

    monkeypatch.setattr(os, "open", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "COMPATIBILITY.md", "table\n")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_while_writing_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "index.html"
    target.write_text("old\n")

    class Stop(BaseException):
        pass

    with pytest.raises(Stop), new_file(tmp_path, ".index.html.") as (fd, _):
        os.write(fd, b"half")
        os.close(fd)
        raise Stop
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]
    assert target.read_text() == "old\n"


def test_a_name_already_taken_is_not_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = tmp_path / ".x.0123"
    theirs.write_text("someone else's\n")
    monkeypatch.setattr(secrets, "token_hex", lambda n: "0123")
    with pytest.raises(FileExistsError), new_file(tmp_path, ".x."):
        pass
    assert theirs.read_text() == "someone else's\n"


def test_written_files_are_0644_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        atomic_write(tmp_path / "a.md", "x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.md").stat().st_mode & 0o777 == 0o644
