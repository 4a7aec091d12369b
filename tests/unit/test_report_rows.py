"""The report reads journal records straight into the frame's rows (read_rows), the way
RunResult.from_json and _result_row would make them (read_results): the same frame and the same
skip warnings for any journal, hostile ones included."""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import journal
from harness.report.frame import build_frame
from harness.report.read import read_results, read_rows
from tests.conftest import ROOT

BASE = [
    json.loads(line)
    for line in (ROOT / "reports/results/journal.jsonl").read_text().splitlines()[:6]
]
ODD_VALUES = [
    None, "", "x", 0, 1, -1, 1.5, True, False, [], {}, ["a"], {"a": 1}, "passed", "fail", "pass",
    "gpu", "build_info", "none", "535.104.05", "\x1b[31mred", 2**70,
]  # fmt: skip
ODD = st.sampled_from(ODD_VALUES)
PATHS = [
    ("cell",), ("scenario",), ("status",), ("evidence",), ("key",), ("drift",), ("backend",),
    ("started",), ("seconds",), ("image",), ("error",), ("driver",), ("gpu",), ("host",),
    ("engine",), ("placed_driver",), ("base_image",), ("schema",), ("stack",),
    ("stack", "framework"), ("stack", "framework_version"), ("stack", "cuda"),
    ("stack", "cudnn"), ("stack", "python"), ("stack", "base"), ("expected",),
    ("expected", "outcome"), ("expected", "signature"), ("expected", "stage"), ("observed",),
    ("observed", "outcome"), ("observed", "stage"), ("observed", "signature"),
    ("observed", "decisive_line"), ("observed", "fingerprint"), ("observed", "secondary"),
    ("observed", "exit_code"), ("observed", "signal"),
]  # fmt: skip


def mutate(rec: dict[str, Any], path: tuple[str, ...], value: Any, drop: bool) -> None:
    box = rec
    for part in path[:-1]:
        if not isinstance(box.get(part), dict):
            return
        box = box[part]
    if drop:
        box.pop(path[-1], None)
    else:
        box[path[-1]] = value


def frame_and_warnings(read: Any, folder: Path) -> tuple[pd.DataFrame | str, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            frame = build_frame(read([folder]), [])
        except Exception as exc:  # the same error either way is what is tested
            frame = f"{type(exc).__name__}: {exc}"
    return frame, err.getvalue()


def same(a: pd.DataFrame | str, b: pd.DataFrame | str) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return list(a.columns) == list(b.columns) and a.astype(str).equals(b.astype(str))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(0, len(BASE) - 1), st.lists(
            st.tuples(st.sampled_from(PATHS), ODD, st.booleans()), max_size=3
        )),
        min_size=1, max_size=8,
    )
)  # fmt: skip
def test_rows_read_as_results_would_be(tmp_path: Path, edits: list[Any]) -> None:
    folder = tmp_path / f"j{abs(hash(repr(edits)))}"
    folder.mkdir()
    with (folder / "journal.jsonl").open("w") as f:
        for i, changes in edits:
            rec = copy.deepcopy(BASE[i])
            for path, value, drop in changes:
                mutate(rec, path, value, drop)
            f.write(json.dumps(rec) + "\n")
    slow, fast = frame_and_warnings(read_results, folder), frame_and_warnings(read_rows, folder)
    assert fast[1] == slow[1], "the same lines skipped, with the same words"
    assert same(fast[0], slow[0])


def test_the_committed_journals_read_the_same_both_ways() -> None:
    for folder in (ROOT / "reports/results", ROOT / "reports/releases/results"):
        slow, fast = frame_and_warnings(read_results, folder), frame_and_warnings(read_rows, folder)
        assert fast[1] == slow[1] and same(fast[0], slow[0]), folder


def odd_records() -> Iterator[tuple[int, str]]:
    """Each field of a record dropped, and set to each odd value, one record (a JSON line) for
    each, with the index of its value."""
    for n, path in enumerate(PATHS):
        for k, value in enumerate([*ODD_VALUES, "DROP"]):
            rec = copy.deepcopy(BASE[(n + k) % len(BASE)])
            # a cell of its own: the report keeps one result per cell
            rec["scenario"] = f"s{n}-{k}"
            rec["cell"] = f"{rec['cell'].split('/')[0]}/s{n}-{k}"
            mutate(rec, path, value, value == "DROP")
            yield k, json.dumps(rec)


def test_every_field_dropped_or_odd_one_at_a_time(tmp_path: Path) -> None:
    """Each field of a record dropped, and set to each odd value, one record for each: every
    way one field can be wrong, in one journal."""
    records = [line for _, line in odd_records()]
    (tmp_path / "journal.jsonl").write_text("\n".join(records) + "\n")
    slow, fast = frame_and_warnings(read_results, tmp_path), frame_and_warnings(read_rows, tmp_path)
    assert fast[1] == slow[1]
    assert same(fast[0], slow[0])


ODD_NUMBERS = [-1, -1.5, 2**31, -(2**31) - 1, 1e308, 0, 0.0, 3]


