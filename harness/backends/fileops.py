"""Apply a local run's file operations: `python -I -S fileops.py OPS.json`.

Run by harness.backends.local inside the run's own mount namespace (over an overlay) or on a
hard-link copy of a venv, before the probe starts. Standard library only, and it imports nothing
of the harness: it must work with `-I -S` in a user namespace. Every change removes and
recreates a path, never writes into a file (a write through a hard link would change the venv
it was copied from), and touches nothing outside the roots it is given.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys


def _inside(path: str, roots: list[str]) -> bool:
    parent = os.path.realpath(os.path.dirname(path))
    return any(parent == r or parent.startswith(r + os.sep) for r in roots)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def _apply(step: dict[str, object], roots: list[str]) -> None:
    path = str(step["path"])
    targets = sorted(glob.glob(path)) if step["kind"] == "hide" else [path]
    for target in targets:
        if not _inside(target, roots):
            raise SystemExit(f"stackmatrix: {target} is outside the run's copy or overlay")
        if step["kind"] == "hide":
            _remove(target)
        elif step["kind"] == "truncate":
            with open(target, "rb") as f:
                head = f.read(int(str(step["size"])))
            with open(target + ".cut", "wb") as f:
                f.write(head)
            os.unlink(target)
            os.rename(target + ".cut", target)
        elif step["kind"] == "overwrite":
            _remove(target)
            with open(target, "w", encoding="utf-8") as f:
                f.write(str(step["text"]))
        elif step["kind"] == "replace":
            source = str(step["source"])
            _remove(target)
            if os.path.isdir(source):
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
        else:
            raise SystemExit(f"stackmatrix: unknown file operation {step['kind']!r}")


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        data = json.load(f)
    roots = [os.path.realpath(r) for r in data["roots"]]
    for step in data["steps"]:
        _apply(step, roots)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
