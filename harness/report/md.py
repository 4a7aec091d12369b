"""The report's Markdown: COMPATIBILITY.md, SIGNATURES.md, DIFF.md and the CI step summary.

Text from results goes through `md` (table cells, list items) or `fenced` (log lines), so a `|`
in a log line cannot break a table and a `<script>` in one stays text on GitHub.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pandas as pd  # type: ignore[import-untyped]

from harness.model import Signature
from harness.report.frame import reproduce_command
from harness.report.types import Diff, Header, ReportSummary, diff_line

PAGE = "index.html"
LINKS_SHOWN = 10  # cells linked per signature before "and N more"
SUMMARY_CAP = 50  # list lines per section in the CI step summary
LEGEND = (
    "Each cell: the verdict (`pass`, or `fail: <signature> @ <stage>`), **DRIFT** where it "
    "differs from the expectation, and its evidence: predicted (from the plan, not run), "
    "cpu-verified (no GPU: GPU stages skipped), gpu-verified (run on the GPU the header names), "
    "or unverified (the run did not finish, or no GPU was there for a GPU plan). Each verdict "
    f"links to its row in {PAGE}; — means the cell is not in the matrix."
)
_SAFE = "/._-~"
_MD = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "\n": " ", "\r": " "})
# Inside a code span entities are shown as typed, so only what breaks a table row is escaped.
_CODE = str.maketrans({"|": "\\|", "\n": " ", "\r": " "})
_SPAN = re.compile(r"(`+)(.+?)\1")


def md(text: str) -> str:
    """Inline Markdown text: no HTML, no table breaks, one line; `code spans` kept."""
    if "`" not in text:
        return text.translate(_MD)
    parts = _SPAN.split(text)  # [text, fence, code, text, fence, code, ..., text]
    out = [p.translate(_MD) for p in parts[::3]]
    spans = [f"{f}{c.translate(_CODE)}{f}" for f, c in zip(parts[1::3], parts[2::3], strict=True)]
    return "".join(t + c for t, c in zip(out, [*spans, ""], strict=True))


def fenced(text: str, lang: str = "text") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, *(n + 1 for n in runs)) if runs else "```"
    return f"{fence}{lang}\n{text}\n{fence}"


def anchor(cell: str) -> str:
    return f"{PAGE}#{quote(cell, safe=_SAFE)}"


def anchors(cells: pd.Series) -> pd.Series:
    """`anchor` for a column: ids are nearly always URL-safe already, and quote() is slow."""
    plain = cells.str.fullmatch(r"[A-Za-z0-9/._~-]*")
    quoted = cells.where(plain, cells[~plain].map(lambda c: quote(c, safe=_SAFE)))
    return PAGE + "#" + quoted


def md_column(column: pd.Series) -> pd.Series:
    """`md` for a column, once per distinct value."""
    return column.map({v: md(v) for v in column.unique().tolist()})


def code(text: str) -> str:
    return f"`{text.translate(_CODE)}`"


def link(cell: str) -> str:
    """A cell's id linking to its row in the page (both live in the report folder)."""
    return f"[{code(cell)}]({anchor(cell)})"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _header_lines(head: Header) -> list[str]:
    return [f"- **{name}**: {md(value)}" for name, value in head.pairs()]


# ---------------------------------------------------------------- COMPATIBILITY.md


def compatibility(frame: pd.DataFrame, head: Header) -> str:
    parts = ["# Compatibility", "", *_header_lines(head), "", LEGEND, ""]
    for framework, sub in frame.groupby("framework", sort=True):
        parts += _framework_section(str(framework), sub)
    return "\n".join(parts)


def _cell_markdown(sub: pd.DataFrame) -> pd.Series:
    drift = sub["klass"].eq("drift").map({True: " **DRIFT**", False: ""})
    verdict = "[" + md_column(sub["verdict"]) + "](" + anchors(sub["cell"]) + ")"
    return verdict + drift + " · " + md_column(sub["level"])


