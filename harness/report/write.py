"""The published report: `write_all` reads every results folder, builds the frame (frame),
and writes COMPATIBILITY.md and SIGNATURES.md (md), index.html (html), results.csv and
junit.xml (export), DIFF.md and report.json (summary) into one folder; it is the only function
of the report that writes. It returns a ReportSummary for the CLI to print.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from harness import inputs
from harness.errors import ConfigError
from harness.fs import append_summary, atomic_write, writable_dir
from harness.model import Plan, RunResult, Signature
from harness.report.export import csv_text, junit_xml
from harness.report.frame import FINAL, build_frame
from harness.report.html import render_page
from harness.report.md import compatibility, diff_markdown, signatures, step_summary
from harness.report.read import read_plans, read_results
from harness.report.summary import count, coverage_gaps, diff, header, snapshot
from harness.report.types import Diff, Header, ReportSummary, completeness_text

SNAPSHOT = "report.json"  # what the next report diffs against


def read_snapshot(out: Path) -> Any:
    path = out / SNAPSHOT
    try:
        return inputs.read_json(path, limit=inputs.PLAN_LIMIT, help="") if path.exists() else None
    except ConfigError:
        return None  # a damaged snapshot only costs the diff, not the report


def write_all(
    results: Sequence[Path],
    out: Path,
    *,
    catalog: Sequence[Signature],
    env: Mapping[str, str],
    choose: Callable[[Plan], Plan] | None = None,
) -> ReportSummary:
    """Read every results folder, write every report file into `out`, append the CI summary
    to the file `env["GITHUB_STEP_SUMMARY"]` names, if any. `choose`: the selection
    (--shard, --stack, --cell) over the cells the plans hold; only those are reported."""
    writable_dir(out, "--out")
    plans, runs = read_plans(results), read_results(results)
    if choose is not None:
        plans, runs = chosen(plans, runs, choose)
    frame = build_frame(runs, plans)
    previous = read_snapshot(out)  # before this report replaces it
    finished = int(frame["status"].isin(FINAL).sum())
    planned = len(frame) if plans else None  # planned cells and any others that have results
    gaps = coverage_gaps(plans)  # a lone shard is partial even with all its cells done
    partial = None if planned is None else finished < planned or bool(gaps)
    head = header(frame, plans, completeness_text(partial, finished, planned, gaps))
    changes = diff(previous, frame)
    paths = []
    for name, text in render(frame, head, catalog, changes).items():
        atomic_write(out / name, text)
        paths.append(out / name)
    summary = ReportSummary(
        counts=count(frame), partial=partial, finished=finished, planned=planned,
        drift=tuple(frame.loc[frame["klass"] == "drift", "cell"]), diff=changes,
        paths=tuple(paths), gaps=gaps,
    )  # fmt: skip
    step = env.get("GITHUB_STEP_SUMMARY")
    if step:
        append_text(Path(step), step_summary(summary, frame, head))
        summary = replace(summary, paths=(*paths, Path(step)))
    return summary


def chosen(
    plans: Sequence[Plan], runs: Sequence[RunResult], choose: Callable[[Plan], Plan]
) -> tuple[list[Plan], list[RunResult]]:
    """Plans and results narrowed to what `choose` keeps of all the plans' cells together;
    each plan then names the selection, so the report says it is partial."""
    if not plans:
        raise ConfigError(
            "--shard, --stack and --cell need the plan.json that `harness run` writes beside "
            "its journal",
            help="report these results without a selection, or run them again",
        )
    cells = {c.id: c for p in plans for c in p.cells}
    union = replace(plans[0], cells=tuple(cells.values()), shard=None, selectors=())
    picked = choose(union)
    keep = {c.id for c in picked.cells}
    what = picked.selectors + (
        (f"--shard {picked.shard[0]}/{picked.shard[1]}",) if picked.shard else ()
    )
    out = [
        replace(p, cells=tuple(c for c in p.cells if c.id in keep), selectors=(*p.selectors, *what))
        for p in plans
    ]
    return out, [r for r in runs if r.cell in keep]


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
    append_summary(path, text)
