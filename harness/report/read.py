"""What the report reads: each results folder's plan.json as a Plan, its journal as RunResults.

`read_*` does the I/O; `parse_plan` turns one plan.json's data into a Plan or raises a
ConfigError naming the file. A journal record that is not a result is skipped, like a torn line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import inputs, journal
from harness.errors import ConfigError
from harness.matrix import cell_id
from harness.model import Plan, RunResult, Where
from harness.report.frame import Rows, Slugs

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


def read_rows(folders: Sequence[Path]) -> Rows:
    """read_results as the frame's rows: the same results in the same order, the same lines
    skipped with the same words, most records made rows without a RunResult between."""
    _exist(folders)
    skipped: list[journal.Skipped] = []
    rows = Rows()
    for folder in folders:
        got = journal.read(folder)
        refused = []
        for rec in got.records:
            try:
                if rows.record(rec):
                    continue
            except (KeyError, ValueError, TypeError, AttributeError):
                pass  # the slow way below says why, in its words
            try:
                rows.add(RunResult.from_json(rec))
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                refused.append(journal.not_a_result(folder, rec, exc))
        skipped += got.skipped + refused
    _warn_skipped(skipped)
    return rows


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
