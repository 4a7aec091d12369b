"""The Docker backend: a stack is an image (built, or a cache hit), a run is a fresh container.

A run's container starts as root with only the capabilities its short setup needs: the setup
applies the cell's file operations in the container's own writable layer (the image is never
changed), then `setpriv` drops to uid 1000 with every capability set empty, and the probe runs
with no network, no-new-privileges and a pids limit. Every operation argument reaches the setup
script through `shlex.quote` (a hide pattern's '*' and '?' stay wildcards between quoted
pieces), so no scenario text can add a command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any

import docker

from harness.backends import NotRunnableHere, Target
from harness.backends.engine import Engine
from harness.backends.images import Builder
from harness.faults import ENV_NAME
from harness.model import (
    DRIVER_MOUNT,
    Driver,
    FaultOp,
    Finished,
    Hide,
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
DROP = "setpriv --reuid=1000 --regid=1000 --init-groups --inh-caps=-all --bounding-set=-all --"
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


def run_script(spec: RunSpec) -> str:
    """The shell a run's container executes: the file operations as root, then the drop to
    uid 1000 with no capabilities, then the probe with the run's environment."""
    setup = [line for op in spec.ops if (line := setup_line(op, spec)) is not None]
    argv = " ".join(shlex.quote(a) for a in spec.argv)
    return "\n".join(["set -e", *setup, f"exec {DROP} env {' '.join(probe_words(spec))} {argv}"])


def container_env(spec: RunSpec) -> dict[str, str]:
    """What the container is created with: only what the runtime itself reads (no GPU)."""
    return dict(NO_GPU_ENV) if any(isinstance(op, NoGpu) for op in spec.ops) else {}


def hardening(spec: RunSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cap_drop": ["ALL"],
        "cap_add": SETUP_CAPS,
        "security_opt": ["no-new-privileges"],
        "pids_limit": PIDS_LIMIT,
    }
    # A default memory limit: a probe that runs away is killed (OOM), not the host.
    out["mem_limit"] = out["memswap_limit"] = spec.memory_limit or DEFAULT_MEMORY
    if spec.sees_gpu:
        out["device_requests"] = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return out


def docker_run_command(spec: RunSpec, image: str) -> str:
    """The same run as one `docker run` a user can paste."""
    parts = ["docker", "run", "--rm", "--network", "none", "--user", "0", "--cap-drop", "ALL"]
    for cap in SETUP_CAPS:
        parts += ["--cap-add", cap]
    parts += ["--security-opt", "no-new-privileges", "--pids-limit", str(PIDS_LIMIT)]
    memory = spec.memory_limit or DEFAULT_MEMORY
    parts += ["--memory", str(memory), "--memory-swap", str(memory), "--log-opt", "max-size=8m"]
    if spec.sees_gpu:
        parts += ["--gpus", "all"]
    for m in spec.mounts:
        parts += ["-v", f"{m.source}:{m.target}:{'ro' if m.read_only else 'rw'}"]
    for k, v in sorted(container_env(spec).items()):
        parts += ["-e", f"{k}={v}"]
    parts += [image, "sh", "-c", run_script(spec)]
    return " ".join(shlex.quote(p) for p in parts)


# ---------------------------------------------------------------- the backend


class DockerBackend:
    """`connect` is called on first use: `identity` (and so `harness run --dry-run`) needs no
    engine."""

    name = "docker"

    def __init__(self, builder: Builder, connect: Callable[[], Engine]):
        self.builder = builder
        self._connect = connect
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._connect()
        return self._engine

    def identity(self, stack: Stack) -> str | None:
        if stack.base == "cuda" and not self.builder.can_stand_in(stack):
            raise _cuda_flavour(stack)
        spec = self.builder.identity(stack)
        return spec.ref if spec else None

    def prepare(self, stack: Stack) -> Target:
        if stack.base == "cuda" and not self.builder.can_stand_in(stack):
            raise _cuda_flavour(stack)
        job, downloaded = self.builder.job(stack, ())
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

    def check_space(self, stacks: Sequence[Stack]) -> None:
        """Room for every image of `stacks` still to be built, before the first build."""
        self.builder.check_space(stacks)

    def prefetch(self, stacks: Sequence[Stack]) -> None:
        """Start downloading the wheels of every stack that will be built, in order."""
        self.builder.prefetch(stacks)

    def close(self) -> None:
        """Stop downloads still running (an interrupted or finished run)."""
        self.builder.close()

    def halt(self) -> None:
        """Kill every container this process has open and start no other (a run of several
        cells at once, stopping)."""
        if self._engine is not None:
            self._engine.halt()

    def run(self, spec: RunSpec, target: Target) -> Finished:
        with self.engine.container(
            target.ref,
            ["sh", "-c", run_script(spec)],
            kind="run",
            mounts=spec.mounts,
            user="0",
            env=container_env(spec),
            **hardening(spec),
        ) as c:
            return self.engine.finish(c, spec.timeout)

    def sweep(self) -> list[str]:
        return self.engine.sweep()

    def command(self, spec: RunSpec, target: Target) -> str:
        """How to run it by hand (`harness reproduce`)."""
        return docker_run_command(spec, target.ref)


def _cuda_flavour(stack: Stack) -> NotRunnableHere:
    return NotRunnableHere(
        f"{stack.slug}: a cuda-flavour stack runs where nvidia/cuda can be pulled, or FROM a "
        "stand-in built here (none for this tag's OS)",
        help=f"`harness render {stack.slug}` prints its Dockerfile; a recipe in "
        "images/offline-base/ for the tag's OS lets this machine build a stand-in",
    )
