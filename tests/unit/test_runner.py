"""The run loop against a fake execute: journal per result, resume by key, interruption, errors;
and the drift rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.model import Finished
from harness.console import Console
from harness.events import parse
from harness.journal import append, finished, records
from harness.model import (
    Cell,
    Evidence,
    Expectation,
    Gpu,
    Machine,
    Observed,
    Outcome,
    Reason,
    RunSpec,
    Stage,
)
from harness.runner import ProbeRun, drifted, run_cells
from harness.signatures import read_catalog
from tests.conftest import ROOT, TORCH_STACK

CATALOG = read_catalog(ROOT / "scenarios" / "signatures.yaml")

STACK = TORCH_STACK
SPEC = RunSpec(image="img", argv=("python", "p.py", "torch"))
PASS = Expectation(outcome=Outcome.PASS)
FAIL_IMPORT = Expectation(outcome=Outcome.FAIL, signature="cudnn_missing", stage=Stage.IMPORT)


def cell(name: str, expected: Expectation = PASS) -> Cell:
    return Cell(
        id=f"{STACK.slug}/{name}",
        stack=STACK,
        scenario=name,
        expected=expected,
        evidence=Evidence.CPU,
        because=Reason(rule="r", detail="d", source="s"),
    )


def ok_run() -> ProbeRun:
    out = json.dumps({"probe": 1, "stage": "import", "event": "end", "ok": True, "seconds": 0})
    return ProbeRun(
        finished=Finished(exit_code=0, output=out, oom_killed=False),
        report=parse(out),
        spec=SPEC,
        mounts=(),
    )


def import_failure() -> ProbeRun:
    out = json.dumps(
        {
            "probe": 1,
            "stage": "import",
            "event": "end",
            "ok": False,
            "seconds": 0,
            "error": {
                "type": "ImportError",
                "message": (
                    "libcudnn.so.9: cannot open shared object file: No such file or directory"
                ),
            },
        }
    )
    return ProbeRun(
        finished=Finished(exit_code=1, output=out, oom_killed=False),
        report=parse(out),
        spec=SPEC,
        mounts=(),
    )


def test_results_are_journaled_and_a_rerun_skips_them(tmp_path: Path) -> None:
    cells = [(cell("a"), "img", "k1"), (cell("b", FAIL_IMPORT), "img", "k2")]
    runs = {"a": ok_run, "b": import_failure}
    first = run_cells(
        cells,
        lambda c: runs[c.scenario](),
        results=tmp_path,
        backend="fake",
        console=Console(),
        catalog=CATALOG,
    )
    assert [r.status for r in first] == ["passed", "failed"]
    assert not any(r.drift for r in first)
    assert first[1].observed is not None
    assert first[1].observed.signature == "cudnn_missing"
    assert (
        first[1].observed.decisive_line
        == "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    )
    again = run_cells(
        cells,
        lambda c: pytest.fail("must not run"),
        results=tmp_path,
        backend="fake",
        console=Console(),
        catalog=CATALOG,
    )
    assert again == []
    changed = [(cell("a"), "img2", "k3")]  # a new image: a new key, so it runs again
    assert (
        len(
            run_cells(
                changed,
                lambda c: ok_run(),
                results=tmp_path,
                backend="fake",
                console=Console(),
                catalog=CATALOG,
            )
        )
        == 1
    )
    assert len(records(tmp_path)) == 3


def test_interrupt_is_recorded_then_propagates(tmp_path: Path) -> None:
    def stop(c: Cell) -> ProbeRun:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_cells(
            [(cell("a"), "img", "k1")],
            stop,
            results=tmp_path,
            backend="fake",
            console=Console(),
            catalog=CATALOG,
        )
    [rec] = records(tmp_path)
    assert rec["status"] == "interrupted"
    assert finished(tmp_path) == {}, "an interrupted cell runs again"


def test_a_harness_bug_is_an_errored_result(tmp_path: Path) -> None:
    def bug(c: Cell) -> ProbeRun:
        raise ValueError("boom")

    [r] = run_cells(
        [(cell("a"), "img", "k1")],
        bug,
        results=tmp_path,
        backend="fake",
        console=Console(),
        catalog=CATALOG,
    )
    assert r.status == "errored" and r.drift and r.error and "ValueError: boom" in r.error


def test_each_result_names_the_host_it_ran_on(tmp_path: Path) -> None:
    gpus = [Gpu(index=i, name="NVIDIA H100 80GB HBM3", capability="9.0") for i in range(2)]
    for name, machine in (("a", Machine.of("580.159.04", gpus)), ("b", None)):
        run_cells(
            [(cell(name), "img", f"k-{name}")],
            lambda c: ok_run(),
            results=tmp_path,
            backend="local",
            console=Console(),
            catalog=CATALOG,
            machine=machine,
        )
    first, second = records(tmp_path)
    assert first["driver"] == "580.159.04"
    assert first["gpu"] == "NVIDIA H100 80GB HBM3 (cc 9.0); NVIDIA H100 80GB HBM3 (cc 9.0)"
    assert (second["driver"], second["gpu"]) == (None, None)


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_afresh(tmp_path: Path) -> None:
    append(tmp_path, {"schema": 1, "cell": "a", "key": "k", "status": "passed"})
    with (tmp_path / "journal.jsonl").open("a") as f:
        f.write('{"schema": 1, "cell": "b", "ke')  # killed mid-line
    append(tmp_path, {"schema": 1, "cell": "c", "key": "k", "status": "failed"})
    assert [r["cell"] for r in records(tmp_path)] == ["a", "c"]


@pytest.mark.parametrize(
    ("expected", "status", "stage", "signature", "drift"),
    [
        (PASS, "passed", None, None, False),
        (PASS, "failed", Stage.IMPORT, "cudnn_missing", True),
        (Expectation(outcome=Outcome.UNOBSERVABLE), "passed", None, None, False),
        (Expectation(outcome=Outcome.UNOBSERVABLE), "failed", Stage.IMPORT, "unknown", True),
        (FAIL_IMPORT, "failed", Stage.IMPORT, "cudnn_missing", False),
        (FAIL_IMPORT, "failed", Stage.BUILD_INFO, "cudnn_missing", True),
        (FAIL_IMPORT, "failed", Stage.IMPORT, "cuda_runtime_missing", True),  # another cause
        (FAIL_IMPORT, "passed", None, None, True),
        (PASS, "timeout", None, "timeout", True),
    ],
)
def test_drift(
    expected: Expectation, status: str, stage: Stage | None, signature: str | None, drift: bool
) -> None:
    observed = Observed(
        outcome=Outcome.PASS if status == "passed" else Outcome.FAIL,
        stage=stage,
        decisive_line=None,
        exit_code=0,
        signal=None,
        signature=signature,
    )
    assert drifted(expected, status, observed) is drift
