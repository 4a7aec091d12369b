"""The report as people see it, in real headless Chromium (Debian's `chromium`, driven by
Playwright's Python API; no browser download): COMPATIBILITY.md rendered the way GitHub lays out
a Markdown file fits GitHub's 1,012 px column, for the smoke report and for the full profile;
index.html has no horizontal overflow at 1,400 px, and its filters, "N of M shown", URL hash
and cell detail work; the releases profile's release x driver grid (its plan with a synthetic
result per cell) fits 1,400 px with every row and column, and its text filter and framework
checkboxes work.

Skips where Chromium or Playwright is missing, unless HARNESS_REQUIRE_BROWSER=1 (CI sets it).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import catalog_of
from harness.model import Evidence
from harness.report import write_all
from tests.conftest import ROOT, harness_cli

GITHUB_COLUMN = 1012  # px: the Markdown column of a GitHub file view at its widest
PAGE_WIDTH = 1400
# What GitHub's markdown-body does to a table: 16px system font, 6px 13px cell padding, borders;
# a table wider than the column scrolls inside it (display:block), so measure its scrollWidth.
GITHUB_CSS = """
body{margin:0}.markdown-body{width:1012px;padding:0;font:16px/1.5 -apple-system,
BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif}
table{display:block;width:max-content;max-width:100%;overflow:auto;border-spacing:0;
border-collapse:collapse}td,th{padding:6px 13px;border:1px solid #d1d9e0}
code{font:85% ui-monospace,SFMono-Regular,Menlo,monospace;padding:.2em .4em}
"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        exe = None
    if exe is None:
        if os.environ.get("HARNESS_REQUIRE_BROWSER") == "1":
            pytest.fail("HARNESS_REQUIRE_BROWSER=1 but no chromium or playwright here")
        pytest.skip("needs Debian's chromium and the playwright package")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


def _report(results: Path, out: Path) -> Path:
    catalog = catalog_of(str(ROOT / "matrix.yaml")).signatures
    write_all([results], out, catalog=catalog, env={})
    return out


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed smoke journal, reported afresh."""
    return _report(ROOT / "reports" / "results", tmp_path_factory.mktemp("smoke"))


@pytest.fixture(scope="module")
def drawn_smoke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The same, its page drawn by its script as a large report's is (drawn.DRAWN_AT)."""
    from harness.report import drawn

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(drawn, "DRAWN_AT", 1)
        yield _report(ROOT / "reports" / "results", tmp_path_factory.mktemp("drawn"))


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full profile's plan (every cell predicted): the widest table the matrix makes."""
    folder = tmp_path_factory.mktemp("full-results")
    res = harness_cli("plan", "--profile", "full", "--format", "json", timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    (folder / "plan.json").write_text(res.stdout, encoding="utf-8")
    assert len(json.loads(res.stdout)["cells"]) > 100
    return _report(folder, tmp_path_factory.mktemp("full"))


def table_widths(browser: Any, markdown: str) -> list[int]:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_content(
        f'<html><head><meta charset="utf-8"><style>{GITHUB_CSS}</style></head>'
        f'<body><article class="markdown-body">{body}</article></body></html>'
    )
    widths: list[int] = page.eval_on_selector_all("table", "ts => ts.map(t => t.scrollWidth)")
    page.close()
    return widths


@pytest.mark.parametrize("profile", ["smoke", "full"])
def test_compatibility_fits_a_github_column(
    profile: str, browser: Any, request: pytest.FixtureRequest
) -> None:
    out: Path = request.getfixturevalue(profile)
    widths = table_widths(browser, (out / "COMPATIBILITY.md").read_text(encoding="utf-8"))
    assert widths and max(widths) <= GITHUB_COLUMN, widths


@pytest.mark.parametrize("report", ["smoke", "drawn_smoke"])
def test_the_page_filters_shows_a_cell_and_keeps_state(
    browser: Any, report: str, request: pytest.FixtureRequest
) -> None:
    smoke: Path = request.getfixturevalue(report)
    assert ("<noscript>" in (smoke / "index.html").read_text(encoding="utf-8")) == (
        report == "drawn_smoke"
    )
    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    url = (smoke / "index.html").as_uri()
    page.goto(url)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PAGE_WIDTH
    plan = json.loads((ROOT / "reports" / "results" / "plan.json").read_text(encoding="utf-8"))
    n = len(plan["cells"])  # every cell of the committed smoke plan has a result
    assert page.text_content("#shown") == f"{n} of {n} shown"

    page.select_option("#f-k", "unobservable")
    assert page.text_content("#shown") == f"13 of {n} shown"
    assert "k=unobservable" in page.evaluate("location.hash")
    assert page.locator("#results tbody tr:visible").count() == 13
    assert page.locator("#grid .c.off").count() == n - 13

    cell = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/gpu-oom"
    page.click(f'#grid .c[data-cell="{cell}"]')
    detail = page.locator("#detail")
    assert detail.is_visible()
    text = detail.inner_text()
    assert cell in text and "not observable here" in text
    assert "because" in text and "reproduce" in text
    assert f"nox -s reproduce -- {cell}" in text
    assert "stackmatrix/env:torch-2.15.0" in text  # the environment it ran on
    assert page.evaluate("document.documentElement.scrollWidth") <= PAGE_WIDTH

    # The state lives in the URL: a fresh page from it shows the same filter and cell.
    again = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    again.goto(page.url)
    assert again.text_content("#shown") == f"13 of {n} shown"
    assert again.locator("#detail").is_visible()
    assert again.text_content("#d-title") == cell
    page.close()
    again.close()


# The grid, the table's rows and the details' data as the page has them once its script ran
# (end tags the static page leaves out hold its line breaks: those are left out here).
_DRAWN_STATE = """() => ({
  grid: document.getElementById("grid").outerHTML.replaceAll("\\n", ""),
  rows: document.querySelector("#results tbody").innerHTML.replaceAll("\\n", ""),
  cells: JSON.stringify(data.cells), fixes: JSON.stringify(data.fixes),
  signatures: JSON.stringify(data.signatures),
})"""


def test_a_drawn_page_is_the_written_page(
    browser: Any, smoke: Path, drawn_smoke: Path, tmp_path: Path
) -> None:
    """The page a large report's script draws has the very elements, attributes, texts and
    details the page of a small report is written with: for the smoke report, and for results
    whose every text is hostile markup."""
    from harness.report import drawn

    hostile = _hostile_results(tmp_path / "r")
    written = _report(hostile, tmp_path / "written")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(drawn, "DRAWN_AT", 1)
        drawn_hostile = _report(hostile, tmp_path / "drawn")
    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    for static, drawn_out in ((smoke, drawn_smoke), (written, drawn_hostile)):
        states = []
        for folder in (static, drawn_out):
            page.goto((folder / "index.html").as_uri())
            states.append(page.evaluate(_DRAWN_STATE))
        for key in states[0]:
            assert states[1][key] == states[0][key], key
        assert (
            page.evaluate("document.querySelectorAll('#grid script, #results script').length") == 0
        )
    page.close()


@pytest.mark.parametrize("distinct", [3, 300, 70_000])
def test_a_drawn_pages_indexes_read_back_at_every_width(
    browser: Any, drawn_smoke: Path, distinct: int
) -> None:
    """drawn._column packs a column's indexes in 1, 2 or 4 bytes by how many distinct texts it
    has; the page's unpack reads each back to the same texts."""
    from harness.report.drawn import _column

    values = [f"t{i % distinct}" for i in range(2 * distinct + 5)]
    texts, packed, width = json.loads(_column(values))
    assert width == (1 if distinct <= 0xFF else 2 if distinct <= 0xFFFF else 4)
    page = browser.new_page()
    page.goto((drawn_smoke / "index.html").as_uri())
    codes = page.evaluate("([p, w]) => unpack(p, w)", [packed, width])
    assert [texts[c] for c in codes] == values
    page.close()


def _hostile_results(folder: Path) -> Path:
    """A journal whose scenario, decisive line, error, GPU and image are markup."""
    from harness.journal import append
    from harness.model import Expectation, Machine, Observed, Outcome, RunResult, Stack, Status

    bad = "<script>alert(1)</script><img src=x onerror=alert(2)> & \"q\" 'a'"
    stack = Stack(framework="torch", framework_version="2.15.0", cuda="13.2", cudnn="9.26",
                  python="3.11", base="offline")  # fmt: skip
    for i, status in enumerate((Status.PASSED, Status.FAILED, Status.ERRORED)):
        scenario = f"s{i}-x"
        seen = Observed(
            outcome=Outcome.FAIL if status is Status.FAILED else Outcome.PASS, stage=None,
            decisive_line=bad if status is Status.FAILED else None, exit_code=1, signal=None,
            signature="cudnn_missing" if status is Status.FAILED else None,
        )  # fmt: skip
        append(folder, RunResult(
            cell=f"{stack.slug}/{scenario}", stack=stack, scenario=scenario, key=f"k{i}",
            backend="docker", status=status, expected=Expectation(outcome=Outcome.PASS),
            observed=None if status is Status.ERRORED else seen, drift=status is Status.FAILED,
            evidence=Evidence.CPU, started="2026-11-26T10:00:00+00:00", seconds=1.5 * i,
            image=f"stackmatrix/stack:{bad}", error=bad if status is Status.ERRORED else None,
            machine=Machine(gpu=bad, driver="580.65.06"),
        ).to_json())  # fmt: skip
    return folder


def test_a_failed_cell_shows_its_signature_cause_and_fix(browser: Any, smoke: Path) -> None:
    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    cell = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/missing-cudnn"
    page.goto((smoke / "index.html").as_uri() + "#" + cell)
    text = page.locator("#detail").inner_text()
    assert "cudnn_missing" in text and "decisive line" in text
    assert "cause" in text and "fix" in text and "expected" in text
    assert "nvidia-cudnn-cu13" in text or "nvidia-cudnn-cu12" not in text  # the stack's major
    page.close()


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The releases profile's plan with a synthetic result per cell (each as the plan expects,
    a long decisive line on every failure): the widest release grid the matrix makes."""
    from harness.journal import append
    from harness.model import Observed, Outcome, Plan, RunResult, Status

    folder = tmp_path_factory.mktemp("releases-results")
    res = harness_cli("plan", "--profile", "releases", "--format", "json", timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    (folder / "plan.json").write_text(res.stdout, encoding="utf-8")
    plan = Plan.from_json(json.loads(res.stdout))
    for c in plan.cells:
        ok = c.expected.outcome is not Outcome.FAIL
        seen = Observed(
            outcome=Outcome.PASS if ok else Outcome.FAIL, stage=None if ok else c.expected.stage,
            decisive_line=None if ok else "RuntimeError: The NVIDIA driver on your system is "
            "too old (found version 11000). Please update your GPU driver " * 3,
            exit_code=0 if ok else 1, signal=None, signature=None if ok else c.expected.signature,
        )  # fmt: skip
        append(folder, RunResult(
            cell=c.id, stack=c.stack, scenario=c.scenario, key="k", backend="docker",
            status=Status.PASSED if ok else Status.FAILED, expected=c.expected, observed=seen,
            drift=False, evidence=c.evidence, started="2026-11-26T10:00:00+00:00", seconds=3.0,
            image="stackmatrix/stack:x", placed=c.driver,
        ).to_json())  # fmt: skip
    return _report(folder, tmp_path_factory.mktemp("releases"))


def test_the_release_grid_fits_and_filters(browser: Any, releases: Path) -> None:
    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    page.goto((releases / "index.html").as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= PAGE_WIDTH
    rows = page.locator("#rgrid tbody tr")
    n = rows.count()
    assert n >= 22  # every torch 2.0-2.15 and TF 2.14-2.21 release
    heads = page.eval_on_selector_all("#rgrid thead th", "hs => hs.map(h => h.textContent)")
    assert heads[:6] == ["release", "CUDA", "lowest pass", "declared", "none", "stub"]
    assert [h[:4] for h in heads[6:]] == ["R450", "R470", "R510", "R525", "R535", "R545",
                                         "R550", "R565", "R570", "R580", "R595"]  # fmt: skip
    # Every cell of every row lies inside the window: no column is cut off.
    right = page.evaluate(
        "Math.max(...[...document.querySelectorAll('#rgrid td, #rgrid th')]"
        ".map(e => e.getBoundingClientRect().right))"
    )
    assert right <= PAGE_WIDTH
    assert page.text_content("#r-shown") == f"{n} of {n} releases shown"

    page.fill("#r-q", "torch 2.1")  # 2.1.2 and 2.10-2.15
    torch21 = page.locator("#rgrid tbody tr:visible").count()
    assert 0 < torch21 < n and page.text_content("#r-shown") == f"{torch21} of {n} releases shown"
    page.fill("#r-q", "")
    page.uncheck('#r-filters input[value="torch"]')
    shown = page.eval_on_selector_all(
        "#rgrid tbody tr:not([hidden])", "rs => rs.map(r => r.dataset.fw)"
    )
    assert shown and set(shown) == {"tensorflow"}

    visible = "#rgrid tbody tr:not([hidden])"
    cell = page.locator(f'{visible} .c.k-expected-fail[data-cell$="@450.248.02"]').first
    name = cell.get_attribute("data-cell")
    cell.click()
    assert page.locator("#detail").is_visible()
    assert page.text_content("#d-title") == name
    assert "driver_too_old" in page.locator("#detail").inner_text()
    page.close()


def test_the_release_table_on_github(browser: Any, releases: Path) -> None:
    """The grid table holds 18 columns: on GitHub it may scroll inside its column, but the
    answer (release, CUDA, lowest pass, declared) comes first and fits without scrolling."""
    text = (releases / "COMPATIBILITY.md").read_text(encoding="utf-8")
    grid = next(t for t in text.split("\n\n") if t.startswith("| release |"))
    answer = "\n".join("|".join(line.split("|")[:5]) + "|" for line in grid.splitlines())
    assert max(table_widths(browser, answer)) <= GITHUB_COLUMN
    assert table_widths(browser, grid)  # the whole table renders as one table
