"""A signature's fix steps for one stack: the catalog writes them for every CUDA major and
framework at once ("nvidia-cudnn-cu12 / -cu13", "==<pinned>", "torch / tensorflow[and-cuda]");
a reader with one stack wants the line for theirs. Pure.

The rewrites are textual and few: each names the catalog wording it fills in, and a step they
do not match is shown as the catalog wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# A step's catalog wording -> the stack's. Each replacement sees the stack's Advice.
_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], Advice], str]], ...] = (
    # "nvidia-cudnn-cu12 / -cu13", "nvidia-cudnn-cu12/cu13": both majors offered
    (
        re.compile(r"nvidia-cudnn-cu1\d ?/ ?-?cu1\d"),
        lambda m, a: f"nvidia-cudnn-cu{a.cuda_major}",
    ),
    # "nvidia-cudnn-cu12==<pinned>": the major and the version this stack pins
    (
        re.compile(r"nvidia-cudnn-cu1\d==<pinned>"),
        lambda m, a: f"nvidia-cudnn-cu{a.cuda_major}=={a.cudnn}",
    ),
    # "nvidia-cudnn-cu12" alone: the stack's major
    (re.compile(r"nvidia-cudnn-cu1\d\b"), lambda m, a: f"nvidia-cudnn-cu{a.cuda_major}"),
    # "`pip install --force-reinstall torch` / `tensorflow[and-cuda]`": this framework's half
    (
        re.compile(r"(`[^`]*\btorch\b[^`]*`) / (`[^`]*tensorflow[^`]*`)"),
        lambda m, a: m.group(1) if a.framework == "torch" else m.group(2),
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Advice:
    framework: str
    cuda_major: str
    cudnn: str  # as installed (the pin)

    @property
    def label(self) -> str:
        return f"{self.framework}, CUDA {self.cuda_major}, cuDNN {self.cudnn}"


def advice_for(framework: str, cuda: str, cudnn: str) -> Advice:
    return Advice(framework=framework, cuda_major=cuda.split(".", 1)[0], cudnn=cudnn)


def fix_step(step: str, advice: Advice) -> str:
    for pattern, fill in _RULES:
        step = pattern.sub(lambda m, fill=fill: fill(m, advice), step)  # type: ignore[misc]
    return step


def fix_steps(steps: tuple[str, ...], advice: Advice) -> tuple[str, ...]:
    return tuple(fix_step(s, advice) for s in steps)
