"""The published report: `write_all` reads every results folder, builds the frame (frame),
and writes COMPATIBILITY.md, FAULTS.md and SIGNATURES.md (md), index.html (html), results.csv
and junit.xml (export), DIFF.md and report.json (summary) into one folder; it and
`append_text` (the CI step summary) are the only writers of the report. It returns a
ReportSummary for the CLI to print.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from harness import __version__, inputs, proc
from harness.compat import Knowledge, parse_knowledge, read_knowledge_docs
from harness.errors import ConfigError
from harness.fs import append_summary, atomic_write, writable_dir
from harness.model import Plan, Signature
from harness.report.export import csv_text, junit_xml
from harness.report.frame import FINAL, build_frame
from harness.report.grid import ReleaseGrid, build_grid, is_release_grid
from harness.report.gridview import compatibility_grid
from harness.report.html import render_page
from harness.report.md import compatibility, diff_markdown, faults, signatures, step_summary
from harness.report.read import cycles_uncollected, read_plans, read_rows
from harness.report.rows import Rows
from harness.report.summary import count, coverage_gaps, diff, header, lone_shard, snapshot
from harness.report.types import Diff, Header, Origin, ReportSummary, completeness_text

SNAPSHOT = "report.json"  # what the next report diffs against


def read_snapshot(out: Path) -> Any:
    path = out / SNAPSHOT
    try:
        return inputs.read_json(path, limit=inputs.PLAN_LIMIT, help="") if path.exists() else None
    except ConfigError:
        return None  # a damaged snapshot only costs the diff, not the report


@cycles_uncollected()
def write_all(
    results: Sequence[Path],
    out: Path,
    *,
    catalog: Sequence[Signature],
    env: Mapping[str, str],
    choose: Callable[[Plan], Plan] | None = None,
    origin: Origin | None = None,
    kb: Knowledge | None = None,
    installed: Mapping[str, str] | None = None,
    here: str = "",
    rows: Rows | None = None,
) -> ReportSummary:
    """Read every results folder, write every report file into `out`, append the CI summary
    to the file `env["GITHUB_STEP_SUMMARY"]` names, if any. `choose`: the selection
    (--shard, --stack, --cell) over the cells the plans hold; only those are reported. `kb`
    (default: the shipped knowledge) and `installed` (stack slug -> the cudart its lock
    installs) decide the declared driver branch of a release grid. `here`: this machine's host
    id (harness.host.host_id): its results "ran here", the others came from the journal.
    `rows`: the results folders' rows where the caller read them already (read.read_rows)."""
    writable_dir(out, "--out")
    plans, runs = read_plans(results), read_rows(results) if rows is None else rows
    if choose is not None:
        plans, runs = chosen(plans, runs, choose)
    frame = build_frame(runs, plans)
    previous = read_snapshot(out)  # before this report replaces it
    finished = int(frame["status"].isin(FINAL).sum())
    planned = len(frame) if plans else None  # planned cells and any others that have results
    gaps = coverage_gaps(plans)  # a lone shard is partial even with all its cells done
    partial = None if planned is None else finished < planned or bool(gaps)
    shard = lone_shard(plans)
    origin = origin or Origin(version=__version__)
    completeness = completeness_text(partial, finished, planned, gaps, shard)
    head = header(frame, plans, completeness, origin, here)
    changes = diff(previous, frame)
    grid = release_grid(frame, kb, installed)
    parts = renderers(frame, head, catalog, changes, grid)
    paths = write_parts(out, parts, apart=APART if len(frame) >= FORK_AT else ())
    drift = frame[frame["klass"] == "drift"]
    summary = ReportSummary(
        counts=count(frame), partial=partial, finished=finished, planned=planned,
        drift=tuple(drift["cell"]), diff=changes, paths=tuple(paths), gaps=gaps, shard=shard,
        provenance=head.provenance,
        why=tuple(f"expected {e}, observed {v}" for e, v in zip(
            drift["expected"], drift["verdict"], strict=True
        )),
    )  # fmt: skip
    step = env.get("GITHUB_STEP_SUMMARY")
    if step:
        append_text(Path(step), step_summary(summary, frame, head))
        summary = replace(summary, paths=(*paths, Path(step)))
    return summary


