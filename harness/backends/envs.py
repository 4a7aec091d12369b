"""A stack's environment kept on the host, not in an image layer.

An offline stack is its base image plus an environment: a venv in a host folder, keyed by what
decides its content (the base, the lock's wheels by hash, images/env.sh and uv's version), that
every run mounts read-only at /opt/stack. It is made once by uv in a container FROM the base
(no network; the wheel cache read-only), hard-linked from uv's cache, so stacks that share
wheels share their files on disk, and no layer is written or committed through the engine's
storage driver (bench/results/prepare-*.json measures both ways).

Layout, under the cache ($STACKMATRIX_CACHE/stacks):

  envs/<slug>-<hash>/     an environment, complete: made in envs/.tmp-*, then renamed
  envs/<slug>-<hash>.lock a shared flock held by every harness that uses it (gc skips it)
  uv-cache/               uv's cache (the unpacked wheels the environments link to)
  faults/<hash>/          a cell's fault material (see harness.backends.faultmounts)

A harness killed while making one leaves only a `.tmp-*` folder, which nothing trusts and the
next sweep removes once its process is gone.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.backends import PrepareFailed
from harness.backends.engine import BUILD_LIMITS, Engine, host_id, owner_gone, start_ticks
from harness.backends.offline import Base
from harness.console import Console
from harness.errors import HarnessError
from harness.fs import atomic_write
from harness.lock import reading
from harness.model import Lock, Mount, Stack

ENV_REPO = "stackmatrix/env"
MARK = "stackmatrix-env.json"  # written last, before the rename: what the environment is
MAKING = ".making.lock"  # shared by every harness making an environment (EnvStore.making)
SCRIPT = Path(__file__).resolve().parents[2] / "images" / "env.sh"
ENV_TIMEOUT = 3600.0
_TMP = ".tmp-"
_TMP_NAME = re.compile(r"\.tmp-([0-9a-f]{12}-[0-9]+-[0-9]+)-")


def uv_tool() -> tuple[Path, str]:
    """The uv binary the harness installed with (the `uv` wheel from PyPI) and its version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        import uv

        return Path(uv.find_uv_bin()), version("uv")
    except (ImportError, FileNotFoundError, PackageNotFoundError) as exc:
        raise HarnessError(
            f"uv, which makes the stacks' environments, is not installed: {exc}",
            help="install the harness with its dependencies: python -m pip install -e .",
        ) from None


def env_ref(stack: Stack, lock: Lock, base_ref: str, script: str, uv_version: str) -> str:
    """The environment's name: the hash of the base (a content-addressed tag), every locked
    wheel by hash, the script that makes it and the installer's version."""
    h = hashlib.sha256()
    for part in (base_ref, lock.requirements_txt(), script, uv_version):
        h.update(part.encode())
        h.update(b"\0")
    return f"{ENV_REPO}:{stack.slug}-{h.hexdigest()[:12]}"


def tree_bytes(path: Path, seen: set[tuple[int, int]] | None = None, *, own: bool = False) -> int:
    """Bytes of the files under `path`, each inode once (hard links shared with `seen`);
    `own`: only files with no other link (what removing the folder frees)."""
    seen = set() if seen is None else seen
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen and not (own and st.st_nlink > 1):
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class Made:
    path: Path
    status: str  # 'built' or 'cache-hit'
    seconds: float
    size: int  # bytes its own files add to the disk (0 for a cache hit)


