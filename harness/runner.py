"""Run one cell: its scenario's faults applied to its stack's image, the probe, the events.

(The matrix loop, journal and resume build on `probe_run`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.backends.docker import DockerBackend, Finished, Mount
from harness.events import parse
from harness.faults import run_spec
from harness.lock import WheelCache, extract
from harness.model import Lock, ProbeReport, Scenario, Stack

PROBE_DIR = Path(__file__).resolve().parent / "probes"
PROBE_MOUNT = "/probe"


@dataclass(frozen=True, slots=True)
class ProbeRun:
    finished: Finished
    report: ProbeReport

    @property
    def signal(self) -> int | None:
        code = self.finished.exit_code
        return code - 128 if code is not None and code > 128 else None


def probe_run(
    backend: DockerBackend,
    *,
    stack: Stack,
    image: str,
    scenario: Scenario,
    lock: Lock,
    cache: WheelCache,
    gpu: bool = False,
    timeout: float = 600,
) -> ProbeRun:
    argv = ("python", f"{PROBE_MOUNT}/stageprobe.py", stack.framework)
    spec = run_spec(stack, image, argv, scenario.faults, gpu=gpu, timeout=timeout)
    mounts = [Mount(PROBE_DIR, PROBE_MOUNT)]
    mounts += [Mount(extract(cache, lock, w.pin, w.member), w.target) for w in spec.wheel_files]
    done = backend.run_spec(spec, mounts)
    stdout = "\n".join(ln for ln in done.output.splitlines() if ln.startswith('{"probe"'))
    return ProbeRun(finished=done, report=parse(stdout))
