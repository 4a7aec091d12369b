"""What the Docker backend keeps on disk, and how it is trimmed (`harness gc`, `--disk-budget`).

The parts, cheapest to make again first:

  fault material  faults/<hash>/: hard links and small files, remade in a moment
  environments    envs/<name>/: a stack's venv, hard-linked from uv's cache (its own bytes
                  are bytecode and metadata); remade from uv's cache in seconds
  uv's cache      the unpacked wheels; an entry no environment links to any more is freed
  wheels          the downloaded wheels; one whose stack is made, or that no selection needs,
                  is freed (the next make of that stack downloads it again)
  images          stackmatrix/stack:* and stackmatrix/step:* (`harness build --image`)

An environment a running harness holds (its shared flock) is never removed, nor is a wheel while
any harness installs from the cache (`harness.lock.reading`).
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import proc
from harness.backends.envs import MAKING, MARK, EnvStore, tree_bytes, uv_tool
from harness.console import human_bytes
from harness.lock import WheelCache, evictable


@dataclass(frozen=True, slots=True, kw_only=True)
class Removed:
    what: str  # 'environment', 'fault material', "uv's cache", 'wheel', 'image'
    name: str
    bytes: int
    why: str

    def line(self) -> str:
        return f"removed {self.what} {self.name} ({human_bytes(self.bytes)}): {self.why}"


def env_stack(name: str) -> str:
    """An environment's stack slug (its name is <slug>-<hash>)."""
    return name.rpartition("-")[0]


def usage(store: EnvStore, wheels: WheelCache) -> dict[str, int]:
    """Bytes on disk by part, each file counted once."""
    out = store.usage()
    out["wheels"] = tree_bytes(wheels.dir) if wheels.dir.is_dir() else 0
    return out


def remove_env(store: EnvStore, name: str, why: str) -> Removed | None:
    """An environment and its fault material (None: a harness holds it)."""
    path = store.envs / name
    size = tree_bytes(path, own=True)  # what is freed: the rest stays linked from uv's cache
    if not store.remove(name):
        return None
    if store.faults.is_dir():
        for folder in store.faults.iterdir():
            if _material_env(folder) == name:
                shutil.rmtree(folder, ignore_errors=True)
    return Removed(what="environment", name=name, bytes=size, why=why)


