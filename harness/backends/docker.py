"""The Docker backend: a stack is its base image plus an environment kept on the host (offline
flavour; harness.backends.envs), or an image (the cuda flavour, and `harness build --image`); a
run is a fresh container.

On an environment, a run starts as uid 1000 with no capability, a read-only root file system
and a tmpfs at /tmp and HOME: the environment is mounted read-only at /opt/stack, each file fault
is a mount over it (harness.backends.faultmounts) and a placed driver's files are mounted where
nvidia-container-cli puts a host's. Only an operation that cannot be a mount (hide a path outside
the environment) needs a root step, as on an image: the container then starts as root with only
the capabilities its short setup needs, applies the operations in its own writable layer (the
image is never changed), and `setpriv` drops to uid 1000 with every capability set empty. Every
run has no network, no-new-privileges and a pids limit. Every operation argument reaches the
setup script through `shlex.quote` (a hide pattern's '*' and '?' stay wildcards between quoted
pieces), so no scenario text can add a command.
"""

from __future__ import annotations

import functools
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import docker

from harness.backends import NotRunnableHere, Target, faultmounts, keep
from harness.backends import envs as envs_mod
from harness.backends.engine import Engine
from harness.backends.envs import EnvStore, env_ref
from harness.backends.images import Builder
from harness.console import human_bytes
from harness.faults import ENV_NAME, VENV
from harness.model import (
    DRIVER_MOUNT,
    Driver,
    FaultOp,
    Finished,
    Hide,
    Lock,
    Mount,
    NoGpu,
    Overwrite,
    Preload,
    PrependPath,
    Replace,
    RunSpec,
    SetEnv,
    Stack,
    Truncate,
    UnsetEnv,
)

