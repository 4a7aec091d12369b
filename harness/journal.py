"""The results journal: append-only JSON lines, one write and one fsync per result; read back
as typed RunResults (derived files are written atomically: harness.fs)."""

from __future__ import annotations

import codecs
import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from harness import inputs
from harness.errors import ConfigError
from harness.fs import disk_guard
from harness.model import RESULT_SCHEMAS, RunResult, Status

JOURNAL = "journal.jsonl"
TAIL_CHUNK = 64 * 1024  # read backwards this much at a time to find the last newline
FINAL = frozenset(s.value for s in Status if s.final)  # errored and interrupted cells run again


def append(folder: Path, record: dict[str, object]) -> None:
    """One JSON line, written in one call and fsynced: a result, once reported, survives. A
    torn last line (a writer killed mid-line) is cut off first; a write the disk cannot take is
    undone (the file keeps every complete line) and raised as a MachineFault."""
    path = folder / JOURNAL
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    with disk_guard(path, len(data)):
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = cut_torn_tail(fd)
            try:
                view = memoryview(data)
                while view:  # a disk that fills up takes part of a write, then refuses the rest
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)  # a part of a line would be a torn one
                raise
        finally:
            os.close(fd)


def cut_torn_tail(fd: int) -> int:
    """Cut what follows the last newline of the open file (a line its writer never finished:
    it is no result, and the cell runs again); the size that is left."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start)
        at = chunk.rfind(b"\n")
        if at >= 0:
            end = start + at + 1
            break
        end = start
    if end != size:
        os.ftruncate(fd, end)
    return end


@dataclass(frozen=True, slots=True)
class Skipped:
    """A journal line that is not a result: where it is and why it was left out."""

    file: str
    line: int
    why: str

    def __str__(self) -> str:
        if self.line == 0:  # the whole file (not a regular file; unreadable)
            return f"{self.file}: warning: skipped: {self.why}"
        return f"{self.file}:{self.line}: warning: skipped a journal line: {self.why}"


@dataclass(frozen=True, slots=True)
class Read:
    records: list[dict[str, object]]
    skipped: list[Skipped]


def read(folder: Path) -> Read:
    """Every whole record in a results folder. One bad line, or one bad file, never stops the
    rest: it is skipped and counted (a line past LINE_LIMIT, not UTF-8, not JSON, too deep, not
    a record of a known schema, fields of the wrong type)."""
    out = Read([], [])
    for path in files(folder):
        read_file(path, out)
    return out


def files(folder: Path) -> list[Path]:
    """A results folder's journal files, in the order they are read."""
    return sorted(folder.glob("*.jsonl"))


def read_file(path: Path, out: Read, start: int = 0, stop: int | None = None) -> int:
    """The records of one journal file into `out` (as `read`), from byte `start` (a line's
    start) to byte `stop` (one past a newline; None: the end); how many lines that was. Lines
    are numbered from `start`'s line as line 1."""
    try:
        fd = inputs.open_regular(path, str(path), "")
    except ConfigError as exc:
        out.skipped.append(Skipped(str(path), 0, exc.message))
        return 0
    with os.fdopen(fd, "rb") as f:
        if start:
            f.seek(start)
        lines = f if stop is None else _Range(f, stop - start)
        return _read_lines(lines, str(path), out, first=start == 0)


