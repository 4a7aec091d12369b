"""The published report from a small journal and plan: golden Markdown, escaping, shard merge,
completeness, the diff between two reports, JUnit, the CI step summary."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.journal import append
from harness.matrix import shard
from harness.model import (
    Evidence,
    Expectation,
    Gpu,
    Machine,
    Observed,
    Outcome,
    Pattern,
    Plan,
    RunResult,
    Signature,
    Stack,
    Stage,
    Status,
    Where,
)
from harness.report import ReportSummary, reproduce_command, safe, write_all
from harness.report.advice import advice_for, fix_step
from harness.report.md import code, md, source
from harness.report.summary import coverage_gaps
from tests.conftest import FIXTURES
from tests.unit.golden import check_golden

GOLDEN = FIXTURES / "report"
T1 = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"
T2 = "torch-2.15.0_cu13.2_cudnn9.13_py3.11_offline"
TF = "tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline"
PASS = Expectation(outcome=Outcome.PASS)
NO_CUDNN = Expectation(outcome=Outcome.FAIL, signature="cudnn_missing", stage=Stage.IMPORT)
OLDER = Expectation(outcome=Outcome.FAIL, signature="cudnn_version_mismatch", stage=Stage.CUDNN_API)
EXPECTED = {"baseline": PASS, "missing-cudnn": NO_CUDNN, "cudnn-older-runtime": OLDER}
PLAN = Plan.from_json(json.loads((GOLDEN / "plan.json").read_text(encoding="utf-8")))
STACKS: dict[str, Stack] = {c.stack.slug: c.stack for c in PLAN.cells}
SCRIPT_LINE = "OSError: libcudnn.so.9: cannot open <script>alert(1)</script> & \x1b[31mgone\x1b[0m"


def signature(sid: str, title: str, stage: Stage | None) -> Signature:
    return Signature(
        id=sid,
        title=title,
        stage=stage,
        patterns=(Pattern(regex=sid, needle=sid),),
        signals=(),
        cause=f"The cause of {title.lower()}; a <b>tag</b> | a pipe.",
        fix=("Install the matching library.", "Run `nox -s reproduce -- <cell>` again."),
        frameworks=("torch", "tensorflow"),
        priority=10,
        sources=("https://docs.nvidia.com/deeplearning/cudnn/", "scenarios/missing-cudnn.yaml"),
        where=Where("scenarios/signatures.yaml", 4, 5),
    )


CATALOG = (
    signature("cudnn_missing", "cuDNN library not found", Stage.IMPORT),
    signature("cudnn_version_mismatch", "cuDNN older than the build", Stage.CUDNN_API),
    signature("cuda_runtime_missing", "CUDA runtime library not found", Stage.IMPORT),
    signature("corrupt_library", "A truncated shared library", None),
)


def observed(
    outcome: Outcome,
    sig: str | None = None,
    stage: Stage | None = None,
    line: str | None = None,
    secondary: tuple[str, ...] = (),
) -> Observed:
    code = 0 if outcome is Outcome.PASS else 1
    return Observed(
        outcome=outcome,
        stage=stage,
        decisive_line=line,
        exit_code=code,
        signal=None,
        signature=sig,
        secondary=secondary,
    )


def result(
    cell: str,
    status: str,
    seen: Observed | None,
    *,
    drift: bool = False,
    expected: Expectation | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """A schema-2 journal record; `kw` overrides its JSON fields."""
    slug, _, scenario = cell.rpartition("/")
    rec = RunResult(
        cell=cell,
        stack=STACKS[slug],
        scenario=scenario,
        key="k-" + cell,
        backend="docker",
        status=Status(status),
        expected=expected or EXPECTED[scenario],
        observed=seen,
        drift=drift,
        evidence=Evidence.CPU,
        started=kw.pop("started", "2025-06-01T10:00:00+00:00"),
        seconds=kw.pop("seconds", 4.25),
        image=f"stackmatrix/stack:{cell.split('/', 1)[0]}-0123456789ab",
        error=kw.pop("error", None),
    ).to_json()
    return {**rec, "driver": None, "gpu": None, **kw}


def shard_one() -> list[dict[str, Any]]:
    late = "2025-06-01T12:00:00+00:00"
    return [
        result(f"{T1}/baseline", "passed", observed(Outcome.PASS)),
        result(
            f"{T1}/missing-cudnn",
            "failed",
            observed(Outcome.FAIL, "cudnn_missing", Stage.IMPORT, SCRIPT_LINE),
        ),
        result(f"{T1}/cudnn-older-runtime", "passed", observed(Outcome.PASS), drift=True),
        result(f"{T2}/baseline", "interrupted", None, drift=True),
        result(f"{T2}/missing-cudnn", "interrupted", None, drift=True, started=late),
    ]


def shard_two() -> list[dict[str, Any]]:
    late = "2025-06-01T11:00:00+00:00"
    timeout = Observed(
        outcome=Outcome.FAIL,
        stage=Stage.CUDNN_API,
        decisive_line=None,
        exit_code=None,
        signal=None,
        signature="timeout",
    )
    tf_line = "ImportError: libcudart.so.12: cannot open shared object file | No such file"
    return [
        result(f"{T2}/baseline", "passed", observed(Outcome.PASS), started=late),
        result(
            f"{T2}/missing-cudnn",
            "failed",
            observed(Outcome.FAIL, "cudnn_missing", Stage.IMPORT, "libcudnn.so.9 missing"),
        ),
        result(f"{T2}/cudnn-older-runtime", "timeout", timeout, drift=True, seconds=600.0),
        result(
            f"{TF}/baseline",
            "errored",
            None,
            drift=True,
            error="Traceback (most recent call last):\n  ...\nRuntimeError: engine <gone> & out",
        ),
        result(
            f"{TF}/missing-cudnn",
            "failed",
            observed(
                Outcome.FAIL, "cuda_runtime_missing", Stage.IMPORT, tf_line, ("cudnn_missing",)
            ),
            drift=True,
        ),
    ]


def journal(folder: Path, records: list[dict[str, Any]], plan: bool = False) -> Path:
    for rec in records:
        append(folder, rec)
    if plan:
        shutil.copy(GOLDEN / "plan.json", folder / "plan.json")
    return folder


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    return [
        journal(tmp_path / "results-1", shard_one(), plan=True),
        journal(tmp_path / "results-2", shard_two()),
    ]


def report(results: list[Path], out: Path, env: dict[str, str] | None = None) -> ReportSummary:
    return write_all(results, out, catalog=CATALOG, env=env or {})


def csv_rows(out: Path) -> dict[str, dict[str, str]]:
    text = (out / "results.csv").read_text(encoding="utf-8")
    return {r["cell"]: r for r in csv.DictReader(io.StringIO(text))}


# ---------------------------------------------------------------- golden


@pytest.mark.parametrize("name", ["COMPATIBILITY.md", "SIGNATURES.md", "DIFF.md"])
def test_markdown_golden(name: str, shards: list[Path], tmp_path: Path) -> None:
    report(shards, tmp_path / "out")
    check_golden(GOLDEN / name, (tmp_path / "out" / name).read_text(encoding="utf-8"))


def test_step_summary_is_appended_and_golden(shards: list[Path], tmp_path: Path) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step", encoding="utf-8")
    summary = report(shards, tmp_path / "out", {"GITHUB_STEP_SUMMARY": str(step)})
    text = step.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## stackmatrix report\n")
    check_golden(GOLDEN / "step_summary.md", text.removeprefix("earlier step\n"))
    assert summary.paths[-1] == step


def test_no_step_summary_without_the_variable(shards: list[Path], tmp_path: Path) -> None:
    summary = report(shards, tmp_path / "out")
    assert {p.parent for p in summary.paths} == {tmp_path / "out"}
    names = {"COMPATIBILITY.md", "FAULTS.md", "SIGNATURES.md", "index.html", "results.csv"}
    names |= {"junit.xml"}
    assert {p.name for p in summary.paths} == {*names, "DIFF.md", "report.json"}


# ---------------------------------------------------------------- merge and completeness


def test_shards_merge_latest_record_wins(shards: list[Path], tmp_path: Path) -> None:
    summary = report(shards, tmp_path / "out")
    rows = csv_rows(tmp_path / "out")
    assert len(rows) == 9
    assert rows[f"{T2}/baseline"]["status"] == "passed"  # a later pass beats an interruption
    assert rows[f"{T2}/missing-cudnn"]["status"] == "interrupted"  # last is last, even this
    assert rows[f"{TF}/cudnn-older-runtime"]["status"] == "not-run"
    assert rows[f"{TF}/cudnn-older-runtime"]["evidence_level"] == "predicted"
    c = summary.counts
    assert (c.cells, c.passed, c.failed_as_expected, c.drift) == (9, 2, 1, 2)
    assert (c.timeout, c.errored, c.interrupted, c.predicted) == (1, 1, 1, 1)
    assert summary.drift == (f"{TF}/missing-cudnn", f"{T1}/cudnn-older-runtime")


def test_same_start_time_later_file_order_wins(tmp_path: Path) -> None:
    first = result(f"{T1}/baseline", "interrupted", None, drift=True)
    again = result(f"{T1}/baseline", "passed", observed(Outcome.PASS))
    report([journal(tmp_path / "a", [first]), journal(tmp_path / "b", [again])], tmp_path / "o1")
    assert csv_rows(tmp_path / "o1")[f"{T1}/baseline"]["status"] == "passed"
    report([tmp_path / "b", tmp_path / "a"], tmp_path / "o2")
    assert csv_rows(tmp_path / "o2")[f"{T1}/baseline"]["status"] == "interrupted"


def schema_one(rec: dict[str, Any]) -> dict[str, Any]:
    """A record as the first journal schema wrote it: the stack only in the cell id."""
    return {k: v for k, v in rec.items() if k not in ("stack", "scenario")} | {"schema": 1}


def test_schema_one_records_read_the_same(shards: list[Path], tmp_path: Path) -> None:
    report(shards, tmp_path / "two")
    old = [journal(tmp_path / "old-1", [schema_one(r) for r in shard_one()], plan=True)]
    old.append(journal(tmp_path / "old-2", [schema_one(r) for r in shard_two()]))
    report(old, tmp_path / "one")
    for name in ("COMPATIBILITY.md", "results.csv", "junit.xml"):
        one, two = ((tmp_path / d / name).read_text(encoding="utf-8") for d in ("one", "two"))
        assert one == two, name


def test_records_that_are_not_results_are_skipped(tmp_path: Path) -> None:
    good = result(f"{T1}/baseline", "passed", observed(Outcome.PASS))
    no_key = {k: v for k, v in result(f"{T2}/baseline", "passed", None).items() if k != "key"}
    bad_status = result(f"{TF}/baseline", "passed", None) | {"status": "exploded"}
    # a schema-1 cell id that names no stack, and a cell id that is not its stack's
    odd = schema_one(result(f"{T1}/missing-cudnn", "failed", None)) | {"cell": "jax/baseline"}
    moved = result(f"{T2}/missing-cudnn", "failed", None) | {"cell": f"{T1}/missing-cudnn"}
    report([journal(tmp_path / "r", [good, no_key, bad_status, odd, moved])], tmp_path / "out")
    assert list(csv_rows(tmp_path / "out")) == [f"{T1}/baseline"]


def test_plan_with_cells_left_is_partial(shards: list[Path], tmp_path: Path) -> None:
    summary = report(shards, tmp_path / "out")
    assert summary.partial is True
    assert (summary.finished, summary.planned) == (6, 9)
    text = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "PARTIAL: 6 of 9 cells have results" in text


def every_cell_finished() -> list[dict[str, Any]]:
    return [
        result(f"{s}/{n}", "passed", observed(Outcome.PASS), drift=n != "baseline")
        for s in (T1, T2, TF)
        for n in EXPECTED
    ]


def write_plan(folder: Path, plan: Plan) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plan.json").write_text(json.dumps(plan.to_json()), encoding="utf-8")


def sharded(tmp_path: Path, records: list[dict[str, Any]]) -> list[Path]:
    """Shards 1/2 and 2/2 of the fixture plan, each folder with its cells' records."""
    folders = []
    for i in (1, 2):
        part = shard(PLAN, i, 2)
        write_plan(tmp_path / f"shard-{i}", part)
        mine = {c.id for c in part.cells}
        folders.append(journal(tmp_path / f"shard-{i}", [r for r in records if r["cell"] in mine]))
    return folders


