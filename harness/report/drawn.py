"""index.html for a large report: the grid and the results table drawn in the browser from one
JSON document of columns, instead of written out as HTML. 100,000 cells made a 179 MB page
that took 2.6 s to write (every cell three times: a grid button, a table row and its detail);
as columns (each column's distinct texts once, then an index per row) it is 49 MB, written in
0.8 s.

The script builds the same elements, with the same attributes, that html.py writes for a small
page (tests/unit/test_report_browser.py compares the two in Chromium), so the page's own script
(filters, URL hash, detail) runs on either unchanged. Text from results reaches the DOM only
through `textContent` and `setAttribute`, never as markup; the JSON cannot end its element
(`<` is escaped).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence

import pandas as pd  # type: ignore[import-untyped]

from harness.report.frame import LOCAL_BACKEND, REPRODUCE

# What index.html draws in the browser from this many cells on; below it the page is HTML.
DRAWN_AT = 5_000

# Per cell: column key in the JSON -> what html.py's static page takes from the frame for it.
# The grid and table columns first, then what the detail panel shows.
_CELL = ("id", "stack", "col", "fw", "sc", "sig", "k", "lvl", "verdict", "expected", "secs",
         "cut", "because", "stage", "line", "fix", "driver", "host_driver", "gpu", "image",
         "backend", "rp")  # fmt: skip


def _column(values: Sequence[object], sort: bool = False) -> str:
    """`[distinct texts, "index per row"]`, or the texts alone where none repeats. The indexes
    are little-endian unsigned integers of 1, 2 or 4 bytes, as base64: 100,000 numbers written
    as decimal text took 20 ms a column."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=sort)
    if len(uniques) == len(values) and not sort:
        return _ENCODE(list(values))
    width = 1 if len(uniques) <= 0xFF else 2 if len(uniques) <= 0xFFFF else 4
    packed = base64.b64encode(codes.astype(f"<u{width}").tobytes()).decode("ascii")
    return f'[{_ENCODE(list(uniques))},"{packed}",{width}]'


def reproduce_forms(commands: Sequence[str], backends: Sequence[str]) -> list[int]:
    """Each cell's `rp`: 0 no command (the id is not a plain name), 1 Docker, 2 the local
    backend; the page makes the command from the form and the id."""
    return [
        0 if not c else 2 if b == "local" else 1 for c, b in zip(commands, backends, strict=True)
    ]


