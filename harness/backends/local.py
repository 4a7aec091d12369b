"""Run a RunSpec without Docker, for GPU hosts with no engine (Slurm nodes): in a virtual
environment built here from the stack's lock, or with an interpreter the host already has.

A spec names container paths (/opt/stack, /probe, /faults/N); they become host paths here. The
faults never touch an installation:

* A venv built here (`ensure_venv`) gets, for each run with file faults, a hard-link copy
  (`cp -al`) that the run's file operations change. That is safe only because every operation
  removes and recreates a path, never writes into a file (a write through a link would change
  the shared venv): harness/backends/fileops.py applies them, typed steps read from JSON, never
  shell text. The venv's files are read-only as well, so a probe that is not root cannot write
  into them either.
* An interpreter we must not copy (`use_python`: a runner with the frameworks preinstalled) runs
  in a private mount namespace (`unshare --mount`, with `--map-root-user` when not root) with a
  kernel overlayfs over its site-packages: the operations write only into the overlay's upper
  folder.
  A fault on a host file outside the environment (no-driver hides the driver's libcuda) gets the
  same overlay over that file's folder, whichever the environment; hiding what the host does not
  have is nothing to do. No operation ever acts on a path outside a copy or an overlay.

Unlike Docker: no network or pids isolation, the probe runs as the caller, and the memory limit
is the data rlimit (`ulimit -d`, RLIMIT_DATA), not a cgroup: since Linux 4.7 it counts private
writable mappings (the heap, anonymous memory), not the libraries' mapped code or address space
reserved without access, so a framework's import and a CUDA context's reservations fit under a
limit a container would allow (an address-space limit, `ulimit -v`, breaks both: "libtorch_cpu.so:
failed to map segment from shared object" under 2 GiB). A run over it sees its allocator fail,
in the framework's words, instead of the OOM killer.

The pure part (container paths, where each operation acts, the run's script) is in
harness.backends.local_script; venvs and interpreters apart from the backend instance (a venv's
content address, inspecting an interpreter) in harness.backends.venv.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from harness import proc
from harness.backends import NotRunnableHere, PrepareFailed, Target
from harness.backends.local_script import (
    FAILED_TO_START,
    Environment,
    LocalError,
    base_env,
    ops_json,
    overlay_mounts,
    path_table,
    place,
    run_script,
)
from harness.backends.venv import (
    VENV_FORMAT,
    inspect,
    lock_identity,
    parse_inspection,
    remove_tree,
    venv_key,
)
from harness.fetcher import fetch
from harness.lock import WheelCache, host_lock, read_lock, reading
from harness.model import Finished, Lock, ProcResult, RunSpec, Stack, major_minor

LOG_CAP = 4 * 1024 * 1024  # as DockerBackend: keep the end of a longer output
MARK = "stackmatrix-venv.json"  # written last: a venv folder without it is not finished
BUILD_TIMEOUT, COPY_TIMEOUT = 3600.0, 900.0
_OWNED = re.compile(r"^(?:run|.+\.build)-(?P<host>.+)-(?P<pid>\d+)-[\w]+$")


# ---------------------------------------------------------------- results


def finished(res: ProcResult, oom_kills: tuple[int | None, int | None]) -> Finished:
    """A process result as DockerBackend reports a container's (signals as 128 + N)."""
    if res.returncode is None and not res.timed_out:
        raise LocalError(f"could not start {res.argv[0]}: {res.stderr.strip()}")
    output = res.stdout + res.stderr
    if len(output) > LOG_CAP:
        output = f"[... {len(output) - LOG_CAP} characters cut ...]\n" + output[-LOG_CAP:]
    if res.timed_out or res.returncode is None:
        return Finished(exit_code=None, output=output, oom_killed=False)
    code = res.returncode if res.returncode >= 0 else 128 - res.returncode
    before, after = oom_kills
    grew = before is None or after is None or after > before
    return Finished(exit_code=code, output=output, oom_killed=code == 137 and grew)


# ---------------------------------------------------------------- files


def _read_only(root: Path) -> None:
    """Regular files lose their write bits: a probe that is not root cannot write in place."""
    for top, _, files in os.walk(root):
        for f in files:
            st = os.lstat(p := os.path.join(top, f))
            if stat.S_ISREG(st.st_mode):
                os.chmod(p, stat.S_IMODE(st.st_mode) & ~0o222)


def _owner_tag() -> str:
    return f"{os.uname().nodename}-{os.getpid()}"


