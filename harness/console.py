"""Progress for people: one line per step on stderr, sizes and seconds; CI log groups on CI."""

from __future__ import annotations

import sys
from typing import TextIO


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


class Console:
    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr

    def line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def step(self, prefix: str, text: str) -> None:
        self.line(f"[{prefix}] {text}")
