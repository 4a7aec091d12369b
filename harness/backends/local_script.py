"""The local backend's pure part: container paths -> host paths, the fault setup commands it
accepts and where they act, and the shell script and environment a run executes; also what the
local backend's modules share (LocalError, Environment). How faults stay off an installation:
harness.backends.local's module doc."""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.faults import VENV
from harness.model import Mount, RunSpec

_SHELL_SAFE = re.compile(r"^[\w@%+=:,./-]+$")  # host paths go into shell text unquoted
_DROPPED_ENV = ("PYTHON", "VIRTUAL_ENV", "PIP_", "LD_PRELOAD", "LD_LIBRARY_PATH", "XDG_CACHE")
# The setup commands faults.py makes, each removing and recreating what it changes (module doc
# of harness.backends.local).
_SHAPES = {
    "hide": re.compile(r"rm -rf -- (?P<target>\S+)"),
    "truncate": re.compile(
        r"head -c \d+ (?P<target>\S+) > (?P=target)\.cut && rm -f (?P=target)"
        r" && mv (?P=target)\.cut (?P=target)"
    ),
    # a file or a folder from another wheel, copied in after the original is removed
    "replace": re.compile(r"rm -(?:f|rf --) (?P<target>\S+) && cp (?:-R )?\S+ (?P=target)"),
}


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


# ---------------------------------------------------------------- pure: paths, script, env


def path_table(venv: Path, site: Path, version: str, mounts: Sequence[Mount]) -> dict[str, str]:
    """Container path -> host path, for the venv (or interpreter) and the mounts."""
    table = {VENV: str(venv), f"{VENV}/lib/python{version}/site-packages": str(site)}
    for m in mounts:
        if m.target in table:
            raise LocalError(f"mount target {m.target} is also the stack's venv")
        table[m.target] = str(m.source)
    return table


def translate(text: str, table: Mapping[str, str], *, shell: bool = False) -> str:
    """Replace whole container paths (longest first; /faults/1 is not a prefix of /faults/10).
    `shell`: the text is a setup command, whose paths are unquoted (globs): refuse a host path
    the shell would split."""

    def host(m: re.Match[str]) -> str:
        path = table[m.group(0)]
        if shell and not _SHELL_SAFE.match(path):
            raise LocalError(
                f"host path {path!r} has characters the fault setup cannot take unquoted",
                help="set STACKMATRIX_CACHE (and TMPDIR) to folders whose path has no spaces",
            )
        return path

    if not table:
        return text
    keys = sorted(table, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, keys)) + r")(?![\w.-])")
    return pattern.sub(host, text)


def setup_targets(setup: Sequence[str]) -> list[tuple[str, str]]:
    """(kind, path) for each setup command: the path (a shell word, maybe a glob) it removes and
    recreates. An error for any other command: it might write through a hard link."""
    found = []
    for cmd in setup:
        hit = next(((k, m) for k, s in _SHAPES.items() if (m := s.fullmatch(cmd))), None)
        if hit is None:
            raise LocalError(
                f"the local backend does not know the fault setup command {cmd!r}",
                help="a new fault primitive must remove and recreate files (never write in place);"
                " add its command shape to harness/backends/local_script.py _SHAPES",
            )
        found.append((hit[0], hit[1]["target"]))
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where a run's setup acts: `setup` (commands with something to do), the environment's
    roots it changes, and other host folders it changes (each gets an overlay)."""

    setup: tuple[str, ...]
    roots: tuple[Path, ...]
    host_dirs: tuple[Path, ...]


def place(setup: Sequence[str], table: Mapping[str, str], roots: Sequence[Path]) -> Placement:
    """Sort setup commands by where they act; refuse a path with `..` or one whose symlinks
    lead out of its root. Outside the environment (e.g. the driver's libcuda) the folders the
    path names get an overlay, and hiding what this host does not have is nothing to do."""
    kept, used, host_dirs = [], [], []
    for cmd, (kind, word) in zip(setup, setup_targets(setup), strict=True):
        path = _literal(translate(word, table))
        root = next((r for r in roots if path.startswith(f"{r}/")), None)
        hits = glob.glob(path)
        if root is not None:
            for hit in hits or [path]:
                _must_stay_in(hit, root)
            used.append(root)
        elif kind == "hide" and not hits:
            continue
        else:
            for folder in {os.path.dirname(h) for h in hits or [path]}:
                if folder == "/":
                    raise LocalError(f"fault path {path}: the local backend cannot overlay /")
                if not os.path.isdir(folder):
                    raise LocalError(f"fault path {path}: no folder {folder} on this host")
                host_dirs.append(Path(folder))
        kept.append(cmd)
    return Placement(
        setup=tuple(kept),
        roots=tuple(dict.fromkeys(used)),
        host_dirs=tuple(dict.fromkeys(host_dirs)),
    )


def _literal(word: str) -> str:
    parts = shlex.split(word)
    path = parts[0] if len(parts) == 1 else ""
    if not path.startswith("/") or ".." in path.split("/") or path.endswith("/"):
        raise LocalError(f"fault path {word!r} must be absolute, without '..' or a final '/'")
    return path


def _must_stay_in(path: str, root: Path) -> None:
    real, parent = os.path.realpath(root), os.path.realpath(os.path.dirname(path))
    if parent != real and not parent.startswith(f"{real}/"):
        raise LocalError(f"fault path {path} leads out of {root} (through a symlink)")


def probe_env(spec: RunSpec, table: Mapping[str, str], env: Environment) -> list[str]:
    """`env` arguments for the probe: unset first, then the spec's values with host paths."""
    values = {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if env.owned:
        values["VIRTUAL_ENV"] = str(env.prefix)
    values.update((k, translate(v, table)) for k, v in spec.env)
    for name in spec.unset:  # as in Docker: unset wins over the spec's own values
        values.pop(name, None)
    if not spec.gpu:  # Docker gives such a run no device at all; here the host's are hidden
        values["CUDA_VISIBLE_DEVICES"] = ""
    args = [f"-u {shlex.quote(name)}" for name in spec.unset]
    return args + [shlex.quote(f"{k}={v}") for k, v in sorted(values.items())]


def run_script(
    spec: RunSpec, table: Mapping[str, str], env: Environment, *, home: Path, overlays: str = ""
) -> str:
    """The shell a run executes: (overlay mounts), the fault setup, then the probe."""
    argv = list(spec.argv)
    if argv and re.fullmatch(r"python(3(\.\d+)?)?", argv[0]):
        argv[0] = str(env.python)
    argv = [shlex.quote(translate(a, table)) for a in argv]
    lines = ["exec 2>&1", "set -e"]
    if overlays:
        lines.append(f"{overlays} || {{ echo 'stackmatrix: overlay failed'; exit 125; }}")
    lines += [translate(cmd, table, shell=True) for cmd in spec.setup]
    lines.append(f"cd {shlex.quote(str(home))}")
    if spec.memory_limit is not None:  # address space, see the module doc
        lines.append(f"ulimit -v {max(1, spec.memory_limit // 1024)}")
    lines.append(" ".join(["exec env", *probe_env(spec, table, env), *argv]))
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