def _framework_section(framework: str, sub: pd.DataFrame) -> list[str]:
    scenarios = sorted(sub["scenario"].unique())
    grid = sub.assign(md=_cell_markdown(sub)).pivot(index="stack", columns="scenario", values="md")
    stacks = sub.drop_duplicates("stack")  # the frame is sorted by stack already
    grid = grid.reindex(index=stacks["stack"], columns=scenarios).fillna("—")
    head = [md(framework), "CUDA", "cuDNN", "Python", "base", *map(md, scenarios)]
    names = stacks[["version", "cuda", "cudnn", "python", "base"]].to_numpy().tolist()
    rows = [_row([*map(md, n), *g]) for n, g in zip(names, grid.to_numpy().tolist(), strict=True)]
    commands = "\n".join(map(reproduce_command, sub["cell"].tolist(), sub["backend"].tolist()))
    return [
        f"## {md(framework)}",
        "",
        _row(head),
        _row(["---"] * len(head)),
        *rows,
        "",
        f"<details><summary>reproduce a {md(framework)} cell</summary>",
        "",
        fenced(commands, "sh"),
        "",
        "</details>",
        "",
    ]


# ---------------------------------------------------------------- SIGNATURES.md


def signatures(frame: pd.DataFrame, catalog: Sequence[Signature]) -> str:
    seen = frame[frame["obs_signature"] != ""]
    cells = _cells_by(seen["obs_signature"], seen["cell"])
    with_line = seen[seen["obs_line"] != ""]
    excerpts = with_line.groupby("obs_signature")["obs_line"].first().to_dict()
    secondary = _secondary(frame)
    parts = [
        "# Failure signatures",
        "",
        "Every signature of the catalog (scenarios/signatures.yaml), where these results "
        "observed it, and a decisive line from a real run.",
        "",
    ]
    for sig in catalog:
        parts += _signature(sig, cells.get(sig.id), excerpts.get(sig.id), secondary)
    parts += _uncatalogued({k: v for k, v in cells.items() if k not in {s.id for s in catalog}})
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Seen:
    """Where one signature was seen: how often, and the first cells (the ones linked)."""

    total: int
    first: tuple[str, ...]


def _cells_by(signature: pd.Series, cell: pd.Series) -> dict[str, Seen]:
    pairs = pd.DataFrame({"sig": signature, "cell": cell})
    totals = pairs["sig"].value_counts().to_dict()
    first = pairs.groupby("sig").head(LINKS_SHOWN).groupby("sig")["cell"].agg(tuple).to_dict()
    return {s: Seen(total=int(n), first=first[s]) for s, n in totals.items()}


def _secondary(frame: pd.DataFrame) -> dict[str, Seen]:
    """signature -> cells where it was seen but was not the root cause."""
    rows = frame.loc[frame["secondary"] != "", ["cell", "secondary"]]
    pairs = rows.assign(sig=rows["secondary"].str.split(";")).explode("sig")
    return _cells_by(pairs["sig"], pairs["cell"])


def _cells_line(label: str, seen: Seen) -> str:
    shown = ", ".join(link(c) for c in seen.first)
    more = f", and {seen.total - len(seen.first)} more" if seen.total > len(seen.first) else ""
    word = "cell" if seen.total == 1 else "cells"
    return f"- {label} {seen.total} {word}: {shown}{more}"


def _source(text: str) -> str:
    return f"<{text}>" if re.match(r"https?://\S+$", text) else md(text)


