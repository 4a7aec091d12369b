"""The results journal: append-only JSON lines, one write and one fsync per result; read back
as typed RunResults (derived files are written atomically: harness.fs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.model import RESULT_SCHEMAS, RunResult, Status

JOURNAL = "journal.jsonl"
FINAL = frozenset(s.value for s in Status if s.final)  # errored and interrupted cells run again


def append(folder: Path, record: dict[str, object]) -> None:
    """One JSON line, written in one call and fsynced: a result, once reported, survives."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JOURNAL
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size and not _ends_with_newline(path):
            data = b"\n" + data  # the last writer was killed mid-line: start afresh
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def records(folder: Path) -> list[dict[str, object]]:
    """Every whole record in a results folder (a torn last line is skipped, not an error)."""
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("schema") in RESULT_SCHEMAS:
                out.append(rec)
    return out


def finished(folder: Path) -> dict[str, str]:
    """cell -> key of its last final result."""
    return {str(r["cell"]): str(r["key"]) for r in records(folder) if r.get("status") in FINAL}


def results(folder: Path) -> list[RunResult]:
    """Every whole record as a RunResult; a record that is not one is skipped like a torn line."""
    out = []
    for rec in records(folder):
        try:
            out.append(RunResult.from_json(rec))
        except (KeyError, ValueError, TypeError, AttributeError):
            continue
    return out
