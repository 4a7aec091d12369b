"""Every frozen value that crosses a module boundary (DESIGN.md: frozen values at boundaries)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from packaging.version import InvalidVersion, Version

# A version ends up in Dockerfiles, image tags and shell command lines: nothing else is allowed.
VERSION_RE = re.compile(r"\A[0-9A-Za-z][0-9A-Za-z.+-]*\Z")


def version_key(text: str) -> tuple[int, tuple[Any, ...]]:
    """Sort key for versions: PEP 440 order where the text parses ('2.15.0rc1' < '2.15.0',
    '12.9' < '12.10', driver '535.104.05' too), else dotted parts (numbers before words) after
    every PEP 440 version. The leading kind keeps the two shapes from ever being compared. A key
    holds only ints and strings, so sorting by it compares in C (a Version compares in Python:
    100,000 stacks took a second to sort)."""
    if _PLAIN.fullmatch(text):  # most versions: what pep440_key makes of a bare release
        release = tuple(map(int, text.split(".")))
        return (0, (0, _release(release) if release[-1] == 0 else release, *_BARE))
    try:
        return (0, pep440_key(Version(text)))
    except InvalidVersion:
        parts = re.split(r"[.+-]", text)
        return (1, tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts))


_PLAIN = re.compile(r"[0-9]+(?:\.[0-9]+)*", re.ASCII)
_BARE = ((2,), (0,), (1,), (0,))  # pre, post, dev and local of a bare release
_PLAIN_LINES = re.compile(rf"{_PLAIN.pattern}(?:\n{_PLAIN.pattern})*", re.ASCII)  # one a line


def version_keys(texts: Sequence[str]) -> list[Any]:
    """Keys that order `texts` as version_key does (equal where it is equal): where every text
    is a bare release ("2.15.0", "12.9": one regex over them all), the release without its
    trailing zeros, which is what version_key compares then, made without its tuple around it."""
    if _PLAIN_LINES.fullmatch("\n".join(texts)):
        return [_release(map(int, t.split("."))) for t in texts]
    return list(map(version_key, texts))


def pep440_key(v: Version) -> tuple[Any, ...]:
    """packaging's own order of Versions (its _cmpkey), with its infinities as ranks: equal keys
    exactly where the Versions are equal ('1.0' == '1.0.0'), and the same order otherwise."""
    if v.pre is None and v.post is None and v.dev is not None:
        pre: tuple[Any, ...] = (0,)  # 1.0.dev0 before 1.0a0
    else:
        pre = (2,) if v.pre is None else (1, *v.pre)
    post = (0,) if v.post is None else (1, v.post)
    dev = (1,) if v.dev is None else (0, v.dev)
    local: tuple[Any, ...] = (0,)
    if v.local is not None:  # numbers after words, part by part (packaging's parse of it)
        parts = re.split(r"[._-]", v.local)
        local = (1, tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in parts))
    return (v.epoch, _release(v.release), pre, post, dev, local)


def _release(parts: Iterable[int]) -> tuple[int, ...]:
    """A release without its trailing zeros: 1.0 == 1."""
    release = list(parts)
    while release and release[-1] == 0:
        release.pop()
    return tuple(release)


def major_minor(text: str) -> str:
    return ".".join(text.split(".")[:2])


def stack_slug(parts: Sequence[str]) -> str:
    """A Stack's slug from its parts, in its fields' order."""
    framework, version, cuda, cudnn, python, base = parts
    return f"{framework}-{version}_cu{cuda}_cudnn{major_minor(cudnn)}_py{python}_{base}"


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


def verdict_text(outcome: str, signature: str | None = None, stage: str | None = None) -> str:
    """The one way a verdict reads: `pass`, `unobservable`, or `fail: <signature> @ <stage>`."""
    if outcome != "fail":
        return outcome
    return f"fail: {signature or '?'} @ {stage or '?'}"


class Status(str, enum.Enum):
    """How a cell's run ended. `passed`/`failed`/`timeout` are final; `errored` (a harness bug)
    and `interrupted` (Ctrl-C) are run again."""

    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"

    @property
    def final(self) -> bool:
        return self in (Status.PASSED, Status.FAILED, Status.TIMEOUT)


class Evidence(str, enum.Enum):
    """What a run can show: `cpu` (no GPU: GPU stages skip), `driver` (no GPU, but NVIDIA's real
    user-space driver placed in the run decided the CUDA version gate: driver-verified, never
    gpu-verified) or `gpu` (a real device)."""

    CPU = "cpu"
    DRIVER = "driver"
    GPU = "gpu"


class Stage(str, enum.Enum):
    """Probe stages, in the order a workload runs them."""

    START = "start"  # the container runtime starting the container (nvidia-container-cli)
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


_E = TypeVar("_E", Outcome, Status, Evidence, Stage)


def _member(cls: type[_E], value: Any) -> _E:
    """cls(value), a string looked up in a dict first: Enum's own call cost as much as the rest
    of a journal record's fields (six per record). Anything else goes to cls: the same error."""
    found = _MEMBERS[cls].get(value) if type(value) is str else None
    return cast("_E", found) if found is not None else cls(value)


