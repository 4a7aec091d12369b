"""The only module that talks to the Docker engine (through the Docker SDK): images and
containers. What a run is (its script, its hardening) is harness.backends.docker's.

Every container it makes is named stackmatrix-<kind>-<uuid>, labelled, and removed in `finally`,
also on Ctrl-C (docker-py's ContainerCollection.run removes only on the happy path:
https://github.com/docker/docker-py/issues/3284). An image gets its tag only from a finished
commit or import, so an interrupted build leaves no half-tagged image.

The containers open at any moment are known: `halt()` kills them all and starts no other (Ctrl-C
in a run of several cells at once reaches only the main thread; the threads' containers end so).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any

import docker
import requests
import urllib3
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.utils import parse_host

from harness import proc
from harness.backends import PrepareFailed
from harness.errors import ConfigError, HarnessError, MachineFault
from harness.fs import atomic_write
from harness.model import DockerfilePlan, Finished, Mount

LOG_TAIL = 30
# stackmatrix-<kind>-<host>-<pid>-<start>-<random>: host is this machine (its name and boot),
# pid and start the harness process (its start time in clock ticks since boot, so a reused pid
# is not mistaken for the process). An orphan is judged only on the machine that made it: on a
# shared engine (a remote DOCKER_HOST, sibling runners) other machines' pids mean nothing here.
_NAME = re.compile(r"stackmatrix-[a-z]+-([0-9a-f]{12})-([0-9]{1,10})-([0-9]{1,20})-[0-9a-f]+")
LOG_CAP = 4 * 1024 * 1024
LABEL = "stackmatrix.run"
# Every container: its json-file log is capped by the engine (and read back bounded).
LOG_OPTIONS = {"max-size": "8m", "max-file": "1"}
BUILD_CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID"]
BUILD_LIMITS: dict[str, Any] = {
    "cap_drop": ["ALL"],
    "cap_add": BUILD_CAPS,  # root's file work in RUN steps; no raw sockets, mknod, chroot, ...
    "security_opt": ["no-new-privileges"],
    "pids_limit": 4096,
    "mem_limit": "16g",
    "memswap_limit": "16g",
}


def host_id() -> str:
    """This machine, as sweep() knows it: its host name and this boot."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        boot = ""
    return hashlib.sha256(f"{socket.gethostname()}\0{boot}".encode()).hexdigest()[:12]


