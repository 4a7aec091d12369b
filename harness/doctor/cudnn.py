"""The cuDNN findings of `harness doctor`: what a framework is built with, what it loads, what its
wheel folder holds, what LD_PRELOAD / LD_LIBRARY_PATH put ahead of it. Pure.

"Compatible" is the compat knowledge's cudnn_check rule (same major, runtime minor not older),
the one the frameworks apply themselves; what a release wants is its compat row.
"""

from __future__ import annotations

import os.path
from collections.abc import Iterator

from harness.compat import Knowledge
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
from harness.model import major_minor, version_key

_OVERRIDES = (Origin.PRELOAD, Origin.LD_LIBRARY_PATH)
# The files whose own cudnnGetVersion tells their release. Not the shim (libcudnn.so.9): its
# answer is the graph library it resolved, which LD_LIBRARY_PATH changes when its own is missing.
_ASKS = ("libcudnn_graph", "libcudnn_ops_infer")
SIG = "cudnn_version_mismatch"


def cudnn_accepts(built: str, runtime: str) -> bool:
    """The frameworks' rule (compat cudnn_check): same major, runtime minor >= built minor."""
    b = version_key(major_minor(built))
    r = version_key(major_minor(runtime))
    return built.partition(".")[0] == runtime.partition(".")[0] and ("." not in built or r >= b)


def wheel_cudnn(facts: Facts) -> LibCopy | None:
    """The installed wheels' cuDNN file that best tells their release."""
    asked = [
        c
        for c in facts.libraries
        if c.origin is Origin.WHEEL
        and family(c.name) in _ASKS
        and c.version_from == "cudnnGetVersion"
    ]
    return min(asked, key=lambda c: _ASKS.index(family(c.name)), default=None)


def expected_cudnn(fw: FrameworkFacts, facts: Facts) -> str | None:
    """The cuDNN the framework means to use: what it loads, else what it is built with (where
    that names a minor), else its wheel's files, else the wheel's metadata."""
    if fw.runtime_cudnn:
        return fw.runtime_cudnn
    if fw.built_cudnn and "." in fw.built_cudnn:
        return fw.built_cudnn
    copy = wheel_cudnn(facts)
    if copy is not None:
        return copy.version
    wheel = facts.interpreter.wheel("nvidia-cudnn")
    return wheel[1] if wheel else None


def framework_cudnn(fw: FrameworkFacts, facts: Facts, kb: Knowledge) -> Iterator[Finding]:
    check = kb.cudnn_check(fw.name)
    source = (("source", check.source),) if check else ()
    built = fw.built_cudnn
    if built and fw.runtime_cudnn:
        same = major_minor(built) == major_minor(fw.runtime_cudnn)
        ok = cudnn_accepts(built, fw.runtime_cudnn)
        yield Finding(
            severity=Severity.OK if same else Severity.INFO if ok else Severity.FAIL,
            topic=fw.name,
            signature=None if same else SIG,
            message=f"{fw.name} is built with cuDNN {built} and loads cuDNN {fw.runtime_cudnn}"
            + ("" if same or not ok else " (accepted: same major, newer minor)"),
            evidence=(("loaded", fw.loaded_path("libcudnn") or "?"), *source),
        )
    yield from _pinned(fw, facts, kb)
    if (
        built
        and facts.driver.gpus
        and not any(family(c.name) == "libcudnn" for c in facts.libraries)
    ):
        yield Finding(
            severity=Severity.WARN,
            topic=fw.name,
            signature="cudnn_missing",
            message=f"{fw.name} is built with cuDNN {built}, and no libcudnn is installed with it "
            "or on the loader path: its first convolution on the GPU will fail",
        )
    mine = expected_cudnn(fw, facts)
    if mine is not None:
        yield from _overrides(fw, facts, mine, source)


def _pinned(fw: FrameworkFacts, facts: Facts, kb: Knowledge) -> Iterator[Finding]:
    """The installed cuDNN wheel against the compat row of this release and CUDA."""
    if fw.version is None or fw.built_cuda is None:
        return
    release = kb.release(fw.name, fw.version.split("+")[0])
    variant = release.variant(major_minor(fw.built_cuda)) if release else None
    wheel = facts.interpreter.wheel("nvidia-cudnn")
    if variant is None or wheel is None:
        return
    ok = cudnn_accepts(variant.cudnn, wheel[1])
    yield Finding(
        severity=Severity.OK if ok else Severity.FAIL,
        topic=fw.name,
        signature=None if ok else SIG,
        message=f"{fw.name} {fw.version} (CUDA {variant.cuda}) wants cuDNN {variant.cudnn}; "
        f"{wheel[0]} {wheel[1]} is installed",
        evidence=(("source", variant.source),),
    )


def _overrides(
    fw: FrameworkFacts, facts: Facts, mine: str, source: tuple[tuple[str, str], ...]
) -> Iterator[Finding]:
    """cuDNN files that LD_PRELOAD / LD_LIBRARY_PATH put ahead of the framework's own, of another
    release: one finding per folder."""
    folders: dict[tuple[str, str], list[LibCopy]] = {}
    for c in search_order(facts.libraries):
        other = c.version is not None and major_minor(c.version) != major_minor(mine)
        if family(c.name).startswith("libcudnn") and c.origin in _OVERRIDES and other:
            folders.setdefault((c.where, os.path.dirname(c.path)), []).append(c)
    reals = {p for _, p in fw.loaded}  # /proc/self/maps names real paths
    for (where, folder), group in folders.items():
        loaded = [c.name for c in group if c.real in reals]
        versions = ", ".join(sorted({c.version or "?" for c in group}))
        yield Finding(
            severity=Severity.FAIL if loaded else Severity.WARN,
            topic=fw.name,
            signature=SIG,
            message=f"{where} holds cuDNN {versions} and {fw.name} wants {mine}: "
            + (
                f"{fw.name} loaded {' '.join(loaded)} from it"
                if loaded
                else f"{fw.name} did not load it here, but the loader takes it first wherever "
                "LD_LIBRARY_PATH is searched before the framework's own folder: libraries with "
                "RUNPATH, a file missing from that folder, the exact-version names "
                "(libcudnn_graph.so.9.x.y) cuDNN's shim asks for first"
            ),
            evidence=(
                ("folder", folder),
                ("files", " ".join(c.name for c in group)),
                *source,
            ),
        )


def wheel_folder(facts: Facts) -> Iterator[Finding]:
    """The files in site-packages/nvidia/cudnn/lib against the wheels pip says it installed:
    nvidia-cudnn-cu12 and -cu13 unpack into the same folder, so a second install replaces the
    first's files and pip sees no conflict."""
    wheels = [w for w in facts.interpreter.wheels if w[0].lower().startswith("nvidia-cudnn")]
    if len(wheels) > 1:
        yield Finding(
            severity=Severity.WARN,
            topic="libraries",
            signature=SIG,
            message="two cuDNN wheels share one site-packages/nvidia/cudnn/lib folder: "
            + ", ".join(f"{n} {v}" for n, v in wheels)
            + "; the last installed owns its files",
        )
    copy = wheel_cudnn(facts)
    if copy is None or copy.version is None or not wheels:
        return
    if not any(major_minor(v) == major_minor(copy.version) for _, v in wheels):
        yield Finding(
            severity=Severity.FAIL,
            topic="libraries",
            signature=SIG,
            message=f"{copy.path} is cuDNN {copy.version}, but pip installed "
            + ", ".join(f"{n} {v}" for n, v in wheels)
            + ": another install replaced the wheel's files",
            evidence=(("path", copy.path), ("asked", str(copy.version_from))),
        )
