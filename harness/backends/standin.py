"""A local stand-in for an nvidia/cuda tag, for the cuda flavour on a machine with no registry.

The stand-in is the tag's OS built here (an mmdebstrap recipe in images/offline-base/), NVIDIA's
CUDA and cuDNN libraries from their PyPI wheels laid out at the image's paths, and the tag's
environment (NVIDIA_REQUIRE_CUDA, NV_CUDA_*, LD_LIBRARY_PATH, PATH, ...) as the cited Dockerfiles
set it (harness/resources/compat/cuda_images.yaml). The cuda-flavour Dockerfile is then built FROM
it, so its template and environment logic run here; the Dockerfile itself still says
`FROM nvidia/cuda:<tag>`, which a runner with a registry builds as it is.

The wheels are locked like a stack's (images/locks/standins/<tag>.json); the stand-in's tag is the
hash of its Dockerfile, its script and its base recipe.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jinja2

from harness.errors import ConfigError, HarnessError
from harness.model import CudaImage, DockerfilePlan, Lock
from harness.render import split_dockerfile, template_env

STANDIN_REPO = "stackmatrix/cuda-standin"
PYPI = "https://pypi.org/simple"
# What NVIDIA's runtime image carries that a framework loads (cuda-libraries: the toolkit
# metapackage's extras on PyPI), and cuDNN for a cudnn tag.
EXTRAS = ("cudart", "cublas", "cufft", "curand", "cusolver", "cusparse", "nvrtc", "nvjitlink")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True, kw_only=True)
class StandIn:
    image: CudaImage
    ref: str  # content-addressed
    dockerfile: str
    files: tuple[tuple[str, str], ...]
    plan: DockerfilePlan
    lock: Lock


def requirements(image: CudaImage) -> list[str]:
    major = image.cuda.split(".", maxsplit=1)[0]
    reqs = [f"cuda-toolkit[{','.join(EXTRAS)}]=={image.cuda_release}"]
    if image.cudnn:
        reqs.append(f"nvidia-cudnn-cu{major}=={image.cudnn}")
    return reqs


def lock_name(image: CudaImage) -> str:
    return image.tag


def environment(image: CudaImage) -> list[tuple[str, str]]:
    """The tag's ENV lines, in order, with ${VAR} expanded as the Dockerfile would (PATH from
    the base)."""
    if not image.require_cuda or not image.env:
        raise ConfigError(
            f"nvidia/cuda:{image.tag}: no cited NVIDIA_REQUIRE_CUDA or environment",
            help="add require_cuda and env (with their sources) to "
            "harness/resources/compat/cuda_images.yaml",
        )
    seen = {"PATH": BASE_PATH}
    out = [("NVIDIA_REQUIRE_CUDA", image.require_cuda)]
    for name, value in image.env:
        expanded = _VAR.sub(lambda m: seen.get(m.group(1), ""), value)
        seen[name] = expanded
        out.append((name, expanded))
    return out


def render(
    image: CudaImage, *, base_ref: str, base_id: str, lock: Lock, templates: Mapping[str, str]
) -> StandIn:
    env = template_env(templates)  # the stack templates' environment: `dq` quotes as JSON
    values = {
        "tag": image.tag,
        "os": image.os,
        "cuda": image.cuda,
        "cuda_major": image.cuda.split(".", maxsplit=1)[0],
        "cuda_release": image.cuda_release,
        "cudnn": image.cudnn,
        "base_ref": base_ref,
        "env": environment(image),
        "sources": [image.require_source or image.source, *image.env_source],
        "wheels": [w.filename for w in lock.wheels],
    }
    try:
        dockerfile = env.get_template("cuda-standin.Dockerfile.j2").render(values)
        script = env.get_template("cuda-standin.py.j2").render(values)
    except jinja2.TemplateError as exc:
        raise HarnessError(f"images/ template error: {exc}") from None
    h = hashlib.sha256()
    for part in (dockerfile, script, base_id, lock.requirements_txt()):
        h.update(part.encode())
        h.update(b"\0")
    return StandIn(
        image=image,
        ref=f"{STANDIN_REPO}:{image.tag}-{h.hexdigest()[:12]}",
        dockerfile=dockerfile,
        files=(("standin.py", script),),
        plan=split_dockerfile(dockerfile, where="cuda-standin.Dockerfile"),
        lock=lock,
    )


def lock_path(images: Path, image: CudaImage) -> Path:
    return images / "locks" / "standins" / f"{lock_name(image)}.json"