def _signature(
    sig: Signature, cells: Seen | None, excerpt: str | None, secondary: dict[str, Seen]
) -> list[str]:
    lines = [
        f"## {code(sig.id)}: {md(sig.title)}",
        "",
        f"- usual stage: {sig.stage.value if sig.stage else 'any'}",
        f"- frameworks: {md(', '.join(sig.frameworks)) or 'any'}",
        _cells_line("observed in", cells) if cells else "- observed: never in these results",
    ]
    if sig.id in secondary:
        lines.append(_cells_line("also seen (not the root cause) in", secondary[sig.id]))
    lines += [f"- cause: {md(sig.cause)}", "- fix:"]
    lines += [f"  {i}. {md(step)}" for i, step in enumerate(sig.fix, 1)]
    lines += ["- sources:", *(f"  - {_source(s)}" for s in sig.sources)]
    lines.append(f"- defined at: {md(str(sig.where))}")
    if excerpt:
        lines += ["", "Decisive line from a real run:", "", fenced(excerpt)]
    return [*lines, ""]


def _uncatalogued(cells: dict[str, Seen]) -> list[str]:
    if not cells:
        return []
    lines = ["## Observed but not in the catalog", ""]
    lines += [_cells_line(f"{code(sid)} in", found) for sid, found in sorted(cells.items())]
    return [*lines, ""]


# ---------------------------------------------------------------- DIFF.md and the step summary


def _capped(items: Sequence[str], cap: int | None) -> list[str]:
    if cap is None or len(items) <= cap:
        return list(items)
    return [*items[:cap], f"- … and {len(items) - cap} more"]


def _diff_sections(
    d: Diff, level: str, cap: int | None, name: Callable[[str], str] = link
) -> list[str]:
    sections: list[tuple[str, list[str]]] = [
        ("New failures", [f"- {name(c)}" for c in d.new_failures]),
        ("Fixed", [f"- {name(c)}" for c in d.fixed]),
        (
            "Changed verdicts",
            [f"- {name(c.cell)}: {md(c.before)} → {md(c.after)}" for c in d.changed],
        ),
        ("New cells", [f"- {name(c)}" for c in d.added]),
        ("Removed cells", [f"- {code(c)}" for c in d.removed]),  # not in the page any more
    ]
    out: list[str] = []
    for title, items in sections:
        out += [f"{level} {title} ({len(items)})", "", *(_capped(items, cap) or ["none"]), ""]
    return out


def diff_markdown(d: Diff) -> str:
    head = ["# Changes since the previous report", ""]
    if not d.previous:
        return "\n".join([*head, "No previous report in this folder: nothing to compare with.", ""])
    return "\n".join([*head, diff_line(d), "", *_diff_sections(d, "##", None)])


def _attention(frame: pd.DataFrame) -> list[str]:
    bad = frame[frame["klass"].isin(["drift", "timeout", "errored"])]
    cols = zip(bad["cell"], bad["klass"], bad["expected"], bad["verdict"], strict=True)
    return [f"- {code(c)}: {k}: expected {md(e)}, observed {md(v)}" for c, k, e, v in cols]


def step_summary(summary: ReportSummary, frame: pd.DataFrame, head: Header) -> str:
    """For the job's summary page, where links into the report folder would not resolve."""
    c = summary.counts
    counts: list[Any] = [c.cells, c.passed, c.failed_as_expected, c.drift, c.timeout]
    counts += [c.errored, c.interrupted, c.predicted]
    names = ["cells", "pass", "fail as expected", "drift", "timeout", "errored"]
    names += ["interrupted", "predicted"]
    attention = _attention(frame)
    lines = [
        "## stackmatrix report",
        "",
        f"{md(head.completeness)} · profile {md(head.profile)} · driver {md(head.driver)}",
        "",
        _row(names),
        _row(["---:"] * len(names)),
        _row(map(str, counts)),
        "",
        f"### Drift, timeouts and errors ({len(attention)})",
        "",
        *(_capped(attention, SUMMARY_CAP) or ["none"]),
        "",
        "### Changes since the previous report",
        "",
        diff_line(summary.diff),
        "",
    ]
    if summary.diff.previous:
        lines += _diff_sections(summary.diff, "####", SUMMARY_CAP, code)
    return "\n".join(lines)
