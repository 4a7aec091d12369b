"""The report's Markdown: COMPATIBILITY.md (stacks x drivers, the baseline), FAULTS.md
(scenario x stack -> signature @ stage), SIGNATURES.md, DIFF.md and the CI step summary.

Text from results goes through `md` (table cells, list items: no HTML, `|` escaped where it would
break a row), `code` (a span right for where it stands), `source` (a link only for a validated
https URL) or `fenced` (log lines, commands); reproduce commands are shell-quoted and their cell
ids validated first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from urllib.parse import quote

import pandas as pd  # type: ignore[import-untyped]

from harness.model import Signature, version_key
from harness.report.advice import advice_for, fix_steps
from harness.report.frame import (
    NOT_OBSERVABLE,
    PREDICTED,
    UNOBSERVABLE,
    each_once,
)
from harness.report.safe import clean, https_url, one_line
from harness.report.types import Diff, Header, ReportSummary, diff_line

BASELINE = "baseline"
_SAFE = "/._-~"

PAGE = "index.html"
FAULTS = "FAULTS.md"
LINKS_SHOWN = 10  # cells named per signature before "and N more"
SUMMARY_CAP = 50  # list lines per section in the CI step summary
# Evidence levels as one letter in the tables (a legend says which).
LETTER = {
    PREDICTED: "P",
    "driver-verified": "D",
    "cpu-verified": "C",
    "gpu-verified": "G",
    NOT_OBSERVABLE: "N",
    "unverified": "U",
}
# Outcome classes as a glyph a reader can tell apart without colour.
GLYPH = {
    "pass": "✅",
    "expected-fail": "❌",
    "drift": "⚠️",
    "timeout": "⏱️",
    "errored": "💥",
    "interrupted": "⏸️",
    UNOBSERVABLE: "\N{HEAVY MINUS SIGN}",
    PREDICTED: "❔",
}
LEVELS_LEGEND = (
    "Evidence: **P** predicted (from the plan, not run), **D** driver-verified (NVIDIA's "
    "user-space driver decided the version gate, no GPU), **C** cpu-verified (run without a GPU: "
    "GPU stages skipped), **G** gpu-verified (run on the GPU the header names), **N** not "
    "observable here (the fault needs a GPU this runner lacks: never a pass), **U** unverified "
    "(the run did not finish)."
)
GLYPH_LEGEND = (
    "✅ pass · ❌ failed · ⚠️ **drift** (differs from the expectation) · ⏱️ timeout · "
    "💥 harness error · ⏸️ interrupted · \N{HEAVY MINUS SIGN} not observable here · "
    "❔ predicted (not run)."
)
_MD = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "\n": " ", "\r": " "})
_SPAN = re.compile(r"(`+)(.+?)\1")


def md(text: str, table: bool = True) -> str:
    """Inline Markdown text: no HTML, one line; `code spans` kept. In a table a `|` breaks the
    row even inside a code span, so it is escaped there (GitHub shows `\\|` in a span as `|`);
    outside a table a span is left exactly as typed, so a command pastes as written."""
    text = one_line(text)
    if "`" not in text:
        return text.translate(_MD)
    parts = _SPAN.split(text)  # [text, fence, code, text, fence, code, ..., text]
    out = [p.translate(_MD) for p in parts[::3]]
    spans = [code(c, table) for c in parts[2::3]]
    return "".join(t + c for t, c in zip(out, [*spans, ""], strict=True))


def md_each(values: list[str]) -> list[str]:
    """md of each value: the values themselves where none holds a character md changes (one
    scan of the column joined: 100,000 stack labels, each its own), else each distinct value
    once."""
    joined = "".join(values)
    if joined.isprintable() and not any(c in joined for c in _MD_CHANGES):
        return values
    return each_once(md, values)


_MD_CHANGES = "&<>|`"  # and what is not printable (newline, tab, control characters)


def code(text: str, table: bool = True) -> str:
    """A code span for any text: a fence longer than any backtick run in it, padded where the
    text starts or ends with a backtick (CommonMark 6.1)."""
    text = one_line(text)
    if table:
        text = text.replace("|", "\\|")
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs) + 1 if runs else 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, lang: str = "text") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    text = clean(text)
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, *(n + 1 for n in runs)) if runs else "```"
    return f"{fence}{lang}\n{text}\n{fence}"


def anchor(cell: str) -> str:
    return f"{PAGE}#{quote(cell, safe=_SAFE)}"


def link(cell: str) -> str:
    """A cell's id linking to its row in the page (both live in the report folder)."""
    return f"[{code(cell, False)}]({anchor(cell)})"


