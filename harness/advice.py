"""Advice from the log: versions and names read from the decisive line and the text around it,
and the catalog's fix templates rendered with them, per framework and CUDA major.

A template is a string with {placeholders}; a step whose placeholders the log does not fill is
left out, so no one is told `nvidia-cudnn-cu12` when the log says CUDA 13.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping

from harness.model import Signature

# (fact, regex): the first match in the decisive line wins, then in the rest of the text.
_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (k, re.compile(v))
    for k, v in (
        ("soname", r"\b(lib[\w-]+\.so\.\d+)"),
        ("cudnn_found", r"Loaded runtime CuDNN library: (\d+\.\d+\.\d+)"),
        ("cudnn_built", r"source was compiled with: (\d+\.\d+\.\d+)"),
        ("cudnn_found", r"Found cuDNN version (\d+)"),
        ("cudnn_built", r"JAX was built against(?: version)?:? (\d+)"),
        ("cudnn_found", r"Installed version: (\d+)"),
        ("cudnn_built", r"compiled +against \((\d+, \d+, \d+)\)"),
        ("cudnn_found", r"found runtime version \((\d+, \d+, \d+)\)"),
        ("cuda_required", r"cuda>=(\d+\.\d+)"),
        ("sm", r"\bsm_(\d{2,3})\b"),
        # a package's folder, then its name as code names it: not a folder of some other path
        # ("/opt/torch/.venv/.../site-packages/cupy/..." is CuPy's log, not torch's)
        ("framework", r"(?:site|dist)-packages[/\\](torch|tensorflow|jax|jaxlib|cupy)[/\\]"),
        ("framework", r"(?<![/\\\w.-])(jax|jaxlib|tensorflow|torch|cupy)\b"),
        ("cuda_major", r"nvidia[/\\]cu(\d\d)[/\\]"),
        ("cuda_major", r"\+cu(\d\d)\d\b"),
        ("cuda_major", r"-cu(\d\d)\b"),
        ("cuda_major", r"\bcuda(\d\d)[_\]]"),
        ("cuda_major", r"cuda-(\d\d)\.\d"),
        ("cuda_major", r"CUDA (?:Version|version):? ?(\d\d)\.\d"),
    )
)
_FRAMEWORK = {"jaxlib": "jax"}
_EXTRAS = {  # framework -> CUDA major -> the pip spec that brings the matching CUDA libraries
    "tensorflow": {"12": "tensorflow[and-cuda]"},
    "jax": {"12": "jax[cuda12]", "13": "jax[cuda13]"},
}


def read_facts(decisive: str | None, context: Iterable[str]) -> dict[str, str]:
    """Versions and names the log states, decisive line first."""
    found: dict[str, str] = {}
    for text in (decisive or "", *context):
        for key, rx in _FACTS:
            if key not in found and (m := rx.search(text)):
                found[key] = _FRAMEWORK.get(m.group(1), m.group(1))
    if "cuda_major" in found:
        major = found["cuda_major"]
        found["cudnn_wheel"] = f"nvidia-cudnn-cu{major}"
        found["cu"] = f"cu{major}"
        extra = _EXTRAS.get(found.get("framework", ""), {}).get(major)
        if extra:
            found["extra"] = extra
    if "cudnn_found" in found and "cudnn_built" in found:
        found["cudnn_pair"] = f"built against {found['cudnn_built']}, found {found['cudnn_found']}"
    return found


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def render_fix(sig: Signature, facts: Mapping[str, str]) -> tuple[str, ...]:
    """The signature's templates for the log's framework (then `any`) with the facts filled in,
    followed by its static fix steps."""
    advice = dict(sig.advice)
    steps = [*advice.get(facts.get("framework", ""), ()), *advice.get("any", ())]
    rendered = [t.format_map(facts) for t in steps if _fields(t) <= facts.keys()]
    return (*rendered, *sig.fix)