class _Range:
    """readline over the next `left` bytes of a file, and no further."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self.f, self.left = f, left

    def readline(self, limit: int) -> bytes:
        line = self.f.readline(min(limit, self.left)) if self.left > 0 else b""
        self.left -= len(line)
        return line


def _read_lines(f: BinaryIO | _Range, name: str, out: Read, first: bool = True) -> int:
    """Every line of `f` into `out`; how many there were. `first`: they start the file (a BOM
    may lead)."""
    number = 0
    try:
        while line := f.readline(inputs.LINE_LIMIT + 1):
            number += 1
            if len(line) > inputs.LINE_LIMIT:
                out.skipped.append(Skipped(name, number, f"longer than {inputs.LINE_LIMIT} bytes"))
                while line and not line.endswith(b"\n"):  # the rest of the long line
                    line = f.readline(inputs.LINE_LIMIT)
                continue
            if number == 1 and first:
                line = line.removeprefix(codecs.BOM_UTF8)
            if not line or line.isspace():  # blank (b"": a line that was a BOM alone)
                continue
            why = _record(line, out.records)
            if why is not None:
                torn = "" if line.endswith(b"\n") else " (a torn last line: a killed writer?)"
                out.skipped.append(Skipped(name, number, why + torn))
    except OSError as exc:
        out.skipped.append(Skipped(name, number + 1, f"cannot read: {exc.strerror}"))
    return number


def _record(line: bytes, into: list[dict[str, object]]) -> str | None:
    try:
        rec = inputs.loads_utf8(line, surrogates="replace")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte {exc.start})"
    except ValueError as exc:
        return f"not JSON ({str(exc)[:80]})"
    if not isinstance(rec, dict):
        return f"not a JSON object but {type(rec).__name__}"
    schema = rec.get("schema")
    # an int of ours: `[] in a set` raises (an array is unhashable), and true == 1
    if type(schema) is not int or schema not in RESULT_SCHEMAS:
        return f"unknown schema {str(schema)[:20]!r}"
    why = record_problem(rec)
    if why is None:
        into.append(rec)
    return why


# Field -> the JSON types it may hold (None: null). Booleans are never numbers here.
_FIELDS: dict[str, tuple[type | None, ...]] = {
    "cell": (str,), "key": (str,), "status": (str,), "evidence": (str,), "drift": (bool,),
    "expected": (dict,), "observed": (dict, None), "stack": (dict,), "scenario": (str,),
    "backend": (str,), "started": (str,), "seconds": (int, float), "image": (str,),
    "error": (str, None), "driver": (str, None), "gpu": (str, None), "host": (str, None),
    "engine": (str, None),
}  # fmt: skip
_OBSERVED: dict[str, tuple[type | None, ...]] = {
    "exit_code": (int, None), "signal": (int, None), "outcome": (str,), "stage": (str, None),
    "signature": (str, None), "decisive_line": (str, None), "fingerprint": (str, None),
    "secondary": (list,),
}  # fmt: skip
_EXPECTED: dict[str, tuple[type | None, ...]] = {
    "outcome": (str,),
    "signature": (str, None),
    "stage": (str, None),
}
EXIT_CODES = range(-(1 << 31), 1 << 31)


def _typed(value: object, kinds: tuple[type | None, ...]) -> bool:
    if value is None:
        return None in kinds
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return any(k is not None and k is not bool and isinstance(value, k) for k in kinds)


Kinds = tuple[type | None, ...]  # the JSON types a field may hold (None: null)
Table = dict[str, Kinds]
_ABSENT = object()


def _fields(rec: dict[str, Any], table: Table, where: str) -> str | None:
    """The first field, in the table's order, of a type it may not hold."""
    if _sound(rec, _FAST[where]):
        return None
    for name, kinds in table.items():
        if name in rec and not _typed(rec[name], kinds):
            return f"{where}{name} is {type(rec[name]).__name__}, not {_names(kinds)}"
    return None


def _sound(rec: dict[str, Any], fast: tuple[tuple[str, frozenset[type], Kinds], ...]) -> bool:
    """Every field of a type it may hold, one set lookup per field where the exact type says
    so (a float must be finite, a bool is only a bool: those go to _typed)."""
    for name, exact, kinds in fast:
        value = rec.get(name, _ABSENT)
        if value is not _ABSENT and type(value) not in exact and not _typed(value, kinds):
            return False
    return True


def _fast(table: Table) -> tuple[tuple[str, frozenset[type], Kinds], ...]:
    return tuple(
        (name, frozenset(type(None) if k is None else k for k in kinds if k is not float), kinds)
        for name, kinds in table.items()
    )


_FAST = {"": _fast(_FIELDS), "expected.": _fast(_EXPECTED), "observed.": _fast(_OBSERVED)}


def _names(kinds: tuple[type | None, ...]) -> str:
    return " or ".join("null" if k is None else k.__name__ for k in kinds)