def start_ticks(pid: int) -> int | None:
    """When process pid started (clock ticks after boot; /proc/PID/stat field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return (
        int(fields[19])
        if len(fields) > 19 and fields[19].isascii() and fields[19].isdigit()
        else None
    )


def owner_gone(name: str, host: str) -> bool:
    """Whether the harness process that made container `name` is gone: only for a name made on
    this machine; a name of another machine, or of another shape, is never judged gone."""
    m = _NAME.fullmatch(name)
    if m is None or m.group(1) != host:
        return False
    pid, start = int(m.group(2)), int(m.group(3))
    return not proc.alive(pid) or start_ticks(pid) not in (start, None)


class EngineUnreachable(MachineFault):
    """No engine at the start of a command, or one that stopped answering during it."""


class BuildFailed(PrepareFailed):
    exit_code = 1


class Halted(HarnessError):
    """A container not started because the engine was halted (its run is stopping)."""


_START_HELP = (
    "start it (`sudo systemctl start docker`, or `sudo dockerd &` where there is no systemd), "
    "check that your user may use its socket, or set DOCKER_HOST"
)


def engine_host(env: Mapping[str, str]) -> str:
    return env.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def connect(env: Mapping[str, str]) -> docker.DockerClient:
    """A client for the engine DOCKER_HOST (or the default socket) names; a clear error if none."""
    host = engine_host(env)
    if host.startswith("unix://") and not Path(host[len("unix://") :]).exists():
        # Checked first: docker-py leaks the socket when connecting to a missing path fails
        # (https://github.com/docker/docker-py/pull/3356), and the plain fact is clearer anyway.
        raise EngineUnreachable(
            f"cannot reach the Docker engine at {host}: no such socket", help=_START_HELP
        )
    try:  # the address alone, nothing reached yet (docker-py's own parser)
        parse_host(host)
    except (ValueError, DockerException) as exc:  # "Port out of range", "Invalid bind address"
        raise ConfigError(
            f"DOCKER_HOST={host!r} is not an address the Docker client can use: {exc}",
            help="unset DOCKER_HOST for the local engine, or set it to unix:///path/docker.sock, "
            "tcp://HOST:PORT or ssh://USER@HOST",
        ) from None
    client = None
    try:
        client = docker.DockerClient(base_url=host, timeout=PING_TIMEOUT)
        client.ping()
    except (DockerException, *_LOST) as exc:
        if client is not None:
            client.close()
        # docker-py wraps a read timeout in a DockerException ("read timeout=15")
        if isinstance(exc, requests.exceptions.Timeout) or "read timeout" in str(exc):
            reason = f"no answer in {PING_TIMEOUT} s (its socket is open)"
        else:
            reason = _reason(exc) if isinstance(exc, DockerException) else why(exc)
        raise EngineUnreachable(
            f"cannot reach the Docker engine at {host}: {reason}", help=_START_HELP
        ) from None
    # Every call then has CALL_TIMEOUT: an engine that stops answering is an error within a
    # minute, not a hang (a cell's wait polls it; a commit is given longer: Engine.patient).
    client.api.timeout = CALL_TIMEOUT
    return client


def engine_info(client: docker.DockerClient) -> Mapping[str, Any]:
    version: Mapping[str, Any] = client.version()
    return version


# Storage drivers that make image builds and container starts slow, and what to say about them.
_SLOW_STORAGE = {
    "fuse-overlayfs": (
        "every file an image build writes and a cell reads goes through a FUSE daemon; on "
        "overlay2 (the kernel's overlayfs) the same cold smoke run is much faster "
        '(bench/README.md). Where the kernel has overlayfs, set "storage-driver": "overlay2" in '
        "/etc/docker/daemon.json and restart the engine (its images are then rebuilt)"
    ),
    "vfs": (
        "vfs copies every layer in full: each image build and each cell's container copies "
        'gigabytes. Set "storage-driver": "overlay2" in /etc/docker/daemon.json'
    ),
}


def storage_note(driver: str) -> str | None:
    """What to tell the user about the engine's storage driver before a build, or None."""
    why = _SLOW_STORAGE.get(driver)
    return f"the engine stores layers with {driver}: {why}" if why else None


def _reason(exc: DockerException) -> str:
    text = str(exc)
    return text.rsplit("(", maxsplit=1)[-1].rstrip(")") if "Connection" in text else text


def _disk_full(text: str) -> bool:
    return "no space left on device" in text.lower()


# What a lost engine raises: the socket refused, reset or gone (requests wraps urllib3's
# errors, but a streamed body, the logs, raises urllib3's own).
_LOST = (
    requests.exceptions.ConnectionError,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.Timeout,
    urllib3.exceptions.HTTPError,
)
LOST_HELP = "start it, then run the same command: finished cells are kept"
PING_TIMEOUT = 15  # s: an engine that does not answer a ping in this time is not answering
CALL_TIMEOUT = 40  # s: any other call (a cell's wait polls the engine: POLL)
POLL = 20  # s: a cell's wait, between two pings of the engine
LONG_CALL = 3600  # s: a commit, an import, removing a build container of gigabytes
SPACE_HELP = (
    "free space where Docker keeps images (`docker system df`), then run the same command: "
    "finished cells are kept"
)


def engine_fault(exc: BaseException, host: str) -> MachineFault | None:
    """The machine fault an engine call's exception is: the engine unreachable, a 5xx answer
    (its disk full, say), or None where the engine answered about this request alone."""
    if isinstance(exc, _LOST):
        return EngineUnreachable(
            "the Docker engine stopped answering", detail=f"{host}: {why(exc)}", help=LOST_HELP
        )
    if isinstance(exc, APIError) and exc.is_server_error():
        text = str(exc.explanation or exc)[:300]
        if _disk_full(text):
            return MachineFault("the Docker engine's disk is full", detail=text, help=SPACE_HELP)
        return EngineUnreachable("the Docker engine failed", detail=f"{host}: {text}")
    return None