_MEMBERS: dict[type[enum.Enum], dict[str, enum.Enum]] = {
    cls: {m.value: m for m in cls} for cls in (Outcome, Status, Evidence, Stage)
}


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
        return stack_slug(
            (self.framework, self.framework_version, self.cuda, self.cudnn, self.python, self.base)
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

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stack:
        return cls(**{k: str(data[k]) for k in _STACK_FIELDS})

    @classmethod
    def from_slug(cls, slug: str) -> Stack:
        """A slug taken apart (schema-1 journals only; ValueError if it is not one). The cuDNN
        is major.minor there: the slug does not carry the full version."""
        m = _SLUG.match(slug)
        if m is None:
            raise ValueError(f"not a stack slug: {slug!r}")
        return cls(**m.groupdict())


_SLUG = re.compile(
    r"^(?P<framework>[A-Za-z0-9]+)-(?P<framework_version>[^_]+)_cu(?P<cuda>[^_]+)"
    r"_cudnn(?P<cudnn>[^_]+)_py(?P<python>[^_]+)_(?P<base>[A-Za-z0-9._-]+)\Z"
)
_STACK_FIELDS = ("framework", "framework_version", "cuda", "cudnn", "python", "base")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reason:
    """Why an expectation is what it is: the rule, what it found, and the row's public source."""

    rule: str
    detail: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "detail": self.detail, "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reason:
        return cls(rule=str(data["rule"]), detail=str(data["detail"]), source=str(data["source"]))


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

    @property
    def text(self) -> str:
        return verdict_text(self.outcome.value, self.signature, _stage_value(self.stage))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Expectation:
        return cls(
            outcome=_member(Outcome, data["outcome"]),
            signature=data.get("signature"),
            stage=_member(Stage, data["stage"]) if data.get("stage") else None,
        )


def _stage_value(stage: Stage | None) -> str | None:
    return stage.value if stage else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """One fault as a scenario file writes it: a primitive and its arguments (sorted pairs),
    placeholders unresolved. Checked when the scenario is read; `harness.faults.resolve` turns
    it into a typed operation for one stack."""

    primitive: str
    args: tuple[tuple[str, str], ...] = ()
    where: Where | None = field(default=None, compare=False)  # the fault's place in its file
    arg_where: tuple[tuple[str, Where], ...] = field(default=(), compare=False)

    def where_of(self, arg: str) -> Where | None:
        return dict(self.arg_where).get(arg, self.where)


# ---- fault operations: what a backend applies at run time (values, never shell text) ----


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelMember:
    """A file, or a folder for a member ending in '/', from another wheel (another version's
    library): extracted into the cache and mounted read-only where the run can read it."""

    pin: str  # name==version, e.g. nvidia-cudnn-cu13==9.13.0.50
    member: str  # relative path inside the wheel, e.g. nvidia/cudnn/lib/libcudnn_graph.so.9


@dataclass(frozen=True, slots=True, kw_only=True)
class Hide:
    """Remove a path (an absolute container path; '*' and '?' match inside one component)."""

    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Truncate:
    """Cut a file to its first `size` bytes (a copy replaces it: never written in place)."""

    path: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Replace:
    """Put another wheel's file (or folder) where `path` was."""

    path: str
    source: WheelMember


@dataclass(frozen=True, slots=True, kw_only=True)
class Overwrite:
    """Put a text file where `path` was: a library that is really a text file (a linker script,
    a git-lfs pointer, an HTML error page saved under its name)."""

    path: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SetEnv:
    name: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsetEnv:
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PrependPath:
    """Put another wheel's folder first on a search path (`var`, e.g. LD_LIBRARY_PATH)."""

    var: str
    dir: WheelMember

    @property
    def source(self) -> WheelMember:
        return self.dir


@dataclass(frozen=True, slots=True, kw_only=True)
class Preload:
    """LD_PRELOAD another wheel's library."""

    lib: WheelMember
    var = "LD_PRELOAD"

    @property
    def source(self) -> WheelMember:
        return self.lib


@dataclass(frozen=True, slots=True, kw_only=True)
class NoGpu:
    """The run sees no GPU."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryLimit:
    size: int  # bytes, > 0


NO_DRIVER = "none"  # the placed-driver axis value that places nothing (the host's own, if any)
STUB_DRIVER = "stub"
DRIVER_MOUNT = "/faults/driver"  # where a Driver operation's files are mounted read-only


@dataclass(frozen=True, slots=True, kw_only=True)
class Driver:
    """Place NVIDIA's user-space driver of `version` (or the CUDA toolkit's stub libcuda) in the
    run, as nvidia-container-cli places a host's driver: each versioned library, its SONAME
    symlink and the loader cache. `links`: (file in the driver folder, SONAME link to it)."""

    version: str  # a driver version from images/locks/drivers/debian-non-free.json, or 'stub'
    links: tuple[tuple[str, str], ...]


FaultOp = (
    Hide
    | Truncate
    | Replace
    | Overwrite
    | SetEnv
    | UnsetEnv
    | PrependPath
    | Preload
    | NoGpu
    | MemoryLimit
    | Driver
)


def op_sources(op: FaultOp) -> tuple[WheelMember, ...]:
    """The files from other wheels an operation needs mounted."""
    if isinstance(op, Replace):
        return (op.source,)
    if isinstance(op, PrependPath):
        return (op.dir,)
    if isinstance(op, Preload):
        return (op.lib,)
    return ()


def op_json(op: FaultOp) -> dict[str, Any]:
    """An operation as data for a record or a plan: its kind and its fields."""
    out: dict[str, Any] = {"op": type(op).__name__}
    for name in op.__slots__:
        value = getattr(op, name)
        out[name] = (
            {"pin": value.pin, "member": value.member} if isinstance(value, WheelMember) else value
        )
    return out


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
    # Provenance (schema 3; None in older records): which machine ran it (harness.host.host_id:
    # a digest of /etc/machine-id, never the id itself) and what ran it ("Docker 27.3.1", "local").
    host: str | None = None
    engine: str | None = None

    @classmethod
    def of(
        cls, driver: str | None, gpus: Sequence[Gpu], *, host: str | None = None,
        engine: str | None = None,
    ) -> Machine:  # fmt: skip
        names = [f"{g.name} (cc {g.capability or '?'})" for g in gpus]
        return cls(driver=driver, gpu="; ".join(names) or None, host=host, engine=engine)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    id: str
    stack: Stack
    scenario: str
    expected: Expectation
    evidence: Evidence
    because: Reason
    checks: tuple[Reason, ...] = ()
    driver: str = NO_DRIVER  # the NVIDIA user-space driver placed in the run ('none': nothing)

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "stack": self.stack.to_json(),
            "scenario": self.scenario,
            "expected": self.expected.to_json(),
            "evidence": self.evidence.value,
            "because": self.because.to_json(),
            "checks": [c.to_json() for c in self.checks],
        }
        if self.driver != NO_DRIVER:
            out["driver"] = self.driver
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cell:
        return cls(
            id=str(data["id"]),
            stack=Stack.from_json(data["stack"]),
            scenario=str(data["scenario"]),
            expected=Expectation.from_json(data["expected"]),
            evidence=_member(Evidence, data["evidence"]),
            because=Reason.from_json(data["because"]),
            checks=tuple(Reason.from_json(c) for c in data.get("checks", ())),
            driver=str(data.get("driver", NO_DRIVER)),
        )


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
    selectors: tuple[str, ...] = ()  # the --stack/--cell globs that chose these cells

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "profile": self.profile,
            "driver": self.driver.to_json(),
            "cells": [c.to_json() for c in self.cells],
        }
        if self.shard is not None:
            out["shard"] = f"{self.shard[0]}/{self.shard[1]}"
        if self.selectors:
            out["selectors"] = list(self.selectors)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """A plan.json read back (KeyError, ValueError or TypeError when it is not one)."""
        driver = str(data.get("driver") or "none")
        shard = None
        if data.get("shard"):
            i, _, n = str(data["shard"]).partition("/")
            shard = (int(i), int(n))
        return cls(
            profile=str(data["profile"]),
            driver=DriverTarget(version=None if driver == "none" else driver, origin="plan"),
            cells=tuple(Cell.from_json(c) for c in data["cells"]),
            shard=shard,
            selectors=tuple(str(s) for s in data.get("selectors", ())),
        )

    @property
    def partial(self) -> bool:
        """Only a part of its profile: a shard, or cells chosen by --stack/--cell."""
        return self.shard is not None or bool(self.selectors)


# ---- compatibility knowledge (harness/resources/compat/*.yaml); every row carries its source ----


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolkitDriver:
    cuda: str  # major.minor
    toolkit: str
    min_driver: str
    source: str
    updates: tuple[tuple[str, str], ...] = ()  # (release x.y.N, its minimum driver): Table 3
    runtimes: tuple[tuple[str, str], ...] = ()  # (release, the cudart wheel version it ships)
    runtime_source: str | None = None

    def release_of(self, cudart: str) -> tuple[str, str] | None:
        """(release, minimum driver) of the release that ships this cudart, if known."""
        release = next((r for r, c in self.runtimes if c == cudart), None)
        if release is None:
            return None
        return release, dict(self.updates).get(release, self.min_driver)


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
class CudnnLoad:
    """A cuDNN release whose convolution library needs the driver's libcuda.so to load: on a
    machine with no driver at all, a framework that loads it on the CPU fails at `stage`."""

    cudnn: str  # major.minor
    frameworks: tuple[str, ...]
    stage: Stage
    signature: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaImage:
    tag: str
    cuda: str
    cuda_release: str
    os: str
    source: str
    cudnn: str | None = None
    require_cuda: str | None = None  # the tag's NVIDIA_REQUIRE_CUDA
    require_source: str | None = None
    env: tuple[tuple[str, str], ...] = ()  # the tag's other ENV lines, as its Dockerfiles set them
    env_source: tuple[str, ...] = ()


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


def hashed_requirements(head: str, wheels: Sequence[LockedWheel]) -> str:
    """A requirements file of pinned wheels, each with its sha256, under a comment line: the
    largest first (then by name), so that parts dealt from it in turn are about even."""
    lines = [f"# {head}"]
    ordered = sorted(wheels, key=lambda w: (-w.size, w.name))
    lines += [f"{w.name}=={w.version} --hash=sha256:{w.sha256}" for w in ordered]
    return "\n".join(lines) + "\n"


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
        head = f"stackmatrix lock for {self.slug}: install with --no-index --require-hashes"
        return hashed_requirements(head, self.wheels)

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
class RunSpec:
    """One run of a probe on a prepared target, with a cell's fault operations. `mounts`: host
    paths the run sees (the probe, each source's extracted files); `sources`: the container
    path each operation's wheel member is mounted at."""

    argv: tuple[str, ...]
    ops: tuple[FaultOp, ...] = ()
    mounts: tuple[Mount, ...] = ()
    sources: tuple[tuple[WheelMember, str], ...] = ()
    gpu: bool = False  # planned for a GPU (a NoGpu operation still hides it)
    timeout: float = 600.0

    def source(self, member: WheelMember) -> str:
        return dict(self.sources)[member]

    @property
    def sees_gpu(self) -> bool:
        return self.gpu and not any(isinstance(op, NoGpu) for op in self.ops)

    @property
    def memory_limit(self) -> int | None:
        sizes = [op.size for op in self.ops if isinstance(op, MemoryLimit)]
        return min(sizes) if sizes else None


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

    @property
    def text(self) -> str:
        return verdict_text(self.outcome.value, self.signature, _stage_value(self.stage))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Observed:
        return cls(
            outcome=_member(Outcome, data["outcome"]),
            stage=_member(Stage, data["stage"]) if data.get("stage") else None,
            decisive_line=data.get("decisive_line"),
            exit_code=data.get("exit_code"),
            signal=data.get("signal"),
            signature=data.get("signature"),
            secondary=tuple(data.get("secondary") or ()),
            fingerprint=data.get("fingerprint"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """One cell's run, as journaled. `key` identifies what ran: equal key, same result."""

    cell: str
    stack: Stack
    scenario: str
    key: str
    backend: str
    status: Status
    expected: Expectation
    observed: Observed | None
    drift: bool
    evidence: Evidence
    started: str
    seconds: float
    image: str
    error: str | None = None
    machine: Machine = Machine()
    placed: str = NO_DRIVER  # the NVIDIA user-space driver placed in the run (Cell.driver)
    base_image: str = ""  # a stand-in the image was built FROM (no registry), else ""

    @property
    def verdict(self) -> str:
        """`passed`, or the status and what was seen: `failed fail: sig @ stage`."""
        if self.status is Status.PASSED or self.observed is None:
            return self.status.value
        return f"{self.status.value} {self.observed.text}"

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": RESULT_SCHEMA,
            "driver": self.machine.driver,
            "gpu": self.machine.gpu,
            "host": self.machine.host,
            "engine": self.machine.engine,
            "cell": self.cell,
            "stack": self.stack.to_json(),
            "scenario": self.scenario,
            "key": self.key,
            "backend": self.backend,
            "status": self.status.value,
            "expected": self.expected.to_json(),
            "observed": self.observed.to_json() if self.observed else None,
            "drift": self.drift,
            "evidence": self.evidence.value,
            "started": self.started,
            "seconds": round(self.seconds, 3),
            "image": self.image,
            "error": self.error,
            "placed_driver": self.placed,
            "base_image": self.base_image,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResult:
        """A journal record read back (KeyError, ValueError or TypeError when it is not one)."""
        cell = str(data["cell"])
        if "stack" in data:  # schema 2
            stack, scenario = Stack.from_json(data["stack"]), str(data["scenario"])
        else:  # schema 1 records named the stack only in the cell id
            slug, _, scenario = cell.rpartition("/")
            stack = Stack.from_slug(slug)
        observed = data.get("observed")
        return cls(
            cell=cell,
            stack=stack,
            scenario=scenario,
            key=str(data["key"]),
            backend=str(data.get("backend", "docker")),
            status=_member(Status, data["status"]),
            expected=Expectation.from_json(data["expected"]),
            observed=Observed.from_json(observed) if observed else None,
            drift=bool(data["drift"]),
            evidence=_member(Evidence, data["evidence"]),
            started=str(data.get("started", "")),
            seconds=float(data.get("seconds", 0.0)),
            image=str(data.get("image", "")),
            error=data.get("error"),
            machine=Machine(
                driver=data.get("driver"),
                gpu=data.get("gpu"),
                host=data.get("host"),
                engine=data.get("engine"),
            ),
            placed=str(data.get("placed_driver", NO_DRIVER)),
            base_image=str(data.get("base_image", "")),
        )


RESULT_SCHEMA = 3  # 3: host and engine (provenance); 2: stack and scenario fields
RESULT_SCHEMAS = frozenset({1, 2, 3})  # what the journal reads back


# ---------------------------------------------------------------- signatures (signatures.yaml)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pattern:
    """One message of a signature: a regex over a normalized log line, and the literal
    (lowercase) that any line it matches contains, so a log is scanned for literals first."""

    regex: str
    needle: str
    # False for a warning that is no failure on its own (TensorFlow's "CUDA kernels will be
    # jit-compiled from PTX"): it names the cause only where the log fails after it.
    alone: bool = True
    # For a sign of the setting a run was in, never a failure (a shell prompt inside a
    # container): the signatures whose later failure it explains. Its own signature is then the
    # cause of such a failure, and of nothing else (not of an error no signature names, as
    # `alone: false` is).
    cue: tuple[str, ...] = ()
    # For a sign that the run went on to use what the listed signatures' `armed` warnings say is
    # missing (TensorFlow found a GPU and now loads the libraries it needs for it), never a
    # failure itself.
    arms: tuple[str, ...] = ()
    # True for a warning that is no failure at all unless a sign that arms its signature (`arms`)
    # came before it (TensorFlow's cudart64 warning when it is imported, which a machine without
    # a GPU ignores); after one, it is a failure as any warning is: the cause where no error line
    # follows it.
    armed: bool = False


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
    # found alone, this is a consequence: the verdict lists these as the likely causes
    consequence_of: tuple[str, ...] = ()
    # fix steps per framework ("torch", "tensorflow", "jax", "any"), rendered from the log
    advice: tuple[tuple[str, tuple[str, ...]], ...] = ()


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
    # "cause", "consequence" (found alone: likely_causes says of what), "unknown", "no_failure"
    verdict: str = "cause"
    likely_causes: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()  # versions and names read from the log

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "verdict": self.verdict,
            "likely_causes": list(self.likely_causes),
            "facts": dict(self.facts),
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
