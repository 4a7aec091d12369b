"""Probe output parsing: stages, failures, crashes inside a stage, noise."""

from __future__ import annotations

import json

from harness.events import parse
from harness.model import Stage


def line(**fields: object) -> str:
    return json.dumps({"probe": 1, **fields})


def end(stage: str, ok: bool = True, **more: object) -> str:
    return line(stage=stage, event="end", ok=ok, seconds=0.1, details={}, **more)


def test_a_clean_run() -> None:
    out = "\n".join(
        [
            line(stage="import", event="start"),
            end("import"),
            line(stage="devices", event="start"),
            end("devices", skipped=None),
            line(stage="tensor_op", event="start"),
            end("tensor_op", skipped="no device"),
        ]
    )
    report = parse(out)
    assert report.passed
    assert [e.stage for e in report.events] == [Stage.IMPORT, Stage.DEVICES, Stage.TENSOR_OP]
    assert report.events[2].skipped == "no device"


def test_the_first_failure_is_the_stage() -> None:
    err = {"type": "RuntimeError", "message": "cuDNN version incompatibility", "traceback": "tb"}
    out = "\n".join(
        [
            end("import"),
            end("build_info", ok=False, error=err),
            end("devices", ok=False, skipped="not run: build_info failed"),
        ]
    )
    report = parse(out)
    assert report.failed_stage is Stage.BUILD_INFO
    assert report.events[1].error_message == "cuDNN version incompatibility"
    assert not report.passed


def test_a_crash_is_pinned_to_the_stage_that_started() -> None:
    out = "\n".join(
        [
            end("import"),
            line(stage="build_info", event="start"),
            "Invalid handle. Cannot load symbol cudnnGetVersion",
        ]
    )
    report = parse(out)
    assert report.crashed_stage is Stage.BUILD_INFO
    assert report.failed_stage is None
    assert report.noise == ("Invalid handle. Cannot load symbol cudnnGetVersion",)
    assert not report.passed


def test_garbage_is_noise_not_an_error() -> None:
    report = parse('{"probe": 2, "stage": "import"}\n[1, 2]\n{not json\n' + end("import"))
    assert len(report.events) == 1 and len(report.noise) == 3
    assert not parse("").passed