@pytest.mark.parametrize("records", [every_cell_finished, lambda: shard_one() + shard_two()])
def test_shards_merge_to_the_unsharded_report(records: Any, tmp_path: Path) -> None:
    one = report([journal(tmp_path / "whole", records(), plan=True)], tmp_path / "one")
    two = report(sharded(tmp_path, records()), tmp_path / "two")
    assert (two.partial, two.finished, two.planned) == (one.partial, one.finished, one.planned)
    for name in ("COMPATIBILITY.md", "results.csv", "SIGNATURES.md", "junit.xml"):
        text = [(tmp_path / d / name).read_text(encoding="utf-8") for d in ("one", "two")]
        assert text[0] == text[1], name


def test_every_shard_finished_is_complete(tmp_path: Path) -> None:
    summary = report(sharded(tmp_path, every_cell_finished()), tmp_path / "out")
    assert summary.partial is False
    assert "COMPLETE: 9 of 9 cells have results\n" in summary.text()


def test_a_lone_shard_is_partial(tmp_path: Path) -> None:
    first = sharded(tmp_path, every_cell_finished())[0]
    summary = report([first], tmp_path / "out")
    assert (summary.partial, summary.finished, summary.planned) == (True, 6, 6)
    expected = (
        "PARTIAL: shard 1 of 2: 6 of 6 cells have results (smoke: shard 2/2 not in these results)"
    )
    assert expected + "\n" in summary.text()
    text = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert f"- **completeness**: {expected}\n" in text


