"""Stack + lock + templates -> Dockerfile, its files, and a content-addressed tag. Pure.

Templates are read by the caller (`read_templates`) and rendered with StrictUndefined: a template
that names a value the harness does not pass fails loudly instead of rendering an empty string.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

import jinja2

from harness.compat import Knowledge
from harness.errors import ConfigError, HarnessError
from harness.model import (
    CudaImage,
    DockerfilePlan,
    ImageSpec,
    Lock,
    Stack,
    Variant,
    hashed_requirements,
)

FLAVOURS = ("offline", "cuda")
IMAGE_REPO = "stackmatrix/stack"
STEP_REPO = "stackmatrix/step"  # an install step's image, shared by the stacks that render it
# What `docker commit --change` accepts (Docker Engine API, POST /commit `changes`).
COMMIT_CHANGES = frozenset(
    {"CMD", "ENTRYPOINT", "ENV", "EXPOSE", "LABEL", "ONBUILD", "USER", "VOLUME", "WORKDIR"}
)


def read_templates(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.j2"))}


def requirements(stack: Stack, variant: Variant, package: str) -> tuple[list[str], list[str]]:
    """What to resolve, and the pins swapped in afterwards.

    On the offline base the CUDA libraries must come as wheels (the release's extra, if it has
    one); on the cuda base a release whose CUDA libraries are optional uses the image's. A cuDNN
    other than the release's own is swapped in after resolution: pip would refuse the conflict,
    and the conflict is the point.
    """
    extra = f"[{variant.extra}]" if variant.extra and stack.base == "offline" else ""
    reqs = [f"{package}{extra}=={stack.framework_version}"]
    overrides = []
    if stack.cudnn != variant.cudnn and stack.base == "offline":
        major = stack.cuda.split(".")[0]
        overrides.append(f"nvidia-cudnn-cu{major}=={stack.cudnn}")
    return reqs, overrides


def template_env(templates: Mapping[str, str]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.DictLoader(dict(templates)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # Dockerfiles and shell, not HTML
    )
    env.filters["dq"] = json.dumps  # a double-quoted string with escapes, as Dockerfiles read them
    return env


def render_files(
    stack: Stack,
    *,
    flavour: str,
    base_ref: str,
    index: str,
    lock: Lock | None,
    plain_requirements: list[str],
    templates: Mapping[str, str],
    system_cudnn: bool = False,
) -> tuple[str, dict[str, str]]:
    """The Dockerfile and the files beside it: install.sh and requirements.txt, or for the
    offline flavour shared.txt and cudnn.txt (its two install steps)."""
    reqs_txt = lock.requirements_txt() if lock else "\n".join(plain_requirements) + "\n"
    values = {
        "slug": stack.slug,
        "stack": stack.to_json(),
        "stack_json": json.dumps(stack.to_json(), sort_keys=True, separators=(",", ":")),
        "base_ref": base_ref,
        "image_tag": base_ref.removeprefix("nvidia/cuda:"),
        "index": index,
        "offline": flavour == "offline",
        "hashed": lock is not None,
        "system_cudnn": system_cudnn,
        "requirements_sha256": hashlib.sha256(reqs_txt.encode()).hexdigest(),
        "description": f"{stack.framework} {stack.framework_version}, CUDA {stack.cuda}, "
        f"cuDNN {stack.cudnn}, Python {stack.python}, {flavour} base",
    }
    env = template_env(templates)
    try:
        dockerfile = env.get_template(f"{flavour}.Dockerfile.j2").render(values)
        install = env.get_template("install.sh.j2").render(values)
    except jinja2.TemplateError as exc:
        raise HarnessError(f"images/ template error: {exc}") from None
    if flavour != "offline":
        return dockerfile, {"install.sh": install, "requirements.txt": reqs_txt}
    return dockerfile, {"install.sh": install, **offline_steps(lock, plain_requirements)}


CUDNN_WHEEL = re.compile(r"nvidia-cudnn-cu\d+")  # the package a cuDNN swap pins (requirements)


def offline_steps(lock: Lock | None, plain_requirements: list[str]) -> dict[str, str]:
    """The offline image's two install steps: every wheel but cuDNN's (shared.txt), then
    cuDNN's (cudnn.txt). Neither names the stack, so stacks that differ only in cuDNN render the
    same first step and share its layer."""
    if lock is None:
        return {
            "shared.txt": "\n".join(["# the requirements, unlocked", *plain_requirements]) + "\n",
            "cudnn.txt": "# cuDNN comes with the requirements (unlocked)\n",
        }
    cudnn = [w for w in lock.wheels if CUDNN_WHEEL.fullmatch(w.name)]
    rest = [w for w in lock.wheels if not CUDNN_WHEEL.fullmatch(w.name)]
    return {
        "shared.txt": hashed_requirements("every locked wheel but cuDNN's, by hash", rest),
        "cudnn.txt": hashed_requirements("cuDNN's locked wheels, by hash", cudnn),
    }


def step_refs(plan: DockerfilePlan, files: Mapping[str, str], base_id: str) -> tuple[str, ...]:
    """A content-addressed tag for the image after each RUN step but the last (the last is the
    stack's own tag): the hash of the image it starts from, the step's command and every file
    of the Dockerfile's folder the command names as a word (`/wheelhouse/meta/install.sh`,
    `shared.txt`). Stacks whose first steps are the same over the same base share that step's
    image, and its layer."""
    refs, parent = [], base_id
    for run in plan.runs[:-1]:
        h = hashlib.sha256()
        h.update(f"{parent}\0{run}\0".encode())
        for name in sorted(files):
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", run):
                h.update(f"{name}\0{files[name]}\0".encode())
        parent = f"{STEP_REPO}:{h.hexdigest()[:16]}"
        refs.append(parent)
    return tuple(refs)


_CONT = re.compile(r"[ \t]*\\\n\s*")


def split_dockerfile(text: str, *, where: str = "Dockerfile") -> DockerfilePlan:
    """FROM, the RUN commands (flags dropped) and the commit changes, in order."""
    joined = _CONT.sub(" ", text)
    base, runs, changes = None, [], []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            if base is not None:
                raise ConfigError(f"{where}: one FROM only (run+commit builds one stage)")
            base = rest.strip()
        elif word == "RUN":
            parts = rest.split()
            while parts and parts[0].startswith("--"):
                parts.pop(0)
            runs.append(" ".join(parts))
        elif word in COMMIT_CHANGES:
            changes.append(line)
        elif word == "COPY" and rest.split()[-1:] == ["/wheelhouse/meta/"]:
            pass  # run+commit mounts the Dockerfile's folder there
        else:
            raise ConfigError(f"{where}: '{word}' cannot be applied by run+commit")
    if base is None:
        raise ConfigError(f"{where}: no FROM line")
    return DockerfilePlan(base=base, runs=tuple(runs), changes=tuple(changes))


def content_ref(stack: Stack, dockerfile: str, files: Mapping[str, str], base_id: str) -> str:
    """Tag = hash of what decides the image's content: Dockerfile, its files, the base's id."""
    h = hashlib.sha256()
    for part in (dockerfile, *(f"{k}\0{files[k]}" for k in sorted(files)), base_id):
        h.update(part.encode())
        h.update(b"\0")
    return f"{IMAGE_REPO}:{stack.slug}-{h.hexdigest()[:12]}"


def offline_spec(
    stack: Stack, *, lock: Lock, base_ref: str, base_id: str, templates: Mapping[str, str]
) -> ImageSpec:
    """An offline image for any locked set of wheels (a framework stack, or a test's numpy)."""
    dockerfile, files = render_files(
        stack,
        flavour="offline",
        base_ref=base_ref,
        index=lock.index,
        lock=lock,
        plain_requirements=[],
        templates=templates,
    )
    return ImageSpec(
        stack=stack,
        flavour="offline",
        ref=content_ref(stack, dockerfile, files, base_id),
        dockerfile=dockerfile,
        files=tuple(sorted(files.items())),
        plan=split_dockerfile(dockerfile),
        lock=lock,
    )


def image_spec(
    stack: Stack,
    *,
    kb: Knowledge,
    lock: Lock | None,
    base_ref: str,
    base_id: str,
    templates: Mapping[str, str],
) -> ImageSpec:
    release = kb.release(stack.framework, stack.framework_version)
    variant = release.variant(stack.cuda) if release else None
    if release is None or variant is None:
        raise ConfigError(f"{stack.slug}: not a published variant in the compatibility knowledge")
    if stack.base == "offline" and lock is not None:
        return offline_spec(
            stack, lock=lock, base_ref=base_ref, base_id=base_id, templates=templates
        )
    reqs, _ = requirements(stack, variant, release.package)
    system_cudnn = stack.base == "cuda" and stack.cudnn != variant.cudnn
    dockerfile, files = render_files(
        stack,
        flavour=stack.base,
        base_ref=base_ref,
        index=variant.index,
        lock=lock,
        plain_requirements=reqs,
        templates=templates,
        system_cudnn=system_cudnn,
    )
    plan = (
        split_dockerfile(dockerfile)
        if stack.base == "offline"
        else DockerfilePlan(base=base_ref, runs=(), changes=())
    )
    return ImageSpec(
        stack=stack,
        flavour=stack.base,
        ref=content_ref(stack, dockerfile, files, base_id),
        dockerfile=dockerfile,
        files=tuple(sorted(files.items())),
        plan=plan,
        lock=lock,
    )


def cuda_image_of(stack: Stack, kb: Knowledge) -> CudaImage:
    """The nvidia/cuda tag a cuda-flavour stack is built FROM (the cuDNN its release pins)."""
    release = kb.release(stack.framework, stack.framework_version)
    variant = release.variant(stack.cuda) if release else None
    image = kb.cuda_image(stack.cuda, variant.cudnn if variant else stack.cudnn, stack.python)
    if image is None:
        raise ConfigError(f"{stack.slug}: no nvidia/cuda tag in the compatibility knowledge")
    return image


def cuda_base_ref(stack: Stack, kb: Knowledge) -> str:
    return f"nvidia/cuda:{cuda_image_of(stack, kb).tag}"