def why(exc: BaseException) -> str:
    """The operating system's words inside a wrapped connection error (`Connection refused`,
    `Remote end closed connection without response`), else the error's own first line."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        wrapper = isinstance(e, requests.exceptions.RequestException)  # an OSError, too
        if isinstance(e, OSError) and not wrapper and (e.strerror or str(e)):
            return (e.strerror or str(e))[:200]
        todo += [a for a in e.args if isinstance(a, BaseException)]
        todo += [x for x in (getattr(e, "reason", None), e.__cause__, e.__context__) if x]
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def build_failure(ref: str, plan: DockerfilePlan, done: Finished, log_path: Path) -> HarnessError:
    """The step that failed (the last `+ cmd` line of `set -x`), why, and the log's tail."""
    lines = done.output.rstrip().splitlines()
    step = next((ln[2:] for ln in reversed(lines) if ln.startswith("+ ")), " && ".join(plan.runs))
    tail = "\n".join(lines[-LOG_TAIL:])
    if done.exit_code is None:
        what = "timed out"
    elif done.oom_killed:
        what = "was killed for memory (OOM)"
    else:
        what = f"failed with exit status {done.exit_code}"
    if _disk_full(done.output):
        return MachineFault(
            f"building {ref} {what}: the disk is full, at step: {step}",
            detail=f"log: {log_path}",
            help=f"the full log is in {log_path}; {SPACE_HELP}",
        )
    return BuildFailed(
        f"building {ref} {what} at step: {step}\n--- last {LOG_TAIL} lines ---\n{tail}",
        help=f"the full log is in {log_path}",
    )


