"""What `harness doctor` gathers from this machine, as Facts.

Gathering is here (the driver through harness.host, the loader path from the environment given,
`ldconfig -p` and the standard folders, the frameworks through a child of the interpreter asked
about); the findings are harness.doctor.rules, a pure function of what was gathered. Every library
is loaded only in a child process (harness/probes/doctorprobe.py), one per file: a broken cuDNN
aborts whatever loads it.
"""

from __future__ import annotations

import glob
import os
import platform
import shutil
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness import host, proc
from harness.doctor.facts import (
    LIB_NAME,
    DriverFacts,
    Facts,
    FrameworkFacts,
    Interpreter,
    LibCopy,
    Origin,
    family,
    name_version,
    parse_framework,
    parse_interpreter,
    parse_ldconfig,
    probe_lines,
)

PROBE = Path(__file__).resolve().parent.parent / "probes" / "doctorprobe.py"
# The loader's trusted folders (ld.so(8)), multiarch first as Debian/Ubuntu configure them.
SYSTEM_DIRS = (
    "/lib/{multiarch}",
    "/usr/lib/{multiarch}",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)
# Where CUDA toolkits install; not on the loader path unless ld.so.conf or LD_LIBRARY_PATH say so.
TOOLKIT_GLOBS = (
    "/usr/local/cuda*/lib64",
    "/usr/local/cuda*/lib64/stubs",
    "/usr/local/cuda*/targets/*/lib",
    "/usr/local/cuda*/targets/*/lib/stubs",
)
# Files whose library answers a version call (doctorprobe.QUERIES); other cuDNN sub-libraries
# take the version of the graph library (or shim) in their folder.
QUERIED = ("libcudnn", "libcudnn_graph", "libcudnn_ops_infer", "libcudart", "libcublas", "libnccl")
MAX_QUERIES = 32
FRAMEWORK_TIMEOUT = 300.0


def gather(*, python: str, env: Mapping[str, str]) -> Facts:
    interp, own = probe_interpreter(python, env)
    frameworks = tuple(probe_framework(python, name, env) for name in interp.importable)
    copies = (*loader_path(env), *own, *toolkit_copies())
    return Facts(
        driver=probe_driver(),
        interpreter=interp,
        libraries=with_versions(copies, env),
        frameworks=frameworks,
    )


# ---------------------------------------------------------------- driver


def probe_driver() -> DriverFacts:
    driver = host.detect_driver()
    gpus = host.detect_gpus() if driver.version is not None else ()
    nodes = tuple(sorted(glob.glob("/dev/nvidia[0-9]*")))
    return DriverFacts(version=driver.version, origin=driver.origin, gpus=gpus, device_nodes=nodes)


# ---------------------------------------------------------------- the interpreter


def probe_interpreter(python: str, env: Mapping[str, str]) -> tuple[Interpreter, list[LibCopy]]:
    res = proc.run([python, str(PROBE), "env"], timeout=120, env=env)
    events, _ = probe_lines(res.stdout)
    why = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
    if res.returncode is None:
        why = f"cannot start it ({res.stderr.strip()})"
    interp = parse_interpreter(python, events, why)
    env_event = next((e for e in events if e.get("step") == "env"), {})
    own = [_copy(p, Origin.WHEEL) for p in env_event.get("own_libs", ())]
    return interp, own


def probe_framework(python: str, name: str, env: Mapping[str, str]) -> FrameworkFacts:
    res = proc.run([python, str(PROBE), "framework", name], timeout=FRAMEWORK_TIMEOUT, env=env)
    events, noise = probe_lines(res.stdout)
    output = "\n".join(t for t in (noise, res.stderr) if t.strip())
    return parse_framework(
        name, events, returncode=res.returncode, output=output, timed_out=res.timed_out
    )


# ---------------------------------------------------------------- libraries


def _copy(path: str, origin: Origin, rank: int = 0, name: str | None = None) -> LibCopy:
    real = os.path.realpath(path)
    return LibCopy(
        name=name or os.path.basename(path),
        path=path,
        real=real,
        origin=origin,
        rank=rank,
        stub="/stubs/" in path or "/stubs/" in real,
    )


def _folder(folder: str, origin: Origin, rank: int = 0) -> list[LibCopy]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    paths = (os.path.join(folder, n) for n in names if LIB_NAME.match(n))
    return [_copy(p, origin, rank) for p in paths if os.path.isfile(p)]


def multiarch() -> str:
    return f"{platform.machine()}-linux-gnu"


