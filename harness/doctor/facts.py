"""What `harness doctor` gathers, as frozen values, and the pure parsing of what its probes print.

The gathering (harness.doctor) does the I/O; the findings (harness.doctor.rules) are a pure
function of these values, so they are tested with hand-made facts.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.model import Gpu

# The libraries the doctor looks for, by file name (libcudnn_* are cuDNN's sub-libraries).
LIB_NAME = re.compile(r"^lib(cuda|cudart|cublas|cublasLt|cudnn(?:_\w+)?|nccl)\.so(?:\.[\d.]+)?$")
_NAME_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)*)$")


class Severity(str, enum.Enum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "fail"


class Origin(str, enum.Enum):
    """Where a copy was found, in the loader's search order for a bare name (ld.so(8)); the wheel
    and toolkit folders are not searched for a bare name (the frameworks load by RPATH/RUNPATH
    or absolute path; a toolkit's lib64 needs ld.so.conf or LD_LIBRARY_PATH)."""

    PRELOAD = "LD_PRELOAD"
    LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
    CACHE = "ld.so.cache"
    SYSTEM = "system folder"
    WHEEL = "framework wheel"
    TOOLKIT = "toolkit folder"

    @property
    def on_path(self) -> bool:
        return self not in (Origin.WHEEL, Origin.TOOLKIT)

    @property
    def order(self) -> int:
        return list(Origin).index(self)


def family(name: str) -> str:
    """'libcudnn_graph.so.9' -> 'libcudnn_graph'."""
    return name.split(".so", 1)[0]


def name_version(name: str) -> str | None:
    """The version a file name tells: 'libcudart.so.12.4.127' -> '12.4.127'."""
    m = _NAME_VERSION.search(name)
    if m is None or (family(name) == "libcuda" and "." not in m.group(1)):
        return None  # libcuda.so.1: an ABI number, not the driver's version
    return m.group(1)


def cudnn_version(raw: int) -> str:
    """cudnnGetVersion() / torch.backends.cudnn.version() -> 'major.minor.patch'
    (cuDNN 9: major*10000 + minor*100 + patch; up to 8: major*1000 + minor*100 + patch)."""
    major, rest = (raw // 10000, raw % 10000) if raw >= 90000 else (raw // 1000, raw % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LibCopy:
    """One file of a CUDA-stack library, where it was found and what it says it is."""

    name: str  # the name a loader looks up (libcudnn.so.9)
    path: str  # where it was found
    real: str  # the file behind symlinks
    origin: Origin
    rank: int = 0  # the LD_LIBRARY_PATH / LD_PRELOAD position
    version: str | None = None
    version_from: str | None = None  # 'file name', the library call that told it, or a neighbour
    error: str | None = None  # loading it to ask failed: why
    stub: bool = False

    @property
    def where(self) -> str:
        return f"{self.origin.value}[{self.rank}]" if self.origin in _RANKED else self.origin.value

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "real": self.real,
            "origin": self.where,
            "on_loader_path": self.origin.on_path,
            "version": self.version,
            "version_from": self.version_from,
            "error": self.error,
            "stub": self.stub,
        }


_RANKED = (Origin.PRELOAD, Origin.LD_LIBRARY_PATH)


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverFacts:
    version: str | None
    origin: str  # nvml | nvidia-smi | none
    gpus: tuple[Gpu, ...] = ()
    device_nodes: tuple[str, ...] = ()  # /dev/nvidia0...: a GPU the kernel module exposes

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "origin": self.origin,
            "gpus": [g.to_json() for g in self.gpus],
            "device_nodes": list(self.device_nodes),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Interpreter:
    path: str
    version: str | None = None
    importable: tuple[str, ...] = ()
    wheels: tuple[tuple[str, str], ...] = ()
    # files of nvidia-* wheels that are gone, or not the size the wheel's RECORD says
    missing: tuple[tuple[str, str], ...] = ()  # (wheel, path)
    changed: tuple[tuple[str, str, int, int], ...] = ()  # (wheel, path, recorded, actual)
    error: str | None = None  # it could not be run, or said nothing readable

    def wheel(self, prefix: str) -> tuple[str, str] | None:
        return next((w for w in self.wheels if w[0].lower().startswith(prefix)), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "version": self.version,
            "importable": list(self.importable),
            "wheels": dict(self.wheels),
            "missing": [{"wheel": w, "path": p} for w, p in self.missing],
            "changed": [
                {"wheel": w, "path": p, "recorded": r, "actual": a} for w, p, r, a in self.changed
            ],
            "error": self.error,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkFacts:
    """One framework imported in a child of the interpreter, step by step."""

    name: str
    version: str | None = None
    file: str | None = None
    built_cuda: str | None = None
    built_cudnn: str | None = None
    arch_list: tuple[str, ...] = ()
    runtime_cudnn: str | None = None  # what it loaded and reports (torch.backends.cudnn.version)
    device_count: int | None = None
    capabilities: tuple[str, ...] = ()
    loaded: tuple[tuple[str, str], ...] = ()  # file name -> path, after the last step that ran
    failed_step: str | None = None  # the step that raised, or that the process died in
    error: str | None = None  # traceback text
    returncode: int | None = None
    timed_out: bool = False
    output: str = ""  # the child's stderr (and stdout that was not a probe line), its end

    def loaded_path(self, prefix: str) -> str | None:
        return next((p for n, p in self.loaded if n.startswith(prefix)), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "file": self.file,
            "built_cuda": self.built_cuda,
            "built_cudnn": self.built_cudnn,
            "arch_list": list(self.arch_list),
            "runtime_cudnn": self.runtime_cudnn,
            "device_count": self.device_count,
            "capabilities": list(self.capabilities),
            "loaded": dict(self.loaded),
            "failed_step": self.failed_step,
            "error": self.error,
            "returncode": self.returncode,
            "timed_out": self.timed_out,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    driver: DriverFacts
    interpreter: Interpreter
    libraries: tuple[LibCopy, ...]
    frameworks: tuple[FrameworkFacts, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "driver": self.driver.to_json(),
            "interpreter": self.interpreter.to_json(),
            "libraries": [c.to_json() for c in self.libraries],
            "frameworks": [f.to_json() for f in self.frameworks],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    severity: Severity
    topic: str  # driver | libraries | a framework's name | python
    signature: str | None
    message: str
    fix: tuple[str, ...] = ()
    evidence: tuple[tuple[str, str], ...] = ()  # (what, value): paths, versions, source URLs

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity.value,
            "topic": self.topic,
            "signature": self.signature,
            "message": self.message,
            "fix": list(self.fix),
            "evidence": [{"what": k, "value": v} for k, v in self.evidence],
        }


def search_order(copies: tuple[LibCopy, ...]) -> list[LibCopy]:
    """Copies a bare-name dlopen would consider, first = the one it takes (ld.so(8))."""
    on_path = [c for c in copies if c.origin.on_path]
    return sorted(on_path, key=lambda c: (c.origin.order, c.rank))


# ---------------------------------------------------------------- probe output


def probe_lines(stdout: str) -> tuple[list[dict[str, Any]], str]:
    """The probe's JSON lines, and every other line (noise a library printed) as text."""
    events, other = [], []
    for line in stdout.splitlines():
        if line.startswith('{"doctor": 1'):
            try:
                events.append(json.loads(line))
                continue
            except ValueError:
                pass
        other.append(line)
    return events, "\n".join(other)


def parse_interpreter(path: str, events: list[dict[str, Any]], why: str) -> Interpreter:
    env = next((e for e in events if e.get("step") == "env"), None)
    if env is None:
        return Interpreter(path=path, error=why or "the interpreter printed no probe output")
    damaged = env.get("damaged") or []
    return Interpreter(
        path=path,
        version=env.get("python"),
        importable=tuple(env.get("importable", ())),
        wheels=tuple((str(n), str(v)) for n, v in env.get("wheels", ())),
        missing=tuple((str(d["wheel"]), str(p)) for d in damaged for p in d.get("missing", ())),
        changed=tuple(
            (str(d["wheel"]), str(p), int(r), int(a))
            for d in damaged
            for p, r, a in d.get("changed", ())
        ),
    )


def parse_framework(
    name: str,
    events: list[dict[str, Any]],
    *,
    returncode: int | None,
    output: str,
    timed_out: bool = False,
) -> FrameworkFacts:
    """The framework probe's step events -> facts; a step that started no event (the process
    died in it) is the one after the last event."""
    steps = ("import", "build", "cudnn", "devices")
    got: dict[str, Any] = {}
    failed, error = None, None
    loaded: Any = {}
    for e in events:
        loaded = e.get("loaded") or loaded
        if not e.get("ok"):
            failed, error = e.get("step"), e.get("error")
            break
        got.update({k: v for k, v in e.items() if k not in ("doctor", "step", "ok", "loaded")})
    done = [e.get("step") for e in events]
    if failed is None and returncode != 0:
        rest = [s for s in steps if s not in done]
        failed = rest[0] if rest else "exit"
    raw = got.get("runtime_cudnn")
    return FrameworkFacts(
        name=name,
        version=got.get("version"),
        file=got.get("file"),
        built_cuda=got.get("built_cuda"),
        built_cudnn=_str_or_none(got.get("built_cudnn")),
        arch_list=tuple(got.get("arch_list") or ()),
        runtime_cudnn=cudnn_version(raw) if isinstance(raw, int) else None,
        device_count=got.get("count"),
        capabilities=tuple(str(c) for c in got.get("capabilities") or () if c),
        loaded=tuple(sorted(_as_str_map(loaded).items())),
        failed_step=failed,
        error=error,
        returncode=returncode,
        timed_out=timed_out,
        output=output[-8000:],
    )


def parse_ldconfig(text: str, machine: str = "x86-64") -> tuple[tuple[str, str], ...]:
    """`ldconfig -p` -> (name, path) of this machine's entries, in cache order:
    '\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1'."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s+(\S+) \(([^)]*)\)(?: OS ABI: [^=]*)? => (\S+)$", line)
        if m and machine in m.group(2).split(","):
            out.append((m.group(1), m.group(3)))
    return tuple(out)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _as_str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