def source(text: str) -> str:
    """A link only for a validated https URL; anything else is a code span, which GitHub
    neither autolinks nor reads as HTML."""
    return f"<{text}>" if https_url(text) else code(text, False)


def table_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def header_lines(head: Header) -> list[str]:
    return [f"- **{name}**: {md(value, False)}" for name, value in head.pairs()]


def reproduce_block(commands: Sequence[str]) -> str:
    """`nox -s reproduce` per cell (the frame's `reproduce`: "" where a hostile id is left out,
    and named as left out here)."""
    lines = [c for c in commands if c]
    if len(lines) < len(commands):
        lines.append(
            f"# {len(commands) - len(lines)} cells left out: their ids are not plain names"
        )
    return fenced("\n".join(lines), "sh")


def _stack_parts(sub: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Each stack's slug and the table's columns of its parts, escaped."""
    stacks = sub.drop_duplicates("stack")  # the frame is sorted by stack already
    parts = ["version", "cuda", "cudnn_installed", "python", "base"]
    return stacks["stack"].tolist(), [md_each(stacks[p].tolist()) for p in parts]


# ---------------------------------------------------------------- COMPATIBILITY.md


def driver_title(target: str) -> str:
    if target in ("", "none"):
        return "no driver"
    return target  # a driver version, or stub


def _sig_of(verdict: str) -> str | None:
    return verdict.split(":", 1)[1].split("@", 1)[0].strip() if ":" in verdict else None


def abbrev(signature: str) -> str:
    """driver_too_old -> DTO: the initials, for the driver columns (a legend spells them out)."""
    return "".join(w[0] for w in signature.split("_") if w).upper()


def short_cell(klass: str, level: str, verdict: str, *, stage: bool = False) -> str:
    """A driver column: glyph, the signature's initials (the legend under the table spells them
    out; the text is in FAULTS.md and the page), the stage in the no-driver column, evidence
    letter: `❌ CVM @ build_info C`, `❌ DTO D`."""
    sig = _sig_of(verdict)
    if sig is None:
        return verdict_cell(klass, level, verdict)
    at = verdict.split("@", 1)[1].strip() if stage and "@" in verdict else ""
    return verdict_cell(klass, level, abbrev(sig) + (f" @ {at}" if at else ""))


def verdict_cell(klass: str, level: str, verdict: str) -> str:
    """Glyph, verdict and evidence letter: `✅ pass C`, `❌ fail: sig @ stage C`."""
    glyph = GLYPH.get(klass, "")
    drift = " **DRIFT**" if klass == "drift" else ""
    return f"{glyph} {md(verdict)}{drift} {LETTER.get(level, '?')}"


def compatibility(frame: pd.DataFrame, head: Header) -> str:
    parts = [
        "# Compatibility",
        "",
        "Which stack works with which driver: the baseline workload (import, devices, a tensor "
        "op, cuDNN, a train step) of each stack. Faults and the signatures they give: "
        f"[{FAULTS}]({FAULTS}).",
        "",
        *header_lines(head),
        "",
        GLYPH_LEGEND,
        "",
        LEVELS_LEGEND,
        "",
        "**faults**: fault scenarios of the stack that behaved as expected, not observable here "
        "(n/o), and drift.",
        "",
    ]
    for framework, sub in frame.groupby("framework", sort=True):
        parts += _compat_section(str(framework), sub)
    return "\n".join(parts)


def faults_tallies(sub: pd.DataFrame) -> dict[str, str]:
    """Each stack's fault scenarios tallied, in one pass over the rows (a stack with none is
    absent): filtering the frame once per stack made 100,000 stacks take minutes."""
    faults = sub[sub["scenario"] != BASELINE]
    counts: dict[str, Counter[str]] = {}
    for slug, klass in zip(faults["stack"].tolist(), faults["klass"].tolist(), strict=True):
        counts.setdefault(slug, Counter())[klass] += 1
    return {slug: _tally(n) for slug, n in counts.items()}


def _tally(n: Counter[str]) -> str:
    ok = n["pass"] + n["expected-fail"]
    bits = [f"{ok} ok"]
    if n[UNOBSERVABLE]:
        bits.append(f"{n[UNOBSERVABLE]} n/o")
    for klass in ("drift", "timeout", "errored"):
        if n[klass]:
            bits.append(f"**{n[klass]} {klass}**")
    known = ("pass", "expected-fail", UNOBSERVABLE, "drift", "timeout", "errored")
    rest = sum(n.values()) - sum(n[k] for k in known)
    if rest:
        bits.append(f"{rest} not run")
    return " · ".join(bits)


def _driver_cell(row: tuple[str, str, str, str]) -> str:
    target, klass, level, verdict = row
    return short_cell(klass, level, verdict, stage=target in ("", "none"))


def _compat_section(framework: str, sub: pd.DataFrame) -> list[str]:
    base = sub[sub["scenario"] == BASELINE]
    drivers = sorted(sub["target"].unique(), key=lambda d: (d not in ("", "none"), version_key(d)))
    stack, target, klass, level, verdict = (
        base[c].tolist() for c in ("stack", "target", "klass", "level", "verdict")
    )
    # a few dozen distinct cells in 100,000 rows
    texts = each_once(_driver_cell, list(zip(target, klass, level, verdict, strict=True)))
    cells: dict[str, dict[str, str]] = {d: {} for d in drivers}
    for slug, driver, text in zip(stack, target, texts, strict=True):
        cells[driver][slug] = text
    slugs, names = _stack_parts(sub)
    tallies = faults_tallies(sub)
    # column by column, each a map in C: 100,000 stacks are a table of 100,000 rows
    columns = [*names, *(map(cells[d].get, slugs, repeat("—")) for d in drivers)]
    row = table_row(["{}"] * (len(columns) + 1))
    rows = list(map(row.format, *columns, map(tallies.get, slugs, repeat("—"))))
    head = [md(framework), "CUDA", "cuDNN", "Py", "base", *map(driver_title, drivers), "faults"]
    sigs = sorted({s for v in base["verdict"].tolist() if (s := _sig_of(str(v)))})
    legend = " · ".join(f"**{abbrev(s)}** {md(s)}" for s in sigs)
    return [
        f"## {md(framework)}",
        "",
        table_row(head),
        table_row(["---"] * len(head)),
        *rows,
        "",
        *([f"Signatures: {legend}.", ""] if legend else []),
        f"<details><summary>reproduce a {md(framework)} baseline</summary>",
        "",
        reproduce_block(base["reproduce"].tolist()),
        "",
        "</details>",
        "",
    ]


# ---------------------------------------------------------------- FAULTS.md


def faults(frame: pd.DataFrame, head: Header) -> str:
    parts = [
        "# Faults",
        "",
        "For each fault scenario, what each stack showed (the signature and the stage it "
        "surfaced at), how that was observed, and what the plan expected. Which stack works "
        "with which driver: [COMPATIBILITY.md](COMPATIBILITY.md); each signature's cause and "
        "fix: [SIGNATURES.md](SIGNATURES.md).",
        "",
        *header_lines(head),
        "",
        GLYPH_LEGEND,
        "",
        LEVELS_LEGEND,
        "",
    ]
    for framework, sub in frame.groupby("framework", sort=True):
        parts += _faults_section(str(framework), sub)
    return "\n".join(parts)


def stack_label(row: Sequence[str]) -> str:
    version, cuda, cudnn, python, base = row
    return f"{version} cu{cuda} cudnn{cudnn} py{python} {base}"


def _faults_section(framework: str, sub: pd.DataFrame) -> list[str]:
    stacks = sub.drop_duplicates("stack")  # each stack's parts once (a stack has many rows)
    parts = stacks[["version", "cuda", "cudnn_installed", "python", "base"]].to_numpy().tolist()
    labels = dict(
        zip(stacks["stack"].tolist(), md_each(list(map(stack_label, parts))), strict=True)
    )
    out = [f"## {md(framework)}", ""]
    scenarios = _by_scenario(sub)
    for scenario in sorted(scenarios):
        verdicts, because = scenarios[scenario]
        out += [f"### {md(scenario)}", "", table_row(["result", "expected", "stacks"])]
        out.append(table_row(["---"] * 3))
        for (klass, level, verdict, expected), stacks in verdicts.items():
            names = ", ".join(labels[s] for s in stacks)
            out.append(table_row([verdict_cell(klass, level, verdict), md(expected), names]))
        out += ["", *(f"- because: {md(b, False)}" for b in sorted(because)), ""]
    out += [
        f"<details><summary>reproduce a {md(framework)} cell</summary>",
        "",
        reproduce_block(sub["reproduce"].tolist()),
        "",
        "</details>",
        "",
    ]
    return out


Verdicts = dict[tuple[str, str, str, str], list[str]]


def _by_scenario(sub: pd.DataFrame) -> dict[str, tuple[Verdicts, set[str]]]:
    """scenario -> its stacks by (class, level, verdict, expected), in row order, and its
    reasons; one pass over the rows (a pandas group per scenario, then per verdict, took 14 of
    the 31 profiled seconds of a report of 25,000 cells)."""
    names = ("scenario", "klass", "level", "verdict", "expected", "stack", "because")
    out: dict[str, tuple[Verdicts, set[str]]] = {}
    for scenario, klass, level, verdict, expected, stack, because in zip(
        *(sub[c].tolist() for c in names), strict=True
    ):
        groups, reasons = out.get(scenario) or out.setdefault(scenario, ({}, set()))
        groups.setdefault((klass, level, verdict, expected), []).append(stack)
        if because:
            reasons.add(because)
    return out


# ---------------------------------------------------------------- SIGNATURES.md


def signatures(frame: pd.DataFrame, catalog: Sequence[Signature]) -> str:
    seen = frame[frame["obs_signature"] != ""]
    cells = _cells_by(seen["obs_signature"], seen["cell"])
    with_line = seen[seen["obs_line"] != ""]
    excerpts = with_line.groupby("obs_signature")["obs_line"].first().to_dict()
    secondary = _secondary(frame)
    stacks = _stacks_by(seen)
    parts = [
        "# Failure signatures",
        "",
        "Every signature of the catalog (scenarios/signatures.yaml), how many cells of these "
        "results showed it, its cause, the fix for each stack it was seen on, and a decisive "
        "line from a real run.",
        "",
    ]
    for sig in catalog:
        found = Found(cells.get(sig.id), secondary.get(sig.id), excerpts.get(sig.id))
        parts += _signature(sig, found, stacks.get(sig.id, []))
    parts += _uncatalogued({k: v for k, v in cells.items() if k not in {s.id for s in catalog}})
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class Seen:
    """Where one signature was seen: how often, and the first cells (the ones named)."""

    total: int
    first: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Found:
    cells: Seen | None
    secondary: Seen | None
    excerpt: str | None


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


def _stacks_by(seen: pd.DataFrame) -> dict[str, list[tuple[str, str, str]]]:
    """signature -> the (framework, CUDA, cuDNN as installed) it was seen with."""
    cols = ["obs_signature", "framework", "cuda", "cudnn_installed"]
    rows = seen[cols].drop_duplicates().to_numpy().tolist()
    out: dict[str, list[tuple[str, str, str]]] = {}
    for sig, framework, cuda, cudnn in rows:
        out.setdefault(sig, []).append((framework, cuda, cudnn))
    return out


def _cells_line(label: str, seen: Seen) -> str:
    shown = ", ".join(code(c, False) for c in seen.first)
    more = f", and {seen.total - len(seen.first)} more" if seen.total > len(seen.first) else ""
    word = "cell" if seen.total == 1 else "cells"
    return f"- {label} {seen.total} {word}: {shown}{more}"


def _fixes(sig: Signature, stacks: list[tuple[str, str, str]]) -> list[str]:
    """The catalog's steps; then, for each framework and CUDA major seen, the steps as they
    read for that stack where they differ."""
    lines = ["- fix:", *(f"  {i}. {md(step, False)}" for i, step in enumerate(sig.fix, 1))]
    done = set()
    for framework, cuda, cudnn in stacks:
        advice = advice_for(framework, cuda, cudnn)
        steps = fix_steps(sig.fix, advice)
        if steps == sig.fix or steps in done:
            continue
        done.add(steps)
        lines.append(f"- fix for {md(advice.label, False)}:")
        lines += [f"  {i}. {md(step, False)}" for i, step in enumerate(steps, 1)]
    return lines


def _signature(sig: Signature, found: Found, stacks: list[tuple[str, str, str]]) -> list[str]:
    seen = found.cells
    lines = [
        f"## {code(sig.id, False)}: {md(sig.title, False)}",
        "",
        f"- usual stage: {sig.stage.value if sig.stage else 'any'}",
        f"- frameworks: {md(', '.join(sig.frameworks), False) or 'any'}",
        _cells_line("seen in", seen) if seen else "- never observed here",
    ]
    if found.secondary:
        lines.append(_cells_line("also seen (not the root cause) in", found.secondary))
    lines += [f"- cause: {md(sig.cause, False)}", *_fixes(sig, stacks)]
    lines += ["- sources:", *(f"  - {source(s)}" for s in sig.sources)]
    lines.append(f"- defined at: {md(str(sig.where), False)}")
    if found.excerpt:
        lines += ["", "Decisive line from a real run:", "", fenced(found.excerpt)]
    return [*lines, ""]


def _uncatalogued(cells: dict[str, Seen]) -> list[str]:
    if not cells:
        return []
    lines = ["## Observed but not in the catalog", ""]
    lines += [_cells_line(f"{code(sid, False)} in", found) for sid, found in sorted(cells.items())]
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
            [f"- {name(c.cell)}: {md(c.before, False)} → {md(c.after, False)}" for c in d.changed],
        ),
        ("New cells", [f"- {name(c)}" for c in d.added]),
        ("Removed cells", [f"- {code(c, False)}" for c in d.removed]),  # not in the page any more
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
    return [
        f"- {code(c, False)}: {k}: expected {md(e, False)}, observed {md(v, False)}"
        for c, k, e, v in cols
    ]


def step_summary(summary: ReportSummary, frame: pd.DataFrame, head: Header) -> str:
    """For the job's summary page, where links into the report folder would not resolve."""
    names, counts = zip(*summary.counts.items(), strict=True)
    levels = " · ".join(f"{n} {level}" for level, n in summary.counts.levels)
    attention = _attention(frame)
    lines = [
        "## stackmatrix report",
        "",
        f"{md(head.completeness, False)} · profile {md(head.profile, False)} · "
        f"driver {md(head.driver, False)}",
        "",
        table_row(names),
        table_row(["---:"] * len(names)),
        table_row(map(str, counts)),
        "",
        f"Evidence: {levels}",
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
        lines += _diff_sections(summary.diff, "####", SUMMARY_CAP, lambda c: code(c, False))
    return "\n".join(lines)