class EnvStore:
    def __init__(self, cache: Path):
        self.root = cache / "stacks"
        self.envs = self.root / "envs"
        self.uv_cache = self.root / "uv-cache"
        self.faults = self.root / "faults"
        self._held: dict[str, IO[bytes]] = {}

    @contextmanager
    def making(self) -> Iterator[None]:
        """Held (shared) while an environment is made: uv's cache entries it unpacked are not
        linked yet, so `keep.prune_uv` must not take them for unused (it skips while held)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / MAKING).open("ab") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            yield

    def path(self, ref: str) -> Path:
        return self.envs / ref.rpartition(":")[2]

    def ready(self, ref: str) -> bool:
        return (self.path(ref) / MARK).is_file()

    # ------------------------------------------------------------ in use (gc's lock)

    def hold(self, ref: str) -> None:
        """Mark the environment in use by this process until `release_all` (a shared flock:
        `harness gc` never removes one that a running harness holds)."""
        name = ref.rpartition(":")[2]
        if name in self._held:
            return
        self.envs.mkdir(parents=True, exist_ok=True)
        f = (self.envs / f"{name}.lock").open("ab")
        fcntl.flock(f, fcntl.LOCK_SH)
        self._held[name] = f

    def release(self, ref: str) -> None:
        f = self._held.pop(ref.rpartition(":")[2], None)
        if f is not None:
            f.close()

    def held(self) -> set[str]:
        return set(self._held)

    def release_all(self) -> None:
        for f in self._held.values():
            f.close()
        self._held.clear()

    def remove(self, name: str) -> bool:
        """Remove an environment and its lock file, unless a harness holds it: False then."""
        lock = self.envs / f"{name}.lock"
        with lock.open("ab") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    return False
                raise
            # Unmarked first: a half-removed folder is never taken for a complete one.
            (self.envs / name / MARK).unlink(missing_ok=True)
            shutil.rmtree(self.envs / name, ignore_errors=True)
            lock.unlink(missing_ok=True)
        return True

    def listed(self) -> Iterator[tuple[str, Path]]:
        """Every complete environment: (name, folder)."""
        if not self.envs.is_dir():
            return
        for p in sorted(self.envs.iterdir()):
            if p.is_dir() and not p.name.startswith(".") and (p / MARK).is_file():
                yield p.name, p

    # ------------------------------------------------------------ making one

    def ensure(
        self,
        ref: str,
        lock: Lock,
        base: Base,
        *,
        engine: Engine,
        wheels: Path,
        console: Console,
        log_path: Path,
        who: str,
    ) -> Made:
        t = time.monotonic()
        final = self.path(ref)
        if self.ready(ref):
            os.utime(final / MARK)  # last used: what a size budget evicts first
            return Made(path=final, status="cache-hit", seconds=time.monotonic() - t, size=0)
        self.envs.mkdir(parents=True, exist_ok=True)
        self.uv_cache.mkdir(parents=True, exist_ok=True)
        uv, uv_version = uv_tool()
        tmp = temp_dir(self.envs)
        try:
            before = tree_bytes(self.uv_cache)
            with self.making(), reading(wheels):
                self._make(tmp, lock, base, engine=engine, wheels=wheels, uv=uv,
                           console=console, log_path=log_path, who=who)  # fmt: skip
            mark = {"ref": ref, "lock": lock.slug, "uv": uv_version, "base": base.ref}
            atomic_write(tmp / MARK, json.dumps(mark, sort_keys=True) + "\n")
            try:
                os.rename(tmp, final)
            except OSError:  # another harness made it meanwhile: theirs is the same
                if not self.ready(ref):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        seen: set[tuple[int, int]] = set()
        tree_bytes(self.uv_cache, seen)
        size = tree_bytes(final, seen) + max(0, tree_bytes(self.uv_cache) - before)
        return Made(path=final, status="built", seconds=time.monotonic() - t, size=size)

    def _make(
        self,
        tmp: Path,
        lock: Lock,
        base: Base,
        *,
        engine: Engine,
        wheels: Path,
        uv: Path,
        console: Console,
        log_path: Path,
        who: str,
    ) -> None:
        meta = temp_dir(self.root)
        try:
            (meta / "requirements.txt").write_text(lock.requirements_txt(), encoding="utf-8")
            shutil.copyfile(SCRIPT, meta / "env.sh")
            meta.chmod(0o755)
            mounts = [
                Mount(self.root, "/stackmatrix", read_only=False),
                Mount(wheels, "/wheelhouse/wheels"),
                Mount(meta, "/wheelhouse/meta"),
                Mount(uv, "/usr/local/bin/uv"),
            ]
            owner = f"{os.getuid()}:{os.getgid()}"
            argv = ["sh", "/wheelhouse/meta/env.sh", f"/stackmatrix/envs/{tmp.name}",
                    base.python, owner]  # fmt: skip
            env = {"UV_CACHE_DIR": "/stackmatrix/uv-cache", "UV_NO_PROGRESS": "1",
                   "UV_PYTHON_DOWNLOADS": "never"}  # fmt: skip
            log_path.parent.mkdir(parents=True, exist_ok=True)
            console.step(who, f"environment log: {log_path}")
            with (
                engine.container(
                    base.ref, argv, kind="env", mounts=mounts, user="0", env=env, **BUILD_LIMITS
                ) as c,
                console.activity(who, "installing the locked wheels (uv)"),
            ):
                done = engine.finish(c, ENV_TIMEOUT, log_path=log_path)
            if done.exit_code != 0:
                tail = "\n".join(done.output.splitlines()[-5:])
                raise PrepareFailed(
                    f"{who}: making its environment failed (exit {done.exit_code}): {tail}",
                    help=f"the whole log is in {log_path}",
                )
        finally:
            shutil.rmtree(meta, ignore_errors=True)

    # ------------------------------------------------------------ what a killed harness left

    def sweep(self) -> list[str]:
        """Remove temp folders (environments half made, fault material half written) whose
        harness process is gone."""
        removed, host = [], host_id()
        for folder in (self.envs, self.faults, self.root):
            if not folder.is_dir():
                continue
            for p in folder.iterdir():
                m = _TMP_NAME.match(p.name)
                if m and owner_gone(f"stackmatrix-env-{m.group(1)}-0", host):
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(str(p))
        return removed

    def usage(self) -> dict[str, int]:
        """Bytes on disk by part (each inode counted once, in this order)."""
        seen: set[tuple[int, int]] = set()
        out = {}
        for name, path in (("uv cache", self.uv_cache), ("environments", self.envs),
                           ("fault material", self.faults)):  # fmt: skip
            out[name] = tree_bytes(path, seen) if path.is_dir() else 0
        return out


def temp_dir(parent: Path) -> Path:
    """A temp folder in `parent` named after this process, so that a sweep knows when the
    process that made it is gone (the same file system as what it becomes: rename, links)."""
    parent.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    owner = f"{host_id()}-{pid}-{start_ticks(pid) or 0}"
    made = Path(tempfile.mkdtemp(prefix=f"{_TMP}{owner}-", dir=parent))
    made.chmod(0o755)  # what it becomes is read by a run's uid 1000
    return made
