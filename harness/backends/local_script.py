"""The local backend's pure part: container paths -> host paths, where each file operation acts,
and the shell script and environment a run executes; also what the local backend's modules share
(LocalError, Environment). How faults stay off an installation: harness.backends.local's doc.

File operations are never shell text here: they become `Step` values, written as JSON for
harness/backends/fileops.py, which applies them with os and shutil inside the run's namespace.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.faults import VENV, site
from harness.model import (
    DRIVER_MOUNT,
    Driver,
    FaultOp,
    Hide,
    Mount,
    Overwrite,
    Preload,
    PrependPath,
    Replace,
    RunSpec,
    SetEnv,
    Truncate,
    UnsetEnv,
)

_DROPPED_ENV = ("PYTHON", "VIRTUAL_ENV", "PIP_", "LD_PRELOAD", "LD_LIBRARY_PATH", "XDG_CACHE")
FILEOPS = Path(__file__).resolve().parent / "fileops.py"
FAILED_TO_START = 125  # the script's own exit status when its overlay or faults failed


class LocalError(HarnessError):
    """This host cannot run the spec locally (wrong Python, no namespaces, an unsafe fault)."""

    exit_code = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """Where a run's Python lives on this host. `owned`: a venv built here (faults go to a
    hard-link copy); otherwise an interpreter that is never copied (faults go to an overlay)."""

    python: Path
    prefix: Path  # what {venv} (/opt/stack) means
    site: Path  # what {site} means
    version: str  # major.minor
    owned: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One file operation on host paths: `path` may be a pattern (hide only)."""

    kind: str  # hide | truncate | replace | overwrite
    path: str
    size: int | None = None
    source: str | None = None
    text: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind, "path": self.path, "size": self.size, "source": self.source,
            "text": self.text,
        }  # fmt: skip


# ---------------------------------------------------------------- paths


def path_table(venv: Path, site_dir: Path, version: str, mounts: Sequence[Mount]) -> dict[str, str]:
    """Container path -> host path, for the venv (or interpreter) and the mounts."""
    table = {VENV: str(venv), site(version): str(site_dir)}
    for m in mounts:
        if m.target in table:
            raise LocalError(f"mount target {m.target} is also the stack's venv")
        table[m.target] = str(m.source)
    return table


def host_path(path: str, table: Mapping[str, str]) -> str | None:
    """The host path of a container path under one of the table's folders (the longest that
    holds it), else None."""
    for key in sorted(table, key=len, reverse=True):
        if path == key or path.startswith(f"{key}/"):
            return table[key] + path[len(key) :]
    return None


def translate(text: str, table: Mapping[str, str]) -> str:
    """A probe argument or an environment value: whole container paths -> host paths (longest
    first; /faults/1 is not a prefix of /faults/10)."""
    if not table:
        return text
    keys = sorted(table, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, keys)) + r")(?![\w.-])")
    return pattern.sub(lambda m: table[m.group(0)], text)


