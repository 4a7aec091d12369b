"""The published report: `write_all` reads every results folder, builds the frame
(report_frame), and writes COMPATIBILITY.md and SIGNATURES.md (report_md), index.html
(report_html), results.csv, junit.xml, DIFF.md and report.json into one folder; it is the only
function here that writes. It returns a ReportSummary for the CLI to print.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from harness.fs import atomic_write
from harness.journal import FINAL
from harness.model import Signature
from harness.report.frame import (
    NOT_RUN,
    PREDICTED,
    CellName,
    build_frame,
    parse_cell_id,
    read_plans,
    read_records,
    reproduce_command,
)
from harness.report.html import render_page
from harness.report.md import compatibility, diff_line, diff_markdown, signatures, step_summary

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

SNAPSHOT = "report.json"  # what the next report diffs against
BAD = frozenset({"drift", "timeout", "errored"})  # what CI should look at
OBSERVED = frozenset({"pass", "expected-fail", "drift", "timeout"})  # a run showed this
# Characters XML 1.0 cannot hold at all, escaped or not. The frame already drops control
# characters from log lines; this guards every field that reaches junit.xml.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


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
    """What `write_all` did; `partial` None: no plan.json, so completeness is unknown."""

    counts: Counts
    partial: bool | None
    finished: int
    planned: int | None
    drift: tuple[str, ...]
    diff: Diff
    paths: tuple[Path, ...]

    def text(self) -> str:
        c = self.counts
        lines = [
            f"{c.cells} cells: {c.passed} pass, {c.failed_as_expected} fail as expected, "
            f"{c.drift} drift, {c.timeout} timeout, {c.errored} errored, "
            f"{c.interrupted} interrupted, {c.predicted} predicted",
            completeness_text(self.partial, self.finished, self.planned),
            diff_line(self.diff),
        ]
        return "\n".join(lines + [f"wrote {p}" for p in self.paths]) + "\n"


# ---------------------------------------------------------------- summary values


_COUNTED = {
    "passed": "pass",
    "failed_as_expected": "expected-fail",
    "drift": "drift",
    "timeout": "timeout",
    "errored": "errored",
    "interrupted": "interrupted",
    "predicted": PREDICTED,
}


def count(frame: pd.DataFrame) -> Counts:
    n: dict[str, int] = frame["klass"].value_counts().to_dict()
    return Counts(cells=len(frame), **{f: int(n.get(k, 0)) for f, k in _COUNTED.items()})


def completeness_text(partial: bool | None, finished: int, planned: int | None) -> str:
    if planned is None:
        return f"completeness unknown (no plan.json): {finished} cells finished"
    word = "PARTIAL" if partial else "COMPLETE"
    return f"{word}: {finished} of {planned} cells have results"


def _joined(values: Iterable[str], default: str) -> str:
    found = sorted({v for v in values if v})
    return ", ".join(found) if found else default


def header(frame: pd.DataFrame, plans: Sequence[tuple[Path, Any]], completeness: str) -> Header:
    ran = frame[frame["status"] != NOT_RUN]
    plan_driver = _joined((str(p.get("driver", "")) for _, p in plans), "unknown")
    when = pd.to_datetime(ran["started"], utc=True, format="ISO8601", errors="coerce")
    newest = ran["started"].loc[when.idxmax()] if when.notna().any() else ""
    return Header(
        profile=_joined((str(p.get("profile", "")) for _, p in plans), "unknown (no plan.json)"),
        driver=_joined(ran["driver"].unique(), plan_driver),
        gpu=_joined(ran["gpu"].unique(), "none recorded"),
        newest=str(newest) or "no results",
        completeness=completeness,
        backends=_joined(ran["backend"].unique(), "none"),
    )


# ---------------------------------------------------------------- diff


def read_snapshot(out: Path) -> Any:
    path = out / SNAPSHOT
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    except ValueError:
        return None  # a damaged snapshot only costs the diff, not the report


def snapshot(frame: pd.DataFrame) -> str:
    """Columns, not rows: small and fast to read back for 100k cells."""
    data = {"schema": 1, **{c: frame[c].tolist() for c in ("cell", "verdict", "klass")}}
    return json.dumps(data, separators=(",", ":")) + "\n"


def diff(previous: Any, frame: pd.DataFrame) -> Diff:
    """New failures include new cells that fail: the previous report did not have them."""
    try:
        old = pd.DataFrame({c: previous[c] for c in ("cell", "verdict", "klass")})
    except (KeyError, TypeError, ValueError):
        return Diff(previous=False)
    now = frame[["cell", "verdict", "klass"]]
    both = now.merge(old, on="cell", how="left", suffixes=("", "_old")).fillna("")
    bad, was_bad = both["klass"].isin(BAD), both["klass_old"].isin(BAD)
    observed = both["klass"].isin(OBSERVED) & both["klass_old"].isin(OBSERVED)
    changed = both[observed & (bad == was_bad) & (both["verdict"] != both["verdict_old"])]
    return Diff(
        previous=True,
        new_failures=tuple(both.loc[bad & ~was_bad, "cell"]),
        fixed=tuple(both.loc[was_bad & both["klass"].isin(OBSERVED - BAD), "cell"]),
        changed=tuple(
            Change(cell=c, before=b, after=a)
            for c, b, a in zip(
                changed["cell"], changed["verdict_old"], changed["verdict"], strict=True
            )
        ),
        added=tuple(sorted(set(frame["cell"]) - set(old["cell"]))),
        removed=tuple(sorted(set(old["cell"]) - set(frame["cell"]))),
    )


# ---------------------------------------------------------------- the writer


def write_all(
    results: Sequence[Path],
    out: Path,
    *,
    catalog: Sequence[Signature],
    env: Mapping[str, str],
) -> ReportSummary:
    """Read every results folder, write every report file into `out`, append the CI summary
    to the file `env["GITHUB_STEP_SUMMARY"]` names, if any."""
    plans = read_plans(results)
    frame = build_frame(read_records(results), plans)
    previous = read_snapshot(out)  # before this report replaces it
    finished = int(frame["status"].isin(FINAL).sum())
    planned = len(frame) if plans else None  # planned cells and any others that have results
    partial = None if planned is None else finished < planned
    head = header(frame, plans, completeness_text(partial, finished, planned))
    changes = diff(previous, frame)
    paths = []
    for name, text in render(frame, head, catalog, changes).items():
        atomic_write(out / name, text)
        paths.append(out / name)
    summary = ReportSummary(
        counts=count(frame), partial=partial, finished=finished, planned=planned,
        drift=tuple(frame.loc[frame["klass"] == "drift", "cell"]), diff=changes,
        paths=tuple(paths),
    )  # fmt: skip
    step = env.get("GITHUB_STEP_SUMMARY")
    if step:
        append_text(Path(step), step_summary(summary, frame, head))
        summary = replace(summary, paths=(*paths, Path(step)))
    return summary


def render(
    frame: pd.DataFrame, head: Header, catalog: Sequence[Signature], changes: Diff
) -> dict[str, str]:
    """File name -> text, for every file of the report folder."""
    titles = {s.id: s.title for s in catalog}
    return {
        "COMPATIBILITY.md": compatibility(frame, head),
        "SIGNATURES.md": signatures(frame, catalog),
        "index.html": render_page(frame, head.pairs(), titles),
        "results.csv": csv_text(frame),
        "junit.xml": junit_xml(frame),
        "DIFF.md": diff_markdown(changes),
        SNAPSHOT: snapshot(frame),
    }


def append_text(path: Path, text: str) -> None:
    """GitHub reads the step summary after the step; other steps may have written to it."""
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    atomic_write(path, before + text)


# ---------------------------------------------------------------- CSV and JUnit

_CSV = {
    "cell": "cell", "framework": "framework", "stack": "stack", "scenario": "scenario",
    "status": "status", "verdict": "verdict", "drift": "drift", "level": "evidence_level",
    "evidence": "evidence", "exp_outcome": "expected_outcome",
    "exp_signature": "expected_signature", "exp_stage": "expected_stage",
    "obs_outcome": "observed_outcome", "obs_signature": "observed_signature",
    "obs_stage": "observed_stage", "obs_line": "observed_decisive_line",
    "obs_exit": "observed_exit_code", "obs_signal": "observed_signal",
    "obs_fingerprint": "observed_fingerprint",
    "secondary": "verdict_secondary", "backend": "backend", "seconds": "seconds",
    "started": "started", "driver": "driver", "gpu": "gpu", "image": "image",
}  # fmt: skip


def csv_text(frame: pd.DataFrame) -> str:
    return str(frame[list(_CSV)].rename(columns=_CSV).to_csv(index=False, lineterminator="\n"))


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _xml_column(column: pd.Series) -> list[str]:
    """Each distinct value cleaned once: most columns repeat a few values 100k times."""
    clean = {v: xml_safe(v) for v in column.unique().tolist()}
    return [clean[v] for v in column.tolist()]


def _junit_child(klass: str, why: Sequence[str]) -> tuple[str, str, str]:
    """(element, message, text) under a <testcase>; expected failures that failed as expected
    are passes, so only drift, timeouts, errors and cells that did not finish get one."""
    expected, verdict, line, error, code = why
    seen = f"expected {expected}, observed {verdict}"
    if klass == "drift":
        return "failure", f"{seen} (exit code {code})" if code else seen, line
    if klass == "timeout":
        return "failure", f"timed out ({seen})", line
    if klass == "errored":
        return "error", "the harness failed to run this cell", error
    if klass == "interrupted":
        return "skipped", "interrupted: not finished", ""
    if klass == PREDICTED:
        return "skipped", f"not run (predicted: {expected})", ""
    return "", "", ""


def _junit_columns(frame: pd.DataFrame) -> list[list[str]]:
    seconds = frame["seconds"].fillna(0).map("{:.3f}".format)
    code = frame["obs_exit"].astype("string").fillna("")
    cols = [frame[c] for c in ("stack", "scenario")] + [seconds]
    cols += [frame[c] for c in ("klass", "expected", "verdict", "obs_line", "error")]
    return [_xml_column(c) for c in (*cols, code)]


def junit_xml(frame: pd.DataFrame) -> str:
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name="stackmatrix")
    kinds = []
    for stack, scenario, secs, klass, *why in zip(*_junit_columns(frame), strict=True):
        case = ET.SubElement(suite, "testcase", classname=stack, name=scenario, time=secs)
        kind, message, text = _junit_child(klass, why)
        if kind:
            ET.SubElement(case, kind, message=message, type=klass).text = text or None
        kinds.append(kind)
    suite.set("tests", str(len(kinds)))
    for kind, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        suite.set(attr, str(kinds.count(kind)))
    suite.set("time", f"{frame['seconds'].fillna(0).sum():.3f}")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
