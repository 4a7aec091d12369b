"""plan -> one image per stack: base, lock, wheels, content-addressed build or cache hit.

The decision (which refs, hit or miss) is cheap: reading locks, rendering templates and asking
the engine whether a tag exists. Only a miss downloads wheels or builds.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.backends.docker import DockerBackend, Mount
from harness.base import Base, ensure_base, read_recipe
from harness.compat import Knowledge
from harness.console import Console, human_bytes
from harness.errors import ConfigError, HarnessError
from harness.lock import WheelCache, fetch, read_lock, resolve, write_lock
from harness.model import ImageJob, Plan, Stack
from harness.render import cuda_base_ref, image_spec, requirements

BUILD_TIMEOUT = 3600.0


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

    def to_json(self) -> dict[str, object]:
        return {
            "slug": self.slug,
            "ref": self.ref,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "downloaded": self.downloaded,
            "size": self.size,
        }


def group(plan: Plan) -> list[tuple[Stack, tuple[str, ...]]]:
    """One entry per stack, with the cells that run in its image (faults apply at run time)."""
    by_stack: dict[Stack, list[str]] = {}
    for cell in plan.cells:
        by_stack.setdefault(cell.stack, []).append(cell.id)
    return [(s, tuple(ids)) for s, ids in by_stack.items()]


class Builder:
    def __init__(
        self,
        *,
        kb: Knowledge,
        backend: DockerBackend,
        paths: Paths,
        templates: Mapping[str, str],
        console: Console,
        relock: bool = False,
    ):
        self.kb, self.backend, self.paths = kb, backend, paths
        self.templates, self.console, self.relock = templates, console, relock
        self.wheels = WheelCache(paths.cache)
        self._bases: dict[str, Base] = {}

    def base_for(self, stack: Stack) -> Base:
        row = self.kb.offline_base(stack.python)
        if row is None:
            raise ConfigError(f"{stack.slug}: no offline base OS ships Python {stack.python}")
        if row.os not in self._bases:
            t = time.monotonic()
            recipe = read_recipe(self.paths.images / "offline-base", row.os)
            base, built = ensure_base(recipe, self.backend, self.paths.cache / "tmp")
            word = "built" if built else "cache hit"
            self.console.step(
                "base",
                f"{recipe.ref}: {word} ({time.monotonic() - t:.1f} s, "
                f"Python {base.python}, glibc {base.glibc})",
            )
            self._bases[row.os] = base
        return self._bases[row.os]

    def lock_path(self, stack: Stack) -> Path:
        return self.paths.images / "locks" / f"{stack.slug}.json"

    def job(self, stack: Stack, cells: Sequence[str]) -> tuple[ImageJob, int]:
        """The image for a stack (resolving its lock if there is none yet); bytes downloaded."""
        if stack.base == "cuda":
            ref = cuda_base_ref(stack, self.kb)
            spec = image_spec(
                stack, kb=self.kb, lock=None, base_ref=ref, base_id=ref, templates=self.templates
            )
            return ImageJob(spec=spec, cells=tuple(cells)), 0
        base = self.base_for(stack)
        path = self.lock_path(stack)
        lock = None if self.relock else read_lock(path)
        downloaded = 0
        release = self.kb.release(stack.framework, stack.framework_version)
        variant = release.variant(stack.cuda) if release else None
        assert release is not None and variant is not None  # the plan checked it
        reqs, overrides = requirements(stack, variant, release.package)
        wanted = (tuple(reqs), tuple(overrides), variant.index, stack.python)
        if lock is None or (lock.requirements, lock.overrides, lock.index, lock.python) != wanted:
            self.console.step(
                stack.slug,
                f"resolving {' '.join(reqs + overrides)} "
                f"for Python {stack.python}, glibc {base.glibc}",
            )
            lock, downloaded = resolve(
                stack.slug,
                reqs,
                overrides,
                index=variant.index,
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
        if spec.flavour == "cuda":
            self.console.step(
                spec.stack.slug,
                f"cuda flavour: render only here ({spec.plan.base}"
                " needs a registry); `harness render` prints it",
            )
            return BuildResult(
                slug=spec.stack.slug,
                ref=spec.ref,
                status="render-only",
                seconds=0.0,
                downloaded=0,
                size=0,
            )
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
        assert spec.lock is not None
        self._check_space(spec.lock.total_bytes, spec.stack.slug)
        self.console.step(spec.stack.slug, f"fetching {len(spec.lock.wheels)} locked wheels")
        downloaded = fetch(spec.lock, self.wheels)
        self.console.step(
            spec.stack.slug, f"building {spec.ref} (downloaded {human_bytes(downloaded)})"
        )
        log = self.paths.logs / f"build-{spec.stack.slug}.log"
        scratch = self.paths.cache / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch, prefix="meta-") as tmp:
            meta = Path(tmp)  # install.sh, requirements.txt: what the RUN step reads
            for name, text in (*spec.files, ("Dockerfile", spec.dockerfile)):
                (meta / name).write_text(text, encoding="utf-8")
            meta.chmod(0o755)  # the build runs as root, but keep it readable for rootless engines
            self.backend.commit_build(
                spec.plan,
                spec.ref,
                log_path=log,
                timeout=BUILD_TIMEOUT,
                mounts=[
                    Mount(self.wheels.dir, "/wheelhouse/wheels"),
                    Mount(meta, "/wheelhouse/meta"),
                ],
            )
        size = self.backend.image_size(spec.ref)
        seconds = time.monotonic() - t
        self.console.step(spec.stack.slug, f"built in {seconds:.1f} s, {human_bytes(size)}")
        return BuildResult(
            slug=spec.stack.slug,
            ref=spec.ref,
            status="built",
            seconds=seconds,
            downloaded=downloaded,
            size=size,
        )

    def _check_space(self, wheel_bytes: int, slug: str) -> None:
        # Installed wheels take about twice their compressed size, and the committed layer
        # holds them again: ask for three times the wheelhouse before starting.
        need = 3 * wheel_bytes
        root, free = self.backend.free_bytes()
        if 0 <= free < need:
            raise HarnessError(
                f"not enough disk space to build {slug}: it needs about {human_bytes(need)}, "
                f"Docker's data root {root} has {human_bytes(free)} free",
                help="remove unused images (`docker image prune`, old stackmatrix/stack tags) "
                "or give Docker more disk",
            )


def build_plan(builder: Builder, plan: Plan, only: Sequence[str] = ()) -> list[BuildResult]:
    stacks = group(plan)
    if only:
        known = {s.slug for s, _ in stacks}
        for slug in only:
            if slug not in known:
                raise ConfigError(
                    f"no stack '{slug}' in profile '{plan.profile}'",
                    help="`harness plan` lists the stacks (cell ids before '/')",
                )
        stacks = [(s, c) for s, c in stacks if s.slug in only]
    results = []
    for i, (stack, cells) in enumerate(stacks, 1):
        builder.console.line(f"[{i}/{len(stacks)}] {stack.slug}")
        job, downloaded = builder.job(stack, cells)
        result = builder.build(job)
        results.append(replace(result, downloaded=result.downloaded + downloaded))
    return results
