"""Facts about a machine -> findings, each named with the catalog's signature ids. Pure.

What decides a finding is data: the driver table and cuDNN rule of the compat knowledge (cited
rows), the signature catalog (fixes, and the classification of a failed import's text), and
what the framework itself reported (its arch list, what it loaded). No framework is named here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from harness.compat import Knowledge, driver_reason
from harness.doctor.cudnn import cudnn_accepts, framework_cudnn, wheel_folder
from harness.doctor.facts import (
    Facts,
    Finding,
    FrameworkFacts,
    LibCopy,
    Origin,
    Severity,
    family,
    search_order,
)
from harness.errors import ConfigError
from harness.model import major_minor
from harness.signatures import UNKNOWN, Catalog, classify

# A cubin for sm_XY runs on compute capability X.Z for Z >= Y (same major); PTX (compute_XY)
# is compiled by the driver for any capability >= X.Y; arch-specific cubins (sm_90a) run on
# exactly that capability, family-specific ones (sm_100f) on the same major.
BINARY_COMPAT = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
)


def findings(facts: Facts, kb: Knowledge, catalog: Catalog) -> tuple[Finding, ...]:
    found = [
        *_driver(facts),
        *_python(facts),
        *_wheel_files(facts, catalog),
        *_libraries(facts, catalog),
        *wheel_folder(facts),
    ]
    for fw in facts.frameworks:
        found += _framework(fw, facts, kb, catalog)
    fixes = {s.id: s.fix for s in catalog.signatures}
    return tuple(
        replace(f, fix=fixes[f.signature])
        if f.signature in fixes and not f.fix and f.severity is not Severity.OK
        else f
        for f in found
    )


# ---------------------------------------------------------------- driver and GPUs


def _driver(facts: Facts) -> Iterator[Finding]:
    d = facts.driver
    if d.version is None:
        nodes = bool(d.device_nodes)
        yield Finding(
            severity=Severity.WARN if nodes else Severity.INFO,
            topic="driver",
            signature="no_gpu_or_driver",
            message=(
                "GPU device nodes exist but no NVIDIA driver library answers (NVML, nvidia-smi)"
                if nodes
                else "no NVIDIA driver and no GPU: expected on a CPU-only machine; GPU work "
                "cannot run here"
            ),
            evidence=tuple(("device node", n) for n in d.device_nodes),
        )
        return
    gpus = ", ".join(f"{g.name} (compute capability {g.capability or '?'})" for g in d.gpus)
    yield Finding(
        severity=Severity.OK if d.gpus else Severity.WARN,
        topic="driver",
        signature=None if d.gpus else "no_gpu_or_driver",
        message=f"driver {d.version} ({d.origin}); " + (gpus or "but it lists no GPU"),
    )


# ---------------------------------------------------------------- loader path


def _libraries(facts: Facts, catalog: Catalog) -> Iterator[Finding]:
    yield from _broken(facts, catalog)
    ordered = search_order(facts.libraries)
    stubs: dict[tuple[bool, str], list[LibCopy]] = {}  # (wins, real file) -> its names
    for name in dict.fromkeys(c.name for c in ordered):
        same = _distinct([c for c in ordered if c.name == name])
        if name.startswith("libcuda."):  # the toolkit's other stubs fail at link time only
            for i, c in enumerate(same):
                if c.stub:
                    stubs.setdefault((i == 0, c.real), []).append(c)
        if len(same) > 1:
            yield _shadowing(name, same)
    for (wins, _), copies in stubs.items():
        names = " ".join(c.name for c in copies)
        yield Finding(
            severity=Severity.FAIL if wins else Severity.WARN,
            topic="libraries",
            signature="stub_driver",
            message=f"{names} on the loader path is the CUDA toolkit's link-time stub, not a "
            + (
                "driver: every CUDA call will fail"
                if wins
                else "driver; the real one comes first, but the stub wins wherever it is missing "
                "(a container without the driver mounted)"
            ),
            evidence=(("path", copies[0].path), ("found in", copies[0].where)),
        )


def _wheel_files(facts: Facts, catalog: Catalog) -> Iterator[Finding]:
    """Files an nvidia-* wheel installed that are gone or changed: named the way the loader
    would report them, so the catalog says which signature that is."""
    py = facts.interpreter
    for wheel in dict.fromkeys(w for w, _ in py.missing):
        paths = [p for w, p in py.missing if w == wheel]
        names = [p.rsplit("/", 1)[-1] for p in paths]
        said = f"{names[0]}: cannot open shared object file: No such file or directory"
        verdict = classify(said, catalog)
        yield Finding(
            severity=Severity.FAIL,
            topic="libraries",
            signature=None if verdict.signature == UNKNOWN else verdict.signature,
            message=f"{wheel} installed {len(paths)} file(s) that are gone: {' '.join(names)}",
            evidence=tuple(("missing", p) for p in paths),
        )
    for wheel in dict.fromkeys(w for w, *_ in py.changed):
        rows = [(p, r, a) for w, p, r, a in py.changed if w == wheel]
        yield Finding(
            severity=Severity.FAIL,
            topic="libraries",
            signature="corrupt_library",
            message=f"{wheel}: {len(rows)} file(s) are not the size its RECORD lists "
            "(truncated, or replaced by another build's file)",
            evidence=tuple(("changed", f"{p}: {a} bytes, RECORD {r}") for p, r, a in rows),
        )


def _broken(facts: Facts, catalog: Catalog) -> Iterator[Finding]:
    """Copies that could not be loaded to ask their version, where the catalog names why (a
    cuDNN shim without its sub-libraries, a truncated file, an undefined symbol)."""
    for c in facts.libraries:
        if c.error is None or c.stub:
            continue
        verdict = classify(c.error, catalog)
        if verdict.signature == UNKNOWN:
            continue
        yield Finding(
            severity=Severity.FAIL if c.origin is Origin.WHEEL else Severity.WARN,
            topic="libraries",
            signature=verdict.signature,
            message=f"{c.name} ({c.where}) does not load on its own: "
            f"{verdict.decisive_line or c.error}",
            evidence=(("path", c.path),),
        )


def _distinct(copies: list[LibCopy]) -> list[LibCopy]:
    seen: dict[str, LibCopy] = {}
    for c in copies:
        seen.setdefault(c.real, c)
    return list(seen.values())


def _shadowing(name: str, same: list[LibCopy]) -> Finding:
    winner = same[0]
    versions = {c.version for c in same}
    differ = None not in versions and len(versions) > 1
    cudnn = family(name).startswith("libcudnn")
    shadowed = "; ".join(f"{c.path} ({c.where}, {c.version or '?'})" for c in same[1:])
    return Finding(
        severity=Severity.WARN if differ or None in versions else Severity.INFO,
        topic="libraries",
        signature="cudnn_version_mismatch" if cudnn and differ else None,
        message=f"{len(same)} copies of {name} on the loader path; a bare-name load takes "
        f"{winner.path} ({winner.where}, {winner.version or 'version unknown'}) and shadows "
        f"{shadowed}",
        evidence=tuple(("copy", f"{c.where}: {c.path} {c.version or '?'}") for c in same),
    )


def _python(facts: Facts) -> Iterator[Finding]:
    py = facts.interpreter
    if py.error is not None:
        yield Finding(
            severity=Severity.FAIL,
            topic="python",
            signature=None,
            message=f"cannot probe {py.path}: {py.error}",
            evidence=(("python", py.path),),
        )


# ---------------------------------------------------------------- frameworks


def _framework(fw: FrameworkFacts, facts: Facts, kb: Knowledge, catalog: Catalog) -> list[Finding]:
    if fw.failed_step is not None:
        out = [_failure(fw, catalog)]
        if fw.failed_step == "import":
            return out
    else:
        out = list(_logged(fw, facts, catalog))
    out += _driver_for(fw, facts, kb)
    out += _arch(fw, facts)
    out += framework_cudnn(fw, facts, kb)
    out += _fallbacks(fw, facts)
    return out


def _fallbacks(fw: FrameworkFacts, facts: Facts) -> Iterator[Finding]:
    """A library the framework loads from its wheel that the loader also finds by bare name
    elsewhere (the system's folders, ld.so.cache): were the wheel's copy gone or broken, that
    copy would load instead (ld.so(8): RUNPATH, then the cache and the default folders). A
    cuDNN the framework's own check refuses turns "cuDNN missing" into a version mismatch;
    any other stands in and hides the missing file (both seen on a GPU host with a system
    cuDNN and a CUDA toolkit in the cache: reports/evidence/full)."""
    wheel = {c.real for c in facts.libraries if c.origin is Origin.WHEEL}
    wheel |= {c.path for c in facts.libraries if c.origin is Origin.WHEEL}
    # after RUNPATH (LD_PRELOAD and LD_LIBRARY_PATH come before it: framework_cudnn's overrides)
    ordered = [
        c for c in search_order(facts.libraries) if c.origin in (Origin.CACHE, Origin.SYSTEM)
    ]
    said: set[str] = set()
    for name, path in fw.loaded:
        lib = "libcudnn" if family(name).startswith("libcudnn") else family(name)
        if path not in wheel or lib in said:
            continue
        other = next((c for c in ordered if c.name == name and c.real not in wheel), None)
        if other is None:
            continue
        said.add(lib)
        refused = (
            lib == "libcudnn"
            and fw.built_cudnn is not None
            and other.version is not None
            and not cudnn_accepts(fw.built_cudnn, other.version)
        )
        then = (
            f"which {fw.name} (built with cuDNN {fw.built_cudnn}) refuses: a version mismatch "
            "where the wheel's cuDNN is missing"
            if refused
            else "and the run goes on with it: a missing or broken wheel file does not show"
        )
        yield Finding(
            severity=Severity.WARN if refused else Severity.INFO,
            topic=fw.name,
            signature="cudnn_version_mismatch" if refused else None,
            message=f"{fw.name} loads {name} from its wheel; without that copy the loader takes "
            f"{other.path} ({other.where}, {other.version or 'version unknown'}), {then}",
            evidence=(("wheel's copy", path), ("fallback", f"{other.where}: {other.real}")),
        )


def _failure(fw: FrameworkFacts, catalog: Catalog) -> Finding:
    text = "\n".join(t for t in (fw.error, fw.output) if t)
    signal = -fw.returncode if fw.returncode is not None and fw.returncode < 0 else None
    verdict = classify(text, catalog, signal=signal, timed_out=fw.timed_out)
    how = f"died (exit {fw.returncode})" if fw.error is None else "raised"
    line = verdict.decisive_line or (fw.error or fw.output or "no output").strip()[-300:]
    also = ", ".join(verdict.secondary)
    return Finding(
        severity=Severity.FAIL,
        topic=fw.name,
        signature=verdict.signature,
        message=f"{fw.name} {how} at its {fw.failed_step} step: {line}",
        evidence=(("also in its output", also),) if also else (),
    )


def logged_signatures(output: str, catalog: Catalog) -> dict[str, str]:
    """Signature -> the first line naming it, line by line: in a run that worked every known
    message counts, warnings included (the classifier would let a later error outrank them)."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        verdict = classify(line, catalog)
        if verdict.signature != UNKNOWN and verdict.decisive_line:
            found.setdefault(verdict.signature, verdict.decisive_line)
    return found


def _logged(fw: FrameworkFacts, facts: Facts, catalog: Catalog) -> Iterator[Finding]:
    """A framework that imported: what its log names, and whether it sees the driver's GPUs."""
    gpus = len(facts.driver.gpus)
    logged = logged_signatures(fw.output, catalog)
    for sig, line in logged.items():
        yield Finding(
            severity=Severity.WARN if gpus else Severity.INFO,
            topic=fw.name,
            signature=sig,
            message=f"{fw.name} imports, and logged: {line}",
        )
    if gpus and fw.device_count == 0:
        yield Finding(
            severity=Severity.FAIL,
            topic=fw.name,
            signature=next(iter(logged), "no_gpu_or_driver"),
            message=f"{fw.name} sees no GPU, and the driver lists {gpus}: its GPU work will "
            "fail or fall back to the CPU",
        )


def _driver_for(fw: FrameworkFacts, facts: Facts, kb: Knowledge) -> Iterator[Finding]:
    driver = facts.driver.version
    if fw.built_cuda is None:
        return
    cuda = major_minor(fw.built_cuda)
    if driver is None:
        yield from _driver_needed(fw, cuda, kb)
        return
    try:
        ok, reason = driver_reason(cuda, driver, kb)
    except ConfigError as exc:
        yield Finding(
            severity=Severity.WARN,
            topic=fw.name,
            signature=None,
            message=f"{fw.name} is built with CUDA {fw.built_cuda}: {exc.message}",
        )
        return
    yield Finding(
        severity=Severity.OK if ok else Severity.FAIL,
        topic=fw.name,
        signature=None if ok else "driver_too_old",
        message=f"{fw.name} (CUDA {fw.built_cuda}): {reason.detail}",
        evidence=(("rule", reason.rule), ("source", reason.source)),
    )


def _driver_needed(fw: FrameworkFacts, cuda: str, kb: Knowledge) -> Iterator[Finding]:
    """No driver here: what one would need to be (the same rows driver_reason reads)."""
    tk, mc = kb.toolkit(cuda), kb.compat_for(cuda)
    if tk is None:
        return
    compat = f" (>= {mc.min_driver} runs it by minor-version compatibility)" if mc else ""
    evidence = [("source", tk.source)] + ([("source", mc.source)] if mc else [])
    yield Finding(
        severity=Severity.INFO,
        topic=fw.name,
        signature=None,
        message=f"{fw.name} is built with CUDA {fw.built_cuda}: a GPU here needs an NVIDIA "
        f"driver >= {tk.min_driver}{compat}",
        evidence=tuple(evidence),
    )


def arch_supported(capability: str, arch_list: tuple[str, ...]) -> bool:
    major, minor = (int(p) for p in capability.split(".")[:2])
    for arch in arch_list:
        kind, _, num = arch.partition("_")
        suffix = num[-1] if num[-1:].isalpha() else ""
        digits = num[: len(num) - len(suffix)]
        if not digits.isdigit() or len(digits) < 2:
            continue
        a = (int(digits[:-1]), int(digits[-1]))
        if suffix == "a":  # arch-specific: that exact capability only
            ok = kind == "sm" and a == (major, minor)
        elif kind == "sm":  # plain and family-specific ('f') cubins: same major, newer minor
            ok = a[0] == major and a[1] <= minor
        else:  # compute_XY: PTX, compiled by the driver for any newer capability
            ok = kind == "compute" and a <= (major, minor)
        if ok:
            return True
    return False


def _arch(fw: FrameworkFacts, facts: Facts) -> Iterator[Finding]:
    caps = [g.capability for g in facts.driver.gpus if g.capability] or list(fw.capabilities)
    if not fw.arch_list or not caps:
        return
    for cap in dict.fromkeys(caps):
        ok = arch_supported(cap, fw.arch_list)
        yield Finding(
            severity=Severity.OK if ok else Severity.FAIL,
            topic=fw.name,
            signature=None if ok else "arch_unsupported",
            message=f"{fw.name} {'has' if ok else 'has no'} kernels for compute capability {cap}"
            f" (built for {' '.join(fw.arch_list)})",
            evidence=(("source", BINARY_COMPAT),),
        )