# ---------------------------------------------------------------- where file operations act


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where a run's file operations act: the steps with something to do, the environment's
    roots they change, and other host folders they change (each gets an overlay)."""

    steps: tuple[Step, ...]
    roots: tuple[Path, ...]
    host_dirs: tuple[Path, ...]


def place(spec: RunSpec, table: Mapping[str, str], roots: Sequence[Path]) -> Placement:
    """Steps on host paths, sorted by where they act. A path in the environment must not lead
    out of it through a symlink; outside it (the driver's libcuda) the folders the path names
    get an overlay, and hiding what this host does not have is nothing to do."""
    steps, used, host_dirs = [], [], []
    for op in spec.ops:
        step = _step(op, spec, table)
        if step is None:
            continue
        root = next((r for r in roots if step.path.startswith(f"{r}/")), None)
        hits = glob.glob(step.path)
        if root is not None:
            for hit in hits or [step.path]:
                _must_stay_in(hit, root)
            used.append(root)
        elif step.kind == "hide" and not hits:
            continue
        else:
            for folder in {os.path.dirname(h) for h in hits or [step.path]}:
                if folder == "/" or not os.path.isdir(folder):
                    raise LocalError(f"fault path {step.path}: no folder {folder} to overlay")
                host_dirs.append(Path(folder))
        steps.append(step)
    return Placement(
        steps=tuple(steps),
        roots=tuple(dict.fromkeys(used)),
        host_dirs=tuple(dict.fromkeys(host_dirs)),
    )


def _step(op: FaultOp, spec: RunSpec, table: Mapping[str, str]) -> Step | None:
    if not isinstance(op, Hide | Truncate | Replace | Overwrite):
        return None
    # Outside the stack only hide may act (faults.resolve checked it): on the host's own file.
    path = host_path(op.path, table) or op.path
    if isinstance(op, Hide):
        return Step(kind="hide", path=path)
    if isinstance(op, Truncate):
        return Step(kind="truncate", path=path, size=op.size)
    if isinstance(op, Overwrite):
        return Step(kind="overwrite", path=path, text=op.text)
    source = spec.source(op.source)
    return Step(kind="replace", path=path, source=host_path(source, table) or source)


def _must_stay_in(path: str, root: Path) -> None:
    real, parent = os.path.realpath(root), os.path.realpath(os.path.dirname(path))
    if parent != real and not parent.startswith(f"{real}/"):
        raise LocalError(f"fault path {path} leads out of {root} (through a symlink)")


def ops_json(steps: Sequence[Step], roots: Sequence[Path]) -> str:
    """What fileops.py reads: the steps, and the folders they may change."""
    return json.dumps({"roots": [str(r) for r in roots], "steps": [s.to_json() for s in steps]})


# ---------------------------------------------------------------- the run's script


def probe_env(
    spec: RunSpec, table: Mapping[str, str], env: Environment, base: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """(names to unset, values) for the probe: the spec's operations with host paths."""
    values = {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if env.owned:
        values["VIRTUAL_ENV"] = str(env.prefix)
    unset: list[str] = []
    for op in spec.ops:
        if isinstance(op, SetEnv):
            values[op.name] = translate(op.value, table)
        elif isinstance(op, UnsetEnv):
            unset.append(op.name)
        elif isinstance(op, PrependPath | Preload):
            src = spec.source(op.source)
            first = host_path(src, table) or src
            rest = values.get(op.var, base.get(op.var, ""))
            values[op.var] = f"{first}:{rest}" if rest else first
        elif isinstance(op, Driver):  # its private folder, first on the loader path
            first = host_path(DRIVER_MOUNT, table) or DRIVER_MOUNT
            rest = values.get("LD_LIBRARY_PATH", base.get("LD_LIBRARY_PATH", ""))
            values["LD_LIBRARY_PATH"] = f"{first}:{rest}" if rest else first
    for name in unset:  # as in Docker: unset wins over the spec's own values
        values.pop(name, None)
    if not spec.sees_gpu:  # Docker gives such a run no device at all; here the host's are hidden
        values["CUDA_VISIBLE_DEVICES"] = ""
    return unset, values


def run_script(
    spec: RunSpec,
    table: Mapping[str, str],
    env: Environment,
    *,
    home: Path,
    base: Mapping[str, str],
    overlays: str = "",
    ops_file: Path | None = None,
    helper: str = "",
) -> str:
    """The shell a run executes: (overlay mounts), the file operations (by `helper`, a Python,
    reading `ops_file`), then the probe. Every value in it is quoted."""
    q = shlex.quote
    argv = list(spec.argv)
    if argv and re.fullmatch(r"python(3(\.\d+)?)?", argv[0]):
        argv[0] = str(env.python)
    lines = ["exec 2>&1", "set -e"]
    failed = f"|| {{ echo 'stackmatrix: run setup failed'; exit {FAILED_TO_START}; }}"
    if overlays:
        lines.append(f"{overlays} {failed}")
    if ops_file is not None:
        lines.append(f"{q(helper)} -I -S {q(str(FILEOPS))} {q(str(ops_file))} {failed}")
    lines.append(f"cd {q(str(home))}")
    if spec.memory_limit is not None:  # the data rlimit, see the module doc of local
        lines.append(f"ulimit -d {max(1, spec.memory_limit // 1024)}")
    unset, values = probe_env(spec, table, env, base)
    words = [f"-u {q(n)}" for n in unset] + [q(f"{k}={v}") for k, v in sorted(values.items())]
    words += [q(translate(a, table)) for a in argv]
    lines.append(" ".join(["exec env", *words]))
    return "\n".join(lines)


def overlay_mounts(roots: Sequence[Path], run: Path, *, userns: bool = False) -> str:
    """Shell that mounts an overlay over each root, its upper and work folders in `run`. In a
    user namespace overlayfs may not set trusted.* xattrs: `userxattr` (Linux >= 5.11), without
    which removing a folder fails with EIO."""
    cmds = []
    for i, root in enumerate(roots):
        upper, work = run / f"upper{i}", run / f"work{i}"
        for p in (root, upper, work):
            if "," in str(p) or ":" in str(p):
                raise LocalError(f"{p}: overlayfs cannot take a path with ',' or ':'")
        opts = f"lowerdir={root},upperdir={upper},workdir={work}" + (",userxattr" if userns else "")
        q = shlex.quote
        cmds.append(f"mkdir -p {q(str(upper))} {q(str(work))}")
        cmds.append(f"mount -t overlay stackmatrix -o {q(opts)} {q(str(root))}")
    return " && ".join(cmds)


def base_env(env: Mapping[str, str]) -> dict[str, str]:
    """The host environment minus what would let the host's Python or loader setup leak in."""
    return {k: v for k, v in env.items() if not k.startswith(_DROPPED_ENV)}
