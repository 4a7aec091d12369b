"""index.html: one static page with no external assets: the header, for a release grid that grid
first (gridview), the matrix as an HTML grid
(stacks x scenarios; a colour-blind-safe palette, Okabe and Ito's, plus a glyph per outcome),
a detail panel for the cell clicked (expected and because; observed stage, signature and
decisive line; the catalog's cause and the fix for its stack; the reproduce command; driver,
GPU, image), filters over both the grid and the results table with "N of M shown", and the
filter state in the URL hash (`#k=drift&fw=torch&cell=<id>`; a bare `#<cell id>` still opens
that cell).

Everything from results reaches the page as escaped text (`html.escape`) or as JSON inside a
`<script type="application/json">` with `<` escaped, which the script only ever puts into
`textContent`: logs carry `<` and `&`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from harness.model import Signature
from harness.report import drawn
from harness.report.advice import advice_for, fix_steps
from harness.report.frame import LEVEL_ORDER, NOT_OBSERVABLE, PREDICTED, UNOBSERVABLE, each_once
from harness.report.grid import ReleaseGrid
from harness.report.gridview import GRID_CSS, GRID_SCRIPT, Page, grid_section

# Outcome classes, in legend order: (label, colour, glyph). Okabe-Ito colours stay apart under
# the common colour-vision deficiencies, and the glyph tells them apart without colour at all.
KLASSES: dict[str, tuple[str, str, str]] = {
    "pass": ("pass", "#009E73", "✓"),
    "expected-fail": ("failed as expected", "#56B4E9", "✗"),
    "drift": ("drift", "#D55E00", "!"),
    "timeout": ("timeout", "#E69F00", "T"),
    "errored": ("harness error", "#CC79A7", "E"),
    "interrupted": ("interrupted", "#999999", "‖"),
    UNOBSERVABLE: (NOT_OBSERVABLE, "#E8E8E8", "\N{EN DASH}"),
    PREDICTED: ("predicted", "#FFFFFF", "?"),
}
LINE_CUT = 300  # characters of a decisive line or error shown in the table (the CSV has all)
# Filters: (frame column, data- attribute, label).
FILTERS = (
    ("framework", "fw", "framework"),
    ("stack", "stack", "stack"),
    ("scenario", "sc", "scenario"),
    ("signature", "sig", "signature"),
    ("klass", "k", "outcome"),
    ("level", "lvl", "evidence"),
)

_STYLE = """
*{box-sizing:border-box}body{font:14px system-ui,sans-serif;margin:1em;max-width:100%}
h1{font-size:1.4em}dl.head{display:grid;grid-template-columns:max-content 1fr;gap:0 1em}
dl.head dt{font-weight:600}dl.head dd{margin:0}
form{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:center;margin:.8em 0}
select{max-width:16em}#shown{font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:.3em 1em;margin:.5em 0}
.legend span{display:inline-flex;align-items:center;gap:.3em}
.c{display:inline-block;width:1.6em;height:1.6em;line-height:1.5em;text-align:center;padding:0;
border:1px solid #555;border-radius:3px;font:bold 13px monospace;cursor:pointer;color:#000}
.c.k-drift,.c.k-pass{color:#fff}.c.k-predicted{border-style:dashed}.c.off{opacity:.15}
.c:focus-visible,.c.sel{outline:3px solid #000;outline-offset:1px}
.grid-wrap{overflow-x:auto;max-width:100%}
#grid{border-collapse:collapse}#grid td,#grid th{padding:1px}
#grid th.v{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;
white-space:nowrap;text-align:left;vertical-align:bottom;padding:2px}
#grid tbody th{text-align:left;font-weight:normal;white-space:nowrap;padding-right:.5em}
#detail{border:2px solid #333;border-radius:4px;padding:.5em 1em;margin:1em 0}
#detail dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em}
#detail dt{font-weight:600}#detail dd{margin:0;overflow-wrap:anywhere}
#detail pre,#detail code{white-space:pre-wrap;overflow-wrap:anywhere;background:#f4f4f4}
#results{border-collapse:collapse;table-layout:fixed;width:100%}
#results td,#results th{border:1px solid #ccc;padding:2px 6px;text-align:left;
vertical-align:top;overflow-wrap:anywhere}
#results td:last-child{font-family:monospace;white-space:pre-wrap}
#results tr.k-drift,#results tr.k-timeout{background:#fbe3d6}
#results tr.k-errored{background:#f5e1ee}:target{outline:2px solid #000}
"""
_SCRIPT = """
const byId = new Map(data.cells.map((c) => [c.id, c]));
const keys = ["fw", "stack", "sc", "sig", "k", "lvl"];
const rows = [...document.querySelectorAll("#results tbody tr")];
const cells = [...document.querySelectorAll("#grid .c, #rgrid .c")];
let current = "";
const sel = (k) => document.getElementById("f-" + k);
function state() {
  const s = {};
  for (const k of keys) if (sel(k).value) s[k] = sel(k).value;
  return s;
}
const fits = (el, s) => keys.every((k) => !(k in s) || el.dataset[k] === s[k]);
function writeHash() {
  const p = new URLSearchParams(state());
  if (current) p.set("cell", current);
  const h = p.toString();
  history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
}
function apply() {
  const s = state();
  let n = 0;
  for (const r of rows) { r.hidden = !fits(r, s); if (!r.hidden) n++; }
  for (const c of cells) c.classList.toggle("off", !fits(c, s));
  document.getElementById("shown").textContent = n + " of " + rows.length + " shown";
}
function add(list, name, value, tag) {
  if (value === undefined || value === null || value === "" || value.length === 0) return;
  const dt = document.createElement("dt"), dd = document.createElement("dd");
  dt.textContent = name;
  if (Array.isArray(value)) {
    const ol = document.createElement("ol");
    for (const v of value) {
      const li = document.createElement("li"); li.textContent = v; ol.append(li);
    }
    dd.append(ol);
  } else if (tag) {
    const el = document.createElement(tag); el.textContent = value; dd.append(el);
  } else dd.textContent = value;
  list.append(dt, dd);
}
function show(id) {
  const c = byId.get(id);
  if (!c) return;
  current = id;
  for (const b of cells) b.classList.toggle("sel", b.dataset.cell === id);
  const box = document.getElementById("detail"), list = document.getElementById("d-list");
  document.getElementById("d-title").textContent = id;
  list.replaceChildren();
  const sig = data.signatures[c.signature] || {};
  add(list, "outcome", c.outcome);
  add(list, "evidence", c.level);
  add(list, "expected", c.expected);
  add(list, "because", c.because);
  add(list, "observed", c.verdict);
  add(list, "stage", c.stage);
  add(list, "signature", c.signature ? c.signature + (sig.title ? ": " + sig.title : "") : "");
  add(list, "decisive line", c.line, "pre");
  add(list, "cause", sig.cause);
  add(list, "fix", data.fixes[c.fix] || []);
  add(list, "reproduce", c.reproduce, "code");
  add(list, "driver", c.driver);
  add(list, "host driver", c.host_driver);
  add(list, "GPU", c.gpu);
  add(list, "image", c.image, "code");
  add(list, "backend", c.backend);
  box.hidden = false;
  writeHash();
}
function readHash() {
  const h = location.hash.slice(1);
  if (!h) return;
  if (!h.includes("=")) { show(decodeURIComponent(h)); return; }
  const p = new URLSearchParams(h);
  for (const k of keys) {
    const v = p.get(k) || "";
    if ([...sel(k).options].some((o) => o.value === v)) sel(k).value = v;
  }
  apply();
  if (p.get("cell")) show(p.get("cell"));
}
for (const k of keys) sel(k).addEventListener("change", () => { apply(); writeHash(); });
document.getElementById("reset").addEventListener("click", () => {
  for (const k of keys) sel(k).value = "";
  apply(); writeHash();
});
for (const c of cells) c.addEventListener("click", () => show(c.dataset.cell));
for (const a of document.querySelectorAll("#results a")) {
  a.addEventListener("click", (e) => { e.preventDefault(); show(a.dataset.cell); });
}
window.addEventListener("hashchange", readHash);
apply();
readHash();
"""


_SPECIAL = "&<>\"'"  # what html.escape replaces (five scans of a column in C beat one regex)


class Escaped(dict[str, str]):
    """html.escape once per distinct text, shared by the whole page: most columns repeat a few
    values 100k times, and a cell id or a stack stands in several places."""

    def __missing__(self, text: str) -> str:
        self[text] = escape(text)
        return self[text]

    def each(self, values: list[str]) -> list[str]:
        """A column escaped: as it is where no text of it has a character to escape (one scan
        of the column), else each text not met before escaped once, then lookups in C."""
        joined = "".join(values)
        if not any(c in joined for c in _SPECIAL):
            return values
        new = [v for v in dict.fromkeys(values) if v not in self]
        self.update(zip(new, map(escape, new), strict=True))
        return list(map(self.__getitem__, values))


def _detail(frame: pd.DataFrame) -> list[str]:
    """The decisive line, or for a harness error its last line (the exception)."""
    tail = [e.strip().rsplit("\n", 1)[-1] if e else e for e in frame["error"].tolist()]
    return [line or err for line, err in zip(frame["obs_line"].tolist(), tail, strict=True)]


def _attrs(frame: pd.DataFrame, esc: Escaped) -> list[str]:
    """The data- attributes the filters match, one string per row."""
    cols = [_data_attr(attr, frame[col].tolist(), esc) for col, attr, _ in FILTERS]
    return list(map(" ".join, zip(*cols, strict=True)))


def _data_attr(attr: str, values: list[str], esc: Escaped) -> list[str]:
    return each_once(lambda v: f'data-{attr}="{v}"', esc.each(values))


def stack_labels(frame: pd.DataFrame) -> dict[str, str]:
    """Stack -> `torch 2.4.1 cu12.4 cudnn9.1 py3.11 offline` (a stack per cell is 100,000 of
    them: only the columns they need are deduplicated, and each is made a list once)."""
    columns = ["stack", "framework", "version", "cuda", "cudnn", "python", "base"]
    stacks = frame[columns].drop_duplicates("stack")
    slugs, *parts = (stacks[c].tolist() for c in columns)
    labels = [
        f"{fw} {v} cu{c} cudnn{d} py{py} {b}" for fw, v, c, d, py, b in zip(*parts, strict=True)
    ]
    return dict(zip(slugs, labels, strict=True))


# ---------------------------------------------------------------- the grid


def _grid(
    frame: pd.DataFrame, attrs: Sequence[str], labels: Mapping[str, str], esc: Escaped
) -> str:
    """Stacks (rows) x scenarios (columns; a placed driver's cells are their own column,
    `baseline@535.261.03`); an empty cell is not in the matrix. `labels`: stack_labels. A
    title is escaped a part at a time (escaping is character by character): the parts repeat."""
    cells = frame["cell"].tolist()
    column = [str(c).split("/", 1)[-1] for c in cells]
    scenarios = sorted(set(column))
    buttons: dict[tuple[str, str], str] = {}
    # the columns of (mostly) distinct texts escaped a column at a time, the others per value
    label = dict(zip(labels, esc.each(list(labels.values())), strict=True))
    cols = [frame[c].tolist() for c in ("stack", "klass", "verdict", "level")]
    for (stack, klass, verdict, level), cell, scenario, attr in zip(
        zip(*cols, strict=True), esc.each(cells), column, attrs, strict=True
    ):
        glyph = KLASSES.get(klass, ("", "#fff", "?"))[2]
        title = f"{esc[scenario]} on {label[stack]}: {esc[verdict]} · {esc[level]}"
        buttons[(stack, scenario)] = (
            f'<button type="button" class="c k-{esc[klass]}" data-cell="{cell}" '
            f'{attr} title="{title}" aria-label="{title}">{glyph}</button>'
        )
    head = "".join(f'<th class="v" scope="col">{esc[s]}' for s in scenarios)
    body = "\n".join(
        f'<tr><th scope="row">{esc[label]}'
        + "".join(f"<td>{buttons.get((stack, s), '')}" for s in scenarios)
        for stack, label in labels.items()
    )
    return (
        f'<div class="grid-wrap"><table id="grid"><thead><tr><th>stack{head}</thead>'
        f"<tbody>\n{body}\n</tbody></table></div>"
    )


def _legend() -> str:
    items = "".join(
        f'<span><span class="c k-{escape(k)}" aria-hidden="true">{glyph}</span>{escape(label)}'
        "</span>"
        for k, (label, _, glyph) in KLASSES.items()
    )
    return f'<div class="legend">{items}</div>'


def _klass_css() -> str:
    return "".join(f".c.k-{k}{{background:{colour}}}" for k, (_, colour, _) in KLASSES.items())


# ---------------------------------------------------------------- filters and table


def _options(
    key: str, label: str, values: Iterable[str], names: Mapping[str, str], esc: Escaped
) -> str:
    values = list(values)  # a column escaped at a time: a stack filter has a row per stack
    shown = esc.each([names.get(v, v) for v in values])
    opts = "".join(
        f'<option value="{v}">{n}</option>' for v, n in zip(esc.each(values), shown, strict=True)
    )
    return (
        f'<label>{label} <select id="f-{key}"><option value="">all</option>{opts}</select></label>'
    )


def _filters(
    frame: pd.DataFrame, titles: Mapping[str, str], labels: Mapping[str, str], esc: Escaped
) -> str:
    sigs = sorted(s for s in frame["signature"].unique() if s)
    klasses, levels = set(frame["klass"].unique()), set(frame["level"].unique())
    values: dict[str, Sequence[str]] = {
        "framework": sorted(frame["framework"].unique()),
        "stack": frame["stack"].unique().tolist(),  # the report's stack order
        "scenario": sorted(frame["scenario"].unique()),
        "signature": sigs,
        "klass": [k for k in KLASSES if k in klasses],
        "level": [lvl for lvl in LEVEL_ORDER if lvl in levels],
    }
    names: dict[str, Mapping[str, str]] = {
        "signature": {s: f"{s}: {titles[s]}" if s in titles else s for s in sigs},
        "klass": {k: label for k, (label, _, _) in KLASSES.items()},
        "stack": labels,
    }
    selects = [
        _options(attr, label, values[col], names.get(col, {}), esc) for col, attr, label in FILTERS
    ]
    total = len(frame)
    return (
        f'<form id="filters">{" ".join(selects)}'
        f'<button type="button" id="reset">reset</button>'
        f'<output id="shown">{total} of {total} shown</output></form>'
    )


def _rows(frame: pd.DataFrame, attrs: Sequence[str], esc: Escaped) -> str:
    """The hot path for 100k cells: one f-string per row, end tags left out (valid HTML)."""
    seconds = frame["seconds"].map("{:.1f}".format).where(frame["seconds"].notna(), "")
    names = ("cell", "klass", "verdict", "expected", "level")
    cols = [esc.each(frame[c].tolist()) for c in names]
    cols += [seconds.tolist(), [escape(d[:LINE_CUT]) for d in _detail(frame)], list(attrs)]
    return "\n".join(
        f'<tr id="{c}" {a} class="k-{k}">'
        f'<td><a href="#{c}" data-cell="{c}">{c}</a><td>{v}<td>{x}<td>{lvl}<td>{s}<td>{d}'
        for c, k, v, x, lvl, s, d, a in zip(*cols, strict=True)
    )


_WIDTHS = ("28%", "17%", "17%", "10%", "6%", "22%")
_HEAD = "<tr><th>cell<th>verdict<th>expected<th>evidence<th>seconds<th>detail"


def _table(frame: pd.DataFrame, attrs: Sequence[str], esc: Escaped) -> str:
    cols = "".join(f'<col style="width:{w}">' for w in _WIDTHS)
    return (
        f'<table id="results"><colgroup>{cols}</colgroup><thead>{_HEAD}</thead><tbody>\n'
        f"{_rows(frame, attrs, esc)}\n</tbody></table>"
    )


# ---------------------------------------------------------------- the detail data


def _script_safe(text: str) -> str:
    """JSON that cannot end its <script> element (`</script>`, `<!--`)."""
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _fix_key(sig: str, framework: str, cuda: str, cudnn: str) -> str:
    return f"{sig}|{framework}|{cuda}|{cudnn}" if sig else ""


# json.dumps(..., ensure_ascii=False, separators=(",", ":")), as one encoder.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# Per cell: detail key -> frame column (or a column detail_json derives).
_DETAIL = {
    "id": "cell", "outcome": "outcome", "level": "level", "expected": "expected",
    "because": "because", "verdict": "verdict", "stage": "obs_stage", "signature": "signature",
    "line": "line", "fix": "fix", "driver": "target", "host_driver": "driver", "gpu": "gpu",
    "image": "image", "backend": "backend", "reproduce": "reproduce",
}  # fmt: skip


def _members(key: str, values: list[str]) -> list[str]:
    """`"key":value` for each value, as json.dumps writes an object's member."""
    name = _ENCODER.encode(key)
    return each_once(lambda v: f"{name}:{_ENCODER.encode(v)}", values)


def _detail_columns(
    frame: pd.DataFrame, catalog: Sequence[Signature]
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Frame column (and `fix`, `outcome`, `line`) -> its texts per cell; the fix steps of each
    signature and stack met, by fix key, in the order rows first have them."""
    by_id = {s.id: s for s in catalog}
    names = ("cell", "klass", "level", "expected", "because", "verdict", "obs_stage", "signature",
             "obs_line", "target", "driver", "gpu", "image", "backend", "error")  # fmt: skip
    col = {c: frame[c].tolist() for c in names}
    combos = list(zip(col["signature"], *(frame[c].tolist() for c in _FIX_PARTS), strict=True))
    keys = {c: _fix_key(*c) for c in dict.fromkeys(combos)}
    fixes = {}
    for (sig, framework, cuda, cudnn), key in keys.items():
        if key and key not in fixes and sig in by_id:
            fixes[key] = fix_steps(by_id[sig].fix, advice_for(framework, cuda, cudnn))
    col["fix"] = [keys[c] for c in combos]
    col["outcome"] = [KLASSES.get(k, (k,))[0] for k in col["klass"]]
    col["line"] = [line or err for line, err in zip(col["obs_line"], col["error"], strict=True)]
    col["reproduce"] = frame["reproduce"].tolist()
    return col, fixes


def _signatures(catalog: Sequence[Signature]) -> dict[str, dict[str, str]]:
    return {s.id: {"title": s.title, "cause": s.cause} for s in catalog}


def detail_json(frame: pd.DataFrame, catalog: Sequence[Signature]) -> str:
    """Per cell what its detail shows; the catalog's cause and the stack's fix steps once each.
    The text json.dumps writes for {"cells": [...], "fixes": ..., "signatures": ...}, written a
    cell at a time from encoded columns: 100,000 dicts of 16 keys took a second to build and
    encode."""
    col, fixes = _detail_columns(frame, catalog)
    members = [_members(key, col[c]) for key, c in _DETAIL.items()]
    cells = "},{".join(map(",".join, zip(*members, strict=True)))
    return (
        f'{{"cells":[{"{" + cells + "}" if len(frame) else ""}],'
        f'"fixes":{_ENCODER.encode(fixes)},"signatures":{_ENCODER.encode(_signatures(catalog))}}}'
    )


def drawn_json(frame: pd.DataFrame, catalog: Sequence[Signature], labels: Mapping[str, str]) -> str:
    """The data drawn.DRAW_SCRIPT draws the grid, the table and the details from."""
    col, fixes = _detail_columns(frame, catalog)
    seconds = frame["seconds"].map("{:.1f}".format).where(frame["seconds"].notna(), "")
    cols = {
        "id": col["cell"], "stack": frame["stack"].tolist(),
        "col": [c.split("/", 1)[-1] for c in col["cell"]], "fw": frame["framework"].tolist(),
        "sc": frame["scenario"].tolist(), "sig": col["signature"], "k": col["klass"],
        "lvl": col["level"], "verdict": col["verdict"], "expected": col["expected"],
        "secs": seconds.tolist(), "cut": [d[:LINE_CUT] for d in _detail(frame)],
        "because": col["because"], "stage": col["obs_stage"], "line": col["line"],
        "fix": col["fix"], "driver": col["target"], "host_driver": col["driver"],
        "gpu": col["gpu"], "image": col["image"], "backend": col["backend"],
        "rp": drawn.reproduce_forms(col["reproduce"], col["backend"]),
    }  # fmt: skip
    klasses = {k: [label, glyph] for k, (label, _, glyph) in KLASSES.items()}
    extra = {"fixes": fixes, "signatures": _signatures(catalog), "klasses": klasses}
    return drawn.columns_json(cols, labels, extra)


_FIX_PARTS = ("framework", "cuda", "cudnn_installed")


# ---------------------------------------------------------------- the page


def _header(pairs: Sequence[tuple[str, str]], counts: Sequence[tuple[str, int]]) -> str:
    items = "".join(f"<dt>{escape(k)}<dd>{escape(v)}" for k, v in pairs)
    (_, cells), *rest = counts
    tally = ", ".join(f"{n} {name}" for name, n in rest)
    return f'<dl class="head">{items}</dl><p>{cells} cells: {escape(tally)}</p>'


def render_page(
    frame: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    catalog: Sequence[Signature],
    counts: Sequence[tuple[str, int]],
    grid: ReleaseGrid | None = None,
) -> str:
    """The page; with a release grid, it opens on that grid (above the stack x scenario one).
    From drawn.DRAWN_AT cells on, the stack x scenario grid and the table are drawn by the
    page's script from columns of JSON (drawn), not written out."""
    titles = {s.id: s.title for s in catalog}
    esc = Escaped()
    labels = stack_labels(frame)
    big = len(frame) >= drawn.DRAWN_AT
    attrs = [] if big else _attrs(frame, esc)
    section = ""
    if grid is not None:
        glyphs = {k: glyph for k, (_, _, glyph) in KLASSES.items()}
        section = grid_section(grid, Page(_grid_attrs(frame, grid, attrs, esc), glyphs))
    if big:
        body = drawn.empty_grid_and_table(_WIDTHS, _HEAD)
        data, script = drawn_json(frame, catalog, labels), drawn.DRAW_SCRIPT + _DRAWN_DATA
    else:
        body = (
            f"{_grid(frame, attrs, labels, esc)}\n"
            '<section id="detail" hidden><h2 id="d-title"></h2><dl id="d-list"></dl></section>\n'
            f"{_table(frame, attrs, esc)}"
        )
        data, script = detail_json(frame, catalog), _STATIC_DATA
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>stackmatrix report</title><style>{_STYLE}{GRID_CSS}{_klass_css()}</style>"
        f"</head><body>\n<h1>stackmatrix report</h1>\n{_header(pairs, counts)}\n{section}\n"
        f"{_filters(frame, titles, labels, esc)}\n{_legend()}\n{body}\n"
        f'<script type="application/json" id="data">{_script_safe(data)}'
        f"</script>\n<script>{script}{_SCRIPT}{GRID_SCRIPT}</script></body></html>\n"
    )


def _grid_attrs(
    frame: pd.DataFrame, grid: ReleaseGrid, attrs: Sequence[str], esc: Escaped
) -> dict[str, str]:
    """Cell id -> its filters' data- attributes, for the release grid's cells (`attrs`: those of
    every row, where the page wrote them)."""
    if attrs:
        return dict(zip(frame["cell"], attrs, strict=True))
    ids = {c.cell for r in grid.rows for c in r.cells if c.cell}
    some = frame[frame["cell"].isin(ids)]
    return dict(zip(some["cell"], _attrs(some, esc), strict=True))


_STATIC_DATA = '\nconst data = JSON.parse(document.getElementById("data").textContent);'
_DRAWN_DATA = 'const data = draw(JSON.parse(document.getElementById("data").textContent));'
