"""`harness report`: typed journal records and plans -> one pandas frame -> Markdown, HTML, CSV,
JUnit. types (the values), frame (records and plans -> the frame), summary (counts, header,
diff), md, html, export (CSV and JUnit), write (`write_all`: the only writer)."""

from __future__ import annotations

from harness.report.frame import CellName, parse_cell_id, reproduce_command
from harness.report.types import Change, Counts, Diff, Header, ReportSummary
from harness.report.write import write_all

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