def _material_env(folder: Path) -> str:
    try:
        done = json.loads((folder / "done").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(done.get("env", "")).rpartition(":")[2] if isinstance(done, dict) else ""


def prune_uv(store: EnvStore) -> Removed | None:
    """uv's cache entries (unpacked wheels) that no environment links to any more; nothing
    while an environment is being made (what it unpacked is not linked yet)."""
    archive = store.uv_cache / "archive-v0"
    if not archive.is_dir():
        return None
    with (store.root / MAKING).open("ab") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # an environment is being made: the next trim prunes
        return _prune(store, archive)


def _prune(store: EnvStore, archive: Path) -> Removed | None:
    """Through `uv cache clean NAME...`, never by deleting its entries: uv's index points at
    them, and an entry removed under it breaks the next install ("failed to read directory
    .../archive-v0/..."). The packages cleaned are those with an unpacked version no
    environment links to (uv cleans a package by name, every version: what environments link
    stays on disk through them)."""
    unlinked: dict[str, int] = {}
    for entry in archive.iterdir():
        name = _package(entry)
        if name is not None and not _linked(entry):
            unlinked[name] = unlinked.get(name, 0) + tree_bytes(entry)
    names = sorted(unlinked)
    if not names:
        return None
    uv, _ = uv_tool()
    env = {**os.environ, "UV_CACHE_DIR": str(store.uv_cache), "UV_NO_PROGRESS": "1"}
    done = proc.run([str(uv), "cache", "clean", *names], timeout=600, env=env)
    if done.returncode != 0:
        return None  # uv said why on its stderr; the next trim tries again
    freed = sum(unlinked[n] for n in names)
    return Removed(
        what="uv's cache", name=f"{len(names)} packages unpacked", bytes=freed,
        why="no environment links to them (uv cache clean)",
    )  # fmt: skip


def _package(entry: Path) -> str | None:
    """The distribution an unpacked wheel of uv's cache holds (its .dist-info folder's name)."""
    try:
        for p in entry.iterdir():
            if p.name.endswith(".dist-info"):
                return p.name.removesuffix(".dist-info").rsplit("-", 1)[0]
    except OSError:
        return None
    return None


def _linked(entry: Path) -> bool:
    """Whether a file of this unpacked wheel is also a file of an environment."""
    for root, _, files in os.walk(entry):
        for name in files:
            try:
                if os.lstat(os.path.join(root, name)).st_nlink > 1:
                    return True
            except OSError:
                continue
    return False


def remove_wheels(wheels: WheelCache, names: Iterable[str], why: str) -> list[Removed]:
    """The wheels, said in one line (how many, their bytes); none while another process
    installs from the folder (its `reading` lock): the next trim tries again."""
    count, freed = 0, 0
    with evictable(wheels.dir) as free:
        for name in sorted(set(names)) if free else ():
            path = wheels.dir / name
            try:
                size = path.stat().st_size
                path.unlink()
            except OSError:
                continue
            count, freed = count + 1, freed + size
    if not count:
        return []
    return [
        Removed(
            what="wheels", name=f"{count} wheel" + ("s" if count > 1 else ""), bytes=freed, why=why
        )
    ]


def collect(
    store: EnvStore,
    *,
    wanted: set[str],
    stacks: Sequence[str] = (),
    images: Sequence[tuple[str, int]] = (),
    remove_image: Callable[[str], None] | None = None,
    wanted_images: set[str] | frozenset[str] = frozenset(),
) -> list[Removed]:
    """`harness gc`: with `stacks` (globs), those stacks' environments and images; without,
    every environment and image not `wanted` (the current name of a stack matrix.yaml has).
    Then uv's cache entries nothing links to."""
    out: list[Removed] = []
    for name, _ in list(store.listed()):
        slug = env_stack(name)
        if stacks:
            if not any(fnmatch.fnmatchcase(slug, g) for g in stacks):
                continue
            why = "its stack was named (--stack)"
        elif name in wanted:
            continue
        else:
            why = "no stack of matrix.yaml has it (an old lock, base or installer)"
        got = remove_env(store, name, why)
        if got is not None:
            out.append(got)
    for ref, size in images:
        repo, _, tag = ref.rpartition(":")
        step = repo.endswith("/step")  # an install step's image: a cache for --image builds
        named = bool(stacks) and any(fnmatch.fnmatchcase(tag, g + "-*") for g in stacks)
        stale = not stacks and ref not in wanted_images
        if (named or stale) and remove_image is not None:
            remove_image(ref)
            why = (
                "its stack was named (--stack)" if named
                else "an install step's image, kept only to speed the next --image build" if step
                else "no stack of matrix.yaml has it"
            )  # fmt: skip
            out.append(Removed(what="image", name=ref, bytes=size, why=why))
    pruned = prune_uv(store) if not stacks else None
    return [*out, *([pruned] if pruned else [])]


def over_budget(
    store: EnvStore,
    wheels: WheelCache,
    budget: int,
    *,
    keep: set[str],
    needed_wheels: set[str] | None,
) -> list[Removed]:
    """Evict until the cache is within `budget` bytes: wheels no stack still to make needs
    (`needed_wheels` None: no wheel, as beside a download in flight), then uv's cache entries
    that environments removed earlier left unlinked (a trim beside an environment in the making
    could not prune them), then the least recently used environments not in `keep`, each
    followed by the uv cache entries it alone linked to."""
    out: list[Removed] = []

    def total() -> int:
        return sum(usage(store, wheels).values())

    if total() <= budget:
        return out
    if needed_wheels is not None:
        spare = [w for w in _wheel_files(wheels) if w not in needed_wheels]
        why = "the cache is over its budget; no stack still to make needs it"
        out += remove_wheels(wheels, spare, why)
    if total() > budget:
        pruned = prune_uv(store)
        out += [pruned] if pruned else []
    by_age = sorted(store.listed(), key=lambda e: _used(e[1]))
    for name, _ in by_age:
        if total() <= budget:
            break
        if name in keep:
            continue
        got = remove_env(store, name, "the cache is over its budget; least recently used")
        if got is not None:
            out.append(got)
            pruned = prune_uv(store)
            out += [pruned] if pruned else []
    return out


def _wheel_files(wheels: WheelCache) -> list[str]:
    return sorted(p.name for p in wheels.dir.glob("*.whl")) if wheels.dir.is_dir() else []


def _used(path: Path) -> float:
    try:
        return (path / MARK).stat().st_mtime
    except OSError:
        return 0.0