# The root setup (removing or swapping files in the container's own layer, then dropping to the
# workload user) needs exactly these; the probe itself runs with none.
SETUP_CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "SETPCAP"]
# --clear-groups: a base image has no passwd entry for uid 1000 (an image's `stack` user has no
# supplementary group either).
DROP = "setpriv --reuid=1000 --regid=1000 --clear-groups --inh-caps=-all --bounding-set=-all --"
WORKLOAD_USER = "1000:1000"
HELD = 2  # with a disk budget, prepared stacks whose cells are still to land, at most
AHEAD = 2  # with a disk budget, stacks whose wheels are downloaded ahead of their prepare
HOME = "/home/stack"
# What a stack image's config sets (images/_metadata.j2), set for a run on an environment.
ENV_CONFIG = (
    ("VIRTUAL_ENV", VENV),
    ("PATH", f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("PIP_NO_INDEX", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
)
# The only writable places of a run on an environment (exec: a framework may load what it
# compiled there).
TMPFS = {"/tmp": "rw,exec,nosuid,nodev,mode=1777", HOME: "rw,exec,nosuid,nodev,mode=1777"}
PIDS_LIMIT = 4096
DEFAULT_MEMORY = "8g"
_WILDCARD = re.compile(r"([*?])")
NO_GPU_ENV = (("CUDA_VISIBLE_DEVICES", ""), ("NVIDIA_VISIBLE_DEVICES", "void"))
DRIVER_DIR = "/usr/lib/x86_64-linux-gnu"  # where nvidia-container-cli puts a host's driver


# ---------------------------------------------------------------- rendering (pure)


def pattern_word(path: str) -> str:
    """A path pattern as one shell word: literal pieces quoted, '*' and '?' left to match."""
    return "".join(p if p in ("*", "?") else shlex.quote(p) for p in _WILDCARD.split(path) if p)


def _name(name: str) -> str:
    if not ENV_NAME.fullmatch(name):  # faults.resolve refuses these; never render one
        raise ValueError(f"not an environment variable name: {name!r}")
    return name


def setup_line(op: FaultOp, spec: RunSpec) -> str | None:
    """The root setup's shell for one file operation (None: not a file operation)."""
    q = shlex.quote
    if isinstance(op, Hide):
        return f"rm -rf -- {pattern_word(op.path)}"
    if isinstance(op, Truncate):
        cut, path = q(op.path + ".cut"), q(op.path)
        return f"head -c {int(op.size)} -- {path} > {cut} && rm -f -- {path} && mv -- {cut} {path}"
    if isinstance(op, Replace):
        src = q(spec.source(op.source))
        return f"rm -rf -- {q(op.path)} && cp -R -- {src} {q(op.path)}"
    if isinstance(op, Overwrite):
        return f"rm -rf -- {q(op.path)} && printf %s {q(op.text)} > {q(op.path)}"
    if isinstance(op, Driver):  # as nvidia-container-cli: the files, SONAME links, ldconfig
        steps = [
            f"cp -- {q(f'{DRIVER_MOUNT}/{name}')} {q(f'{DRIVER_DIR}/{name}')}"
            + ("" if link == name else f" && ln -sf -- {q(name)} {q(f'{DRIVER_DIR}/{link}')}")
            for name, link in op.links
        ]
        return " && ".join([f"mkdir -p {q(DRIVER_DIR)}", *steps, "/sbin/ldconfig"])
    return None


def probe_words(spec: RunSpec) -> list[str]:
    """`env` arguments for the probe, after the drop to uid 1000 (so no value the scenario sets,
    LD_PRELOAD say, ever reaches a command that runs as root): unsets, then values."""
    q = shlex.quote
    words = [f"-u {q(_name(op.name))}" for op in spec.ops if isinstance(op, UnsetEnv)]
    words.append("HOME=/home/stack")
    for op in spec.ops:
        if isinstance(op, SetEnv):
            words.append(q(f"{_name(op.name)}={op.value}"))
        elif isinstance(op, PrependPath | Preload):
            v = _name(op.var)  # the image's own value stays behind the new first entry
            words.append(f'{v}={q(spec.source(op.source))}"${{{v}:+:${v}}}"')
    return words


def run_script(spec: RunSpec, *, root: bool = True) -> str:
    """The shell a run's container executes: the file operations as root, then the drop to
    uid 1000 with no capabilities, then the probe with the run's environment (`root=False`: a
    container that starts as uid 1000 runs the probe at once)."""
    argv = " ".join(shlex.quote(a) for a in spec.argv)
    probe = f"env {' '.join(probe_words(spec))} {argv}"
    if not root:
        return f"exec {probe}"
    setup = [line for op in spec.ops if (line := setup_line(op, spec)) is not None]
    return "\n".join(["set -e", *setup, f"exec {DROP} {probe}"])


def container_env(spec: RunSpec, *, on_env: bool = False) -> dict[str, str]:
    """What the container is created with: what the runtime itself reads (no GPU), and on an
    environment what a stack image's config would set."""
    out = dict(ENV_CONFIG) if on_env else {}
    if any(isinstance(op, NoGpu) for op in spec.ops):
        out.update(NO_GPU_ENV)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """How one run's container is made: everything `run` and `command` both need."""

    image: str
    spec: RunSpec  # its operations: those the script applies; its mounts: every mount
    root: bool  # a root setup step first (the root file system then writable)
    on_env: bool  # the stack is an environment mounted at /opt/stack

    @property
    def script(self) -> str:
        script = run_script(self.spec, root=self.root)
        # HOME is the working folder, as an image's WORKDIR (not `--workdir`: the engine makes
        # that folder 755 root over the tmpfs, which uid 1000 then cannot write).
        return f"cd {HOME}\n{script}" if self.on_env else script

    @property
    def user(self) -> str:
        return "0" if self.root else WORKLOAD_USER

    @property
    def env(self) -> dict[str, str]:
        return container_env(self.spec, on_env=self.on_env)


def layout(spec: RunSpec, image: str, env: Path | None, faults: Path, ref: str) -> Layout:
    """An image: every operation in the root step. An environment: file operations on it and a
    placed driver become mounts; a root step only for what is left (a hide outside it)."""
    if env is None:
        return Layout(image=image, spec=spec, root=True, on_env=False)
    mounts = [*spec.mounts, Mount(env, VENV), *faultmounts.mounts(spec, env, faults, ref)]
    _, rest = faultmounts.split(spec)
    placed: dict[str, Mount] = {}  # by target: a library is placed once, however many links
    for op in rest:
        if isinstance(op, Driver):  # as nvidia-container-cli: each library and its links
            for name, link in op.links:
                source = faultmounts.host_path(spec, DRIVER_MOUNT) / name
                for n in (name, link):
                    placed[f"{DRIVER_DIR}/{n}"] = Mount(source, f"{DRIVER_DIR}/{n}")
    mounts += placed.values()
    left = tuple(op for op in rest if not isinstance(op, Driver))
    root = any(isinstance(op, faultmounts.FILE_OPS) for op in left)
    spec = replace(spec, ops=left, mounts=tuple(mounts))
    return Layout(image=image, spec=spec, root=root, on_env=True)


def hardening(lay: Layout) -> dict[str, Any]:
    spec = lay.spec
    out: dict[str, Any] = {
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": PIDS_LIMIT,
    }
    if lay.root:
        out["cap_add"] = SETUP_CAPS
    if lay.on_env:  # writable only where a probe writes
        out["read_only"] = not lay.root
        out["tmpfs"] = dict(TMPFS)
    # A default memory limit: a probe that runs away is killed (OOM), not the host.
    out["mem_limit"] = out["memswap_limit"] = spec.memory_limit or DEFAULT_MEMORY
    if spec.sees_gpu:
        out["device_requests"] = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return out


def docker_run_command(lay: Layout) -> str:
    """The same run as one `docker run` a user can paste."""
    spec = lay.spec
    parts = ["docker", "run", "--rm", "--network", "none", "--user", lay.user, "--cap-drop", "ALL"]
    for cap in SETUP_CAPS if lay.root else ():
        parts += ["--cap-add", cap]
    parts += ["--security-opt", "no-new-privileges", "--pids-limit", str(PIDS_LIMIT)]
    memory = spec.memory_limit or DEFAULT_MEMORY
    parts += ["--memory", str(memory), "--memory-swap", str(memory), "--log-opt", "max-size=8m"]
    if lay.on_env:
        parts += ["--read-only"] if not lay.root else []
        for path, options in TMPFS.items():
            parts += ["--tmpfs", f"{path}:{options}"]
    if spec.sees_gpu:
        parts += ["--gpus", "all"]
    for m in spec.mounts:
        kind = f"type=bind,source={m.source},target={m.target}"
        parts += ["--mount", kind + (",readonly" if m.read_only else "")]
    for k, v in sorted(lay.env.items()):
        parts += ["-e", f"{k}={v}"]
    parts += [lay.image, "sh", "-c", lay.script]
    return " ".join(shlex.quote(p) for p in parts)


# ---------------------------------------------------------------- the backend


class DockerBackend:
    """`connect` is called on first use: `identity` (and so `harness run --dry-run`) needs no
    engine. `envs`: where offline stacks' environments live (None, or `images=True`: every
    stack is an image, as `harness build --image` makes for a registry)."""

    name = "docker"

    def __init__(
        self,
        builder: Builder,
        connect: Callable[[], Engine],
        *,
        envs: EnvStore | None = None,
        images: bool = False,
        budget: int | None = None,
    ):
        self.builder = builder
        self._connect = connect
        self._engine: Engine | None = None
        self.envs = None if images else envs
        self.budget = budget  # bytes the cache may hold once a stack's cells are done
        self._upcoming: list[Stack] = []  # stacks still to prepare (their wheels are kept)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._connect()
        return self._engine

    def _on_env(self, stack: Stack) -> EnvStore | None:
        return self.envs if stack.base != "cuda" else None

    def identity(self, stack: Stack) -> str | None:
        if stack.base == "cuda" and not self.builder.can_stand_in(stack):
            raise _cuda_flavour(stack)
        spec = self.builder.identity(stack)
        if spec is None:
            return None
        if self._on_env(stack) is not None:
            assert spec.lock is not None  # an offline stack's identity needs its lock
            return env_ref(stack, spec.lock, spec.plan.base, *_env_inputs())
        return spec.ref

    def prepare(self, stack: Stack) -> Target:
        if stack.base == "cuda" and not self.builder.can_stand_in(stack):
            raise _cuda_flavour(stack)
        job, downloaded = self.builder.job(stack, ())
        store = self._on_env(stack)
        if store is not None:
            return self._prepare_env(stack, store, job.spec.lock, downloaded)
        built = self.builder.build(job)
        identity = self.builder.identity(stack)
        lock = job.spec.lock or self.builder.standin_lock(stack)  # the cuda flavour: its libraries
        assert lock is not None and identity is not None  # job() wrote the lock
        return Target(
            stack=stack,
            ref=built.ref,
            identity=identity.ref,
            lock=lock,
            base=job.spec.plan.base if stack.base == "cuda" else "",
            status=built.status,
            seconds=built.seconds,
            downloaded=built.downloaded + downloaded,
            size=built.size,
        )

    def _prepare_env(
        self, stack: Stack, store: EnvStore, lock: Lock | None, downloaded: int
    ) -> Target:
        """The stack's environment, made (fetching its wheels) or found."""
        t = time.monotonic()
        slug, b = stack.slug, self.builder
        assert lock is not None  # job() resolved it
        base = b.base_for(stack)
        ref = env_ref(stack, lock, base.ref, *_env_inputs())
        phases: dict[str, float] = {}
        if not store.ready(ref):
            b.check_env_space(lock.total_bytes, slug)
            b.console.step(slug, f"fetching {len(lock.wheels)} locked wheels")
            downloaded += b.fetch(lock, f"{slug}'s {len(lock.wheels)} wheels")
            phases["download"] = time.monotonic() - t
            b.console.step(slug, f"making {ref} (downloaded {human_bytes(downloaded)})")
        made = store.ensure(
            ref, lock, base, engine=self.engine, wheels=b.wheels.dir, console=b.console,
            log_path=b.paths.logs / f"env-{slug}.log", who=slug,
        )  # fmt: skip
        store.hold(ref)
        self._made(stack)
        seconds = time.monotonic() - t
        if made.status == "built":
            phases["install"] = made.seconds
            said = ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
            b.console.step(slug, f"built in {seconds:.1f} s ({said}), {human_bytes(made.size)}")
        return Target(
            stack=stack, ref=ref, identity=ref, lock=lock, status=made.status,
            seconds=seconds, downloaded=downloaded, size=made.size, image=base.ref,
            env=str(made.path),
        )  # fmt: skip

    @property
    def ahead(self) -> int | None:
        """With a disk budget, how many prepared stacks may wait on their cells before the
        next is prepared (the runner waits for room): one whose cells run, one ready."""
        return HELD if self.budget is not None and self.envs is not None else None

    def check_space(self, stacks: Sequence[Stack]) -> None:
        """Room for every image of `stacks` still to be built, before the first build."""
        if self.envs is None:
            self.builder.check_space(stacks)

    def prefetch(self, stacks: Sequence[Stack]) -> None:
        """Start downloading the wheels of every stack that will be built, in order (with a
        disk budget, only the first two: each prepare then queues the one after the next)."""
        self._upcoming = list(stacks)
        self.builder.prefetch(stacks if self.budget is None else stacks[:AHEAD])

    def done(self, target: Target) -> None:
        """Every cell of `target` has landed: its environment is no longer held, and with a
        budget the cache is trimmed to it (environments and uv's cache only: this runs beside
        the next stack's prepare, which may be downloading wheels)."""
        if self.envs is None or not target.env:
            return
        self.envs.release(target.ref)
        if self.budget is not None:
            self._trim(None)

    def _trim(self, needed: set[str] | None) -> None:
        assert self.envs is not None and self.budget is not None
        trimmed = keep.over_budget(
            self.envs, self.builder.wheels, self.budget, keep=self.envs.held(),
            needed_wheels=needed,
        )  # fmt: skip
        for r in trimmed:
            self.builder.console.step("disk", r.line())

    def _made(self, stack: Stack) -> None:
        """With a budget, once a stack's environment is made: the wheels of the stack AHEAD
        places on start downloading, and the wheels no stack still to prepare needs go if the
        cache is over budget (on this thread, the one that prepares: no download of a stack
        still to lock runs meanwhile)."""
        if self.budget is None:
            return
        order = self._upcoming
        at = order.index(stack) if stack in order else -1
        self._upcoming = order[at + 1 :] if at >= 0 else order
        self.builder.prefetch(self._upcoming[AHEAD - 1 : AHEAD])
        needed: set[str] = set()
        for later in self._upcoming:
            spec = self.builder.identity(later) if later.base != "cuda" else None
            if spec is not None and spec.lock is not None:
                needed |= {w.filename for w in spec.lock.wheels}
        self._trim(needed)

    def close(self) -> None:
        """Stop downloads still running (an interrupted or finished run), and hold no
        environment any more (`gc` may then remove them)."""
        self.builder.close()
        if self.envs is not None:
            self.envs.release_all()

    def halt(self) -> None:
        """Kill every container this process has open and start no other (a run of several
        cells at once, stopping)."""
        if self._engine is not None:
            self._engine.halt()

    def layout(self, spec: RunSpec, target: Target) -> Layout:
        env = Path(target.env) if target.env and self.envs is not None else None
        faults = self.envs.faults if self.envs is not None else Path()
        return layout(spec, target.image or target.ref, env, faults, target.ref)

    def run(self, spec: RunSpec, target: Target) -> Finished:
        lay = self.layout(spec, target)
        with self.engine.container(
            lay.image,
            ["sh", "-c", lay.script],
            kind="run",
            mounts=lay.spec.mounts,
            user=lay.user,
            env=lay.env,
            **hardening(lay),
        ) as c:
            return self.engine.finish(c, spec.timeout)

    def sweep(self) -> list[str]:
        left = self.envs.sweep() if self.envs is not None else []
        return self.engine.sweep() + left

    def command(self, spec: RunSpec, target: Target) -> str:
        """How to run it by hand (`harness reproduce`)."""
        return docker_run_command(self.layout(spec, target))


@functools.cache
def _env_inputs() -> tuple[str, str]:
    """What besides the base and the lock decides an environment: its script, uv's version."""
    return envs_mod.SCRIPT.read_text(encoding="utf-8"), envs_mod.uv_tool()[1]


def _cuda_flavour(stack: Stack) -> NotRunnableHere:
    return NotRunnableHere(
        f"{stack.slug}: a cuda-flavour stack runs where nvidia/cuda can be pulled, or FROM a "
        "stand-in built here (none for this tag's OS)",
        help=f"`stackmatrix render {stack.slug}` prints its Dockerfile; a recipe in "
        "images/offline-base/ for the tag's OS lets this machine build a stand-in",
    )
