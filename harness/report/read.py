"""What the report reads: each results folder's plan.json as a Plan, its journal as RunResults.

`read_*` does the I/O; `parse_plan` turns one plan.json's data into a Plan or raises a
ConfigError naming the file. A journal record that is not a result is skipped, like a torn line.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from harness import inputs, journal, proc
from harness.errors import ConfigError
from harness.matrix import cell_id
from harness.model import Plan, RunResult, Where
from harness.report.rows import Rows, Slugs


@contextmanager
def cycles_uncollected() -> Iterator[None]:
    """Python's cycle collector paused: the report holds millions of objects (records, rows,
    texts) for its whole run and makes no cycles worth collecting, and each collection walks
    them all again (a third of the CPU time on 100,000 cells). Reference counting still frees
    everything; collection resumes after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


PLAN = "plan.json"
_PLAN_HELP = "write it with `stackmatrix plan --format json`"


def read_plans(folders: Sequence[Path]) -> list[Plan]:
    out = []
    for path in (f / PLAN for f in folders):
        if path.exists() or path.is_symlink():
            data = inputs.read_json(path, limit=inputs.PLAN_LIMIT, help=_PLAN_HELP)
            out.append(parse_plan(data, Where(str(path))))
    return out


def parse_plan(data: Any, where: Where) -> Plan:
    try:
        plan = Plan.from_json(data)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"not a plan: {type(exc).__name__} {exc}", where=where, help=_PLAN_HELP
        ) from None
    if plan.shard is not None and not 1 <= plan.shard[0] <= plan.shard[1]:
        i, n = plan.shard
        raise ConfigError(f"not a plan: shard {i}/{n}", where=where, help=_PLAN_HELP)
    slugs = Slugs()
    for cell in plan.cells:
        want = cell_id(slugs[cell.stack], cell.scenario, cell.driver)
        if cell.id != want:  # the report's grid relies on it
            raise ConfigError(
                f"not a plan: cell {cell.id!r} is not {want}",
                where=where,
                help=_PLAN_HELP,
            )
    return plan


def read_results(folders: Sequence[Path]) -> list[RunResult]:
    """Folder order, then file order: the tie-break when two records start in the same second."""
    _exist(folders)
    skipped: list[journal.Skipped] = []
    out = [r for folder in folders for r in journal.results(folder, skipped)]
    _warn_skipped(skipped)
    return out


def read_rows(folders: Sequence[Path], meanwhile: Callable[[], None] | None = None) -> Rows:
    """read_results as the frame's rows: the same results in the same order, the same lines
    skipped with the same words, most records made rows without a RunResult between. A large
    journal file is read by two processes, a part each (_file_rows). `meanwhile`: work of the
    caller's done once, while the first such child reads (before any reading where there is
    none); where it raises, the child is stopped and nothing is read."""
    _exist(folders)
    skipped: list[journal.Skipped] = []
    rows = Rows()
    todo = [meanwhile] if meanwhile else []
    for folder in folders:
        lines: list[journal.Skipped] = []  # as journal.read names them: every file's, in order
        refused: list[journal.Skipped] = []
        for path in journal.files(folder):
            refused += _file_rows(folder, path, rows, lines, todo)
        skipped += lines + refused
    for work in todo:  # no file was split: before the warnings, as it would have been
        work()
    _warn_skipped(skipped)
    return rows


def _add(folder: Path, records: list[dict[str, object]], rows: Rows) -> list[journal.Skipped]:
    """Journal records as rows; the records that are not results."""
    refused = []
    for rec in records:
        try:
            if rows.record(rec):
                continue
        except (KeyError, ValueError, TypeError, AttributeError):
            pass  # the slow way below says why, in its words
        try:
            rows.add(RunResult.from_json(rec))
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            refused.append(journal.not_a_result(folder, rec, exc))
    return refused


def _read(folder: Path, path: Path, rows: Rows, start: int = 0, stop: int | None = None) -> _Part:
    got = journal.Read([], [])
    lines = journal.read_file(path, got, start, stop)
    return _Part(lines, got.skipped, _add(folder, got.records, rows))


@dataclass(frozen=True, slots=True)
class _Part:
    """What a part of a journal file gave: its lines, the lines skipped, the records refused."""

    lines: int
    skipped: list[journal.Skipped]
    refused: list[journal.Skipped]


SPLIT_AT = 8 << 20  # bytes: a journal file this large is read by two processes, a part each


