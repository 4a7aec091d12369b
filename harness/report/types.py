"""The report's values: what `write_all` returns (ReportSummary, its Counts and Diff) and the
Header every rendering shows, with the one-line texts the CLI and the Markdown share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    cells: int
    passed: int
    failed_as_expected: int
    drift: int
    timeout: int
    errored: int
    interrupted: int
    predicted: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    cell: str
    before: str
    after: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Diff:
    """Against the previous report in the same folder; `previous` False: there was none."""

    previous: bool
    new_failures: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    changed: tuple[Change, ...] = ()  # the observed verdict (signature, stage) changed
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Header:
    profile: str
    driver: str
    gpu: str
    newest: str
    completeness: str
    backends: str

    def pairs(self) -> tuple[tuple[str, str], ...]:
        return (
            ("profile", self.profile),
            ("driver", self.driver),
            ("GPU", self.gpu),
            ("newest result", self.newest),
            ("completeness", self.completeness),
            ("backends", self.backends),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportSummary:
    """What `write_all` did; `partial` None: no plan.json, so completeness is unknown. `gaps`:
    what the plans leave out of their profiles (a shard not here, cells chosen by a selector)."""

    counts: Counts
    partial: bool | None
    finished: int
    planned: int | None
    drift: tuple[str, ...]
    diff: Diff
    paths: tuple[Path, ...]
    gaps: tuple[str, ...] = ()

    def text(self) -> str:
        c = self.counts
        lines = [
            f"{c.cells} cells: {c.passed} pass, {c.failed_as_expected} fail as expected, "
            f"{c.drift} drift, {c.timeout} timeout, {c.errored} errored, "
            f"{c.interrupted} interrupted, {c.predicted} predicted",
            completeness_text(self.partial, self.finished, self.planned, self.gaps),
            diff_line(self.diff),
        ]
        return "\n".join(lines + [f"wrote {p}" for p in self.paths]) + "\n"


def completeness_text(
    partial: bool | None, finished: int, planned: int | None, gaps: Sequence[str] = ()
) -> str:
    if planned is None:
        return f"completeness unknown (no plan.json): {finished} cells finished"
    word = "PARTIAL" if partial else "COMPLETE"
    why = f" ({'; '.join(gaps)})" if gaps else ""
    return f"{word}: {finished} of {planned} cells have results{why}"


def diff_line(d: Diff) -> str:
    if not d.previous:
        return "no previous report to compare with"
    return (
        f"since the previous report: {len(d.new_failures)} new failures, {len(d.fixed)} fixed, "
        f"{len(d.changed)} changed, {len(d.added)} new cells, {len(d.removed)} removed"
    )