def columns_json(
    cols: Mapping[str, Sequence[object]],
    labels: Mapping[str, str],
    extra: Mapping[str, object],
) -> str:
    """The page's data: `cols` (key -> a value per row, in _CELL's keys; `col` is sorted, as the
    grid's columns are), the stack labels in the stacks' order, and `extra` (fixes, signatures,
    outcome classes) as they are."""
    parts = [f'"{key}":{_column(cols[key], sort=key == "col")}' for key in _CELL]
    stacks = pd.unique(pd.Series(cols["stack"], dtype=object)).tolist()
    head = {
        "n": len(cols["id"]), "labels": [labels.get(str(s), str(s)) for s in stacks],
        "reproduce": ["", REPRODUCE + " ", REPRODUCE + " "], "local": ["", "", LOCAL_BACKEND],
        **extra,
    }  # fmt: skip
    return f'{_ENCODE(head)[:-1]},"cols":{{{",".join(parts)}}}}}'


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# Builds #grid and #results' rows as html.py writes them (with the filters' data- attributes),
# and returns what the written page's JSON holds ({cells, fixes, signatures}).
DRAW_SCRIPT = """
function unpack(text, width) {
  const bytes = atob(text), out = new Array(bytes.length / width);
  for (let i = 0, j = 0; i < out.length; i++) {
    let v = 0;
    for (let b = width - 1; b >= 0; b--) v = v * 256 + bytes.charCodeAt(j + b);
    out[i] = v; j += width;
  }
  return out;
}
function draw(d) {
  const C = {};
  // a column is [distinct texts, indexes (base64, little-endian, `width` bytes each)], or
  // where no text repeats the texts alone
  for (const [k, v] of Object.entries(d.cols)) {
    C[k] = Array.isArray(v[0]) ? [v[0], unpack(v[1], v[2])] : [v, null];
  }
  const at = (k, i) => (C[k][1] ? C[k][0][C[k][1][i]] : C[k][0][i]);
  const code = (k, i) => (C[k][1] ? C[k][1][i] : i);
  const filtered = ["fw", "stack", "sc", "sig", "k", "lvl"];  // each also its data- attribute
  const mark = (el, i) => { for (const k of filtered) el.setAttribute("data-" + k, at(k, i)); };
  const el = (tag, text) => { const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text; return e; };
  const scen = C.col[0], nstack = d.labels.length, ncol = scen.length;
  const head = document.querySelector("#grid thead tr");
  for (const s of scen) {
    const th = el("th", s); th.className = "v"; th.setAttribute("scope", "col"); head.append(th);
  }
  const slots = new Array(nstack * ncol).fill(null);
  const cells = [], byId = new Map();
  const tbody = document.querySelector("#results tbody");
  for (let i = 0; i < d.n; i++) {
    const id = at("id", i), k = at("k", i), lvl = at("lvl", i), verdict = at("verdict", i);
    const b = el("button", (d.klasses[k] || ["", "?"])[1]);
    const title = at("col", i) + " on " + d.labels[code("stack", i)] + ": " + verdict +
      " \\u00b7 " + lvl;
    b.setAttribute("type", "button"); b.className = "c k-" + k; b.setAttribute("data-cell", id);
    mark(b, i); b.setAttribute("title", title); b.setAttribute("aria-label", title);
    slots[code("stack", i) * ncol + code("col", i)] = b;
    const tr = el("tr"); tr.id = id; mark(tr, i); tr.className = "k-" + k;
    const a = el("a", id); a.setAttribute("href", "#" + id); a.setAttribute("data-cell", id);
    const td = el("td"); td.append(a);
    tr.append(td, el("td", verdict), el("td", at("expected", i)), el("td", lvl),
      el("td", at("secs", i)), el("td", at("cut", i)));
    tbody.append(tr);
    const rp = at("rp", i);
    cells.push({ id, outcome: (d.klasses[k] || [k])[0], level: lvl, expected: at("expected", i),
      because: at("because", i), verdict, stage: at("stage", i), signature: at("sig", i),
      line: at("line", i), fix: at("fix", i), driver: at("driver", i),
      host_driver: at("host_driver", i), gpu: at("gpu", i), image: at("image", i),
      backend: at("backend", i), reproduce: rp ? d.reproduce[rp] + id + d.local[rp] : "" });
  }
  const body = document.querySelector("#grid tbody");
  for (let s = 0; s < nstack; s++) {
    const tr = el("tr"), th = el("th", d.labels[s]); th.setAttribute("scope", "row");
    tr.append(th);
    for (let c = 0; c < ncol; c++) {
      const td = el("td"), b = slots[s * ncol + c]; if (b) td.append(b); tr.append(td);
    }
    body.append(tr);
  }
  return { cells, fixes: d.fixes, signatures: d.signatures };
}
"""


def empty_grid_and_table(widths: Sequence[str], head: str) -> str:
    """What the script fills: the grid's and the table's frames, and a word for a browser that
    runs no script."""
    cols = "".join(f'<col style="width:{w}">' for w in widths)
    return (
        '<div class="grid-wrap"><table id="grid"><thead><tr><th>stack</thead>'
        "<tbody></tbody></table></div>\n"
        '<section id="detail" hidden><h2 id="d-title"></h2><dl id="d-list"></dl></section>\n'
        "<noscript><p>This report's grid and table are drawn by the page's script; "
        "results.csv holds the same rows.</p></noscript>\n"
        f'<table id="results"><colgroup>{cols}</colgroup><thead>{head}</thead><tbody>\n'
        "</tbody></table>"
    )
