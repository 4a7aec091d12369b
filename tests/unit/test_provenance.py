"""Provenance: each result journals the host (a digest of its machine id) and the engine that ran
it; the report says how many cells ran on this machine and where the others came from. Records
written before schema 3 still load, and name no host."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.host import host_id
from harness.journal import results
from harness.model import RESULT_SCHEMA, Outcome, RunResult
from harness.report import ReportSummary, write_all
from harness.report.summary import RERUN_HINT
from tests.conftest import ROOT
from tests.unit.test_report import CATALOG, T1, T2, TF, journal, observed, result

HERE, THERE = "aaaaaaaaaaaa", "bbbbbbbbbbbb"


def ran(cell: str, host: str | None, engine: str | None = "Docker 27.3.1") -> dict[str, Any]:
    return result(cell, "passed", observed(Outcome.PASS), host=host, engine=engine)


def test_host_id_is_a_digest_of_the_machine_id(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_text("0123456789abcdef0123456789abcdef\n", encoding="ascii")
    two.write_text("fedcba9876543210fedcba9876543210\n", encoding="ascii")
    first = host_id([str(one)])
    assert len(first) == 12 and int(first, 16) >= 0
    assert first == host_id([str(tmp_path / "missing"), str(one)])  # the first file there
    assert first != host_id([str(two)])
    assert first not in one.read_text(encoding="ascii")  # never the id itself


@pytest.mark.parametrize("text", ["", "uninitialized\n"])
def test_host_id_without_a_machine_id_is_the_host_name(tmp_path: Path, text: str) -> None:
    empty = tmp_path / "machine-id"
    empty.write_text(text, encoding="ascii")
    fallback = host_id([str(empty)])
    assert fallback == host_id([str(tmp_path / "missing")])
    assert len(fallback) == 12


def test_a_result_journals_its_host_and_engine(tmp_path: Path) -> None:
    rec = ran(f"{T1}/baseline", HERE)
    assert rec["schema"] == RESULT_SCHEMA == 3
    journal(tmp_path, [rec])
    [back] = results(tmp_path)
    assert (back.machine.host, back.machine.engine) == (HERE, "Docker 27.3.1")


def test_records_before_schema_3_load_and_name_no_host(tmp_path: Path) -> None:
    old = {k: v for k, v in ran(f"{T1}/baseline", HERE).items() if k not in ("host", "engine")}
    journal(tmp_path, [old | {"schema": 2}])
    [back] = results(tmp_path)
    assert (back.machine.host, back.machine.engine) == (None, None)
    assert RunResult.from_json(old).machine.host is None


def test_a_host_of_the_wrong_type_is_skipped(tmp_path: Path) -> None:
    skipped: list[Any] = []
    journal(tmp_path, [ran(f"{T1}/baseline", HERE) | {"host": 7}])
    assert results(tmp_path, skipped) == []
    assert "host is int, not str or null" in str(skipped[0])


def test_the_report_says_what_ran_here_and_where_the_rest_ran(tmp_path: Path) -> None:
    records = [
        ran(f"{T1}/baseline", HERE),
        ran(f"{T2}/baseline", THERE, "Docker 20.10.24+dfsg1"),
        ran(f"{T2}/missing-cudnn", THERE, "Docker 20.10.24+dfsg1"),
        {k: v for k, v in ran(f"{TF}/baseline", None).items() if k not in ("host", "engine")},
    ]
    folder = journal(tmp_path / "r", records, plan=True)
    summary = write(folder, tmp_path / "out", HERE)
    line = (
        "1 of 9 ran here; 3 from the journal (1 whose records name no host (journaled before "
        "schema 3); 2 on host bbbbbbbbbbbb with Docker 20.10.24+dfsg1)"
    )
    assert summary.provenance == line
    assert line in summary.text().splitlines()
    page = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "1 of 9 ran here" in page
    assert RERUN_HINT not in summary.text()  # one cell ran here


def test_nothing_ran_here_says_how_to_run_them_here(tmp_path: Path) -> None:
    folder = journal(tmp_path / "r", [ran(f"{T1}/baseline", THERE)], plan=True)
    summary = write(folder, tmp_path / "out", HERE)
    assert summary.provenance.startswith("0 of 9 ran here; 1 from the journal (1 on host ")
    assert summary.provenance.endswith(f"; {RERUN_HINT}")
    assert "--rerun" in summary.text()


def test_a_hostile_engine_text_is_escaped_on_the_page(tmp_path: Path) -> None:
    engine = "<script>alert(1)</script> \x1b[31mred"
    folder = journal(tmp_path / "r", [ran(f"{T1}/baseline", THERE, engine)], plan=True)
    summary = write(folder, tmp_path / "out", HERE)
    assert "\x1b" not in summary.text()
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


def write(folder: Path, out: Path, here: str) -> ReportSummary:
    return write_all([folder], out, catalog=CATALOG, env={}, here=here)


def test_a_fresh_clone_reports_0_of_60_ran_here(tmp_path: Path) -> None:
    """The committed journal of the smoke profile, reported on another machine: none of it ran
    there. (Where the journal was made on this very machine, its records are given another
    host id in a copy: the machine the test runs on is then the other machine.)"""
    from harness.host import host_id

    results = tmp_path / "results"
    shutil.copytree(ROOT / "reports" / "results", results)
    here = host_id()
    records = [json.loads(ln) for ln in (results / "journal.jsonl").read_text().splitlines()]
    for r in records:
        if r.get("host") == here:
            r["host"] = "0" * 12
    (results / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "report", "--results", str(results),
         "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "COMPLETE: 60 of 60 cells have results" in lines
    [line] = [ln for ln in lines if "ran here" in ln]
    assert line.startswith("0 of 60 ran here; 60 from the journal (")
    assert line.endswith(RERUN_HINT)
