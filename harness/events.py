"""Probe stdout -> stage events. Pure: a crash is a stage that started and never ended."""

from __future__ import annotations

import json
from typing import Any

from harness.model import ProbeEvent, ProbeReport, Stage

PROBE_FORMAT = 1


def _event(data: dict[str, Any]) -> ProbeEvent:
    error = data.get("error") or {}
    return ProbeEvent(
        stage=Stage(data["stage"]),
        ok=bool(data["ok"]),
        skipped=data.get("skipped"),
        seconds=float(data.get("seconds", 0.0)),
        details=dict(data.get("details") or {}),
        error_type=error.get("type"),
        error_message=error.get("message"),
        traceback=error.get("traceback"),
    )


def parse(stdout: str) -> ProbeReport:
    events: list[ProbeEvent] = []
    started: Stage | None = None
    noise: list[str] = []
    for line in stdout.splitlines():
        try:
            data = json.loads(line)
            if not isinstance(data, dict) or data.get("probe") != PROBE_FORMAT:
                raise ValueError("not a probe event")
            stage = Stage(data["stage"])
        except (ValueError, KeyError, TypeError):
            if line.strip():
                noise.append(line)
            continue
        if data.get("event") == "start":
            started = stage
        elif data.get("event") == "end":
            events.append(_event(data))
            if started == stage:
                started = None
    failed = next((e.stage for e in events if not e.ok and e.skipped is None), None)
    return ProbeReport(
        events=tuple(events), failed_stage=failed, crashed_stage=started, noise=tuple(noise)
    )