def test_a_records_shape_decides_no_verdict_its_values_do_not() -> None:
    """record_problem takes a shortcut for a record of a shape seen sound; it must say what
    the slow way says for every record, its shapes cached or not (each record checked twice:
    the second time its own shape may be cached)."""
    records = []
    for n, path in enumerate(PATHS):
        for k, value in enumerate([*ODD_VALUES, *ODD_NUMBERS, float("nan"), float("inf"), "DROP"]):
            rec = copy.deepcopy(BASE[(n + k) % len(BASE)])
            mutate(rec, path, value, value == "DROP")
            records.append(rec)
    for rec in records[::-1]:
        rec2 = copy.deepcopy(rec)
        rec2.setdefault("observed", {})
        if isinstance(rec2["observed"], dict):
            rec2["observed"]["secondary"] = ["a", 1]
        records.append(rec2)
    for _ in range(2):
        for rec in records:
            assert journal.record_problem(rec) == journal.problem(rec), rec
    assert journal._SOUND, "sound shapes were cached"


# ---------------------------------------------------------------- a journal read in two parts


@pytest.fixture(autouse=True)
def every_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every skipped line named (not the first 20): both parts' line numbers are compared."""
    from harness.report import read

    monkeypatch.setattr(read, "MAX_WARNINGS", 10**6)


def hostile_journal(folder: Path) -> Path:
    """Every way one field can be wrong (as above), lines that are no record at all, a BOM, blank
    lines and a torn last line: bad lines in both parts of the file."""
    lines = ["\ufeff" + json.dumps(BASE[0]), "not json", "", "[1, 2]", '{"schema": 99}']
    for k, line in odd_records():
        lines.append(line)
        if k % 7 == 0:
            lines += ["\xff garbage", "   "]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "journal.jsonl").write_text("\n".join(lines) + '\n{"cell": "torn', encoding="utf-8")
    return folder


def alone_elsewhere(request: pytest.FixtureRequest) -> bool:
    """Where this process has other threads (an earlier test's may live on), proc.fork forks
    nothing, on purpose, and a test of the forked reader would test the fall-back only: it is run
    again in a pytest of its own, of one thread. True when it was (and passed there)."""
    if threading.active_count() == 1:
        return False
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", request.node.nodeid]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout, done.stdout[-2000:]
    return True


def split_read(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *, child_fails: bool = False
) -> tuple[tuple[pd.DataFrame | str, str], list[str]]:
    """read_rows with every journal file split in two (SPLIT_AT 1 byte); the forks it had (a
    child each: none where proc.fork could not have one)."""
    from harness.report import read

    forks: list[str] = []
    real = read.proc.fork

    def fork(job: Any, names: tuple[str, ...] = ()) -> Any:
        child = real(job, names)
        if child is not None:
            forks.extend(names)
        return child

    monkeypatch.setattr(read, "SPLIT_AT", 1)
    monkeypatch.setattr(read.proc, "fork", fork)
    if child_fails:  # the child's pickle fails in the child: it exits 1, this process reads on
        monkeypatch.setattr(read.pickle, "dump", lambda *a, **k: 1 / 0)
    return frame_and_warnings(read_rows, folder), forks


def test_a_journal_read_in_two_parts_reads_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if alone_elsewhere(request):
        return
    folder = hostile_journal(tmp_path / "r")
    slow = frame_and_warnings(read_results, folder)
    fast, forks = split_read(folder, monkeypatch)
    assert forks == ["read"], "a child read the second half"
    assert fast[1] == slow[1], "the same lines skipped, numbered in the whole file"
    assert "journal.jsonl:1:" not in fast[1]  # the BOM line is a record
    assert fast[1].count("\n") > 100 and "a torn last line" in fast[1]
    assert same(fast[0], slow[0])


def test_a_half_the_child_could_not_read_is_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if alone_elsewhere(request):
        return
    folder = hostile_journal(tmp_path / "r")
    slow = frame_and_warnings(read_results, folder)
    fast, forks = split_read(folder, monkeypatch, child_fails=True)
    assert forks == ["read"]
    assert fast[1] == slow[1] and same(fast[0], slow[0])