def _oom_kills() -> int | None:
    """The OOM-kill count of this process's memory cgroup (v2, else v1), where readable."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if ctrls == "":
                file = Path(f"/sys/fs/cgroup{path}") / "memory.events"
            elif "memory" in ctrls.split(","):
                file = Path(f"/sys/fs/cgroup/memory{path}") / "memory.oom_control"
            else:
                continue
            if file.is_file():
                for row in file.read_text().splitlines():
                    if row.startswith("oom_kill "):
                        return int(row.split()[1])
    return None


# ---------------------------------------------------------------- the backend


class LocalBackend:
    """Runs specs on this host. `root`: the stackmatrix cache (venvs/, runs/ beside wheels/);
    `env`: the host environment (filtered by base_env); `locks`: the folder of stack locks
    (images/locks); `python`: the interpreter venvs are built with (default: this one, else
    python<lock's version> on PATH); `userns`: use an unprivileged user namespace for --python
    runs (default: when not root)."""

    name = "local"

    def __init__(
        self,
        *,
        root: Path,
        env: Mapping[str, str],
        locks: Path | None = None,
        python: Path | None = None,
        userns: bool | None = None,
    ):
        self.root = root
        self.env = base_env(env)
        self.locks = locks
        self.python = python
        self.userns = os.geteuid() != 0 if userns is None else userns
        self.cache = WheelCache(root)
        self._given: dict[Stack, str] = {}  # stacks of interpreters named with --python
        self._bases: dict[str, tuple[str, str]] = {}  # Python version -> base interpreter
        # Overlay layers cannot live on NFS (where a cluster's home, so the cache, often is).
        tmp = Path(env.get("TMPDIR") or tempfile.gettempdir())
        self.scratch = tmp / f"stackmatrix-runs-{os.geteuid()}"
        self._envs: dict[str, Environment] = {}
        self._namespace_checked = False

    # ---- the seam: identity, prepare, run, sweep

    def identity(self, stack: Stack) -> str | None:
        if stack in self._given:
            return self._given[stack]
        lock = self._lock(stack)
        return f"venv-{lock_identity(lock)}" if lock else None

    def prepare(self, stack: Stack) -> Target:
        if stack in self._given:
            ref = self._given[stack]
            return Target(stack=stack, ref=ref, identity=ref, lock=host_lock(stack), status="given")
        lock = self._lock(stack)
        if lock is None:
            raise PrepareFailed(
                f"no lock for {stack.slug} in images/locks/",
                help="`stackmatrix build --stack SLUG --relock` on a machine with Docker writes it",
            )
        t = time.monotonic()
        hit = (self.venv_path(lock) / MARK).is_file()
        return Target(
            stack=stack,
            ref=self.ensure_venv(lock, self.cache),
            identity=f"venv-{lock_identity(lock)}",
            lock=lock,
            status="cache-hit" if hit else "built",
            seconds=time.monotonic() - t,
        )

    def _lock(self, stack: Stack) -> Lock | None:
        if stack.base != "offline":
            raise NotRunnableHere(
                f"{stack.slug}: not run locally (its CUDA comes from the image)",
                help="run it with --backend docker where nvidia/cuda can be pulled",
            )
        return read_lock(self.locks / f"{stack.slug}.json") if self.locks else None

    def given(self, python: Path, framework: str | None = None) -> Stack:
        """An interpreter the host has, as a stack of its own (`--python`)."""
        ref, stack = self.use_python(python, framework)
        self._given[stack] = ref
        return stack

    # ---- environments

    def use_python(self, python: Path, framework: str | None = None) -> tuple[str, Stack]:
        """An existing interpreter as the stack: the image string for its RunSpecs, and its Stack
        as read from it."""
        python = Path(os.path.abspath(python))  # not resolved: a venv's python is a symlink
        imports = [framework] if framework else ["torch", "tensorflow"]
        stack, env = parse_inspection(inspect(python, imports, self.env), python, framework)
        self._envs[str(python)] = env
        return str(python), stack

    def environment(self, image: str) -> Environment:
        """What a spec's image names: a venv from ensure_venv, or an interpreter's path."""
        path = Path(image)
        if image in self._envs:
            return self._envs[image]
        if (path / MARK).is_file():
            version = json.loads((path / MARK).read_text())["python"]
            return Environment(
                python=path / "bin" / "python",
                prefix=path,
                site=path / "lib" / f"python{version}" / "site-packages",
                version=version,
                owned=True,
            )
        if path.is_file():
            data = inspect(path, (), self.env)  # where things are; no framework import
            site = next(iter(data["frameworks"].values()), {"site": data["purelib"]})["site"]
            env = Environment(
                python=path,
                prefix=Path(data["prefix"]),
                site=Path(site),
                version=data["python"],
                owned=False,
            )
            self._envs[image] = env
            return env
        raise LocalError(
            f"{image} is neither a venv built by stackmatrix nor a Python interpreter",
            help="build one with LocalBackend.ensure_venv(lock) or pass --python PATH",
        )

    def base_python(self, version: str) -> tuple[str, str]:
        """(real path, full version) of the interpreter that builds venvs for Python `version`,
        asked once per version (preparing a stack needs it for the venv's key and its build)."""
        if version not in self._bases:
            self._bases[version] = self._find_base(version)
        return self._bases[version]

    def _find_base(self, version: str) -> tuple[str, str]:
        candidates = [str(self.python)] if self.python else [sys.executable]
        if not self.python and (
            other := shutil.which(f"python{version}", path=self.env.get("PATH"))
        ):
            candidates.append(other)
        code = "import os, platform, sys; print(platform.python_version()); "
        code += "print(os.path.realpath(getattr(sys, '_base_executable', sys.executable)))"
        seen = []
        for exe in candidates:
            res = proc.run([exe, "-c", code], timeout=60, env=self.env)
            out = res.stdout.splitlines()
            if res.returncode == 0 and len(out) == 2 and major_minor(out[0]) == version:
                return out[1], out[0]
            seen.append(f"{exe} is {out[0] if out else 'not runnable'}")
        raise LocalError(
            f"the lock needs Python {version}; {'; '.join(seen)}",
            help=f"install Python {version} (e.g. `uv python install {version}`) and put "
            f"python{version} on PATH, or pass its path as the base interpreter",
        )

    def venv_path(self, lock: Lock) -> Path:
        base, full = self.base_python(lock.python)
        return self.root / "venvs" / venv_key(lock, base, full)

    def ensure_venv(self, lock: Lock, cache: WheelCache) -> str:
        """The lock's venv, built once (content-addressed) into root/venvs/<key>; the image
        string for its RunSpecs. Built in a folder of its own, then published by a symlink, so an
        interrupted build is never taken for a finished one."""
        base, _ = self.base_python(lock.python)
        final = self.venv_path(lock)
        if (final / MARK).is_file():
            return str(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        self.sweep()
        if final.is_symlink():  # its folder is gone
            final.unlink()
        build = final.with_name(f"{final.name}.build-{_owner_tag()}-{uuid.uuid4().hex[:8]}")
        try:
            with reading(cache.dir):  # no other harness's budget evicts the wheels meanwhile
                fetch(lock, cache)
                self._build(build, lock, cache, base)
            os.symlink(build.name, final)
        except FileExistsError:  # another process published the same venv first
            pass
        finally:
            if not (final.is_symlink() and os.readlink(final) == build.name):
                remove_tree(build)
        return str(final)

    def _build(self, path: Path, lock: Lock, cache: WheelCache, base: str) -> None:
        """As images/install.sh.j2 does it: venv, then the locked wheels by hash, no resolving."""
        python, req = str(path / "bin" / "python"), path / "stackmatrix-requirements.txt"
        pip = [python, "-m", "pip", "--disable-pip-version-check"]
        install = [*pip, "install", "--no-cache-dir", "--no-index", "--no-deps", "--require-hashes"]
        path.mkdir()  # `venv` fills a folder that exists
        lines = [f"{cache.dir / w.filename} --hash=sha256:{w.sha256}" for w in lock.wheels]
        req.write_text("\n".join(lines) + "\n")
        for argv in ([base, "-m", "venv", str(path)], [*install, "-r", str(req)]):
            res = proc.run(argv, timeout=BUILD_TIMEOUT, env=self.env)
            if res.returncode != 0:
                out = res.stdout + res.stderr
                tail = "\n".join(out.strip().splitlines()[-15:])
                raise LocalError(
                    f"building the venv for {lock.slug} failed:\n{tail}",
                    help=f"the lock is for {lock.platforms[0]}: this host's glibc may be older"
                    if "is not a supported wheel" in out
                    else None,
                )
        check = proc.run([*pip, "check"], timeout=600, env=self.env)
        (path / "pip-check.txt").write_text(check.stdout + check.stderr)  # as the image keeps it
        _read_only(path)
        mark = {"slug": lock.slug, "python": lock.python, "base": base, "format": VENV_FORMAT}
        (path / MARK).write_text(json.dumps(mark, indent=1) + "\n")

    # ---- runs

    @contextlib.contextmanager
    def _run_dir(self, parent: Path) -> Iterator[Path]:
        """A run's own folder (home, tmp, the copy or the overlay's layers), removed after."""
        parent.mkdir(parents=True, exist_ok=True)
        run = Path(tempfile.mkdtemp(prefix=f"run-{_owner_tag()}-", dir=parent))
        try:
            for sub in ("home", "tmp"):
                (run / sub).mkdir()
            yield run
        finally:
            remove_tree(run)

    def run(self, spec: RunSpec, target: Target) -> Finished:
        """One probe run with the spec's operations, like DockerBackend.run (exit_code None on
        timeout, output = stdout and stderr, oom flag)."""
        env = self.environment(target.ref)
        table = path_table(env.prefix, env.site, env.version, spec.mounts)
        where = place(spec, table, [env.site, env.prefix])
        with self._run_dir(self.root / "runs" if env.owned else self.scratch) as run:
            argv, overlay, roots = ["sh", "-c"], list(where.host_dirs), list(where.host_dirs)
            if env.owned and where.roots:
                env = self._copy(env, run / "venv")
                table = path_table(env.prefix, env.site, env.version, spec.mounts)
                where = place(spec, table, [env.site, env.prefix])
                roots.append(env.prefix)
            else:
                overlay += where.roots
                roots += where.roots
            overlays = ""
            if overlay:
                argv = [*self._unshare(), *argv]
                overlays = overlay_mounts(_outermost(overlay), run, userns=self.userns)
            ops_file = None
            if where.steps:
                ops_file = run / "ops.json"
                ops_file.write_text(ops_json(where.steps, roots), encoding="utf-8")
            script = run_script(
                spec,
                table,
                env,
                home=run / "home",
                base=self.env,
                overlays=overlays,
                ops_file=ops_file,
                helper=sys.executable,
            )
            path = f"{env.python.parent}:{self.env.get('PATH', os.defpath)}"
            child_env = {**self.env, "HOME": str(run / "home"), "TMPDIR": str(run / "tmp")}
            before = _oom_kills()
            res = proc.run(
                [*argv, script], timeout=spec.timeout, env={**child_env, "PATH": path}, group=True
            )
            if res.returncode == FAILED_TO_START and "stackmatrix: run setup failed" in res.stdout:
                raise LocalError(f"could not set up the run:\n{res.stdout[-2000:]}")
            return finished(res, (before, _oom_kills()))

    def _copy(self, env: Environment, dest: Path) -> Environment:
        src = env.prefix.resolve()
        res = proc.run(["cp", "-al", str(src), str(dest)], timeout=COPY_TIMEOUT, env=self.env)
        if res.returncode != 0:
            raise LocalError(
                f"hard-link copy of {src} failed: {res.stderr.strip()[-500:]}",
                help="runs/ and venvs/ of the stackmatrix cache must be on one filesystem",
            )
        site = dest / env.site.relative_to(env.prefix)
        return Environment(
            python=dest / "bin" / "python", prefix=dest, site=site, version=env.version, owned=True
        )

    def _unshare(self) -> list[str]:
        argv = ["unshare", "--mount", "--propagation", "private"]
        argv += ["--map-root-user"] if self.userns else []
        if not self._namespace_checked:
            self._check_namespace(argv)
            self._namespace_checked = True
        return argv

    def _check_namespace(self, unshare: list[str]) -> None:
        """Mount a throwaway overlay in a private namespace once and remove a folder in it (what
        a `hide` does), to fail early and clearly."""
        with self._run_dir(self.scratch) as run:
            (run / "low" / "a" / "b").mkdir(parents=True)
            (run / "low" / "a" / "b" / "c").touch()
            script = overlay_mounts([run / "low"], run, userns=self.userns)
            script += f" && rm -r {run}/low/a/b && touch {run}/low/a/ok"
            res = proc.run([*unshare, "sh", "-c", script], timeout=60, env=self.env)
        if res.returncode != 0:
            how = "in a user namespace" if self.userns else "as root"
            raise LocalError(
                f"cannot use an overlay in a private mount namespace ({how}): "
                f"{(res.stdout + res.stderr).strip() or 'unshare is missing'}",
                help="file faults on --python, and on host files such as the driver's, need "
                "`unshare` (util-linux) and kernel overlayfs; without root also user namespaces "
                "(sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1) and "
                "Linux >= 5.11. Faults inside a venv built from the lock need none of this "
                "(they go to a hard-link copy)",
            )

    def sweep(self) -> list[str]:
        """Remove run folders and venv builds that a killed harness process on this host left."""
        removed = []
        for parent in (self.root / "runs", self.root / "venvs", self.scratch):
            entries = list(parent.iterdir()) if parent.is_dir() else []
            published = {os.readlink(p) for p in entries if p.is_symlink()}
            for p in entries:
                m = _OWNED.match(p.name)
                if p.name in published or p.is_symlink() or m is None:
                    continue
                if m["host"] == os.uname().nodename and not proc.alive(int(m["pid"])):
                    remove_tree(p)
                    removed.append(str(p))
        return removed


def _outermost(roots: Sequence[Path]) -> list[Path]:
    """Roots not inside another (an overlay over the prefix already covers its site)."""
    return [r for r in roots if not any(o != r and r.is_relative_to(o) for o in roots)]
