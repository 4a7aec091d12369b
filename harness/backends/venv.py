"""Venvs and interpreters for the local backend, apart from a LocalBackend instance: the
content address of a venv built from a lock, what stack an interpreter holds (read by running
it), and removing a tree with read-only folders in it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import proc
from harness.backends.local_script import Environment, LocalError, base_env
from harness.model import Lock, Stack, major_minor

VENV_FORMAT = 1  # part of a venv's content address: bump when the way one is built changes
INSPECT_TIMEOUT = 300.0


def lock_identity(lock: Lock) -> str:
    """What a venv built from this lock holds, from the lock alone (no interpreter is run)."""
    h = hashlib.sha256(f"{VENV_FORMAT}\0{lock.python}\0".encode())
    for w in sorted(lock.wheels, key=lambda w: w.filename):
        h.update(f"{w.filename}\0{w.sha256}\0".encode())
    return h.hexdigest()[:20]


def venv_key(lock: Lock, base_python: str, base_version: str) -> str:
    h = hashlib.sha256(f"{VENV_FORMAT}\0{base_python}\0{base_version}\0".encode())
    for w in sorted(lock.wheels, key=lambda w: w.filename):
        h.update(f"{w.filename}\0{w.sha256}\0".encode())
    return h.hexdigest()[:20]


# ---------------------------------------------------------------- interpreters

# Run by the target interpreter (standard library only): where it is, what stack it holds.
_INSPECT = r"""
import importlib, importlib.metadata as md, importlib.util, json, os, sys, sysconfig
out = {"python": "%d.%d" % sys.version_info[:2], "prefix": sys.prefix,
       "purelib": sysconfig.get_paths()["purelib"], "nvidia": {}, "frameworks": {}}
for d in md.distributions():
    name = (d.metadata["Name"] or "").lower().replace("_", "-")
    if name.startswith("nvidia-"):
        out["nvidia"][name] = d.version
for fw in ("torch", "tensorflow"):
    spec = importlib.util.find_spec(fw)
    if spec is None or not spec.submodule_search_locations:
        continue
    info = out["frameworks"][fw] = {
        "site": os.path.dirname(list(spec.submodule_search_locations)[0])}
    if fw not in sys.argv[1:]:
        continue
    try:
        mod = importlib.import_module(fw)
        info["version"] = mod.__version__
        if fw == "torch":
            info["cuda"] = mod.version.cuda
            info["cudnn"] = mod.backends.cudnn.version()
        else:
            build = mod.sysconfig.get_build_info()
            info["cuda"], info["cudnn"] = build.get("cuda_version"), build.get("cudnn_version")
    except Exception as exc:
        info["error"] = "%s: %s" % (type(exc).__name__, exc)
print("STACKMATRIX-INSPECT " + json.dumps(out))
"""


def _cudnn_text(value: object) -> str | None:
    """torch reports cuDNN as an int (90100 = 9.1.0; 8906 = 8.9.6), TensorFlow as text."""
    if isinstance(value, int):
        major, rest = (value // 10000, value % 10000) if value >= 90000 else divmod(value, 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    return str(value) if value else None


def parse_inspection(
    data: Mapping[str, Any], python: Path, framework: str | None
) -> tuple[Stack, Environment]:
    """What an interpreter holds -> its Stack (cuDNN and CUDA from the installed nvidia-*
    wheels, else the framework's build info) and where faults apply."""
    found = data["frameworks"]
    if framework is None:
        if len(found) != 1:
            what = " and ".join(found) or "neither torch nor tensorflow"
            raise LocalError(f"{python} has {what}", help="name the framework to probe")
        framework = next(iter(found))
    info = found.get(framework)
    if info is None or "version" not in info:
        why = info.get("error") if info else f"{framework} is not installed"
        raise LocalError(f"cannot read the {framework} stack of {python}: {why}")
    nvidia = data["nvidia"]
    runtime = next((v for k, v in nvidia.items() if k.startswith("nvidia-cuda-runtime")), None)
    cudnn = next((v for k, v in nvidia.items() if k.startswith("nvidia-cudnn")), None)
    cuda = info.get("cuda") or runtime
    stack = Stack(
        framework=framework,
        framework_version=str(info["version"]).split("+")[0],
        cuda=major_minor(str(cuda)) if cuda else "none",
        cudnn=cudnn or _cudnn_text(info.get("cudnn")) or "none",
        python=data["python"],
        base="local",
    )
    env = Environment(
        python=python,
        prefix=Path(data["prefix"]),
        site=Path(info["site"]),
        version=data["python"],
        owned=False,
    )
    return stack, env


def inspect(python: Path, imports: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """Run the inspection in `python`, importing the frameworks named (for their versions)."""
    res = proc.run(
        [str(python), "-c", _INSPECT, *imports], timeout=INSPECT_TIMEOUT, env=base_env(env)
    )
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("STACKMATRIX-INSPECT ")), "")
    if not line:
        tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-10:])
        raise LocalError(f"{python} could not be inspected:\n{tail}", help="is it a Python 3?")
    data: dict[str, Any] = json.loads(line.split(" ", 1)[1])
    return data


# ---------------------------------------------------------------- files


def remove_tree(path: Path) -> None:
    """rmtree that also gets through read-only folders (overlay work dirs, wheels' own)."""
    if not path.exists():
        return
    try:
        shutil.rmtree(path)
    except OSError:
        for top, dirs, _ in os.walk(path):
            for d in dirs:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(top, d), 0o700)
        shutil.rmtree(path, ignore_errors=True)