def chosen(
    plans: Sequence[Plan], runs: Rows, choose: Callable[[Plan], Plan]
) -> tuple[list[Plan], Rows]:
    """Plans and results narrowed to what `choose` keeps of all the plans' cells together;
    each plan then names the selection, so the report says it is partial."""
    if not plans:
        raise ConfigError(
            "--shard, --stack and --cell need the plan.json that `stackmatrix run` writes beside "
            "its journal",
            help="report these results without a selection, or run them again",
        )
    every = {c.id: c for p in plans for c in p.cells}
    union = replace(plans[0], cells=tuple(every.values()), shard=None, selectors=())
    picked = choose(union)
    keep = {c.id for c in picked.cells}
    # A --shard of a whole plan is that shard (the report says "shard 1 of 2", and the other
    # shards are gaps); a shard of a shard is only a selection.
    out = []
    for plan in plans:
        cells = tuple(c for c in plan.cells if c.id in keep)
        what, shard = picked.selectors, plan.shard
        if picked.shard and shard is None:
            shard = picked.shard
        elif picked.shard:
            what += (f"--shard {picked.shard[0]}/{picked.shard[1]}",)
        out.append(replace(plan, cells=cells, shard=shard, selectors=(*plan.selectors, *what)))
    return out, runs.only(keep)


def release_grid(
    frame: pd.DataFrame, kb: Knowledge | None, installed: Mapping[str, str] | None
) -> ReleaseGrid | None:
    """The release x driver grid where the baseline ran at two or more placed drivers."""
    if not is_release_grid(frame):
        return None
    return build_grid(frame, kb or parse_knowledge(read_knowledge_docs()), installed)


def renderers(
    frame: pd.DataFrame,
    head: Header,
    catalog: Sequence[Signature],
    changes: Diff,
    grid: ReleaseGrid | None = None,
) -> dict[str, Callable[[], str]]:
    """File name -> what renders its text, for every file of the report folder."""

    def compat() -> str:
        if grid is None:
            return compatibility(frame, head)
        sigs = sorted({c.signature for r in grid.rows for c in r.cells if c.status == "failed"})
        return compatibility_grid(grid, frame, head, [s for s in sigs if s])

    return {
        "COMPATIBILITY.md": compat,
        "FAULTS.md": lambda: faults(frame, head),
        "SIGNATURES.md": lambda: signatures(frame, catalog),
        "index.html": lambda: render_page(frame, head.pairs(), catalog, count(frame).items(), grid),
        "results.csv": lambda: csv_text(frame),
        "junit.xml": lambda: junit_xml(frame),
        "DIFF.md": lambda: diff_markdown(changes),
        SNAPSHOT: lambda: snapshot(frame),
    }


def render(
    frame: pd.DataFrame,
    head: Header,
    catalog: Sequence[Signature],
    changes: Diff,
    grid: ReleaseGrid | None = None,
) -> dict[str, str]:
    """File name -> text, for every file of the report folder."""
    return {name: fn() for name, fn in renderers(frame, head, catalog, changes, grid).items()}


# From this many cells on, index.html and results.csv (about half the work) are rendered and
# written by a forked child beside the other files: 100,000 cells took 19 s in one process on 2
# cores.
FORK_AT = 5_000
APART = ("index.html", "results.csv")


def write_parts(
    out: Path, parts: Mapping[str, Callable[[], str]], *, apart: Sequence[str] = ()
) -> list[Path]:
    """Each file rendered and written whole (atomic_write), in `parts`' order; the files named in
    `apart` by a forked child meanwhile, where one can be had. The child only saves time: where
    it cannot be forked, fails, or is stopped, this process renders and writes its files itself
    (the same text, and the same error if one is raised)."""

    def write(names: Sequence[str]) -> None:
        for name in names:
            atomic_write(out / name, parts[name]())

    away = tuple(n for n in apart if n in parts)
    child = proc.fork(lambda: write(away), away) if away else None
    try:
        write([n for n in parts if not (child and n in away)])
        wrote = child.wait() if child else True
    except BaseException:  # failing or interrupted (waiting included): the child stops too
        if child:
            child.wait(stop=True)
        raise
    if not wrote:  # it failed: its files here (the same error, if any)
        write(away)
    return [out / name for name in parts]


def append_text(path: Path, text: str) -> None:
    """GitHub reads the step summary after the step; other steps may have written to it."""
    append_summary(path, text)