def _file_rows(
    folder: Path,
    path: Path,
    rows: Rows,
    skipped: list[journal.Skipped],
    todo: list[Callable[[], None]],
) -> list[journal.Skipped]:
    """One journal file's rows into `rows` and its skipped lines into `skipped`; the records
    refused. From SPLIT_AT bytes on, a forked child reads the file's second part (_middle) and
    hands its rows back pickled through an unlinked temporary file, while this process reads
    the first: the same rows in the same order, each line named by its number in the file.
    Where the child cannot be had or fails, this process reads that part too. `todo`: work
    this process does first while the child reads (taken from the list: done once)."""
    middle = _middle(path, shared=bool(todo))
    parts = None if middle is None else _split(folder, path, rows, middle, todo)
    if parts is None:
        part = _read(folder, path, rows)
        skipped += part.skipped
        return part.refused
    mine, theirs = parts
    skipped += mine.skipped + [
        replace(s, line=s.line + mine.lines) if s.line else s for s in theirs.skipped
    ]
    return mine.refused + theirs.refused


def _split(
    folder: Path, path: Path, rows: Rows, middle: int, todo: list[Callable[[], None]]
) -> tuple[_Part, _Part] | None:
    """The two parts of a journal file, read as _file_rows says; None where no temporary file
    can be had (a full or read-only temporary folder): nothing is read then."""
    try:  # unlinked when made: nothing to leave behind, even when this process is killed
        hand = tempfile.TemporaryFile()  # noqa: SIM115 (closed below; its OSError alone caught)
    except OSError:
        return None
    with hand:

        def second() -> None:
            theirs = Rows()
            part = _read(folder, path, theirs, middle)
            theirs.texts.clear()  # what made equal texts one object here: not wanted there
            pickle.dump((part, theirs), hand, pickle.HIGHEST_PROTOCOL)
            hand.flush()  # the child leaves by os._exit: no buffer is flushed for it

        child = proc.fork(second, ("read",))
        try:
            while todo:
                todo.pop(0)()
            mine = _read(folder, path, rows, 0, middle)
            theirs = _taken(child, hand, rows)
        except BaseException:
            if child:
                child.wait(stop=True)
            raise
    return mine, theirs or _read(folder, path, rows, middle)


def _taken(child: proc.Forked | None, hand: IO[bytes], rows: Rows) -> _Part | None:
    """The child's part, its rows and stacks added to `rows`; None where it did not finish."""
    if child is None or not child.wait():
        return None
    hand.seek(0)
    try:  # what our own child wrote, to a file no one else can name (unlinked when made)
        got: tuple[_Part, Rows] = pickle.load(hand)
    except (EOFError, pickle.UnpicklingError):
        return None
    part, theirs = got
    rows.rows += theirs.rows
    rows.placed += theirs.placed
    rows.slugs.absorb(theirs.slugs)
    return part


def _middle(path: Path, shared: bool = False) -> int | None:
    """Where a regular file of SPLIT_AT bytes or more is split: the start of the first line
    after 3/5 of it (the child also pickles its rows, and this process only unpickles them:
    measured fastest on 2 cores), or after 2/5 where this process has the caller's work to do
    first (`shared`: `harness report` loads pandas and the catalog, half a second); None for a
    smaller file, one that cannot be read (the whole file's reader says so, once), or one
    whose line there is longer than a record may be."""
    try:
        with os.fdopen(inputs.open_regular(path, str(path), ""), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < SPLIT_AT:
                return None
            at = size * (2 if shared else 3) // 5
            f.seek(at)
            chunk = f.read(inputs.LINE_LIMIT + 1)
    except (ConfigError, OSError):
        return None
    end = chunk.find(b"\n")
    return None if end < 0 or at + end + 1 >= size else at + end + 1


def _exist(folders: Sequence[Path]) -> None:
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(
                f"results folder {folder} does not exist",
                help="run `nox -s matrix` first, or pass --results FOLDER",
            )


def _warn_skipped(skipped: list[journal.Skipped]) -> None:
    for s in skipped[:MAX_WARNINGS]:
        warn(str(s))
    if len(skipped) > MAX_WARNINGS:
        warn(f"warning: {len(skipped) - MAX_WARNINGS} more journal lines skipped")


MAX_WARNINGS = 20


def warn(text: str) -> None:
    print(text, file=sys.stderr)
