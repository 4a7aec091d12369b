"""index.html: one static page with no external assets: the header, a heat map of the matrix
(matplotlib, Agg, embedded as a base64 PNG), the full results table with an `id` per cell, and
filters by framework, signature and outcome (a few lines of inline JS over data- attributes).

Everything that comes from results goes through `html.escape`: logs carry `<` and `&`.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

# Outcome classes, in legend order, with their heat map colours.
KLASSES = ("pass", "expected-fail", "drift", "timeout", "errored", "interrupted", "predicted")
COLOURS = ("#2e7d32", "#1565c0", "#c62828", "#ef6c00", "#6a1b9a", "#9e9e9e", "#e0e0e0")
LABEL_LIMIT = 80  # more rows or columns than this: tick labels would overlap, so none
LINE_CUT = 300  # characters of a decisive line or error shown in the table (the CSV has all)

_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
td:last-child{font-family:monospace;white-space:pre-wrap}
.k-pass td:nth-child(2){color:#2e7d32}.k-expected-fail td:nth-child(2){color:#1565c0}
.k-drift,.k-timeout{background:#fdecea}.k-errored{background:#f3e5f5}
.k-interrupted,.k-predicted{color:#777}:target{outline:2px solid #000}
"""
_SCRIPT = """
const rows = document.querySelectorAll("#results tbody tr");
const pick = (id) => document.getElementById(id).value;
function filter() {
  const fw = pick("fw"), sig = pick("sig"), k = pick("klass");
  for (const r of rows) {
    r.hidden = (fw && r.dataset.fw !== fw) || (sig && r.dataset.sig !== sig)
      || (k && r.dataset.k !== k);
  }
}
for (const id of ["fw", "sig", "klass"]) document.getElementById(id).onchange = filter;
"""


def heatmap_png(frame: pd.DataFrame) -> bytes:
    """Stacks (rows) x scenarios (columns), one colour per outcome class; white: not a cell."""
    codes = frame["klass"].map({k: i for i, k in enumerate(KLASSES)})
    grid = frame.assign(code=codes).pivot(index="stack", columns="scenario", values="code")
    grid = grid.reindex(index=frame["stack"].unique())  # keep the report's stack order
    values = np.ma.masked_invalid(grid.to_numpy(dtype=float))
    fig = Figure(figsize=_size(*values.shape), layout="constrained")
    FigureCanvasAgg(fig)  # explicit Agg: no display, no global pyplot state
    ax = fig.add_subplot()
    cmap = ListedColormap(COLOURS).with_extremes(bad="white")
    ax.imshow(values, cmap=cmap, vmin=-0.5, vmax=len(KLASSES) - 0.5, aspect="auto")
    _ticks(ax, list(grid.index), list(grid.columns))
    handles = [Patch(color=c, label=k) for k, c in zip(KLASSES, COLOURS, strict=True)]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(KLASSES), fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    return buf.getvalue()


def _size(rows: int, cols: int) -> tuple[float, float]:
    """Inches: room for labels when there are few cells, capped when there are many."""
    labels = 4.0 if rows <= LABEL_LIMIT else 0.5
    # At the caps a 500 x 200 matrix still gets 3 pixels a cell (80 dpi), and encodes fast.
    return (min(3.0 + 0.3 * cols, 14.0) + labels, min(1.5 + 0.25 * rows, 18.0) + 1.5)


def _ticks(ax: Any, stacks: list[str], scenarios: list[str]) -> None:
    if len(stacks) <= LABEL_LIMIT and len(scenarios) <= LABEL_LIMIT:
        # white lines between cells, so neighbours of one colour stay countable
        ax.set_xticks([x - 0.5 for x in range(1, len(scenarios))], minor=True)
        ax.set_yticks([y - 0.5 for y in range(1, len(stacks))], minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
    if len(stacks) <= LABEL_LIMIT:
        ax.set_yticks(range(len(stacks)), stacks, fontsize=7)
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"{len(stacks)} stacks (see the table)")
    if len(scenarios) <= LABEL_LIMIT:
        ax.set_xticks(range(len(scenarios)), scenarios, rotation=90, fontsize=7)
    else:
        ax.set_xticks([])
        ax.set_xlabel(f"{len(scenarios)} scenarios (see the table)")


def _options(select: str, label: str, values: Iterable[str], names: Mapping[str, str]) -> str:
    opts = "".join(
        f'<option value="{escape(v)}">{escape(names.get(v, v))}</option>' for v in values
    )
    return (
        f'<label>{label} <select id="{select}"><option value="">all</option>{opts}</select></label>'
    )


def _filters(frame: pd.DataFrame, titles: Mapping[str, str]) -> str:
    sigs = sorted(s for s in frame["signature"].unique() if s)
    named = {s: f"{s}: {titles[s]}" if s in titles else s for s in sigs}
    return " ".join(
        [
            _options("fw", "framework", sorted(frame["framework"].unique()), {}),
            _options("sig", "signature", sigs, named),
            _options("klass", "outcome", KLASSES, {}),
        ]
    )


def _detail(frame: pd.DataFrame) -> list[str]:
    """The decisive line, or for a harness error its last line (the exception)."""
    tail = [e.strip().rsplit("\n", 1)[-1] if e else e for e in frame["error"].tolist()]
    return [line or err for line, err in zip(frame["obs_line"].tolist(), tail, strict=True)]


def _escaped(values: Iterable[str]) -> list[str]:
    """html.escape once per distinct value: most columns repeat a few values 100k times."""
    seen: dict[str, str] = {}
    return [seen.get(v) or seen.setdefault(v, escape(v)) for v in values]


def _rows(frame: pd.DataFrame) -> str:
    """The hot path for 100k cells: one f-string per row, end tags left out (valid HTML)."""
    seconds = frame["seconds"].map("{:.1f}".format).where(frame["seconds"].notna(), "")
    names = ("cell", "framework", "signature", "klass", "verdict", "expected", "level", "status")
    cols = [_escaped(frame[c].tolist()) for c in names]
    cols += [seconds.tolist(), [escape(d[:LINE_CUT]) for d in _detail(frame)]]
    return "\n".join(
        f'<tr id="{c}" data-fw="{fw}" data-sig="{sig}" data-k="{k}" class="k-{k}">'
        f'<td><a href="#{c}">{c}</a><td>{v}<td>{x}<td>{lvl}<td>{st}<td>{s}<td>{d}'
        for c, fw, sig, k, v, x, lvl, st, s, d in zip(*cols, strict=True)
    )


def _header(pairs: Sequence[tuple[str, str]], counts: pd.Series) -> str:
    items = "".join(f"<dt>{escape(k)}<dd>{escape(v)}" for k, v in pairs)
    tally = ", ".join(f"{int(counts.get(k, 0))} {k}" for k in KLASSES)
    return f"<dl>{items}</dl><p>{int(counts.sum())} cells: {tally}</p>"


def render_page(
    frame: pd.DataFrame, pairs: Sequence[tuple[str, str]], titles: Mapping[str, str]
) -> str:
    png = base64.b64encode(heatmap_png(frame)).decode("ascii")
    head = "<tr><th>cell<th>verdict<th>expected<th>evidence<th>status<th>seconds<th>detail"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>stackmatrix report</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>stackmatrix report</h1>\n{_header(pairs, frame['klass'].value_counts())}\n"
        f'<img alt="heat map: stacks by scenarios, coloured by outcome" '
        f'src="data:image/png;base64,{png}">\n'
        f"<p>{_filters(frame, titles)}</p>\n"
        f'<table id="results"><thead>{head}</thead><tbody>\n{_rows(frame)}\n</tbody></table>\n'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
