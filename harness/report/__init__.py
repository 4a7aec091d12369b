"""`harness report`: typed journal records and plans -> one pandas frame -> Markdown, HTML, CSV,
JUnit. read (plan.json -> Plan, journals -> rows), rows (a journal record -> a row, without
pandas), frame (those -> the frame), types (the values), summary (counts, header, completeness,
diff), md, html, export (CSV and JUnit), write (`write_all`: the only writer).

The names below load on first use (PEP 562), so `harness.report.read` and `harness.report.rows`
can be imported without pandas: the report starts reading its journals while pandas loads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.report.frame import reproduce_command
    from harness.report.types import Change, Counts, Diff, Header, ReportSummary
    from harness.report.write import write_all

_WHERE = {
    "Change": "types", "Counts": "types", "Diff": "types", "Header": "types",
    "ReportSummary": "types", "reproduce_command": "frame", "write_all": "write",
}  # fmt: skip

__all__ = [
    "Change",
    "Counts",
    "Diff",
    "Header",
    "ReportSummary",
    "reproduce_command",
    "write_all",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"harness.report.{_WHERE[name]}"), name)
