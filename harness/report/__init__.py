"""`harness report`: journal records and plans -> one pandas frame -> Markdown, HTML, CSV, JUnit."""

from __future__ import annotations

from harness.report.write import (
    CellName,
    Change,
    Counts,
    Diff,
    Header,
    ReportSummary,
    parse_cell_id,
    reproduce_command,
    write_all,
)

__all__ = [
    "CellName",
    "Change",
    "Counts",
    "Diff",
    "Header",
    "ReportSummary",
    "parse_cell_id",
    "reproduce_command",
    "write_all",
]
