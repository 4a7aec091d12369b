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
    unobservable: int = 0  # the fault could not show here: never a pass
    levels: tuple[tuple[str, int], ...] = ()  # evidence level -> cells, in LEVEL_ORDER

    def items(self) -> tuple[tuple[str, int], ...]:
        """(name, count) in the order every rendering shows them."""
        return (
            ("cells", self.cells),
            ("pass", self.passed),
            ("fail as expected", self.failed_as_expected),
            ("not observable here", self.unobservable),
            ("drift", self.drift),
            ("timeout", self.timeout),
            ("errored", self.errored),
            ("interrupted", self.interrupted),
            ("predicted", self.predicted),
        )

    def text(self) -> str:
        (_, cells), *rest = self.items()
        levels = ", ".join(f"{n} {name}" for name, n in self.levels)
        tally = ", ".join(f"{n} {name}" for name, n in rest)
        return f"{cells} cells: {tally}" + (f"; evidence: {levels}" if levels else "")


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
class Origin:
    """What made the report: the harness version, its git commit, the matrix file's digest."""

    version: str
    commit: str = "unknown"
    matrix: str = "unknown"

    def text(self) -> str:
        return f"stackmatrix {self.version} (commit {self.commit})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Header:
    profile: str
    driver: str
    gpu: str
    newest: str
    completeness: str
    backends: str
    origin: Origin
    standins: str = ""  # stand-in bases the images were built FROM (no registry here)
    provenance: str = ""  # how many cells ran on this machine, and where the others ran

    def pairs(self) -> tuple[tuple[str, str], ...]:
        stand = (("built FROM stand-ins (not NVIDIA's images)", self.standins),)
        return (*(stand if self.standins else ()), *self._pairs())

    def _pairs(self) -> tuple[tuple[str, str], ...]:
        return (
            ("harness", self.origin.text()),
            ("matrix", self.origin.matrix),
            ("profile", self.profile),
            ("driver", self.driver),
            ("GPU", self.gpu),
            ("newest result", self.newest),
            ("completeness", self.completeness),
            ("provenance", self.provenance),
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
    shard: tuple[int, int] | None = None  # these results are one shard of a plan
    why: tuple[str, ...] = ()  # per drift cell: "expected ..., observed ..."
    provenance: str = ""  # Header.provenance

    @property
    def completeness(self) -> str:
        return completeness_text(self.partial, self.finished, self.planned, self.gaps, self.shard)

    @property
    def empty(self) -> bool:
        """Nothing finished: a run that did no work is no evidence of anything."""
        return self.finished == 0

    def text(self) -> str:
        lines = [
            self.counts.text(),
            self.completeness,
            *([self.provenance] if self.provenance else []),
            diff_line(self.diff),
        ]
        return "\n".join(lines + [f"wrote {p}" for p in self.paths]) + "\n"


def completeness_text(
    partial: bool | None,
    finished: int,
    planned: int | None,
    gaps: Sequence[str] = (),
    shard: tuple[int, int] | None = None,
) -> str:
    if planned is None:
        return f"completeness unknown (no plan.json): {finished} cells finished"
    word = "PARTIAL" if partial else "COMPLETE"
    of = f"shard {shard[0]} of {shard[1]}: " if shard else ""
    why = f" ({'; '.join(gaps)})" if gaps else ""
    return f"{word}: {of}{finished} of {planned} cells have results{why}"


def diff_line(d: Diff) -> str:
    if not d.previous:
        return "no previous report to compare with"
    return (
        f"since the previous report: {len(d.new_failures)} new failures, {len(d.fixed)} fixed, "
        f"{len(d.changed)} changed, {len(d.added)} new cells, {len(d.removed)} removed"
    )
