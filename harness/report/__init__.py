"""`harness report`: typed journal records and plans -> one pandas frame -> Markdown, HTML, CSV,
JUnit. read (plan.json -> Plan, journals -> RunResult), frame (those -> the frame), types (the
values), summary (counts, header, completeness, diff), md, html, export (CSV and JUnit), write
(`write_all`: the only writer)."""

from __future__ import annotations

from harness.report.frame import reproduce_command
from harness.report.types import Change, Counts, Diff, Header, ReportSummary
from harness.report.write import write_all

__all__ = [
    "Change",
    "Counts",
    "Diff",
    "Header",
    "ReportSummary",
    "reproduce_command",
    "write_all",
]