def loader_path(env: Mapping[str, str]) -> list[LibCopy]:
    """What a bare-name dlopen searches, in order: LD_PRELOAD, LD_LIBRARY_PATH, the cache, the
    trusted folders (each file once per origin: /lib is /usr/lib on merged-/usr systems)."""
    out: list[LibCopy] = []
    preload = env.get("LD_PRELOAD", "").replace(" ", ":").split(":")
    for i, path in enumerate(p for p in preload if p):
        if LIB_NAME.match(os.path.basename(path)):
            out.append(_copy(path, Origin.PRELOAD, i))
    for i, folder in enumerate(env.get("LD_LIBRARY_PATH", "").split(":")):
        if folder:
            out += _folder(folder, Origin.LD_LIBRARY_PATH, i)
    out += [_copy(p, Origin.CACHE, name=n) for n, p in ld_cache() if LIB_NAME.match(n)]
    for folder in SYSTEM_DIRS:
        out += _folder(folder.format(multiarch=multiarch()), Origin.SYSTEM)
    return _unique(out)


def ld_cache() -> tuple[tuple[str, str], ...]:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    res = proc.run([ldconfig, "-p"], timeout=30)
    machine = {"x86_64": "x86-64", "aarch64": "AArch64"}.get(platform.machine(), "")
    return parse_ldconfig(res.stdout, machine) if res.returncode == 0 else ()


def toolkit_copies() -> list[LibCopy]:
    folders = sorted({f for g in TOOLKIT_GLOBS for f in glob.glob(g)})
    return _unique([c for f in folders for c in _folder(f, Origin.TOOLKIT)])


def _unique(copies: Iterable[LibCopy]) -> list[LibCopy]:
    seen: set[tuple[str, str, Origin]] = set()
    out = []
    for c in copies:
        key = (c.name, c.real, c.origin)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def with_versions(copies: Iterable[LibCopy], env: Mapping[str, str]) -> tuple[LibCopy, ...]:
    """Each copy with the version its library reports (asked in a child, one per file) or its
    file name tells; cuDNN sub-libraries take their folder's cuDNN version."""
    copies = list(copies)
    wanted = [c.real for c in copies if family(c.name) in QUERIED or c.name.startswith("libcuda.")]
    reals = list(dict.fromkeys(wanted))[:MAX_QUERIES]
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = dict(zip(reals, pool.map(lambda r: ask_version(r, env), reals), strict=True))
    out = [_versioned(c, answers.get(c.real)) for c in copies]
    # The graph (ops_infer in cuDNN 8) library's own answer first: the shim's is the graph it
    # resolved, which LD_LIBRARY_PATH changes where its folder lacks one.
    tellers = ("libcudnn", "libcudnn_ops_infer", "libcudnn_graph")
    asked = [c for c in out if family(c.name) in tellers and c.version_from == "cudnnGetVersion"]
    asked.sort(key=lambda c: tellers.index(family(c.name)))
    folder_cudnn = {os.path.dirname(c.real): c for c in asked}
    return tuple(_from_folder(c, folder_cudnn.get(os.path.dirname(c.real))) for c in out)


def ask_version(real: str, env: Mapping[str, str]) -> dict[str, Any]:
    # The doctor's own interpreter: only ctypes is needed, and the user's may be the broken part.
    res = proc.run([sys.executable, str(PROBE), "libversion", real], timeout=60, env=env)
    events, _ = probe_lines(res.stdout)
    if events:
        return dict(events[-1])
    tail = "\n".join(res.stderr.strip().splitlines()[-5:]) or f"exit {res.returncode}"
    return {"ok": False, "error": f"loading it ended the process ({res.returncode}): {tail}"}


def _versioned(c: LibCopy, answer: dict[str, Any] | None) -> LibCopy:
    named = name_version(c.name)
    if answer is None:
        return replace(c, version=named, version_from="file name" if named else None)
    if answer.get("version"):
        return replace(c, version=str(answer["version"]), version_from=str(answer.get("call")))
    return replace(
        c,
        version=named,
        version_from="file name" if named else None,
        error=str(answer.get("error")),
        stub=c.stub or bool(answer.get("stub")),
    )


def _from_folder(c: LibCopy, shim: LibCopy | None) -> LibCopy:
    if not family(c.name).startswith("libcudnn") or shim is None or shim.real == c.real:
        return c
    if c.version_from not in (None, "file name"):
        return c
    return replace(c, version=shim.version, version_from=f"as its folder's {shim.name}")