class Engine:
    """Images and containers on one Docker engine."""

    def __init__(self, client: docker.DockerClient, host: str | None = None):
        self.client = client
        # as the user gave it (DOCKER_HOST): for messages, and for a client of its own (_spare)
        self.host = engine_host(os.environ) if host is None else host
        self._open: dict[str, Container] = {}  # containers made and not yet removed, by name
        self._open_lock = threading.Lock()  # guards _open and _halted, and each start
        self._halted = False
        self._silent = False  # the engine stopped answering: nothing else waits for it

    @contextmanager
    def answering(self) -> Iterator[None]:
        """An engine call: the engine lost, or a 5xx answer, becomes a MachineFault."""
        try:
            yield
        except Exception as exc:
            fault = engine_fault(exc, self.host)
            if fault is None:
                raise
            if isinstance(exc, _LOST):  # gone or silent: no later call waits for it
                self._silent = True
            raise fault from None

    # ---------------------------------------------------------------- images

    def image_id(self, ref: str) -> str | None:
        try:
            with self.answering():
                image_id: str | None = self.client.images.get(ref).id
        except ImageNotFound:
            return None
        return image_id

    def registry_has(self, ref: str) -> bool:
        """`ref` is on this engine, or a registry answers for it (asked without pulling; a
        registry that cannot be reached is a plain no, not a fault of the engine)."""
        if self.image_id(ref) is not None:
            return True
        try:
            self.client.api.inspect_distribution(ref)  # type: ignore[no-untyped-call]
        except (APIError, requests.exceptions.RequestException):
            return False
        return True

    def pull(self, ref: str) -> None:
        repo, _, tag = ref.rpartition(":")
        try:
            with self.answering(), self.patient(LONG_CALL):
                self.client.images.pull(repo, tag=tag)
        except APIError as exc:
            raise self._engine_error(f"pulling {ref}", str(exc)) from None

    def image_labels(self, ref: str) -> dict[str, str]:
        with self.answering():
            labels: dict[str, str] = self.client.images.get(ref).labels or {}
        return labels

    def image_size(self, ref: str) -> int:
        with self.answering():
            size: int = self.client.images.get(ref).attrs["Size"]
        return size

    def images_of(self, repo: str) -> list[tuple[str, int]]:
        """Every tag of `repo` on the engine, with its image's size."""
        with self.answering():
            found = self.client.images.list(name=repo)
        return [
            (tag, int(i.attrs.get("Size", 0)))
            for i in found
            for tag in i.tags
            if tag.startswith(repo + ":")
        ]

    def remove_image(self, ref: str) -> None:
        with suppress(ImageNotFound):
            self.client.images.remove(ref, force=True)

    def import_rootfs(self, tar: Path, ref: str, changes: Sequence[str]) -> str:
        """`docker import` a root filesystem tarball as `ref`."""
        repo, _, tag = ref.rpartition(":")
        try:
            with self.answering(), self.patient(LONG_CALL):
                self.client.api.import_image_from_file(
                    str(tar), repository=repo, tag=tag, changes=list(changes)
                )
        except APIError as exc:
            raise self._engine_error(f"importing {tar.name} as {ref}", str(exc)) from None
        got = self.image_id(ref)
        if got is None:
            raise BuildFailed(f"docker import of {tar.name} did not produce {ref}")
        return got

    # ---------------------------------------------------------------- containers

    @contextmanager
    def container(
        self,
        image: str,
        command: Sequence[str],
        *,
        kind: str,
        mounts: Sequence[Mount] = (),
        network: bool = False,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        **hardening: Any,
    ) -> Iterator[Container]:
        """A created (not started) container, removed on the way out whatever happens."""
        pid = os.getpid()
        ident = f"{host_id()}-{pid}-{start_ticks(pid) or 0}"
        name = f"stackmatrix-{kind}-{ident}-{uuid.uuid4().hex[:12]}"
        # A build container is committed, and `docker commit` copies its labels into the image
        # (then into every container made from it): only run containers are labelled.
        labels = {} if kind == "build" else {LABEL: name}
        # A list, not docker-py's `volumes` dict keyed by source: one file may be mounted at
        # two paths (a driver library and its SONAME).
        binds = [
            docker.types.Mount(m.target, str(m.source), type="bind", read_only=m.read_only)
            for m in mounts
        ]
        created = None
        try:
            with self.answering():
                created = self.client.containers.create(
                    image,
                    list(command),
                    name=name,
                    labels=labels,
                    mounts=binds,
                    network_mode="bridge" if network else "none",
                    user=user,
                    environment=dict(env or {}),
                    detach=True,
                    log_config=docker.types.LogConfig(type="json-file", config=LOG_OPTIONS),
                    **hardening,
                )
            with self._open_lock:
                self._open[name] = created
            yield created
        except BaseException as exc:
            # The engine may be gone (that is why we are unwinding): what cannot be removed now
            # the next run's sweep removes, and the error that brought us here is the one raised.
            with suppress(Exception):
                self._remove(name, stopped=isinstance(exc, KeyboardInterrupt))
            raise
        else:
            with self.answering():
                self._remove(name)
        finally:
            with self._open_lock:
                self._open.pop(name, None)

    def halt(self) -> list[str]:
        """Kill every container open now and start no other (a stopping run): each one's
        `finish` returns, and its `container` block removes it. The names killed."""
        with self._open_lock:
            self._halted = True
            found = [] if self._silent else list(self._open.items())
        killed = []
        with self._spare(bool(found)) as client:
            for name, _ in found:
                with suppress(Exception):  # not started yet, or already gone: nothing to kill
                    client.api.kill(name)
                    killed.append(name)
        return killed

    def _remove(self, name: str, *, stopped: bool = False) -> None:
        if self._silent:  # the next run's sweep removes it
            return
        # Interrupted while `create` was in flight, the daemon may still have made it: removed
        # by its name rather than trusting that nothing exists.
        with self._spare(stopped or self._halted) as client, suppress(NotFound):
            client.api.remove_container(name, v=True, force=True)

    @contextmanager
    def _spare(self, needed: bool) -> Iterator[docker.DockerClient]:
        """The client to clean up with: once the run is stopping (Ctrl-C, SIGTERM, a halt), one
        of its own, with its own connection pools. The interrupt may have landed inside a call
        of the shared client, between urllib3 taking a pool's lock and the code that frees it:
        every later call through that pool would wait for ever (seen: a SIGTERM while a
        container was started, then the removal hung)."""
        spare = None
        if needed and "://" in self.host:
            with suppress(DockerException):
                spare = docker.DockerClient(base_url=self.host, timeout=PING_TIMEOUT)
        try:
            yield spare or self.client
        finally:
            if spare is not None:
                spare.close()

    def finish(
        self, container: Container, timeout: float, *, log_path: Path | None = None
    ) -> Finished:
        """Start, wait, collect. With `log_path`, the output is also written there as it comes
        (at most LOG_FILE_CAP bytes), so `tail -f` follows a build."""
        follower = None
        with self.answering():
            with self._open_lock:  # a halt either sees it started (and kills it) or stops it here
                if self._halted:
                    raise Halted(f"{container.name}: not started, the run is stopping")
                container.start()
            if log_path is not None:
                follower = threading.Thread(
                    target=_follow, args=(container, log_path), name="build-log", daemon=True
                )
                follower.start()
            code = self._wait(container, timeout)
            if follower is not None:
                follower.join(timeout=30)
            raw = bounded_logs(container)
            output = raw.decode("utf-8", "replace")
            container.reload()
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        return Finished(exit_code=code, output=output, oom_killed=oom)

    def _wait(self, container: Container, timeout: float) -> int | None:
        """The container's exit status; None when `timeout` ran out (it is killed). It waits
        POLL seconds at a time and pings the engine in between: an engine that stops answering
        is an EngineUnreachable within POLL + PING_TIMEOUT seconds, not after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                status = container.wait(timeout=max(1.0, min(left, POLL)))
                return int(status.get("StatusCode", -1))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                # docker-py reports a read timeout on a Unix socket as a ConnectionError
                if left <= POLL:  # the probe's time is up (an engine gone: kill() fails)
                    container.kill()
                    return None
                self.alive()

    def alive(self) -> None:
        """Ping the engine; it not answering in PING_TIMEOUT is an EngineUnreachable, and this
        Engine then makes no other call that would wait for it (removals are left to the
        next run's sweep)."""
        api = self.client.api  # a requests.Session: a ping with its own timeout
        try:
            requests.Session.get(api, f"{api.base_url}/_ping", timeout=PING_TIMEOUT)
        except _LOST as exc:
            self._silent = True
            raise EngineUnreachable(
                "the Docker engine stopped answering",
                detail=f"{self.host}: no answer to a ping in {PING_TIMEOUT} s ({why(exc)})",
                help=LOST_HELP,
            ) from None

    @contextmanager
    def patient(self, seconds: float) -> Iterator[None]:
        """Calls that may take long (committing a layer of gigabytes) get `seconds`: every
        call meanwhile may wait as long, never less than CALL_TIMEOUT."""
        api = self.client.api
        before, api.timeout = api.timeout, int(max(seconds, CALL_TIMEOUT))
        try:
            yield
        finally:
            api.timeout = before

    def run(
        self,
        image: str,
        command: Sequence[str],
        *,
        timeout: float = 600,
        mounts: Sequence[Mount] = (),
        user: str | None = None,
    ) -> Finished:
        """Run a command in a fresh container with no network; the container is removed."""
        with self.container(image, command, kind="run", mounts=mounts, user=user) as c:
            return self.finish(c, timeout)

    def commit_build(
        self,
        plan: DockerfilePlan,
        ref: str,
        *,
        mounts: Sequence[Mount],
        log_path: Path,
        timeout: float,
        network: bool = False,
        shell_env: Mapping[str, str] | None = None,
        activity: Callable[[str], AbstractContextManager[None]] | None = None,
        phases: dict[str, float] | None = None,
    ) -> str:
        """Execute a rendered Dockerfile as run + commit: its RUN steps in one container with the
        given read-only mounts (and no network unless asked), then `commit` with its other
        instructions. The log streams to `log_path` as the steps print; `activity(phase)` shows
        each phase while it runs; `phases` gets each one's seconds (install, commit)."""
        script = " && ".join(f"( {r} )" for r in plan.runs) or "true"
        # Exported by the build's shell only: never part of the committed image's config.
        exports = "".join(
            f"export {k}={shlex.quote(v)}; " for k, v in sorted((shell_env or {}).items())
        )
        script = exports + script
        step = activity or (lambda phase: nullcontext())
        with self.container(
            plan.base,
            ["sh", "-c", f"set -x; {script}"],
            kind="build",
            mounts=mounts,
            network=network,
            user="0",
            **BUILD_LIMITS,
        ) as c:
            t = time.monotonic()
            log_path.unlink(missing_ok=True)  # a log left by an earlier build is never reported
            with step("install (RUN steps)"):
                done = self.finish(c, timeout, log_path=log_path)
            if not log_path.is_file():  # the copy could not be written as it came
                atomic_write(log_path, done.output)
            if phases is not None:
                phases["install"] = time.monotonic() - t
            if done.exit_code != 0:
                raise build_failure(ref, plan, done, log_path)
            t = time.monotonic()
            try:
                repo, _, tag = ref.rpartition(":")
                with self.answering(), self.patient(LONG_CALL), step("commit (the layer written)"):
                    image = c.commit(repository=repo, tag=tag, changes=list(plan.changes))
            except APIError as exc:
                raise self._engine_error(f"committing {ref}", str(exc)) from None
            if phases is not None:
                phases["commit"] = time.monotonic() - t
            # Its writable layer holds everything the build wrote: removing it takes as long as
            # writing a few GB (20 s and more on fuse-overlayfs), so it is shown too.
            removed = step("the build container removed")
            with self.answering(), self.patient(LONG_CALL), removed, suppress(NotFound):
                c.remove(force=True, v=True)
        image_id = image.id
        if image_id is None:
            raise BuildFailed(f"committing {ref} gave no image id")
        return image_id

    def _engine_error(self, doing: str, text: str) -> HarnessError:
        if _disk_full(text):
            return MachineFault(f"{doing}: the disk is full", detail=text.strip(), help=SPACE_HELP)
        return BuildFailed(f"{doing}: {text.strip()}")

    def storage_driver(self) -> str:
        """The engine's storage driver (`docker info`'s Driver), "" if it does not say."""
        with self.answering():
            return str(self.client.info().get("Driver", ""))

    def free_bytes(self) -> tuple[str, int]:
        """Docker's data root and the bytes free there (the engine runs on this machine)."""
        with self.answering():
            root = str(self.client.info().get("DockerRootDir", "/var/lib/docker"))
        try:
            return root, shutil.disk_usage(root).free
        except OSError:  # a remote engine: nothing to measure from here
            return root, -1

    def _ours(self) -> list[tuple[Container, int]]:
        """Containers made on this machine by a harness (any process), with that process's pid."""
        found, host = [], host_id()
        with self.answering():
            # a container removed between the list and its inspect (another harness's, a run
            # ending) is no longer ours to report: skipped, not a NotFound
            listed = self.client.containers.list(
                all=True, filters={"name": "stackmatrix-"}, ignore_removed=True
            )
        for c in listed:
            m = _NAME.fullmatch(str(c.name))
            if m and m.group(1) == host:
                found.append((c, int(m.group(2))))
        return found

    def sweep(self) -> list[str]:
        """Remove containers made on this machine whose harness process is gone (killed with
        -9, say); another machine's containers on a shared engine are never touched."""
        removed, host = [], host_id()
        for c, _ in self._ours():
            if owner_gone(str(c.name), host):
                with suppress(NotFound), self.answering():
                    c.remove(force=True, v=True)
                    removed.append(str(c.name))
        return removed

    def leftovers(self, owner: int | None = None) -> list[str]:
        """Containers made by process `owner`, or, without one, orphans: those whose harness
        process is gone. (Other harness processes may share the engine.)"""
        return [
            str(c.name)
            for c, pid in self._ours()
            if (pid == owner if owner is not None else owner_gone(str(c.name), host_id()))
        ]


LOG_FILE_CAP = 64 << 20  # a build log longer than this is cut (its end is in the error)


def _follow(container: Container, log_path: Path) -> None:
    """Write a running container's output to log_path as it comes (a failure to write stops
    the copy, never the build: the error carries the log's tail either way)."""
    written = 0
    with suppress(Exception), log_path.open("wb") as out:
        for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=True):
            if written + len(chunk) > LOG_FILE_CAP:
                out.write(b"\n[... the rest is cut: see the error's tail ...]\n")
                break
            out.write(chunk)
            out.flush()
            written += len(chunk)


def bounded_logs(container: Container) -> bytes:
    """stdout and stderr, streamed: at most the last LOG_CAP bytes are kept (the decisive lines
    are usually last), whatever the container printed."""
    tail, dropped = bytearray(), 0
    for chunk in container.logs(stdout=True, stderr=True, stream=True):
        tail += chunk
        if len(tail) > 2 * LOG_CAP:
            dropped += len(tail) - LOG_CAP
            del tail[: len(tail) - LOG_CAP]
    if len(tail) > LOG_CAP:
        dropped += len(tail) - LOG_CAP
        del tail[: len(tail) - LOG_CAP]
    return (b"[... %d bytes cut ...]\n" % dropped if dropped else b"") + bytes(tail)
