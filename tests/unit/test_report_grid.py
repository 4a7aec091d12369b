"""The release x driver grid from synthetic journal records and a plan: its cells, the lowest
passing branch beside the declared one, the disagreements with their decisive lines and
reproduce commands, a cell never observed, and hostile text escaped in Markdown and HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.compat import parse_knowledge, placed_reason, read_knowledge_docs
from harness.journal import append
from harness.matrix import cell_id
from harness.model import (
    NO_DRIVER,
    STUB_DRIVER,
    Cell,
    DriverTarget,
    Evidence,
    Expectation,
    Observed,
    Outcome,
    Plan,
    Reason,
    RunResult,
    Stack,
    Stage,
    Status,
)
from harness.report import write_all
from harness.report.frame import build_frame
from harness.report.grid import AGREE, DISAGREE, UNDECIDED, build_grid, is_release_grid
from harness.report.gridview import glyph_text

KB = parse_knowledge(read_knowledge_docs())
R450, R470, R525, R580 = "450.248.02", "470.256.02", "525.147.05", "580.178.04"
DRIVERS = (NO_DRIVER, STUB_DRIVER, R450, R470, R525, R580)
OLD = Stack(framework="torch", framework_version="2.0.1", cuda="11.7", cudnn="8.5.0.96",
            python="3.11", base="offline")  # fmt: skip
MID = Stack(framework="torch", framework_version="2.5.1", cuda="12.4", cudnn="9.1.0.70",
            python="3.11", base="offline")  # fmt: skip
NEW = Stack(framework="torch", framework_version="2.15.0", cuda="13.2", cudnn="9.26.0.51",
            python="3.11", base="offline")  # fmt: skip
TF = Stack(framework="tensorflow", framework_version="2.15.1", cuda="12.2", cudnn="8.9.4.25",
           python="3.11", base="offline")  # fmt: skip
HOSTILE = "RuntimeError: found version 11000 <script>alert(1)</script> | `x` & [a](javascript:1)"
TOO_OLD = "RuntimeError: The NVIDIA driver on your system is too old (found version 11000)."


def expected(stack: Stack, placed: str) -> tuple[Expectation, Reason]:
    if placed == NO_DRIVER:
        return Expectation(outcome=Outcome.PASS), Reason(rule="r", detail="cpu", source="s")
    exp, why = placed_reason(stack.cuda, placed, KB)
    return exp or Expectation(outcome=Outcome.PASS), why


def plan_of(stacks: tuple[Stack, ...]) -> Plan:
    cells = []
    for stack in stacks:
        for placed in DRIVERS:
            exp, why = expected(stack, placed)
            cells.append(Cell(
                id=cell_id(stack.slug, "baseline", placed), stack=stack, scenario="baseline",
                expected=exp, because=why, driver=placed,
                evidence=Evidence.CPU if placed == NO_DRIVER else Evidence.DRIVER,
            ))  # fmt: skip
    return Plan(profile="releases", driver=DriverTarget(version=None, origin="none"),
                cells=tuple(cells))  # fmt: skip


def record(stack: Stack, placed: str, passed: bool, line: str = TOO_OLD) -> dict[str, Any]:
    exp, _ = expected(stack, placed)
    sig = "stub_driver" if placed == STUB_DRIVER else "driver_too_old"
    seen = Observed(
        outcome=Outcome.PASS if passed else Outcome.FAIL,
        stage=None if passed else Stage.DEVICES,
        decisive_line=None if passed else line,
        exit_code=0 if passed else 1,
        signal=None,
        signature=None if passed else sig,
    )
    return RunResult(
        cell=cell_id(stack.slug, "baseline", placed), stack=stack, scenario="baseline",
        key="k", backend="docker", status=Status.PASSED if passed else Status.FAILED,
        expected=exp, observed=seen, drift=passed != (exp.outcome is Outcome.PASS),
        evidence=Evidence.CPU if placed == NO_DRIVER else Evidence.DRIVER,
        started="2026-11-26T10:00:00+00:00", seconds=2.0, image="stackmatrix/stack:x",
        placed=placed,
    ).to_json()  # fmt: skip


# What each stack did at none, stub, R450, R470, R525, R580 (None: no result).
RUNS: dict[Stack, tuple[bool | None, ...]] = {
    OLD: (True, False, False, True, True, True),  # fails at its declared R450
    MID: (True, False, False, False, True, True),  # as declared
    NEW: (True, False, False, False, False, None),  # R580 never observed
    TF: (True, False, False, True, True, True),  # passes at R470, below its declared R525
}


def records() -> list[dict[str, Any]]:
    out = []
    for stack, runs in RUNS.items():
        for placed, passed in zip(DRIVERS, runs, strict=True):
            if passed is not None:
                line = HOSTILE if stack is OLD and placed == R450 else TOO_OLD
                out.append(record(stack, placed, passed, line))
    return out


def outside_code(markdown: str) -> str:
    """The Markdown less its fenced blocks and code spans (where text is shown, never read)."""
    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", markdown, flags=re.S | re.M)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    for rec in records():
        append(results, rec)
    plan = plan_of(tuple(RUNS))
    (results / "plan.json").write_text(json.dumps(plan.to_json()), encoding="utf-8")
    write_all([results], tmp_path / "out", catalog=(), env={}, kb=KB)
    return tmp_path / "out"


def grid_of() -> Any:
    results = [RunResult.from_json(r) for r in records()]
    frame = build_frame(results, [plan_of(tuple(RUNS))])
    return build_grid(frame, KB)


def test_a_release_grid_needs_two_placed_branches() -> None:
    one = [RunResult.from_json(record(OLD, p, True)) for p in (NO_DRIVER, STUB_DRIVER, R470)]
    assert not is_release_grid(build_frame(one, []))
    two = [*one, RunResult.from_json(record(OLD, R525, True))]
    assert is_release_grid(build_frame(two, []))


def test_columns_rows_and_cells() -> None:
    grid = grid_of()
    assert [c.title for c in grid.columns] == ["none", "stub", "R450", "R470", "R525", "R580"]
    assert [c.level for c in grid.columns][1:] == ["driver-verified"] * 5
    assert grid.columns[0].level == "cpu-verified"
    rows = {r.stack: r for r in grid.rows}
    assert [r.label for r in grid.rows] == [
        "tensorflow 2.15.1", "torch 2.0.1", "torch 2.5.1", "torch 2.15.0",
    ]  # fmt: skip
    assert [glyph_text(c) for c in rows[MID.slug].cells] == ["✅", "❌ SD", "❌ DTO", "❌ DTO",
                                                            "✅", "✅"]  # fmt: skip
    assert [glyph_text(c) for c in rows[OLD.slug].cells][2] == "⚠️ DTO"  # drift: plan said pass


@pytest.mark.parametrize(
    ("stack", "lowest", "declared", "minimum", "agreement"),
    [
        (OLD, "R470", "R450", "450.80.02", DISAGREE),
        (MID, "R525", "R525", "525.60.13", AGREE),
        (NEW, "", "R580", "580", UNDECIDED),
        (TF, "R470", "R525", "525.60.13", DISAGREE),
    ],
)
def test_lowest_passing_beside_declared(
    stack: Stack, lowest: str, declared: str, minimum: str, agreement: str
) -> None:
    row = next(r for r in grid_of().rows if r.stack == stack.slug)
    assert (row.lowest, row.declared, row.declared_min, row.agreement) == (
        lowest, declared, minimum, agreement,
    )  # fmt: skip
    assert row.why is not None and row.why.source.startswith("https://docs.nvidia.com/")


def test_disagreements_name_the_cell_that_shows_them() -> None:
    grid = grid_of()
    found = {r.stack: r for r in grid.disagreements}
    assert set(found) == {OLD.slug, TF.slug}
    old, tf = found[OLD.slug], found[TF.slug]
    assert old.decisive is not None and old.decisive.cell.endswith(f"@{R450}")
    assert old.finding.startswith(f"fails at the declared R450 ({R450})")
    assert tf.decisive is not None and tf.decisive.cell.endswith(f"@{R470}")
    assert tf.finding == f"passes at R470 ({R470}), older than the declared R525 (>= 525.60.13)"
    assert [r.unobserved for r in grid.undecided] == [("R580",)]


def test_compatibility_md_is_the_grid(out: Path) -> None:
    text = (out / "COMPATIBILITY.md").read_text(encoding="utf-8")
    head = "| release | CUDA | lowest pass | declared | none C | stub D | R450 D | R470 D | R525 D"
    assert head + " | R580 D | faults |" in text
    assert (
        "| torch 2.5.1 | 12.4 | R525 | R525 (≥ 525.60.13) | ✅ | ❌ SD | ❌ DTO | ❌ DTO |" in text
    )
    assert "| torch 2.0.1 | 11.7 | ⚠️ R470 | R450 (≥ 450.80.02) |" in text
    assert "**R450** 450.248.02" in text and "**DTO** driver_too_old" in text
    assert "<https://docs.nvidia.com/deploy/cuda-compatibility/>" in text  # the cited rows
    assert "record none, so none is shown" in text  # no framework-stated driver row


def test_a_cell_never_observed_is_not_a_pass(out: Path) -> None:
    text = (out / "COMPATIBILITY.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| torch 2.15.0 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "❔ none"  # lowest pass: not decided
    assert cells[4:10] == ["✅", "❌ SD", "❌ DTO", "❌ DTO", "❌ DTO", "❔"]  # R580: no result
    assert "- torch 2.15.0: R580" in text  # listed as not decided
    page = (out / "index.html").read_text(encoding="utf-8")
    cell = cell_id(NEW.slug, "baseline", R580)
    button = re.search(rf'<button[^>]*data-cell="{re.escape(cell)}"[^>]*>([^<]*)<', page)
    assert button is not None and "k-predicted" in button.group(0) and button.group(1) == "?"


def test_declared_vs_observed_lists_each_disagreement(out: Path) -> None:
    text = (out / "COMPATIBILITY.md").read_text(encoding="utf-8")
    section = text.split("## Declared vs observed", 1)[1].split("<details>", 1)[0]
    assert "2 of 3 decided releases disagree" in section and "1 not decided yet" in section
    assert section.count("### ") == 2
    assert (
        "### torch 2.0.1 (CUDA 11.7)" in section and "### tensorflow 2.15.1 (CUDA 12.2)" in section
    )
    assert f"nox -s reproduce -- {cell_id(OLD.slug, 'baseline', R450)}\n" in section
    assert f"nox -s reproduce -- {cell_id(TF.slug, 'baseline', R470)}\n" in section
    assert "(no decisive line recorded: a pass prints none)" in section


def test_hostile_decisive_line_is_escaped(out: Path) -> None:
    text = (out / "COMPATIBILITY.md").read_text(encoding="utf-8")
    # In Markdown the line stands only in a fenced block (code, never HTML or a link).
    fence = f"```text\n{HOSTILE}\n```"
    assert fence in text
    assert "<script>" not in outside_code(text)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page
    assert "found version 11000 &lt;script&gt;alert(1)&lt;/script&gt; | `x` &amp;" in page


def test_hostile_release_text_is_escaped(tmp_path: Path) -> None:
    bad = Stack(framework="torch", framework_version="2.9<img src=x onerror=alert(1)>",
                cuda="12.8", cudnn="9.10.2.21", python="3.11", base="offline")  # fmt: skip
    results = tmp_path / "r"
    for placed, passed in zip(DRIVERS, (True, False, False, True, True, True), strict=True):
        append(results, record(bad, placed, passed, HOSTILE))
    write_all([results], tmp_path / "out", catalog=(), env={}, kb=KB)
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<img" not in page and "2.9&lt;img src=x onerror=alert(1)&gt;" in page
    text = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "<img" not in outside_code(text)
    assert "the cell id is not a plain name: no command shown" in text  # no shell for it


def test_the_page_opens_on_the_grid(out: Path) -> None:
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.index('<section id="releases">') < page.index('<table id="grid">')
    assert '<input type="search" id="r-q"' in page
    for fw in ("torch", "tensorflow"):
        assert f'<input type="checkbox" value="{fw}" checked>' in page
    assert page.count('<tr data-fw="') == 4 and page.count('class="disagree"') == 2
    assert '<ul id="r-disagree">' in page
    assert f"nox -s reproduce -- {cell_id(OLD.slug, 'baseline', R450)}" in page
