"""Every frozen value that crosses a module boundary (DESIGN.md: frozen values at boundaries)."""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A version ends up in Dockerfiles, image tags and shell command lines: nothing else is allowed.
VERSION_RE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+-]*$")


def version_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key for dotted versions ('12.10' > '12.9'; numbers before words)."""
    parts = re.split(r"[.+-]", text)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def major_minor(text: str) -> str:
    return ".".join(text.split(".")[:2])


@dataclass(frozen=True, slots=True)
class Where:
    """A place in a user's input: file, 1-based line and column."""

    file: str
    line: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Outcome(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    UNOBSERVABLE = "unobservable"


class Evidence(str, enum.Enum):
    """What a run can show: `cpu` (no GPU: GPU stages skip) or `gpu` (a real device)."""

    CPU = "cpu"
    GPU = "gpu"


class Stage(str, enum.Enum):
    """Probe stages, in the order a workload runs them."""

    IMPORT = "import"
    BUILD_INFO = "build_info"
    DEVICES = "devices"
    TENSOR_OP = "tensor_op"
    CUDNN_API = "cudnn_api"
    CUDNN_CONV = "cudnn_conv"
    TRAIN_STEP = "train_step"
    SAVE_LOAD = "save_load"
    MEMORY = "memory"

    @property
    def order(self) -> int:
        return list(Stage).index(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stack:
    """One software stack: what one image holds."""

    framework: str
    framework_version: str
    cuda: str
    cudnn: str
    python: str
    base: str

    @property
    def slug(self) -> str:
        return (
            f"{self.framework}-{self.framework_version}_cu{self.cuda}"
            f"_cudnn{major_minor(self.cudnn)}_py{self.python}_{self.base}"
        )

    def to_json(self) -> dict[str, str]:
        return {
            "framework": self.framework,
            "framework_version": self.framework_version,
            "cuda": self.cuda,
            "cudnn": self.cudnn,
            "python": self.python,
            "base": self.base,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Reason:
    """Why an expectation is what it is: the rule, what it found, and the row's public source."""

    rule: str
    detail: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "detail": self.detail, "source": self.source}


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    outcome: Outcome
    signature: str | None = None
    stage: Stage | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "signature": self.signature,
            "stage": self.stage.value if self.stage else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One fault primitive (applied by a backend at run time); `args` as sorted pairs."""

    primitive: str
    args: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    id: str
    title: str
    cause: str
    frameworks: tuple[str, ...]
    faults: tuple[Fault, ...]
    # (framework, evidence) -> what this scenario must produce there
    expect: tuple[tuple[str, Evidence, Expectation], ...]
    where: Where

    def expectation(self, framework: str, evidence: Evidence) -> Expectation | None:
        for fw, ev, exp in self.expect:
            if fw == framework and ev is evidence:
                return exp
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverTarget:
    """The driver a plan is evaluated for; `version` None means no GPU (cpu evidence)."""

    version: str | None
    origin: str  # 'flag', 'profile', 'nvml', 'nvidia-smi', 'none'

    @property
    def evidence(self) -> Evidence:
        return Evidence.CPU if self.version is None else Evidence.GPU

    def to_json(self) -> str:
        return self.version or "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One GPU as the driver reports it; `capability` is the compute capability ('8.6')."""

    index: int
    name: str
    capability: str | None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "capability": self.capability}


@dataclass(frozen=True, slots=True, kw_only=True)
class Machine:
    """The host a run happened on, as its driver reported it (not the driver planned for): a
    result is gpu-verified only where a GPU was there."""

    driver: str | None = None
    gpu: str | None = None  # "NVIDIA H100 80GB HBM3 (cc 9.0)"; several GPUs joined by "; "

    @classmethod
    def of(cls, driver: str | None, gpus: Sequence[Gpu]) -> Machine:
        names = [f"{g.name} (cc {g.capability or '?'})" for g in gpus]
        return cls(driver=driver, gpu="; ".join(names) or None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    id: str
    stack: Stack
    scenario: str
    expected: Expectation
    evidence: Evidence
    because: Reason
    checks: tuple[Reason, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stack": self.stack.to_json(),
            "scenario": self.scenario,
            "expected": self.expected.to_json(),
            "evidence": self.evidence.value,
            "because": self.because.to_json(),
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Removal:
    """How many candidate stacks one constraint removed (printed by `harness plan`)."""

    constraint: str
    removed: int
    where: Where | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    profile: str
    driver: DriverTarget
    cells: tuple[Cell, ...]
    removals: tuple[Removal, ...] = ()
    shard: tuple[int, int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "profile": self.profile,
            "driver": self.driver.to_json(),
            "cells": [c.to_json() for c in self.cells],
        }
        if self.shard is not None:
            out["shard"] = f"{self.shard[0]}/{self.shard[1]}"
        return out


# ---- compatibility knowledge (harness/resources/compat/*.yaml); every row carries its source ----


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitDriver:
    cuda: str  # major.minor
    toolkit: str
    min_driver: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MinorCompat:
    cuda_major: int
    min_driver: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaRange:
    major: int
    min: str | None = None  # the support matrix's tested range, where it was read
    max: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CudnnRelease:
    cudnn: str  # major.minor
    release: str
    cuda: tuple[CudaRange, ...]
    source: str

    def supports_major(self, cuda: str) -> bool:
        """A cuDNN release ships one build per CUDA major (the -cu11/-cu12/-cu13 wheels)."""
        return int(cuda.split(".", maxsplit=1)[0]) in {r.major for r in self.cuda}


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    cuda: str
    cudnn: str
    index: str
    source: str
    extra: str | None = None
    default: bool = False
    cuda_libs: str = "wheels"  # 'wheels': pip brings CUDA/cuDNN; 'system': the image must have them


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    framework: str
    package: str  # the distribution on the package index
    version: str
    python: tuple[str, ...]
    python_source: str
    variants: tuple[Variant, ...]

    def variant(self, cuda: str) -> Variant | None:
        return next((v for v in self.variants if v.cuda == cuda), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudnnCheck:
    """How a framework reacts to a cuDNN other than the one it was built with."""

    framework: str
    rule: str
    stage_cpu: Stage | None  # None: the check cannot show without a GPU
    stage_gpu: Stage | None
    source: str

    def stage(self, evidence: Evidence) -> Stage | None:
        return self.stage_cpu if evidence is Evidence.CPU else self.stage_gpu


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaImage:
    tag: str
    cuda: str
    cuda_release: str
    os: str
    source: str
    cudnn: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseOS:
    os: str
    codename: str
    python: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcResult:
    argv: tuple[str, ...]
    returncode: int | None  # None: it never started
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Mount:
    """A host path a run sees at `target` (a container path; the local backend translates it)."""

    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True, slots=True)
class Finished:
    """How a backend's run ended: `output` is stdout and stderr together, capped at the end."""

    exit_code: int | None  # None: timed out and killed; a signal shows as 128 + its number
    output: str
    oom_killed: bool


# ---- images ----


@dataclass(frozen=True, slots=True, kw_only=True)
class LockedWheel:
    name: str
    version: str
    filename: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "filename": self.filename,
            "sha256": self.sha256,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Lock:
    """Every wheel a stack installs, pinned by hash: the image build reads nothing else."""

    slug: str
    requirements: tuple[str, ...]
    overrides: tuple[str, ...]  # pins swapped in after resolution (a deliberate cuDNN swap)
    index: str
    python: str
    platforms: tuple[str, ...]
    wheels: tuple[LockedWheel, ...]

    @property
    def total_bytes(self) -> int:
        return sum(w.size for w in self.wheels)

    def requirements_txt(self) -> str:
        lines = [f"# stackmatrix lock for {self.slug}: install with --no-index --require-hashes"]
        lines += [f"{w.name}=={w.version} --hash=sha256:{w.sha256}" for w in self.wheels]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "slug": self.slug,
            "requirements": list(self.requirements),
            "overrides": list(self.overrides),
            "index": self.index,
            "python": self.python,
            "platforms": list(self.platforms),
            "total_bytes": self.total_bytes,
            "wheels": [w.to_json() for w in self.wheels],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lock:
        return cls(
            slug=data["slug"],
            requirements=tuple(data["requirements"]),
            overrides=tuple(data["overrides"]),
            index=data["index"],
            python=data["python"],
            platforms=tuple(data["platforms"]),
            wheels=tuple(LockedWheel(**w) for w in data["wheels"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DockerfilePlan:
    """A rendered Dockerfile split the way run+commit executes it."""

    base: str
    runs: tuple[str, ...]  # shell commands, in order
    changes: tuple[str, ...]  # LABEL/ENV/USER/WORKDIR/CMD lines for `docker commit --change`


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSpec:
    """Everything needed to build one stack's image; `ref` is its content-addressed tag."""

    stack: Stack
    flavour: str
    ref: str
    dockerfile: str
    files: tuple[tuple[str, str], ...]  # extra files next to the Dockerfile (name, text)
    plan: DockerfilePlan
    lock: Lock | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageJob:
    """One image and the plan cells that run in it."""

    spec: ImageSpec
    cells: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeEvent:
    """One stage's end as the probe reported it (see harness/probes/stageprobe.py)."""

    stage: Stage
    ok: bool
    skipped: str | None
    seconds: float
    details: dict[str, Any]
    error_type: str | None = None
    error_message: str | None = None
    traceback: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeReport:
    """What a probe run showed: its stage events, the stage it failed at, where it crashed."""

    events: tuple[ProbeEvent, ...]
    failed_stage: Stage | None  # the first stage that ended with ok=false
    crashed_stage: Stage | None  # started but never ended: the process died inside it
    noise: tuple[str, ...]  # stdout lines that were not probe events

    @property
    def passed(self) -> bool:
        return self.failed_stage is None and self.crashed_stage is None and bool(self.events)


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelFile:
    """A file taken from another wheel (another version's library), mounted read-only."""

    pin: str  # e.g. nvidia-cudnn-cu13==9.13.0.50
    member: str  # path inside the wheel, e.g. nvidia/cudnn/lib/libcudnn_graph.so.9
    target: str  # where it is mounted in the container


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    """One run of a probe in a fresh container, with a scenario's faults applied at run time."""

    image: str
    argv: tuple[str, ...]
    setup: tuple[str, ...] = ()  # shell commands run as root before dropping to the user
    env: tuple[tuple[str, str], ...] = ()
    unset: tuple[str, ...] = ()
    wheel_files: tuple[WheelFile, ...] = ()
    memory_limit: int | None = None  # bytes
    gpu: bool = False
    timeout: float = 600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    outcome: Outcome  # pass or fail (a run that did not finish has no outcome: see status)
    stage: Stage | None
    decisive_line: str | None
    exit_code: int | None
    signal: int | None
    signature: str | None = None  # the catalog's root cause (harness.signatures)
    secondary: tuple[str, ...] = ()  # other signatures in the same log
    fingerprint: str | None = None  # `unknown` only: clusters repeats of one failure

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "signature": self.signature,
            "secondary": list(self.secondary),
            "fingerprint": self.fingerprint,
            "stage": self.stage.value if self.stage else None,
            "decisive_line": self.decisive_line,
            "exit_code": self.exit_code,
            "signal": self.signal,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """One cell's run, as journaled. `key` identifies what ran: equal key, same result."""

    cell: str
    key: str
    backend: str
    status: str  # passed | failed | errored | timeout | interrupted
    expected: Expectation
    observed: Observed | None
    drift: bool
    evidence: Evidence
    started: str
    seconds: float
    image: str
    error: str | None = None
    machine: Machine = Machine()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "driver": self.machine.driver,
            "gpu": self.machine.gpu,
            "cell": self.cell,
            "key": self.key,
            "backend": self.backend,
            "status": self.status,
            "expected": self.expected.to_json(),
            "observed": self.observed.to_json() if self.observed else None,
            "drift": self.drift,
            "evidence": self.evidence.value,
            "started": self.started,
            "seconds": round(self.seconds, 3),
            "image": self.image,
            "error": self.error,
        }


# ---------------------------------------------------------------- signatures (signatures.yaml)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pattern:
    """One message of a signature: a regex over a normalized log line, and the literal
    (lowercase) that any line it matches contains, so a log is scanned for literals first."""

    regex: str
    needle: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature:
    id: str
    title: str
    stage: Stage | None  # where it usually surfaces
    patterns: tuple[Pattern, ...]
    signals: tuple[int, ...]  # a run killed by one of these, with no message, is this
    cause: str
    fix: tuple[str, ...]
    frameworks: tuple[str, ...]
    priority: int  # higher = closer to the root cause when several match one log
    sources: tuple[str, ...]
    where: Where


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What a log shows: the root-cause signature, its line, and the other causes seen."""

    signature: str
    decisive_line: str | None
    line_no: int | None  # 1-based, in the classified text
    secondary: tuple[str, ...] = ()
    fingerprint: str | None = None  # `unknown` only: the masked decisive line, hashed

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "decisive_line": self.decisive_line,
            "line_no": self.line_no,
            "secondary": list(self.secondary),
            "fingerprint": self.fingerprint,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Reproducer:
    cell: str
    command: str
    evidence: Evidence  # the machine it shows on: cpu (anywhere) or gpu


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """`harness diagnose`: a user's log -> signature, cause, fix, and the cells that show it."""

    signature: str
    title: str
    cause: str
    fix: tuple[str, ...]
    stage: Stage | None
    decisive_line: str | None
    line_no: int | None
    secondary: tuple[str, ...]
    fingerprint: str | None
    reproduce: tuple[Reproducer, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "title": self.title,
            "cause": self.cause,
            "fix": list(self.fix),
            "stage": self.stage.value if self.stage else None,
            "decisive_line": self.decisive_line,
            "line_no": self.line_no,
            "secondary": list(self.secondary),
            "fingerprint": self.fingerprint,
            "reproduce": [
                {"cell": r.cell, "command": r.command, "evidence": r.evidence.value}
                for r in self.reproduce
            ],
        }
