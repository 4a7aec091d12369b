"""Run cells: a scenario's faults applied to its stack's image, the probe, the verdict, the
journal. Every outcome becomes a RunResult as it lands; only Ctrl-C propagates (after an
`interrupted` record)."""

from __future__ import annotations

import hashlib
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from harness.backends.docker import Finished, Mount
from harness.console import Console
from harness.events import parse
from harness.faults import run_spec
from harness.journal import append, finished
from harness.lock import WheelCache, extract
from harness.model import (
    Cell,
    Expectation,
    Lock,
    Machine,
    Observed,
    Outcome,
    ProbeReport,
    RunResult,
    RunSpec,
    Scenario,
    Stack,
)
from harness.signatures import Catalog, classify

PROBE_DIR = Path(__file__).resolve().parent / "probes"
PROBE_MOUNT = "/probe"


@dataclass(frozen=True, slots=True)
class ProbeRun:
    finished: Finished
    report: ProbeReport
    spec: RunSpec  # what ran, so it can be shown again (`harness reproduce`)
    mounts: tuple[Mount, ...]

    @property
    def signal(self) -> int | None:
        code = self.finished.exit_code
        return code - 128 if code is not None and code > 128 else None


def prepare(
    *,
    stack: Stack,
    image: str,
    scenario: Scenario,
    lock: Lock,
    cache: WheelCache,
    gpu: bool = False,
    timeout: float = 600,
) -> tuple[RunSpec, tuple[Mount, ...]]:
    """The run spec of a cell and its mounts (the probe, other versions' files)."""
    argv = ("python", f"{PROBE_MOUNT}/stageprobe.py", stack.framework)
    spec = run_spec(stack, image, argv, scenario.faults, gpu=gpu, timeout=timeout)
    mounts = [Mount(PROBE_DIR, PROBE_MOUNT)]
    mounts += [Mount(extract(cache, lock, w.pin, w.member), w.target) for w in spec.wheel_files]
    return spec, tuple(mounts)


class Backend(Protocol):
    """What runs a prepared cell: DockerBackend, or LocalBackend (no Docker)."""

    def run_spec(self, spec: RunSpec, mounts: Sequence[Mount]) -> Finished: ...


def probe_run(backend: Backend, spec: RunSpec, mounts: tuple[Mount, ...]) -> ProbeRun:
    """Run a prepared cell and read its probe's events."""
    done = backend.run_spec(spec, mounts)
    stdout = "\n".join(ln for ln in done.output.splitlines() if ln.startswith('{"probe"'))
    return ProbeRun(finished=done, report=parse(stdout), spec=spec, mounts=mounts)


# ---------------------------------------------------------------- judging and the loop


def log_text(run: ProbeRun) -> str:
    """What the classifier reads: everything the run printed except the probe's event lines,
    then the failed stage's traceback (an exception the probe caught prints nothing else)."""
    lines = [ln for ln in run.finished.output.splitlines() if not ln.startswith('{"probe"')]
    report = run.report
    failed = next((e for e in report.events if e.stage == report.failed_stage), None)
    if failed is not None:
        lines.append(failed.traceback or f"{failed.error_type}: {failed.error_message}")
    return "\n".join(lines)


def fallback_line(run: ProbeRun) -> str | None:
    """When no line names the cause: the failed stage's error, else the last line printed."""
    report = run.report
    failed = next((e for e in report.events if e.stage == report.failed_stage), None)
    if failed is not None and failed.error_message:
        return failed.error_message.strip().splitlines()[0][:500]
    lines = [
        ln
        for ln in run.finished.output.splitlines()
        if ln.strip() and not ln.startswith('{"probe"')
    ]
    if report.crashed_stage is not None and lines:
        return lines[-1][:500]
    return None


def observe(run: ProbeRun, catalog: Catalog) -> tuple[str, Observed]:
    report, done = run.report, run.finished
    if done.exit_code is None:
        status = "timeout"
    elif report.passed and done.exit_code == 0:
        status = "passed"
    else:
        status = "failed"
    stage = report.failed_stage or report.crashed_stage
    if status == "failed" and stage is None and report.events:
        stage = report.events[-1].stage
    if status == "passed":
        return status, Observed(
            outcome=Outcome.PASS,
            stage=None,
            decisive_line=None,
            exit_code=done.exit_code,
            signal=run.signal,
        )
    verdict = classify(log_text(run), catalog, signal=run.signal, timed_out=status == "timeout")
    return status, Observed(
        outcome=Outcome.FAIL,
        stage=stage,
        decisive_line=verdict.decisive_line or fallback_line(run),
        exit_code=done.exit_code,
        signal=run.signal,
        signature=verdict.signature,
        secondary=verdict.secondary,
        fingerprint=verdict.fingerprint,
    )


def drifted(expected: Expectation, status: str, observed: Observed | None) -> bool:
    """Observed differs from expected: outcome, stage and signature. `unobservable` means the
    run cannot tell the fault from no fault: it must pass."""
    if status not in ("passed", "failed"):
        return True
    assert observed is not None
    if expected.outcome in (Outcome.PASS, Outcome.UNOBSERVABLE):
        return status != "passed"
    return (
        status != "failed"
        or observed.stage is not expected.stage
        or observed.signature != expected.signature
    )


def cell_key(cell: Cell, image: str, scenario: Scenario, driver: str, catalog: str) -> str:
    """What a result depends on: the image, the faults, the expectation, the probe, the driver
    and the signature catalog that judged it (`catalog`: its digest)."""
    h = hashlib.sha256()
    for part in (
        image,
        repr((scenario.faults, scenario.expect)),
        cell.expected.to_json(),
        PROBE_DIGEST,
        driver,
        catalog,
    ):
        h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


PROBE_DIGEST = hashlib.sha256((PROBE_DIR / "stageprobe.py").read_bytes()).hexdigest()
Execute = Callable[[Cell], ProbeRun]


def run_cells(
    cells: Sequence[tuple[Cell, str, str]],
    execute: Execute,
    *,
    results: Path,
    backend: str,
    console: Console,
    catalog: Catalog,
    force: bool = False,
    machine: Machine | None = None,
) -> list[RunResult]:
    """Run (cell, image, key) triples, journaling each result as it lands; a cell whose key has
    a final result in the journal is not run again. Ctrl-C records `interrupted`, then stops."""
    done = finished(results)
    out = []
    for cell, image, key in cells:
        if done.get(cell.id) == key and not force:
            console.step("run", f"{cell.id}: cache hit")
            continue
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        t = time.monotonic()
        status, observed, error = "errored", None, None
        try:
            status, observed = observe(execute(cell), catalog)
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except Exception as exc:  # a harness bug becomes an errored result, not a lost cell
            error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
        finally:
            result = RunResult(
                cell=cell.id,
                key=key,
                backend=backend,
                status=status,
                expected=cell.expected,
                observed=observed,
                drift=drifted(cell.expected, status, observed),
                evidence=cell.evidence,
                started=started,
                seconds=time.monotonic() - t,
                image=image,
                error=error,
                machine=machine or Machine(),
            )
            append(results, result.to_json())
        word = "DRIFT" if result.drift else "ok"
        stage = f" @ {observed.stage.value}" if observed and observed.stage else ""
        console.step("run", f"{cell.id}: {status}{stage} ({result.seconds:.1f} s) {word}")
        out.append(result)
    return out