def test_cells_chosen_by_a_selector_are_partial(tmp_path: Path) -> None:
    chosen = replace(PLAN, selectors=("torch-*",))
    write_plan(tmp_path / "r", chosen)
    summary = report([journal(tmp_path / "r", every_cell_finished())], tmp_path / "out")
    assert summary.partial is True
    assert "COMPLETE" not in summary.text()
    assert "(smoke: only the cells matching torch-*)" in summary.text()


def plan_of(profile: str, part: tuple[int, int] | None = None, *selectors: str) -> Plan:
    return replace(PLAN, profile=profile, cells=(), shard=part, selectors=selectors)


@pytest.mark.parametrize(
    ("plans", "gaps"),
    [
        ([plan_of("smoke")], ()),
        ([plan_of("smoke", (2, 2)), plan_of("smoke", (1, 2))], ()),
        ([plan_of("smoke", (1, 2))], ("smoke: shard 2/2 not in these results",)),
        ([plan_of("smoke", (1, 3)), plan_of("smoke", None, "x*")], (
            "smoke: shards 2/3, 3/3 not in these results",
            "smoke: only the cells matching x*",
        )),
        ([plan_of("smoke", (1, 2)), plan_of("smoke")], ()),  # the whole plan covers the shard
        ([plan_of("smoke", (1, 9))], ("smoke: 8 of 9 shards not in these results",)),
        ([plan_of("smoke", (1, 2)), plan_of("full", (2, 2))], (
            "full: shard 1/2 not in these results",
            "smoke: shard 2/2 not in these results",
        )),
        ([plan_of("smoke", (1, 2)), plan_of("smoke", (2, 3))], (
            "smoke: shard 2/2 not in these results",
            "smoke: shards 1/3, 3/3 not in these results",
        )),
    ],
)  # fmt: skip
def test_coverage_gaps(plans: list[Plan], gaps: tuple[str, ...]) -> None:
    assert coverage_gaps(plans) == gaps


