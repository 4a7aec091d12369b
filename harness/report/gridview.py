"""The release x driver grid (grid) as COMPATIBILITY.md and as the first section of index.html.

Markdown: every text from results goes through md's `md`, `code` and `fenced`, reproduce
commands are shell-quoted for validated cell ids only (`reproduce_block`). HTML: `html.escape`
for every text; a cell is the same button the page's detail panel opens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

import pandas as pd  # type: ignore[import-untyped]

from harness.report.frame import PREDICTED, reproduce_command
from harness.report.grid import (
    AGREE,
    DISAGREE,
    NO_DRIVERS,
    Column,
    GridCell,
    ReleaseGrid,
    Row,
    branch_of,
)
from harness.report.md import (
    FAULTS,
    GLYPH,
    LETTER,
    LEVELS_LEGEND,
    abbrev,
    code,
    faults_tallies,
    fenced,
    header_lines,
    md,
    reproduce_block,
    source,
    table_row,
)
from harness.report.safe import cell_id_ok
from harness.report.types import Header

NOT_PLANNED = "—"
FRAMEWORK_RULE = (
    "The frameworks' own stated driver requirements: harness/resources/compat/torch.yaml and "
    "tensorflow.yaml record none, so none is shown; each release's CUDA runtime is what its "
    "PyPI wheels pin (cited there)."
)
GRID_LEGEND = (
    "✅ pass · ❌ failed, with the signature's initials (spelled out under the table) · ⚠️ "
    "**drift** (differs from the expectation) · ⏱️ timeout · 💥 harness error · ⏸️ interrupted · "
    "\N{HEAVY MINUS SIGN} not observable here · ❔ not observed (planned, no result yet) · "
    f"{NOT_PLANNED} not in the plan (not observed). A column's evidence letter stands in its "
    "heading where every observed cell of it has that level."
)
EXPLAIN = (
    "**lowest pass**: the oldest driver branch observed to pass the baseline. **declared**: the "
    "oldest branch NVIDIA's rules admit for the CUDA runtime the release installs (its minimum "
    "driver in brackets; sources under the table). ⚠️ marks a disagreement (listed under "
    '"Declared vs observed"); ❔ a release not decided yet: a column that decides it has no '
    "result."
)

EXPLAIN_PAGE = (
    "lowest pass: the oldest driver branch observed to pass the baseline; declared: the oldest "
    "branch NVIDIA's rules admit for the CUDA runtime the release installs (its minimum driver "
    "in brackets). ⚠ marks a disagreement (listed under the grid), ? a release not decided yet. "
    "Cells: ✓ pass, ✗ failed with the signature's initials, ! drift, ? not observed (no result "
    "yet), — not in the plan; click one for its detail."
)


def glyph_text(cell: GridCell) -> str:
    """A compact verdict: `✅`, `❌ DTO`, `⚠️ pass`; ❔ for a cell never observed."""
    if not cell.cell:
        return NOT_PLANNED
    if cell.klass == PREDICTED:
        return GLYPH[PREDICTED]
    sig = abbrev(cell.signature) if cell.signature and cell.status == "failed" else ""
    if cell.klass == "drift":
        return f"{GLYPH['drift']} {sig or ('pass' if cell.status == 'passed' else cell.status)}"
    return f"{GLYPH.get(cell.klass, '')} {sig}".strip()


def _md_cell(cell: GridCell, column: Column) -> str:
    letter = LETTER.get(cell.level, "") if cell.cell and cell.klass != PREDICTED else ""
    text = md(glyph_text(cell))
    return f"{text} {letter}" if letter and not column.level else text


def _title(column: Column) -> str:
    letter = LETTER.get(column.level, "")
    return f"{md(column.title)} {letter}".strip()


def lowest_text(row: Row, marks: tuple[str, str] = ("⚠️ ", "❔ ")) -> str:
    """The oldest passing branch, marked where it disagrees or is not decided."""
    if row.agreement == NO_DRIVERS:
        return NOT_PLANNED
    mark = {DISAGREE: marks[0], AGREE: ""}.get(row.agreement, marks[1])
    return mark + (row.lowest or "none")


def declared_text(row: Row) -> str:
    if not row.declared_min:
        return "unknown"
    return f"{branch_of(row.declared_min)} (≥ {row.declared_min})"


def compatibility_grid(
    grid: ReleaseGrid, frame: pd.DataFrame, head: Header, signatures: Sequence[str]
) -> str:
    cols = grid.columns
    heading = ["release", "CUDA", "lowest pass", "declared", *map(_title, cols), "faults"]
    tally = faults_tallies(frame)
    rows = [
        table_row([md(r.label), md(r.cuda), md(lowest_text(r)), md(declared_text(r)),
              *(_md_cell(c, col) for c, col in zip(r.cells, cols, strict=True)),
              tally.get(r.stack, "—")])
        for r in grid.rows
    ]  # fmt: skip
    versions = " · ".join(f"**{md(c.title)}** {md(c.placed)}" for c in cols if c.branch)
    legend = " · ".join(f"**{abbrev(s)}** {md(s)}" for s in signatures)
    base = frame[frame["scenario"] == "baseline"]
    return "\n".join([
        "# Compatibility",
        "",
        "Which release runs on which NVIDIA driver branch: the baseline workload (import, "
        "devices, a tensor op, cuDNN, a train step) of each release with NVIDIA's user-space "
        "driver of one production branch placed in the run (no GPU: the CUDA runtime's own "
        "version gate decides), with the CUDA toolkit's stub, and with none. Faults and the "
        f"signatures they give: [{FAULTS}]({FAULTS}).",
        "",
        *header_lines(head),
        "",
        GRID_LEGEND,
        "",
        LEVELS_LEGEND,
        "",
        EXPLAIN,
        "",
        table_row(heading),
        table_row(["---"] * len(heading)),
        *rows,
        "",
        *([f"Driver columns: {versions}.", ""] if versions else []),
        *([f"Signatures: {legend}.", ""] if legend else []),
        "Declared, from harness/resources/compat/drivers.yaml:",
        "",
        *(f"- {md(r.detail, False)}: {source(r.source)}" for r in grid.reasons()),
        f"- {FRAMEWORK_RULE}",
        "",
        *declared_vs_observed(grid),
        "<details><summary>reproduce a baseline</summary>",
        "",
        reproduce_block(base["reproduce"].tolist()),
        "",
        "</details>",
        "",
    ])  # fmt: skip


def declared_vs_observed(grid: ReleaseGrid) -> list[str]:
    bad, open_, none = grid.disagreements, grid.undecided, grid.driverless
    decided = len(grid.rows) - len(open_) - len(none)
    out = [
        "## Declared vs observed",
        "",
        f"{len(bad)} of {decided} decided releases disagree with what NVIDIA's rules declare; "
        f"{len(open_)} not decided yet.",
        "",
    ]
    for row in bad:
        out += _disagreement(row)
    if open_:
        out += ["Not decided (no result at a column that decides):", ""]
        out += [f"- {md(r.label, False)}: {md(', '.join(r.unobserved), False)}" for r in open_]
        out.append("")
    if none:
        names = ", ".join(r.label for r in none)
        out += [
            f"No driver column in the plan (it fails before a driver is asked): {md(names, False)}"
            ".",
            "",
        ]
    return out


def _disagreement(row: Row) -> list[str]:
    cell = row.decisive
    assert cell is not None  # a disagreement names its cell
    line = cell.line or "(no decisive line recorded: a pass prints none)"
    again = (
        fenced(reproduce_command(cell.cell, cell.backend), "sh")
        if cell_id_ok(cell.cell)
        else "(the cell id is not a plain name: no command shown)"
    )
    return [
        f"### {md(row.label, False)} (CUDA {md(row.cuda, False)})",
        "",
        f"- declared: {md(declared_text(row), False)}; lowest observed to pass: "
        f"{md(row.lowest or 'none', False)}",
        f"- {md(row.finding, False)}",
        f"- cell: {code(cell.cell, False)}",
        "",
        fenced(line),
        "",
        again,
        "",
    ]


# ---------------------------------------------------------------- index.html

GRID_CSS = """
#releases h2{font-size:1.2em;margin:.6em 0 .3em}
#r-filters{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:center;margin:.4em 0}
#r-filters fieldset{border:0;padding:0;margin:0;display:flex;gap:.8em}
#rgrid{border-collapse:collapse}#rgrid td,#rgrid th{padding:1px 3px;text-align:center;
white-space:nowrap}#rgrid thead th{font-weight:600;vertical-align:bottom}
#rgrid thead small{display:block;font-weight:normal;font-size:10px}
#rgrid tbody th{text-align:left;font-weight:normal}#rgrid tr.disagree td.low{font-weight:700}
#rgrid .c{width:auto;min-width:1.9em;padding:0 .25em}
#r-disagree li{margin:.3em 0}#r-disagree code{overflow-wrap:anywhere;background:#f4f4f4}
"""
GRID_SCRIPT = """
(() => {
  const q = document.getElementById("r-q");
  if (!q) return;
  const rows = [...document.querySelectorAll("#rgrid tbody tr")];
  const boxes = [...document.querySelectorAll("#r-filters input[type=checkbox]")];
  function rapply() {
    const text = q.value.trim().toLowerCase();
    const on = new Set(boxes.filter((b) => b.checked).map((b) => b.value));
    let n = 0;
    for (const r of rows) {
      r.hidden = !(on.has(r.dataset.fw) && r.dataset.q.includes(text));
      if (!r.hidden) n++;
    }
    document.getElementById("r-shown").textContent = n + " of " + rows.length + " releases shown";
  }
  const box = document.getElementById("detail");
  for (const b of document.querySelectorAll("#rgrid .c")) {
    b.addEventListener("click", () => box.scrollIntoView({ block: "nearest" }));
  }
  q.addEventListener("input", rapply);
  for (const b of boxes) b.addEventListener("change", rapply);
  rapply();
})();
"""


@dataclass(frozen=True, slots=True)
class Page:
    """What the page gives each grid cell: cell id -> its filters' data- attributes; outcome
    class -> its glyph (the page's own legend)."""

    attrs: Mapping[str, str]
    glyphs: Mapping[str, str]


def _button(cell: GridCell, page: Page, label: str) -> str:
    if not cell.cell:
        return f'<span title="not in the plan">{NOT_PLANNED}</span>'
    glyph = page.glyphs.get(cell.klass, "?")
    sig = abbrev(cell.signature) if cell.signature and cell.status == "failed" else ""
    title = escape(f"{label}: {cell.verdict} · {cell.level}")
    return (
        f'<button type="button" class="c k-{escape(cell.klass)}" data-cell="{escape(cell.cell)}" '
        f'{page.attrs.get(cell.cell, "")} title="{title}" aria-label="{title}">'
        f"{glyph}{' ' + escape(sig) if sig else ''}</button>"
    )


def _html_row(row: Row, columns: Sequence[Column], page: Page) -> str:
    klass = ' class="disagree"' if row.agreement == DISAGREE else ""
    q = escape(f"{row.label} cu{row.cuda}".lower())
    cells = "".join(
        f"<td>{_button(c, page, f'{row.label} at {col.title}')}"
        for c, col in zip(row.cells, columns, strict=True)
    )
    low = escape(lowest_text(row, ("⚠ ", "? ")))
    return (
        f'<tr data-fw="{escape(row.framework)}" data-q="{q}"{klass}>'
        f'<th scope="row">{escape(row.label)}<td>{escape(row.cuda)}'
        f'<td class="low">{low}<td>{escape(declared_text(row))}{cells}'
    )


def grid_section(grid: ReleaseGrid, page: Page) -> str:
    """The grid, its filters (text over release and CUDA, a checkbox per framework) and the
    disagreements."""
    frameworks = sorted({r.framework for r in grid.rows})
    boxes = "".join(
        f'<label><input type="checkbox" value="{escape(f)}" checked> {escape(f)}</label>'
        for f in frameworks
    )
    heads = "".join(
        f'<th scope="col" title="{escape(c.placed)}">{escape(c.title)}'
        + (f"<small>{escape(c.placed)}</small>" if c.branch else "")
        for c in grid.columns
    )
    body = "\n".join(_html_row(r, grid.columns, page) for r in grid.rows)
    n = len(grid.rows)
    return (
        '<section id="releases"><h2>Release \N{MULTIPLICATION SIGN} driver branch</h2>'
        f"<p>{escape(EXPLAIN_PAGE)}</p>"
        '<form id="r-filters" onsubmit="return false"><label>release '
        '<input type="search" id="r-q" placeholder="e.g. torch 2.1"></label>'
        f"<fieldset><legend>framework</legend>{boxes}</fieldset>"
        f'<output id="r-shown">{n} of {n} releases shown</output></form>'
        '<table id="rgrid"><thead><tr><th scope="col">release<th scope="col">CUDA'
        f'<th scope="col">lowest pass<th scope="col">declared{heads}</thead>'
        f"<tbody>\n{body}\n</tbody></table>{_html_disagreements(grid)}</section>"
    )


def _html_disagreements(grid: ReleaseGrid) -> str:
    items = []
    for row in grid.disagreements:
        cell = row.decisive
        assert cell is not None
        cmd = reproduce_command(cell.cell, cell.backend) if cell_id_ok(cell.cell) else ""
        items.append(
            f"<li><strong>{escape(row.label)}</strong>: declared {escape(declared_text(row))}, "
            f"lowest observed to pass {escape(row.lowest or 'none')}: {escape(row.finding)}"
            f"<br>decisive line: <code>{escape(cell.line or '(none recorded)')}</code>"
            + (f"<br>reproduce: <code>{escape(cmd)}</code>" if cmd else "")
            + "</li>"
        )
    undecided = len(grid.undecided)
    head = (
        f"<h3>Declared vs observed</h3><p>{len(items)} disagreements; "
        f"{undecided} releases not decided yet.</p>"
    )
    return head + (f'<ul id="r-disagree">{"".join(items)}</ul>' if items else "")