def test_a_long_line_across_the_middle_leaves_the_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No newline within a record's length after the middle: the file is not split (and the
    long line is skipped once, as a reader of the whole file skips it)."""
    from harness import inputs

    folder = tmp_path / "r"
    folder.mkdir()
    long = "x" * (3 * inputs.LINE_LIMIT)
    text = f"{json.dumps(BASE[0])}\n{long}\n{json.dumps(BASE[1])}\n"
    (folder / "journal.jsonl").write_text(text, encoding="utf-8")
    slow = frame_and_warnings(read_results, folder)
    fast, forks = split_read(folder, monkeypatch)
    assert forks == [] and fast[1] == slow[1] and same(fast[0], slow[0])
    assert fast[1].count("longer than") == 1


def test_equal_texts_of_two_records_are_one_object(tmp_path: Path) -> None:
    """Each record's texts are new strings from the parser; the rows keep one object for each
    distinct text (a column of 100,000 rows then reads a few dozen objects: measured 6.2 -> 4.8 s
    on bench/report_cli_bench.py's 100,000 cells), and each row keeps its own values."""
    from harness.report.rows import COLUMNS, TEXT

    a, b = copy.deepcopy(BASE[0]), copy.deepcopy(BASE[0])
    b["cell"], b["scenario"] = f"{a['cell'].split('/')[0]}/other", "other"
    (tmp_path / "journal.jsonl").write_text(f"{json.dumps(a)}\n{json.dumps(b)}\n")
    first, second = read_rows([tmp_path]).rows
    assert len(first) == len(COLUMNS)
    for i, name in enumerate(TEXT):
        if name in ("cell", "scenario"):
            assert first[i] != second[i], name
        elif name != "stack":  # the stack's slug is shared by Slugs already
            assert first[i] == second[i] and first[i] is second[i], name


def test_the_callers_work_runs_once_while_the_child_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """`harness report` loads pandas and the catalog while a child reads a large journal's
    second part: that work runs once, after the fork and before this process reads, and the
    rows are those of a read without it."""
    if alone_elsewhere(request):
        return
    from harness.report import read

    folders = [hostile_journal(tmp_path / "a"), hostile_journal(tmp_path / "b")]
    plain = frame_and_warnings(lambda f: read_rows(folders), folders[0])
    events: list[str] = []
    real = read.proc.fork

    def fork(job: Any, names: tuple[str, ...] = ()) -> Any:
        child = real(job, names)
        events.append("fork" if child is not None else "no child")
        return child

    real_read = read._read

    def reading(*args: Any) -> Any:
        events.append("read")
        return real_read(*args)

    monkeypatch.setattr(read, "SPLIT_AT", 1)
    monkeypatch.setattr(read.proc, "fork", fork)
    monkeypatch.setattr(read, "_read", reading)
    got = frame_and_warnings(
        lambda f: read_rows(folders, meanwhile=lambda: events.append("meanwhile")), folders[0]
    )
    assert events[:3] == ["fork", "meanwhile", "read"] and events.count("meanwhile") == 1
    assert events.count("fork") == 2, "each folder's journal split"
    assert got[1] == plain[1] and same(got[0], plain[0])


def test_the_callers_work_that_fails_stops_the_reading_child(tmp_path: Path) -> None:
    """A catalog that cannot be loaded (say) while the child reads: its error, the child
    stopped and reaped, nothing left running. In a fresh interpreter: where this one has other
    threads (a test before may leave one), proc.fork forks nothing, on purpose."""
    code = """if True:
        import os, sys
        from pathlib import Path
        from harness.errors import ConfigError
        from harness.report import read
        from tests.unit.test_report_rows import hostile_journal

        folder = hostile_journal(Path(sys.argv[1]) / "r")
        children = []
        real = read.proc.fork

        def fork(job, names=()):
            children.append(real(job, names))
            return children[-1]

        def fails():
            raise ConfigError("the catalog is broken")

        read.SPLIT_AT = 1
        read.proc.fork = fork
        try:
            read.read_rows([folder], meanwhile=fails)
        except ConfigError as exc:
            assert "the catalog is broken" in str(exc), exc
        else:
            sys.exit("no error")
        child = children[0]
        assert child is not None and child.status is not None, "forked, stopped and reaped"
        try:
            os.waitpid(child.pid, os.WNOHANG)
        except ChildProcessError:
            print("reaped")
    """
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == "reaped\n", done.stderr


def test_the_callers_work_without_a_large_journal_runs_before_the_warnings(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "journal.jsonl").write_text(f"{json.dumps(BASE[0])}\nnot json\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rows = read_rows([folder], meanwhile=lambda: print("meanwhile", file=sys.stderr))
    assert len(rows.rows) == 1
    assert err.getvalue().startswith("meanwhile\n") and "not JSON" in err.getvalue()


def test_the_journal_reader_loads_without_pandas() -> None:
    """What lets `harness report` read while pandas loads: read and rows need none of it."""
    code = "import sys, harness.report.read; sys.exit('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_the_report_pauses_cycle_collection_from_reading_to_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`harness report` reads and writes with Python's cycle collector paused (read.
    cycles_uncollected: collections walked every row read so far, half a second on 100,000
    cells), and leaves it as it found it."""
    from harness import cli
    from harness.report import read, write

    seen: list[tuple[str, bool]] = []

    def watched(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen.append((name, gc.isenabled()))
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(read, "read_rows", watched("read", read.read_rows))
    monkeypatch.setattr(write, "write_all", watched("write", write.write_all))
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "journal.jsonl").write_text(json.dumps(BASE[0]) + "\n", encoding="utf-8")
    argv = ["report", "--matrix", str(ROOT / "matrix.yaml"), "--results", str(folder)]
    argv += ["--out", str(tmp_path / "out"), "--allow-drift", "--allow-partial"]
    assert gc.isenabled()
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(argv) == 0
    assert seen == [("read", False), ("write", False)]
    assert gc.isenabled()
