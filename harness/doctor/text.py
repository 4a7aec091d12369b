"""`harness doctor`'s readable account: driver/GPU, libraries, frameworks, findings. Pure."""

from __future__ import annotations

import os
from collections import Counter

from harness.doctor.facts import Facts, Finding, FrameworkFacts, LibCopy, Severity, search_order
from harness.signatures import printable

_MARK = {Severity.OK: "ok", Severity.INFO: "info", Severity.WARN: "WARN", Severity.FAIL: "FAIL"}


def render(facts: Facts, findings: tuple[Finding, ...], exit_code: int) -> str:
    py = facts.interpreter
    lines = [f"harness doctor: {py.path} (Python {py.version or '?'})", ""]
    lines += ["Driver and GPU", *_driver(facts), ""]
    lines += ["Libraries (loader search order for a bare name, then wheels and toolkits)"]
    lines += [*_libraries(facts.libraries), ""]
    lines += ["Frameworks", *_frameworks(facts), ""]
    lines += ["Findings", *_findings(findings), ""]
    count = Counter(f.severity for f in findings)
    summary = ", ".join(f"{count[s]} {s.value}" for s in reversed(Severity))
    lines.append(f"{summary}: exit {exit_code}")
    # What the probed interpreter printed (its path, versions, errors) is in these lines: no
    # escape sequence of it reaches the terminal (DESIGN.md, habit 11).
    return "\n".join(printable(line) for line in lines) + "\n"


def _driver(facts: Facts) -> list[str]:
    d = facts.driver
    if d.version is None:
        nodes = ", ".join(d.device_nodes) or "no /dev/nvidia* device"
        return [f"  no NVIDIA driver (neither NVML nor nvidia-smi answers); {nodes}"]
    out = [f"  driver {d.version} (from {d.origin})"]
    out += [f"  GPU {g.index}: {g.name}, compute capability {g.capability or '?'}" for g in d.gpus]
    return out or ["  no GPU listed"]


def ordered(libraries: tuple[LibCopy, ...]) -> list[LibCopy]:
    """The loader's search order, then wheel and toolkit copies (not searched for bare names)."""
    return search_order(libraries) + [c for c in libraries if not c.origin.on_path]


def _libraries(libraries: tuple[LibCopy, ...]) -> list[str]:
    if not libraries:
        return ["  none of libcuda, libcudart, libcublas, libcudnn*, libnccl found"]
    out: list[str] = []
    group: tuple[str, str] | None = None
    for c in ordered(libraries):
        here = (c.where, os.path.dirname(c.path))
        if here != group:
            group = here
            out.append(f"  {c.where}: {here[1]}")
        version = f"{c.version} ({c.version_from})" if c.version else "version unknown"
        notes = [n for n in ("STUB" if c.stub else "", c.error or "") if n]
        link = f" -> {c.real}" if os.path.basename(c.real) != c.name else ""
        extra = f"  [{'; '.join(notes)}]" if notes else ""
        out.append(f"    {c.name:<40} {version}{link}{extra}")
    return out


def _frameworks(facts: Facts) -> list[str]:
    py = facts.interpreter
    if py.error is not None:
        return [f"  cannot probe {py.path}: {py.error}"]
    wheels = [f"{n} {v}" for n, v in py.wheels if n.lower().startswith(("nvidia", "cuda"))]
    out = [f"  CUDA wheels: {', '.join(wheels) or 'none'}"]
    for name in ("torch", "tensorflow"):
        fw = next((f for f in facts.frameworks if f.name == name), None)
        out += _framework(fw) if fw is not None else [f"  {name}: not importable here"]
    return out


def _framework(fw: FrameworkFacts) -> list[str]:
    out = [f"  {fw.name} {fw.version or '(version unknown)'}" + (f"  {fw.file}" if fw.file else "")]
    if fw.built_cuda or fw.built_cudnn:
        archs = " ".join(fw.arch_list) or "?"
        built = f"CUDA {fw.built_cuda or '-'}, cuDNN {fw.built_cudnn or '-'}; archs {archs}"
        out.append(f"    built with: {built}")
    elif fw.version is not None:
        out.append("    built with: no CUDA (a CPU-only build)")
    if fw.runtime_cudnn:
        out.append(f"    loads cuDNN {fw.runtime_cudnn}")
    if fw.device_count is not None:
        caps = ", ".join(fw.capabilities)
        out.append(f"    GPUs visible: {fw.device_count}" + (f" ({caps})" if caps else ""))
    for lib, path in fw.loaded:
        out.append(f"    loaded {lib:<24} {path}")
    if fw.failed_step is not None:
        how = "timed out" if fw.timed_out else f"exit {fw.returncode}"
        out.append(f"    FAILED at its {fw.failed_step} step ({how})")
    return out


def _findings(found: tuple[Finding, ...]) -> list[str]:
    out: list[str] = []
    rank = list(Severity)
    for f in sorted(found, key=lambda f: -rank.index(f.severity)):
        sig = f" [{f.signature}]" if f.signature else ""
        out.append(f"  {_MARK[f.severity]:<4}  {f.topic}{sig}: {f.message}")
        out += [f"        {k}: {v}" for k, v in f.evidence]
        out += [f"        fix: {step}" for step in f.fix]
    return out or ["  none"]
