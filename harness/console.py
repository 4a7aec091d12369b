"""Progress for people: one line per step on stderr, sizes and seconds; on GitHub Actions
(`ci=True`) log groups and error annotations, as workflow commands
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands)."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator, Mapping
from typing import TextIO

# Workflow-command escaping: a message may hold %, CR and LF; a property also : and ,.
_DATA = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A"})
_PROPERTY = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A", ":": "%3A", ",": "%2C"})
_CONTROL = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def on_github(env: Mapping[str, str]) -> bool:
    return env.get("GITHUB_ACTIONS") == "true"


def command_data(text: str) -> str:
    return _CONTROL.sub("", text).translate(_DATA)


def command_property(text: str) -> str:
    return _CONTROL.sub("", text).translate(_PROPERTY)


class Console:
    def __init__(self, stream: TextIO | None = None, *, ci: bool = False):
        self.stream = stream or sys.stderr
        self.ci = ci

    def line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def step(self, prefix: str, text: str) -> None:
        self.line(f"[{prefix}] {text}")

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A foldable log group on CI; nothing elsewhere."""
        if self.ci:
            self.line(f"::group::{command_data(title)}")
        try:
            yield
        finally:
            if self.ci:
                self.line("::endgroup::")

    def annotate(self, level: str, message: str, title: str = "") -> None:
        """An ::error:: (or ::warning::) annotation on CI; nothing elsewhere."""
        if self.ci:
            props = f" title={command_property(title)}" if title else ""
            self.line(f"::{level}{props}::{command_data(message)}")
