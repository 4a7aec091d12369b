"""A cell's file faults on a read-only environment, as mounts.

The environment (/opt/stack) is shared by every cell of its stack and mounted read-only, so a
fault never changes it: each file operation becomes a bind mount over what it changes, made from
material kept beside the environments (same file system: hard links cost no space):

* replace: the other wheel's file or folder (already extracted) bound over the path;
* truncate, overwrite: a new file (the cut copy, the text) bound over the file;
* hide: the folder that holds what is hidden, copied as hard links without it, bound over that
  folder (a path cannot be made to vanish by a mount; its parent can be shown without it).

The material lives in faults/<hash of the environment and the operations>/, made in a temp folder
and renamed into place, so a later cell with the same faults (or `harness reproduce`'s printed
command) finds it again. An operation on a path outside the environment (hide in a driver folder)
is not turned into a mount: it is returned, for the backend's root setup step.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import posixpath
import shutil
from collections.abc import Sequence
from pathlib import Path

from harness.backends.envs import temp_dir
from harness.errors import HarnessError
from harness.faults import VENV
from harness.model import FaultOp, Hide, Mount, Overwrite, Replace, RunSpec, Truncate, op_json

FILE_OPS = (Hide, Truncate, Replace, Overwrite)


class FaultNotApplicable(HarnessError):
    """A file fault whose path this stack does not have: its cell is errored with this line."""


FileOp = Hide | Truncate | Replace | Overwrite


def inside(path: str) -> str | None:
    """The path relative to the environment, or None when it is outside it."""
    if path == VENV:
        return ""
    if path.startswith(VENV + "/"):
        return path[len(VENV) + 1 :].rstrip("/")
    return None


def host_path(spec: RunSpec, target: str) -> Path:
    """The host path the spec mounts at container path `target` (spec_for mounts every source
    an operation names, and a placed driver's folder)."""
    for m in spec.mounts:
        if m.target == target:
            return Path(m.source)
    raise ValueError(f"the run mounts nothing at {target}")


def _outermost(dirs: Sequence[str]) -> list[str]:
    """The folders not inside another one of the list."""
    keep: list[str] = []
    for d in sorted(set(dirs), key=len):
        if not any(d == k or d.startswith(k + "/") for k in keep):
            keep.append(d)
    return keep


def _link_copy(src: Path, dst: Path) -> None:
    """`cp -al`: the folder's tree with every file a hard link (no bytes copied)."""
    shutil.copytree(src, dst, symlinks=True, copy_function=os.link)


def split(spec: RunSpec) -> tuple[list[FileOp], list[FaultOp]]:
    """(file operations on the environment, every other operation)."""
    mine: list[FileOp] = []
    rest: list[FaultOp] = []
    for op in spec.ops:
        if isinstance(op, FILE_OPS) and inside(op.path) is not None:
            mine.append(op)
        else:
            rest.append(op)
    return mine, rest


def mounts(spec: RunSpec, env: Path, store: Path, ref: str) -> list[Mount]:
    """The mounts that apply the spec's file operations on the environment `env` (host folder,
    seen at /opt/stack), their material made under `store` once per (environment, operations)."""
    ops, _ = split(spec)
    if not ops:
        return []
    key = hashlib.sha256(
        json.dumps([ref, [op_json(op) for op in ops]], sort_keys=True).encode()
    ).hexdigest()[:16]
    folder = store / key
    plan = _plan(ops, env)
    if not (folder / "done").is_file():
        tmp = temp_dir(store)
        try:
            _make(plan, env, tmp)
            what = {"env": ref, "ops": [op_json(op) for op in ops]}
            (tmp / "done").write_text(json.dumps(what, sort_keys=True) + "\n")
            try:
                os.rename(tmp, folder)
            except OSError:  # made by another harness meanwhile: the same material
                if not (folder / "done").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    out = []
    for i, (_kind, rel, carried) in enumerate(plan):
        op = carried[0]
        source = (
            host_path(spec, spec.source(op.source)) if isinstance(op, Replace) else folder / str(i)
        )
        out.append(Mount(source, f"{VENV}/{rel}" if rel else VENV))
    return out


# One mount each: (kind, path relative to the environment, the operations it carries out).
_Step = tuple[str, str, list[FileOp]]


def _plan(ops: Sequence[FileOp], env: Path) -> list[_Step]:
    binds: list[_Step] = []
    hidden: dict[str, list[FileOp]] = {}  # relative path hidden -> its op
    for op in ops:
        rel = inside(op.path)
        assert rel is not None
        if isinstance(op, Hide):
            for match in sorted(glob.glob(str(env / rel))):
                hidden[os.path.relpath(match, env)] = [op]
            continue
        kind = "replace" if isinstance(op, Replace) else "file"
        binds.append((kind, rel, [op]))
    parents = _outermost([posixpath.dirname(h) for h in hidden])
    copies: list[_Step] = [
        ("copy", p, [Hide(path=h) for h in hidden if p == "" or h.startswith(p + "/")])
        for p in parents
    ]
    return copies + binds


def _make(plan: Sequence[_Step], env: Path, tmp: Path) -> None:
    for kind, rel, ops in plan:
        if kind != "copy" and not (env / rel).exists():  # a mount needs a path to cover
            raise FaultNotApplicable(
                f"fault '{type(ops[0]).__name__.lower()}': {VENV}/{rel} is not in this stack's "
                "environment (a file another release of the library has)",
                help="apply the scenario to the stacks whose libraries it names "
                "(a profile's scenarios or faults_on)",
            )
    for i, (kind, rel, ops) in enumerate(plan):
        out = tmp / str(i)
        if kind == "copy":  # the folder as hard links, without what is hidden
            _link_copy(env / rel, out)
            for op in ops:
                assert isinstance(op, Hide)
                gone = out / os.path.relpath(env / op.path, env / rel)
                if gone.is_dir() and not gone.is_symlink():
                    shutil.rmtree(gone)
                else:
                    gone.unlink(missing_ok=True)
        elif kind == "file":
            [op] = ops
            if isinstance(op, Truncate):
                with (env / rel).open("rb") as f:
                    out.write_bytes(f.read(op.size))
            elif isinstance(op, Overwrite):
                out.write_text(op.text, encoding="utf-8")
            out.chmod(0o755)