def test_without_a_plan_completeness_is_unknown(tmp_path: Path) -> None:
    summary = report([journal(tmp_path / "r", shard_one())], tmp_path / "out")
    assert summary.partial is None and summary.planned is None
    text = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "completeness unknown (no plan.json): 3 cells finished" in text


def test_every_planned_cell_finished_is_complete(tmp_path: Path) -> None:
    records = every_cell_finished()
    summary = report([journal(tmp_path / "r", records, plan=True)], tmp_path / "out")
    assert summary.partial is False
    assert "COMPLETE: 9 of 9" in summary.text()


def test_a_plan_alone_predicts_every_cell(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    shutil.copy(GOLDEN / "plan.json", tmp_path / "r" / "plan.json")
    summary = report([tmp_path / "r"], tmp_path / "out")
    assert (summary.partial, summary.finished, summary.counts.predicted) == (True, 0, 9)
    text = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert "- **newest result**: no results\n" in text
    assert "| ❔ pass P |" in text
    faults = (tmp_path / "out" / "FAULTS.md").read_text(encoding="utf-8")
    assert "| ❔ fail: cudnn_missing @ import P | fail: cudnn_missing @ import |" in faults


@pytest.mark.parametrize(
    "change",
    [
        lambda plan: {"cells": [{"id": "x"}]},
        lambda plan: plan | {"cells": [*plan["cells"][:2], {**plan["cells"][2], "evidence": 7}]},
        lambda plan: plan | {"shard": "3/2"},
        lambda plan: plan | {"shard": "one/two"},
        lambda plan: plan | {"cells": [{**plan["cells"][0], "id": f"{T2}/baseline"}]},
        lambda plan: [plan],
    ],
)
def test_a_bad_plan_is_a_user_error_with_its_path(change: Any, tmp_path: Path) -> None:
    journal(tmp_path / "r", shard_one())
    plan = json.loads((GOLDEN / "plan.json").read_text(encoding="utf-8"))
    (tmp_path / "r" / "plan.json").write_text(json.dumps(change(plan)), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^not a plan") as err:
        report([tmp_path / "r"], tmp_path / "out")
    assert err.value.where is not None and err.value.where.file.endswith("plan.json")


def test_a_plan_that_is_not_json_is_a_user_error(tmp_path: Path) -> None:
    journal(tmp_path / "r", shard_one())
    (tmp_path / "r" / "plan.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^not JSON"):
        report([tmp_path / "r"], tmp_path / "out")


def test_missing_results_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        report([tmp_path / "nowhere"], tmp_path / "out")


def test_empty_results_folder_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    with pytest.raises(ConfigError, match=r"no results and no plan\.json"):
        report([tmp_path / "r"], tmp_path / "out")


# ---------------------------------------------------------------- HTML


def test_html_escapes_everything_from_the_data(shards: list[Path], tmp_path: Path) -> None:
    report(shards, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; gone" in page
    assert "<script>alert" not in page
    assert "engine &lt;gone&gt; &amp; out" in page  # an errored cell shows its exception
    assert page.count("<script>") == 1  # the page's own script, nothing else
    assert page.count("</script>") == 2  # that one and the JSON data's
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert data and "\\u003cscript>alert(1)\\u003c/script>" in data.group(1)


def test_html_is_self_contained_with_an_anchor_per_cell(shards: list[Path], tmp_path: Path) -> None:
    report(shards, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page and "<img" not in page  # the grid is HTML, not a picture
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    ids = re.findall(r'<tr id="([^"]+)"', page)
    assert sorted(ids) == sorted(csv_rows(tmp_path / "out"))
    assert len(re.findall(r'<button type="button" class="c k-', page)) == len(ids)
    for attr in ("data-fw", "data-stack", "data-sc", "data-sig", "data-k", "data-lvl"):
        assert f'{attr}="' in page
    assert '<option value="cudnn_missing">cudnn_missing: cuDNN library not found</option>' in page
    assert '<output id="shown">9 of 9 shown</output>' in page


def test_a_large_page_is_drawn_from_columns_that_cannot_end_their_element(
    shards: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From drawn.DRAWN_AT cells on, the grid and table are drawn by the page's script: the
    page carries no row of its own, every text from the results stands only in the JSON (its
    `<` escaped), and the columns hold each cell's texts (tests/unit/test_report_browser.py
    draws it in Chromium)."""
    from harness.report import drawn

    monkeypatch.setattr(drawn, "DRAWN_AT", 1)
    report(shards, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<tr id=" not in page and '<button type="button" class="c k-' not in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" not in page
    assert page.count("<script>") == 1 and page.count("</script>") == 2
    assert "<noscript>" in page and '<output id="shown">9 of 9 shown</output>' in page
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert raw and "<" not in raw.group(1)
    data = json.loads(raw.group(1))
    assert data["n"] == 9 and len(data["cols"]["id"]) == 9  # ids never repeat: a plain list
    assert sorted(data["cols"]["id"]) == sorted(csv_rows(tmp_path / "out"))
    texts, packed, width = data["cols"]["k"]  # a repeated text: distinct texts, then indexes
    codes = base64.b64decode(packed)
    assert width == 1 and len(codes) == 9 and set(codes) == set(range(len(texts)))
    assert any("<script>alert(1)</script>" in line for line in data["cols"]["line"][0])


def test_markdown_has_no_links_into_the_page(shards: list[Path], tmp_path: Path) -> None:
    """GitHub shows index.html as source: the Markdown links only Markdown."""
    report(shards, tmp_path / "out")
    for name in ("COMPATIBILITY.md", "FAULTS.md", "SIGNATURES.md"):
        assert "index.html#" not in (tmp_path / "out" / name).read_text(encoding="utf-8"), name


# ---------------------------------------------------------------- JUnit and CSV


def test_junit_one_testcase_per_cell(shards: list[Path], tmp_path: Path) -> None:
    report(shards, tmp_path / "out")
    root = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 9
    kinds = {
        (c.get("classname"), c.get("name")): [e.tag for e in c if e.tag != "properties"]
        for c in cases
    }
    t1, t2, tf = (f"{s.split('-', 1)[0]}.{s.replace('.', '_')}" for s in (T1, T2, TF))
    assert {c.get("classname") for c in cases} == {t1, t2, tf}  # one dot: framework.stack
    assert kinds[(t1, "missing-cudnn")] == ["system-out"]  # failed as expected: a pass
    assert kinds[(t1, "cudnn-older-runtime")] == ["failure"]  # drift
    assert kinds[(t2, "cudnn-older-runtime")] == ["failure"]  # timeout
    assert kinds[(tf, "baseline")] == ["error"]
    assert kinds[(t2, "missing-cudnn")] == ["skipped"]  # interrupted
    assert kinds[(tf, "cudnn-older-runtime")] == ["skipped"]  # not run
    props = {p.get("name"): p.get("value") for p in cases[0].iter("property")}
    assert set(props) >= {"driver", "gpu", "image", "evidence", "backend"}
    suite = root.find("testsuite")
    assert suite is not None
    assert [suite.get(a) for a in ("tests", "failures", "errors", "skipped")] == [
        "9",
        "3",
        "1",
        "2",
    ]
    drift = next(c for c in cases if (c.get("classname"), c.get("name")) == (tf, "missing-cudnn"))
    failure = drift.find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "expected fail: cudnn_missing @ import, observed fail: cuda_runtime_missing @ import "
        "(exit code 1)"
    )
    assert failure.text == (
        "decisive line: ImportError: libcudart.so.12: cannot open shared object file | No such "
        f"file\nreproduce: nox -s reproduce -- {TF}/missing-cudnn"
    )


def test_junit_survives_control_characters(tmp_path: Path) -> None:
    line = "boom \x00\x1b[1m<&>\x07 \ud800 end"
    rec = result(
        f"{T1}/baseline",
        "failed",
        observed(Outcome.FAIL, "corrupt_library", Stage.IMPORT, line),
        drift=True,
    )
    report([journal(tmp_path / "r", [rec])], tmp_path / "out")
    failure = ET.parse(tmp_path / "out" / "junit.xml").getroot().find(".//failure")
    assert failure is not None and failure.text is not None
    # control characters and colours dropped; the journal reader made the lone surrogate U+FFFD
    assert failure.text.startswith("decisive line: boom <&> \ufffd end\nreproduce: ")


def test_a_stack_whose_name_loses_control_characters_is_reported_without_them(
    tmp_path: Path,
) -> None:
    """A record whose cell id and stack both carry a control character: cleaned, its stack
    names no stack any more. Its parts are empty text, not None (the page's filters escaped
    None and the report died with a traceback)."""
    rec = result(f"{T1}/baseline", "passed", observed(Outcome.PASS))
    rec["cell"] = f"zz\x07{T1}/baseline"
    rec["stack"]["framework"] = "zz\x07torch"
    report([journal(tmp_path / "r", [rec])], tmp_path / "out")
    rows = csv_rows(tmp_path / "out")
    assert rows[f"zz{T1}/baseline"]["framework"] == ""
    for page in (tmp_path / "out").iterdir():
        if page.is_file():
            assert "\x07" not in page.read_text(encoding="utf-8"), page.name


def test_csv_has_one_row_per_cell_and_the_columns(shards: list[Path], tmp_path: Path) -> None:
    report(shards, tmp_path / "out")
    rows = csv_rows(tmp_path / "out")
    row = rows[f"{T1}/missing-cudnn"]
    assert row["framework"] == "torch" and row["stack"] == T1 and row["scenario"] == "missing-cudnn"
    assert row["expected_signature"] == row["observed_signature"] == "cudnn_missing"
    assert row["observed_decisive_line"].endswith("& gone")  # terminal colours dropped
    assert row["observed_exit_code"] == "1" and row["evidence_level"] == "cpu-verified"
    assert row["drift"] == "False" and row["seconds"] == "4.25"
    assert set(row) >= {"backend", "started", "driver", "gpu", "expected_outcome", "observed_stage"}


def test_driver_gpu_and_secondary_fields(tmp_path: Path) -> None:
    gpu = "NVIDIA H100 80GB HBM3"
    seen = observed(Outcome.FAIL, "cudnn_missing", Stage.IMPORT, "x", ("a", "b"))
    records = [
        result(f"{T1}/missing-cudnn", "failed", seen, driver="580.65.06", gpu=gpu),
        result(f"{T2}/missing-cudnn", "failed", observed(Outcome.FAIL, "c", Stage.IMPORT)),
    ]
    report([journal(tmp_path / "r", records)], tmp_path / "out")
    rows = csv_rows(tmp_path / "out")
    assert rows[f"{T1}/missing-cudnn"]["verdict_secondary"] == "a;b"
    assert rows[f"{T2}/missing-cudnn"]["verdict_secondary"] == ""
    assert rows[f"{T1}/missing-cudnn"]["driver"] == "580.65.06"
    text = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert f"- **driver**: 580.65.06\n- **GPU**: {gpu}\n" in text


def test_gpu_verified_only_where_the_host_had_a_gpu(tmp_path: Path) -> None:
    """A plan for a driver (`--driver 535...` on a machine without one) is not GPU evidence."""
    gpu = Machine.of("580.159.04", [Gpu(index=0, name="NVIDIA H100 80GB HBM3", capability="9.0")])
    records = [
        result(f"{T1}/baseline", "passed", observed(Outcome.PASS), evidence="gpu", gpu=gpu.gpu),
        result(f"{T2}/baseline", "passed", observed(Outcome.PASS), evidence="gpu", gpu=None),
        result(f"{TF}/baseline", "passed", observed(Outcome.PASS), gpu=gpu.gpu),
    ]
    report([journal(tmp_path / "r", records)], tmp_path / "out")
    rows = csv_rows(tmp_path / "out")
    assert rows[f"{T1}/baseline"]["evidence_level"] == "gpu-verified"
    assert rows[f"{T1}/baseline"]["gpu"] == "NVIDIA H100 80GB HBM3 (cc 9.0)"
    assert rows[f"{T2}/baseline"]["evidence_level"] == "unverified"
    assert rows[f"{TF}/baseline"]["evidence_level"] == "cpu-verified"  # the run hid the GPU


# ---------------------------------------------------------------- diff


def test_diff_against_the_previous_report(tmp_path: Path) -> None:
    first = journal(tmp_path / "r1", shard_one() + shard_two(), plan=True)
    summary = report([first], tmp_path / "out")
    assert summary.diff.previous is False
    assert "No previous report" in (tmp_path / "out" / "DIFF.md").read_text(encoding="utf-8")

    late = "2025-06-02T09:00:00+00:00"
    later = [
        # was a pass: now a drift
        result(
            f"{T1}/baseline",
            "failed",
            observed(Outcome.FAIL, "cudnn_missing", Stage.IMPORT),
            drift=True,
            started=late,
        ),
        # was a drift: now as expected
        result(
            f"{T1}/cudnn-older-runtime",
            "failed",
            observed(Outcome.FAIL, "cudnn_version_mismatch", Stage.CUDNN_API),
            started=late,
        ),
        # still a drift, another signature
        result(
            f"{TF}/missing-cudnn",
            "failed",
            observed(Outcome.FAIL, "corrupt_library", Stage.IMPORT),
            drift=True,
            started=late,
        ),
        # a new cell, failing
        result(
            f"{T1}/corrupt-library",
            "failed",
            observed(Outcome.FAIL),
            drift=True,
            expected=PASS,
            started=late,
        ),
    ]
    kept = [r for r in shard_one() + shard_two() if r["cell"] != f"{TF}/baseline"]
    second = journal(tmp_path / "r2", kept + later)  # no plan: the predicted cell goes too
    d = report([second], tmp_path / "out").diff
    assert d.previous is True
    assert d.new_failures == (f"{T1}/baseline", f"{T1}/corrupt-library")
    assert d.fixed == (f"{T1}/cudnn-older-runtime",)
    assert [(c.cell, c.before, c.after) for c in d.changed] == [
        (
            f"{TF}/missing-cudnn",
            "fail: cuda_runtime_missing @ import",
            "fail: corrupt_library @ import",
        )
    ]
    assert d.added == (f"{T1}/corrupt-library",)
    assert d.removed == (f"{TF}/baseline", f"{TF}/cudnn-older-runtime")
    text = (tmp_path / "out" / "DIFF.md").read_text(encoding="utf-8")
    assert "## New failures (2)" in text and "## Removed cells (2)" in text
    assert "fail: cuda_runtime_missing @ import → fail: corrupt_library @ import" in text
    check_golden(GOLDEN / "DIFF.second.md", text)


def test_damaged_snapshot_only_loses_the_diff(shards: list[Path], tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text("{not json", encoding="utf-8")
    assert report(shards, tmp_path / "out").diff.previous is False


# ---------------------------------------------------------------- cell ids


def test_markdown_text_is_escaped_outside_code_spans() -> None:
    assert md("a <b> | c & d") == "a &lt;b&gt; \\| c &amp; d"
    assert md("run `nox -- <cell>` | x") == "run `nox -- <cell>` \\| x"
    assert md("two\nlines") == "two lines"


def test_reproduce_command() -> None:
    assert reproduce_command(f"{T1}/baseline") == f"nox -s reproduce -- {T1}/baseline"
    assert reproduce_command(f"{T1}/baseline", "local").endswith("/baseline --backend local")


# ---------------------------------------------------------------- evidence


def test_an_unobservable_fault_is_never_a_pass(tmp_path: Path) -> None:
    """A GPU-only fault that ran on a CPU runner and exited 0 shows as not observable here, in
    every output."""
    unseen = Expectation(outcome=Outcome.UNOBSERVABLE)
    rec = result(f"{T1}/baseline", "passed", observed(Outcome.PASS), expected=unseen)
    summary = report([journal(tmp_path / "r", [rec])], tmp_path / "out")
    assert (summary.counts.passed, summary.counts.unobservable) == (0, 1)
    assert ("not observable here", 1) in summary.counts.levels
    row = csv_rows(tmp_path / "out")[f"{T1}/baseline"]
    assert (row["verdict"], row["evidence_level"]) == ("not observable here", "not observable here")
    compat = (tmp_path / "out" / "COMPATIBILITY.md").read_text(encoding="utf-8")
    assert (
        "| \N{HEAVY MINUS SIGN} not observable here N |" in compat
        and "✅" not in compat.split("## ")[-1]
    )
    case = ET.parse(tmp_path / "out" / "junit.xml").getroot().find(".//testcase")
    assert case is not None and [e.tag for e in case][-1] == "skipped"


# ---------------------------------------------------------------- hostile data

HOSTILE = ('=HYPERLINK("https://x","y")', "+1+1", "@SUM(A1)", "-2", "\tx", "a\rb\x00\x07")


def test_csv_fields_are_neutralised(tmp_path: Path) -> None:
    records = [
        result(
            f"{T1}/{name}",
            "failed",
            observed(Outcome.FAIL, "cudnn_missing", Stage.IMPORT, line),
            expected=NO_CUDNN,
        )
        for name, line in zip(EXPECTED, HOSTILE, strict=False)
    ]
    records.append(
        result(f"{T2}/baseline", "failed", observed(Outcome.FAIL, "x", Stage.IMPORT, HOSTILE[3]))
    )
    report([journal(tmp_path / "r", records)], tmp_path / "out")
    text = (tmp_path / "out" / "results.csv").read_text(encoding="utf-8")
    assert "\r" not in text and "\x00" not in text and "\x07" not in text
    lines = {r["cell"]: r["observed_decisive_line"] for r in csv_rows(tmp_path / "out").values()}
    assert lines[f"{T1}/baseline"] == '\'=HYPERLINK("https://x","y")'
    assert lines[f"{T1}/missing-cudnn"] == "'+1+1"
    assert lines[f"{T1}/cudnn-older-runtime"] == "'@SUM(A1)"
    assert lines[f"{T2}/baseline"] == "'-2"
    assert len(text.splitlines()) == 1 + 4  # a bare CR split no row


def test_a_hostile_cell_id_reaches_no_code_block(tmp_path: Path) -> None:
    evil = replace(STACKS[T1], base="offline; curl x | sh")
    cell = f"{evil.slug}/baseline"
    rec = result(f"{T1}/baseline", "passed", observed(Outcome.PASS))
    rec = rec | {"cell": cell, "stack": evil.to_json()}
    report([journal(tmp_path / "r", [rec])], tmp_path / "out")
    for name in ("COMPATIBILITY.md", "FAULTS.md"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        block = text.split("```sh\n", 1)[1].split("```", 1)[0]
        assert "curl" not in block and "1 cells left out" in block, name
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert '"reproduce":""' in page


def test_reproduce_command_quotes_what_it_is_given() -> None:
    assert reproduce_command("a b/c; rm -rf ~") == "nox -s reproduce -- 'a b/c; rm -rf ~'"


@given(st.from_regex(safe._CELL_ID, fullmatch=True))
def test_a_plain_cell_id_is_its_own_shell_quoting(cell: str) -> None:
    """The frame writes a plain id (cell_id_ok) into its reproduce command unquoted."""
    assert shlex.quote(cell) == cell


def test_markdown_sources_link_only_validated_https() -> None:
    assert source("https://docs.nvidia.com/x?y=1#z") == "<https://docs.nvidia.com/x?y=1#z>"
    assert source('https://x"><script>alert(1)</script>') == (
        '`https://x"><script>alert(1)</script>`'
    )
    assert source("http://example.com") == "`http://example.com`"
    assert source("javascript:alert(1)") == "`javascript:alert(1)`"


def test_code_spans_are_escaped_for_where_they_stand() -> None:
    assert md("run `ldconfig -p | grep libcuda`", table=False) == "run `ldconfig -p | grep libcuda`"
    assert md("run `ldconfig -p | grep libcuda`") == "run `ldconfig -p \\| grep libcuda`"
    assert code("a`b", table=False) == "``a`b``"
    assert md("bell\x07 esc\x1b[31mred\x1b[0m nul\x00") == "bell escred nul"


def test_signatures_md_pastes_commands_and_names_counts(tmp_path: Path) -> None:
    sig = replace(
        CATALOG[0],
        fix=(
            "Check with `ldconfig -p | grep libcuda`.",
            "`pip install nvidia-cudnn-cu12==<pinned>`",
        ),
        sources=('https://x"><script>alert(1)</script>',),
    )
    records = [
        result(
            f"{T1}/missing-cudnn", "failed", observed(Outcome.FAIL, "cudnn_missing", Stage.IMPORT)
        )
    ]
    write_all(
        [journal(tmp_path / "r", records)], tmp_path / "out", catalog=(sig, *CATALOG[1:]), env={}
    )
    text = (tmp_path / "out" / "SIGNATURES.md").read_text(encoding="utf-8")
    assert "`ldconfig -p | grep libcuda`" in text
    assert "<script>" not in text.replace('`https://x"><script>alert(1)</script>`', "")
    assert "- seen in 1 cell:" in text and "- never observed here" in text
    assert "- fix for torch, CUDA 13, cuDNN 9.26.0.51:" in text
    assert "`pip install nvidia-cudnn-cu13==9.26.0.51`" in text


def test_fix_steps_follow_the_stack() -> None:
    step = "Reinstall: `pip install --force-reinstall nvidia-cudnn-cu12==<pinned>`"
    assert fix_step(step, advice_for("torch", "13.0", "9.13.0.50")).endswith(
        "nvidia-cudnn-cu13==9.13.0.50`"
    )
    both = "(`pip install --force-reinstall torch` / `tensorflow[and-cuda]`)"
    assert fix_step(both, advice_for("tensorflow", "12.5", "9.3")) == "(`tensorflow[and-cuda]`)"


# ---------------------------------------------------------------- outputs and exit status


def test_step_summary_appends_to_what_is_there(shards: list[Path], tmp_path: Path) -> None:
    """Appended, never replaced: a device such as /dev/null stays what it is."""
    report(shards, tmp_path / "out", {"GITHUB_STEP_SUMMARY": os.devnull})
    assert Path(os.devnull).is_char_device()
    step = tmp_path / "summary.md"
    step.write_text("one\n", encoding="utf-8")
    inode = step.stat().st_ino
    report(shards, tmp_path / "out", {"GITHUB_STEP_SUMMARY": str(step)})
    assert step.stat().st_ino == inode and step.read_text(encoding="utf-8").startswith("one\n##")


@pytest.mark.parametrize("kind", ["file", "under-a-file"])
def test_out_must_be_a_folder_we_can_make(kind: str, shards: list[Path], tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    out = tmp_path / "f" if kind == "file" else tmp_path / "f" / "sub"
    with pytest.raises(ConfigError, match=r"^--out ") as err:
        report(shards, out)
    assert err.value.help and err.value.exit_code == 2


def run_cli(*argv: str) -> int:
    from harness.cli import main

    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)


def test_partial_and_empty_exit_three(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = str(Path(__file__).resolve().parents[2] / "matrix.yaml")
    first = sharded(tmp_path, every_cell_finished())[0]
    base = ("report", "--matrix", matrix, "--allow-drift", "--results", str(first))
    assert run_cli(*base, "--out", str(tmp_path / "a")) == 3
    assert "PARTIAL: shard 1 of 2" in capsys.readouterr().err
    assert run_cli(*base, "--out", str(tmp_path / "b"), "--allow-partial") == 0
    empty = tmp_path / "empty"
    write_plan(empty, PLAN)
    (empty / "journal.jsonl").write_text("", encoding="utf-8")
    args = ("report", "--matrix", matrix, "--results", str(empty), "--allow-partial")
    assert run_cli(*args, "--out", str(tmp_path / "c")) == 3
    assert "empty run" in capsys.readouterr().err


def test_github_annotations_and_groups(
    shards: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    matrix = str(Path(__file__).resolve().parents[2] / "matrix.yaml")
    args = ["report", "--matrix", matrix, "--out", str(tmp_path / "o")]
    assert run_cli(*args, *(w for s in shards for w in ("--results", str(s)))) == 1
    out = capsys.readouterr().out
    assert out.startswith("::group::stackmatrix report\n") and "::endgroup::\n" in out
    assert f"::error title=stackmatrix drift::{TF}/missing-cudnn: expected fail" in out


def test_the_header_says_when_the_code_differs_from_its_commit(tmp_path: Path) -> None:
    """A report made by a working tree whose harness, scenarios, images or matrix differ from
    HEAD does not name HEAD alone as its maker (a real git repository); a changed report or
    journal beside them does not count."""
    import subprocess

    from harness.cli import report_origin

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    git("init", "-q")
    for name in ("matrix.yaml", "scenarios/a.yaml", "reports/r.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    head = git("rev-parse", "--short=12", "HEAD")
    matrix = str(tmp_path / "matrix.yaml")
    env = {"PATH": os.environ["PATH"]}
    assert report_origin(matrix, env).commit == head
    (tmp_path / "reports/r.md").write_text("regenerated\n")
    assert report_origin(matrix, env).commit == head
    (tmp_path / "scenarios/b.yaml").write_text("added\n")
    assert report_origin(matrix, env).commit == f"{head} with uncommitted changes"
    (tmp_path / "scenarios/b.yaml").unlink()
    (tmp_path / "scenarios/a.yaml").write_text("changed\n")
    assert report_origin(matrix, env).commit == f"{head} with uncommitted changes"
    assert report_origin(matrix, {**env, "GITHUB_SHA": "0123456789abcdef"}).commit == (
        "0123456789ab"
    )