def record_problem(rec: dict[str, Any]) -> str | None:
    """Why a JSON object is not a journal record, field by field (strict types), or None.

    A record whose fields have the exact types of one found sound before (its shape) needs only
    its values checked (seconds, exit codes, secondary): 100,000 records share a few shapes."""
    shape = _shape(rec)
    if shape in _SOUND and _values_sound(rec):
        return None
    why = problem(rec)
    if why is None and len(_SOUND) < _SHAPES:
        _SOUND.add(shape)
    return why


_SOUND: set[tuple[Any, ...]] = set()  # the shapes of records `problem` found sound
_SHAPES = 4096  # a hostile journal of ever new shapes only ever takes the slow way


def _shape(rec: dict[str, Any]) -> tuple[Any, ...]:
    """Each field's name and exact type, in order, the nested objects' too: all that the
    verdict of `problem` depends on but for the values _values_sound checks."""
    e, o = rec.get("expected"), rec.get("observed")
    return (
        tuple(rec), tuple(map(type, rec.values())),
        (tuple(e), tuple(map(type, e.values()))) if type(e) is dict else None,
        (tuple(o), tuple(map(type, o.values()))) if type(o) is dict else None,
    )  # fmt: skip


def _values_sound(rec: dict[str, Any]) -> bool:
    """What `problem` checks beyond types, for a record of a sound shape: the only float a
    sound shape can hold is `seconds` (finite, not negative), the only ints it checks the range
    of are the observed exit code and signal, and secondary holds strings."""
    seconds = rec.get("seconds")
    if type(seconds) is float:
        if not 0 <= seconds <= _MAX_FLOAT:  # not NaN, not infinite
            return False
    elif type(seconds) is int and seconds < 0:
        return False
    observed = rec.get("observed")
    if type(observed) is dict:
        code, signal = observed.get("exit_code"), observed.get("signal")
        if type(code) is int and code not in EXIT_CODES:
            return False
        if type(signal) is int and signal not in EXIT_CODES:
            return False
        secondary = observed.get("secondary")
        if secondary and not all(isinstance(x, str) for x in secondary):
            return False
    return True


_MAX_FLOAT = sys.float_info.max


def problem(rec: dict[str, Any]) -> str | None:
    """record_problem the slow way: every field looked at, the first problem named."""
    why = _fields(rec, _FIELDS, "")
    if why is None and isinstance(rec.get("expected"), dict):
        why = _fields(rec["expected"], _EXPECTED, "expected.")
    observed = rec.get("observed")
    if why is None and isinstance(observed, dict):
        why = _fields(observed, _OBSERVED, "observed.")
        for name in ("exit_code", "signal"):
            value = observed.get(name)
            if why is None and isinstance(value, int) and value not in EXIT_CODES:
                why = f"observed.{name} {observed[name]} is out of range"
        if why is None and not all(isinstance(x, str) for x in observed.get("secondary", [])):
            why = "observed.secondary holds a value that is not a string"
    if why is None and isinstance(rec.get("seconds"), int | float) and rec["seconds"] < 0:
        why = "seconds is negative"
    return why


def records(folder: Path) -> list[dict[str, object]]:
    """Every whole record in a results folder (bad lines skipped: `read` says which)."""
    return read(folder).records


def finished(folder: Path) -> dict[str, str]:
    """cell -> key of its last final result."""
    return {str(r["cell"]): str(r["key"]) for r in records(folder) if r.get("status") in FINAL}


def not_a_result(folder: Path, rec: Mapping[str, Any], exc: Exception) -> Skipped:
    """What is said of a record that RunResult.from_json refused."""
    why = f"not a result ({type(exc).__name__}: {str(exc)[:80]})"
    return Skipped(str(folder / JOURNAL), 0, f"{rec.get('cell')!r}: {why}")


def results(folder: Path, skipped: list[Skipped] | None = None) -> list[RunResult]:
    """Every whole record as a RunResult; one that is not is skipped and, given `skipped`,
    listed there with every other line left out."""
    got = read(folder)
    out = []
    for rec in got.records:
        try:
            out.append(RunResult.from_json(rec))
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            got.skipped.append(not_a_result(folder, rec, exc))
    if skipped is not None:
        skipped.extend(got.skipped)
    return out
