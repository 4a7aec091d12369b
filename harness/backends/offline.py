"""The offline base: Debian with its own Python, built here with mmdebstrap and `docker import`.

No registry is involved: the root filesystem comes from Debian's packages. The tag is the hash of
the recipe file, so an unchanged recipe is built once per machine. What the image really holds
(Python version, glibc) is measured inside the new root filesystem and kept as labels: lock
resolution takes its wheel platform tags from the measured glibc.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import proc
from harness.backends.basesource import Source, choose, install, read_facts, registry_image
from harness.backends.driverstore import debian_files
from harness.backends.engine import BuildFailed, Engine
from harness.console import Console
from harness.drivers import DebPackage, parse_deb
from harness.errors import ConfigError, HarnessError
from harness.loader import read_yaml
from harness.model import DockerfilePlan, Where

BASE_REPO = "stackmatrix/base"
DEBIAN = "http://deb.debian.org/debian"  # where a recipe's keyring package comes from
FACTS = "etc/stackmatrix-base.json"
BUILD_TIMEOUT = 1800.0
# Runs inside the new root filesystem (mmdebstrap customize hook): what Python and glibc it has.
_PROBE = (
    "import json, os, platform; print(json.dumps({'python': platform.python_version(), "
    "'glibc': os.confstr('CS_GNU_LIBC_VERSION').split()[1]}))"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recipe:
    os: str
    suite: str
    python: str
    variant: str
    mirror: str
    include: tuple[str, ...]
    exclude_paths: tuple[str, ...]
    digest: str  # sha256 of the recipe file
    components: tuple[str, ...] = ("main",)
    keyring: DebPackage | None = None  # Debian's package of another archive's keyring

    @property
    def ref(self) -> str:
        return f"{BASE_REPO}:{self.os}-py{self.python}-{self.digest[:12]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Base:
    ref: str
    image_id: str
    python: str  # as measured inside, e.g. 3.11.2
    glibc: str


def parse_recipe(data: Mapping[str, Any], digest: str, where: Where) -> Recipe:
    try:
        return Recipe(
            os=str(data["os"]),
            suite=str(data["suite"]),
            python=str(data["python"]),
            variant=str(data.get("variant", "minbase")),
            mirror=str(data["mirror"]),
            include=tuple(str(x) for x in data["include"]),
            exclude_paths=tuple(str(x) for x in data.get("exclude_paths", [])),
            digest=digest,
            components=tuple(str(x) for x in data.get("components", ["main"])),
            keyring=parse_deb(data["keyring"], where.file) if "keyring" in data else None,
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(
            f"base recipe: missing or bad {exc}",
            where=where,
            help="see images/offline-base/debian12.yaml",
        ) from None


def read_recipe(folder: Path, os_id: str) -> Recipe:
    path = folder / f"{os_id}.yaml"
    if not path.exists():
        raise ConfigError(
            f"no offline base recipe for {os_id}: {path} is missing",
            help="add one like images/offline-base/debian12.yaml",
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    doc = read_yaml(path)
    return parse_recipe(doc.data, digest, Where(str(path)))


def mmdebstrap_argv(recipe: Recipe, out: Path, keyring: Path | None = None) -> list[str]:
    argv = [
        "mmdebstrap",
        f"--variant={recipe.variant}",
        "--format=tar",
        f"--include={','.join(recipe.include)}",
        f"--components={','.join(recipe.components)}",
    ]
    if keyring is not None:
        argv.append(f"--keyring={keyring}")
    argv += [f"--dpkgopt=path-exclude={p}" for p in recipe.exclude_paths]
    argv += [
        f'--customize-hook=chroot "$1" python3 -c "{_PROBE}" > "$1/{FACTS}"',
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
        recipe.suite,
        str(out),
        recipe.mirror,
    ]
    return argv


def _facts(tar: Path) -> dict[str, str]:
    with tarfile.open(tar) as t:
        member = t.extractfile(f"./{FACTS}")
        if member is None:
            raise BuildFailed(f"{tar.name} has no {FACTS}: the customize hook did not run")
        data: dict[str, str] = json.loads(member.read())
    return data


def _labels(image_labels: Mapping[str, str], ref: str) -> tuple[str, str]:
    try:
        return image_labels["stackmatrix.base.python"], image_labels["stackmatrix.base.glibc"]
    except KeyError:
        raise HarnessError(
            f"{ref} has no stackmatrix.base labels",
            help=f"remove it (`docker rmi {ref}`) and build again",
        ) from None


def _changes(recipe: Recipe, facts: Mapping[str, str], source: str) -> list[str]:
    return [
        f'LABEL stackmatrix.base.python="{facts["python"]}" '
        f'stackmatrix.base.glibc="{facts["glibc"]}" '
        f'stackmatrix.base.recipe.sha256="{recipe.digest}" '
        f'stackmatrix.base.source="{source}" '
        f'org.opencontainers.image.title="stackmatrix offline base {recipe.os}"',
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        'CMD ["python3"]',
    ]


def ensure_base(
    recipe: Recipe,
    backend: Engine,
    scratch: Path,
    cache: Path | None = None,
    *,
    console: Console | None = None,
    logs: Path | None = None,
) -> tuple[Base, bool]:
    """The base image for `recipe`, built if missing; True when it was built now. Where it
    comes from (a registry, mmdebstrap, mmdebstrap installed first) is chosen and said."""
    image_id = backend.image_id(recipe.ref)
    if image_id is not None:
        python, glibc = _labels(backend.image_labels(recipe.ref), recipe.ref)
        return Base(ref=recipe.ref, image_id=image_id, python=python, glibc=glibc), False
    console = console or Console()
    image = registry_image(recipe.os, recipe.suite)
    choice = choose(read_facts(image, backend.registry_has(image), os.environ))
    console.line(choice.line)
    if choice.source is Source.REGISTRY:
        return _from_registry(recipe, image, backend, console, logs or scratch), True
    if choice.source is Source.INSTALL:
        install(choice.install, console)
    with console.activity("base", f"mmdebstrap {recipe.suite} for {recipe.ref}"):
        return _from_mmdebstrap(recipe, backend, scratch, cache), True


def _from_registry(
    recipe: Recipe, image: str, backend: Engine, console: Console, logs: Path
) -> Base:
    """The recipe's packages added to a registry image with apt; its facts measured inside."""
    if backend.image_id(image) is None:
        with console.activity("base", f"pulling {image}"):
            backend.pull(image)
    tmp = f"{recipe.ref}-unlabelled"
    script = (
        "export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && "
        f"apt-get install -y -qq --no-install-recommends {' '.join(recipe.include)} && "
        f'python3 -c "{_PROBE}" > /{FACTS} && rm -rf /var/lib/apt/lists/* /var/cache/apt/*'
    )
    plan = DockerfilePlan(base=image, runs=(script,), changes=())
    log = logs / f"base-{recipe.os}.log"
    backend.commit_build(
        plan, tmp, mounts=[], log_path=log, timeout=BUILD_TIMEOUT, network=True,
        activity=lambda phase: console.activity("base", f"{image}: {phase}"),
    )  # fmt: skip
    try:
        done = backend.run(tmp, ["cat", f"/{FACTS}"], timeout=60)
        try:
            facts = json.loads(done.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise BuildFailed(f"{tmp} has no readable /{FACTS}: see {log}") from None
        final = DockerfilePlan(base=tmp, runs=(), changes=tuple(_changes(recipe, facts, image)))
        image_id = backend.commit_build(
            final, recipe.ref, mounts=[], log_path=log.with_suffix(".label.log"), timeout=120
        )
    finally:
        backend.remove_image(tmp)
    return Base(ref=recipe.ref, image_id=image_id, python=facts["python"], glibc=facts["glibc"])


def _from_mmdebstrap(recipe: Recipe, backend: Engine, scratch: Path, cache: Path | None) -> Base:
    scratch.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(dir=scratch, prefix="base-") as tmp,
        tempfile.TemporaryDirectory(prefix="stackmatrix-keyring-") as keys,
    ):
        keyring = None
        if recipe.keyring is not None:  # another archive's key, from Debian's own package of it
            folder = debian_files(
                recipe.keyring, cache or scratch.parent, archive=DEBIAN, component="main"
            )
            name = recipe.keyring.members[0][1]
            # apt reads it as its unprivileged _apt user: a copy where that user can reach
            keyring = Path(keys) / name
            shutil.copyfile(folder / name, keyring)
            Path(keys).chmod(0o755)
            keyring.chmod(0o644)
        tar = Path(tmp) / "rootfs.tar"
        res = proc.run(mmdebstrap_argv(recipe, tar, keyring), timeout=BUILD_TIMEOUT)
        if res.returncode != 0:
            tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-30:])
            raise BuildFailed(
                f"mmdebstrap failed for {recipe.os} ({recipe.suite}):\n{tail}",
                help="is the Debian mirror reachable? is there disk space?",
            )
        facts = _facts(tar)
        image_id = backend.import_rootfs(tar, recipe.ref, _changes(recipe, facts, "mmdebstrap"))
    return Base(ref=recipe.ref, image_id=image_id, python=facts["python"], glibc=facts["glibc"])
