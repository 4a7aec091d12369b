"""A stack -> its image: base, lock, wheels, content-addressed build or cache hit (what the
Docker backend's `prepare` does).

The decision (which refs, hit or miss) is cheap: reading locks, rendering templates and asking
the engine whether a tag exists. Only a miss downloads wheels or builds. `identity` needs no
engine at all: the image rendered over its base recipe's digest instead of the base's image id.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.backends import standin
from harness.backends.engine import Engine, storage_note
from harness.backends.offline import Base, ensure_base, read_recipe
from harness.compat import Knowledge
from harness.console import Console, human_bytes
from harness.errors import ConfigError, MachineFault
from harness.fetcher import Fetcher, host_ca
from harness.fs import free_bytes
from harness.lock import WheelCache, check_cached, read_lock, resolve, write_lock
from harness.model import CudaImage, DockerfilePlan, ImageJob, ImageSpec, Lock, Mount, Stack
from harness.render import (
    cuda_base_ref,
    cuda_image_of,
    image_spec,
    requirements,
    split_dockerfile,
    step_refs,
)

BUILD_TIMEOUT = 3600.0
SPACE_FACTOR = 3  # bytes a build takes per byte of its wheelhouse (see _check_space)
ENV_SPACE_FACTOR = 2  # bytes an environment takes per byte of its wheels (check_env_space)


def image_python(base: Base) -> str:
    """major.minor of the Python measured in a base ('3.10.12' -> '3.10')."""
    return ".".join(base.python.split(".")[:2])


@dataclass(frozen=True, slots=True, kw_only=True)
class Paths:
    images: Path  # images/ (templates, offline-base recipes, locks)
    cache: Path  # the shared wheel cache and scratch space, outside the repo
    logs: Path  # reports/logs


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildResult:
    slug: str
    ref: str
    status: str  # 'built', 'cache-hit', 'render-only'
    seconds: float
    downloaded: int  # bytes fetched for this stack
    size: int  # image size, bytes (0 when not built here)
    phases: Mapping[str, float] = field(default_factory=dict)  # download, install, commit: s

    def to_json(self) -> dict[str, object]:
        return {
            "slug": self.slug,
            "ref": self.ref,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "downloaded": self.downloaded,
            "size": self.size,
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
        }


class Builder:
    def __init__(
        self,
        *,
        kb: Knowledge,
        engine: Callable[[], Engine],
        paths: Paths,
        templates: Mapping[str, str],
        console: Console,
        relock: bool = False,
    ):
        self.kb, self._engine, self.paths = kb, engine, paths
        self.templates, self.console, self.relock = templates, console, relock
        self.wheels = WheelCache(paths.cache)
        self._bases: dict[str, Base] = {}
        self._relocked: set[str] = set()
        self._standins: dict[str, str] = {}  # stand-in ref -> image id, built or found
        self._fetcher: Fetcher | None = None
        self._storage_said = False  # the storage driver's note, said before the first build

    @property
    def fetcher(self) -> Fetcher:
        """Downloads into the wheel cache, shared by every stack of this run (started on first
        use, stopped by `close`)."""
        if self._fetcher is None:
            self._fetcher = Fetcher(self.wheels, self.console)
        return self._fetcher

    def fetch(self, lock: Lock, what: str) -> int:
        """The lock's wheels in the cache, hash-checked: bytes downloaded for them now."""
        got = self.fetcher.wait(lock.wheels, lock.index, what)
        check_cached(lock, self.wheels)
        return got

    def prefetch(self, stacks: Sequence[Stack]) -> None:
        """Queue the wheels of every stack that will be built, in order: the next stack's
        download overlaps this one's build."""
        for stack in stacks:
            lock = read_lock(self.lock_path(stack)) if stack.base != "cuda" else None
            if lock is not None and not self._stale(stack, lock) and self._missing(stack, lock):
                self.fetcher.want(lock.wheels, lock.index)

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None

    @property
    def backend(self) -> Engine:
        """The engine, connected on first use (identity and rendering need none)."""
        return self._engine()

    def base_for(self, stack: Stack) -> Base:
        row = self.kb.offline_base(stack.python)
        if row is None:
            raise ConfigError(f"{stack.slug}: no offline base OS ships Python {stack.python}")
        return self._base(row.os)

    def _base(self, os_id: str) -> Base:
        if os_id not in self._bases:
            t = time.monotonic()
            recipe = read_recipe(self.paths.images / "offline-base", os_id)
            base, built = ensure_base(
                recipe, self.backend, self.paths.cache / "tmp", self.paths.cache,
                console=self.console, logs=self.paths.logs,
            )  # fmt: skip
            word = "built" if built else "cache hit"
            self.console.step(
                "base",
                f"{recipe.ref}: {word} ({time.monotonic() - t:.1f} s, "
                f"Python {base.python}, glibc {base.glibc})",
            )
            self._bases[os_id] = base
        return self._bases[os_id]

    # ------------------------------------------------------------ the cuda flavour's stand-in

    def cuda_image(self, stack: Stack) -> CudaImage:
        return cuda_image_of(stack, self.kb)

    def can_stand_in(self, stack: Stack) -> bool:
        """A stand-in for the stack's nvidia/cuda tag can be built here: a base recipe for its
        OS and the tag's cited environment."""
        image = self.cuda_image(stack)
        recipe = self.paths.images / "offline-base" / f"{image.os}.yaml"
        return recipe.exists() and bool(image.require_cuda and image.env)

    def standin_lock(self, stack: Stack) -> Lock | None:
        return read_lock(standin.lock_path(self.paths.images, self.cuda_image(stack)))

    def standin_spec(self, image: CudaImage) -> standin.StandIn | None:
        """The stand-in from files alone (its recipe's digest for the base): None without its
        lock or its base recipe."""
        lock = read_lock(standin.lock_path(self.paths.images, image))
        recipe_path = self.paths.images / "offline-base" / f"{image.os}.yaml"
        if lock is None or not recipe_path.exists():
            return None
        recipe = read_recipe(self.paths.images / "offline-base", image.os)
        return standin.render(
            image, base_ref=recipe.ref, base_id=recipe.ref, lock=lock, templates=self.templates
        )

    def ensure_standin(self, image: CudaImage) -> standin.StandIn:
        """The stand-in image for an nvidia/cuda tag, locked, fetched and built if missing."""
        base = self._base(image.os)
        path = standin.lock_path(self.paths.images, image)
        lock = read_lock(path)
        reqs = standin.requirements(image)
        if lock is None or lock.requirements != tuple(reqs) or self.relock:
            self.console.step(f"nvidia/cuda:{image.tag}", f"resolving {' '.join(reqs)}")
            lock, _ = resolve(
                standin.lock_name(image), reqs, (), index=standin.PYPI,
                python=image_python(base), glibc=base.glibc, cache=self.wheels,
            )  # fmt: skip
            write_lock(path, lock)
        recipe = read_recipe(self.paths.images / "offline-base", image.os)
        spec = standin.render(
            image, base_ref=base.ref, base_id=recipe.ref, lock=lock, templates=self.templates
        )
        if spec.ref in self._standins or self.backend.image_id(spec.ref) is not None:
            self._standins[spec.ref] = spec.ref
            return spec
        t = time.monotonic()
        self._check_space(lock.total_bytes, spec.ref)
        self.fetch(lock, f"the stand-in's {len(lock.wheels)} wheels")
        self.console.step(f"nvidia/cuda:{image.tag}", f"building the stand-in {spec.ref}")
        self._run_commit(
            spec.plan, spec.ref, spec.files, spec.dockerfile, f"standin-{image.tag}",
            who=f"nvidia/cuda:{image.tag}",
        )  # fmt: skip
        self.console.step(
            f"nvidia/cuda:{image.tag}",
            f"stand-in built in {time.monotonic() - t:.1f} s, "
            f"{human_bytes(self.backend.image_size(spec.ref))}",
        )
        self._standins[spec.ref] = spec.ref
        return spec

    def _run_commit(
        self,
        plan: DockerfilePlan,
        ref: str,
        files: Sequence[tuple[str, str]],
        dockerfile: str,
        log_name: str,
        *,
        network: bool = False,
        who: str = "",
        steps: Sequence[str] = (),
    ) -> dict[str, float]:
        """Run + commit with the wheel cache and the Dockerfile's folder (its files) mounted
        read-only; the log streams to reports/logs/build-<log_name>.log (its path said first).
        `steps`: a tag for each of the first RUN steps, committed on its own (a step whose tag
        exists is not run again); the rest run in one container, committed as `ref`. The
        seconds of each phase (install, commit), summed over the steps."""
        who = who or log_name
        phases: dict[str, float] = {}
        scratch = self.paths.cache / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch, prefix="meta-") as tmp:
            meta = Path(tmp)  # what the RUN steps read
            for name, text in (*files, ("Dockerfile", dockerfile)):
                (meta / name).write_text(text, encoding="utf-8")
            meta.chmod(0o755)  # the build runs as root, but keep it readable for rootless engines
            shell_env = {}
            ca = host_ca(os.environ) if network else None
            if ca is not None:  # behind a TLS-inspecting proxy pip needs the host's CA bundle
                shutil.copyfile(ca, meta / "host-ca.crt")
                shell_env["PIP_CERT"] = "/wheelhouse/meta/host-ca.crt"
            mounts = [Mount(self.wheels.dir, "/wheelhouse/wheels"), Mount(meta, "/wheelhouse/meta")]

            def commit(part: DockerfilePlan, tag: str, log_name: str) -> None:
                log = self.paths.logs / f"build-{log_name}.log"
                log.parent.mkdir(parents=True, exist_ok=True)
                self.console.step(who, f"build log: {log}")
                took: dict[str, float] = {}
                self.backend.commit_build(
                    part,
                    tag,
                    log_path=log,
                    timeout=BUILD_TIMEOUT,
                    mounts=mounts,
                    network=network,
                    shell_env=shell_env,
                    activity=lambda phase: self.console.activity(who, phase),
                    phases=took,
                )
                for k, v in took.items():
                    phases[k] = phases.get(k, 0.0) + v

            parent, total = plan.base, len(plan.runs)
            for i, (run, tag) in enumerate(zip(plan.runs, steps, strict=False), 1):
                if self.backend.image_id(tag) is not None:
                    self.console.step(who, f"step {i}/{total} ({run}): cache hit {tag}")
                else:
                    self.console.step(who, f"step {i}/{total} ({run}) -> {tag}")
                    step = DockerfilePlan(base=parent, runs=(run,), changes=_step_changes(run))
                    commit(step, tag, f"{log_name}.step-{i}")
                parent = tag
            rest = replace(plan, base=parent, runs=plan.runs[len(steps) :])
            if steps:
                self.console.step(who, f"step {len(steps) + 1}/{total} -> {ref}")
            commit(rest, ref, log_name)
        return phases

    def render(self, stack: Stack) -> ImageSpec:
        """The stack's image from files alone (`harness render`): its lock as it is (none: the
        plain requirements), its base recipe's tag standing for the base image's id."""
        if stack.base == "cuda":
            ref = cuda_base_ref(stack, self.kb)
            return image_spec(
                stack, kb=self.kb, lock=None, base_ref=ref, base_id=ref, templates=self.templates
            )
        row = self.kb.offline_base(stack.python)
        if row is None:
            raise ConfigError(f"{stack.slug}: no offline base OS ships Python {stack.python}")
        recipe = read_recipe(self.paths.images / "offline-base", row.os)
        return image_spec(
            stack,
            kb=self.kb,
            lock=read_lock(self.lock_path(stack)),
            base_ref=recipe.ref,
            base_id=recipe.ref,
            templates=self.templates,
        )

    def identity(self, stack: Stack) -> ImageSpec | None:
        """What the stack's results depend on, from files alone: None when its lock is missing
        or stale (known once `job` has resolved it)."""
        if stack.base == "cuda":
            st = self.standin_spec(self.cuda_image(stack))
            if st is None:
                return None
            return self._cuda_spec(stack, st)
        lock = read_lock(self.lock_path(stack))
        if lock is None or self._stale(stack, lock):
            return None
        return self.render(stack)

    def _cuda_spec(self, stack: Stack, st: standin.StandIn) -> ImageSpec:
        """The cuda-flavour image as a registry runner builds it (FROM nvidia/cuda:<tag>), run
        here FROM the stand-in: its tag hashes the stand-in's."""
        ref = cuda_base_ref(stack, self.kb)
        spec = image_spec(
            stack, kb=self.kb, lock=None, base_ref=ref, base_id=st.ref, templates=self.templates
        )
        plan = split_dockerfile(spec.dockerfile, where=f"{stack.slug} Dockerfile")
        return replace(spec, plan=replace(plan, base=st.ref))

    def _wanted(self, stack: Stack) -> tuple[tuple[str, ...], tuple[str, ...], str, str]:
        release = self.kb.release(stack.framework, stack.framework_version)
        variant = release.variant(stack.cuda) if release else None
        assert release is not None and variant is not None  # the plan checked it
        reqs, overrides = requirements(stack, variant, release.package)
        return tuple(reqs), tuple(overrides), variant.index, stack.python

    def _stale(self, stack: Stack, lock: Lock) -> bool:
        have = (lock.requirements, lock.overrides, lock.index, lock.python)
        return have != self._wanted(stack)

    def lock_path(self, stack: Stack) -> Path:
        return self.paths.images / "locks" / f"{stack.slug}.json"

    def job(self, stack: Stack, cells: Sequence[str]) -> tuple[ImageJob, int]:
        """The image for a stack (resolving its lock if there is none yet); bytes downloaded."""
        if stack.base == "cuda":
            st = self.ensure_standin(self.cuda_image(stack))
            return ImageJob(spec=self._cuda_spec(stack, st), cells=tuple(cells)), 0
        base = self.base_for(stack)
        path = self.lock_path(stack)
        lock = read_lock(path)
        downloaded = 0
        relock = self.relock and stack.slug not in self._relocked
        if lock is None or relock or self._stale(stack, lock):
            self._relocked.add(stack.slug)
            reqs, overrides, index, _ = self._wanted(stack)
            self.console.step(
                stack.slug,
                f"resolving {' '.join(reqs + overrides)} "
                f"for Python {stack.python}, glibc {base.glibc}",
            )
            lock, downloaded = resolve(
                stack.slug,
                reqs,
                overrides,
                index=index,
                python=stack.python,
                glibc=base.glibc,
                cache=self.wheels,
            )
            write_lock(path, lock)
            self.console.step(
                stack.slug,
                f"locked {len(lock.wheels)} wheels ({human_bytes(lock.total_bytes)}) in {path}",
            )
        spec = image_spec(
            stack,
            kb=self.kb,
            lock=lock,
            base_ref=base.ref,
            base_id=base.image_id,
            templates=self.templates,
        )
        return ImageJob(spec=spec, cells=tuple(cells)), downloaded

    def build(self, job: ImageJob) -> BuildResult:
        spec = job.spec
        t = time.monotonic()
        if self.backend.image_id(spec.ref) is not None:
            self.console.step(spec.stack.slug, f"cache hit {spec.ref}")
            return BuildResult(
                slug=spec.stack.slug,
                ref=spec.ref,
                status="cache-hit",
                seconds=time.monotonic() - t,
                downloaded=0,
                size=0,
            )
        if spec.flavour == "cuda":  # FROM the stand-in; its RUN steps need apt and the index
            self.console.step(spec.stack.slug, f"building {spec.ref} FROM {spec.plan.base}")
            phases = self._run_commit(
                spec.plan, spec.ref, spec.files, spec.dockerfile, spec.stack.slug, network=True
            )
            size = self.backend.image_size(spec.ref)
            return BuildResult(
                slug=spec.stack.slug, ref=spec.ref, status="built",
                seconds=time.monotonic() - t, downloaded=0, size=size, phases=phases,
            )  # fmt: skip
        assert spec.lock is not None
        self._say_storage()
        self._check_space(spec.lock.total_bytes, spec.stack.slug)
        slug = spec.stack.slug
        self.console.step(slug, f"fetching {len(spec.lock.wheels)} locked wheels")
        downloaded = self.fetch(spec.lock, f"{slug}'s {len(spec.lock.wheels)} wheels")
        waited = time.monotonic() - t
        self.console.step(slug, f"building {spec.ref} (downloaded {human_bytes(downloaded)})")
        phases = {"download": waited}
        base_id = self.backend.image_id(spec.plan.base) or spec.plan.base
        steps = step_refs(spec.plan, dict(spec.files), base_id)
        phases.update(
            self._run_commit(spec.plan, spec.ref, spec.files, spec.dockerfile, slug, steps=steps)
        )
        size = self.backend.image_size(spec.ref)
        seconds = time.monotonic() - t
        said = ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
        self.console.step(slug, f"built in {seconds:.1f} s ({said}), {human_bytes(size)}")
        return BuildResult(
            slug=slug,
            ref=spec.ref,
            status="built",
            seconds=seconds,
            downloaded=downloaded,
            size=size,
            phases=phases,
        )

    def _say_storage(self) -> None:
        """Once, before the first build: a note when the engine's storage driver is a slow one."""
        if self._storage_said:
            return
        self._storage_said = True
        note = storage_note(self.backend.storage_driver())
        if note is not None:
            self.console.step("docker", note)

    def check_space(self, stacks: Sequence[Stack]) -> None:
        """Before the first build of `harness build`: room for every stack that will be built
        (a locked stack whose image is missing; an unlocked one is counted once resolved)."""
        need, slugs = 0, []
        for stack in stacks:
            lock = read_lock(self.lock_path(stack)) if stack.base != "cuda" else None
            if lock is not None and not self._stale(stack, lock) and self._missing(stack, lock):
                need += lock.total_bytes
                slugs.append(stack.slug)
        if slugs:
            self._check_space(need, f"{len(slugs)} stacks ({', '.join(slugs)})")

    def _missing(self, stack: Stack, lock: Lock) -> bool:
        """Whether the stack's image is still to be built (its base missing: then so is it)."""
        ref = self.built_ref(stack, lock)
        return ref is None or self.backend.image_id(ref) is None

    def built_ref(self, stack: Stack, lock: Lock) -> str | None:
        """The tag an offline stack's image has once built (None: its base is not built)."""
        row = self.kb.offline_base(stack.python)
        if row is None:
            return None
        recipe = read_recipe(self.paths.images / "offline-base", row.os)
        base_id = self.backend.image_id(recipe.ref)
        if base_id is None:
            return None
        spec = image_spec(
            stack,
            kb=self.kb,
            lock=lock,
            base_ref=recipe.ref,
            base_id=base_id,
            templates=self.templates,
        )
        return spec.ref

    def check_env_space(self, wheel_bytes: int, what: str) -> None:
        """Room in the cache for an environment: uv unpacks the wheels (about twice their size)
        into its cache, which the environment links to."""
        need = ENV_SPACE_FACTOR * wheel_bytes
        free = free_bytes(self.paths.cache)
        if free is not None and 0 <= free < need:
            raise MachineFault(
                f"not enough disk space to make {what}'s environment: it needs about "
                f"{human_bytes(need)} ({need:,} bytes), the cache {self.paths.cache} has "
                f"{human_bytes(free)} free",
                help="remove what no selection needs (`stackmatrix gc`, or `stackmatrix gc "
                "--budget SIZE`) or give the cache more disk, then run the same command",
            )

    def _check_space(self, wheel_bytes: int, what: str) -> None:
        # Installed wheels take about twice their compressed size, and the committed layer
        # holds them again: ask for three times the wheelhouse before starting.
        need = SPACE_FACTOR * wheel_bytes
        root, free = self.backend.free_bytes()
        if 0 <= free < need:
            raise MachineFault(
                f"not enough disk space to build {what}: it needs about {human_bytes(need)} "
                f"({need:,} bytes), Docker's data root {root} has {human_bytes(free)} free",
                help="remove unused images (`docker image prune`, old stackmatrix/stack tags) "
                "or give Docker more disk, then run the same command",
            )


def _step_changes(run: str) -> tuple[str, ...]:
    """A step's image says what it is, and runs a shell rather than its install command."""
    return (f"LABEL stackmatrix.step={json.dumps(run)}", 'CMD ["sh"]')
