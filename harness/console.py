"""Progress for people: one line per step on stderr, sizes and seconds; on GitHub Actions
(`ci=True`) log groups and error annotations, as workflow commands
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands).

A long step (a download, a build, a base) is an `activity`: on a terminal one status line
rewritten in place every second (bytes, rate, ETA or phase and elapsed time); elsewhere (a CI log,
a file) a plain line once nothing was printed for 8 s, so a service that kills a silent job never
sees one.
Nothing here writes colour; NO_COLOR and TERM=dumb are honoured by never needing them."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
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


# Where the status line cannot be rewritten (CI, a file), a running activity prints a line once
# nothing has been printed for HEARTBEAT seconds: never 10 s of silence while work goes on.
HEARTBEAT = 8.0
TICK = 0.5  # how often a plain-line activity checks the silence
TTY_TICK = 1.0


def human_seconds(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def is_terminal(stream: TextIO, env: Mapping[str, str]) -> bool:
    """A terminal whose line can be rewritten in place (not a file, a pipe, CI or TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and env.get("TERM") != "dumb" and not on_github(env)


class Console:
    def __init__(self, stream: TextIO | None = None, *, ci: bool = False):
        self.stream = stream or sys.stderr
        self.ci = ci
        self.tty = is_terminal(self.stream, os.environ)
        self._lock = threading.Lock()
        self._status = ""  # the status line on a terminal, if one is shown
        self._slots: dict[int, str] = {}  # running activities' states, by activity
        self._last = time.monotonic()  # when a line was last printed

    def line(self, text: str) -> None:
        with self._lock:
            if self._status:  # clear the status line, print, then draw it again below
                self.stream.write("\r\x1b[2K")
            print(text, file=self.stream, flush=True)
            self._last = time.monotonic()
            if self._status:
                self.stream.write(self._status)
                self.stream.flush()

    def _draw(self) -> None:
        """The status line: every running activity's state, side by side."""
        width = 200
        with contextlib.suppress(OSError, ValueError, AttributeError):
            width = os.get_terminal_size(self.stream.fileno()).columns - 1
        self._status = _CONTROL.sub("", " | ".join(self._slots.values()))[:width]
        self.stream.write("\r\x1b[2K" + self._status)
        self.stream.flush()

    def _show(self, key: int, text: str) -> None:
        with self._lock:
            self._slots[key] = text
            self._draw()

    def _clear(self, key: int) -> None:
        with self._lock:
            self._slots.pop(key, None)
            self._draw()

    @contextlib.contextmanager
    def activity(
        self, prefix: str, what: str, detail: Callable[[], str] | None = None
    ) -> Iterator[None]:
        """A long step: its state (`detail()`, else the elapsed time) shown while it runs, on a
        terminal as a status line, elsewhere as a line whenever nothing was printed for
        HEARTBEAT seconds."""
        start = time.monotonic()
        stop = threading.Event()

        def text() -> str:
            extra = detail() if detail is not None else ""
            elapsed = human_seconds(time.monotonic() - start)
            return f"[{prefix}] {what}: {extra + ', ' if extra else ''}{elapsed}"

        def beat() -> None:
            while not stop.wait(TTY_TICK if self.tty else TICK):
                if self.tty:
                    self._show(id(stop), text())
                elif time.monotonic() - self._last >= HEARTBEAT:
                    self.line(text())

        thread = threading.Thread(target=beat, name=f"progress-{prefix}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            if self.tty:
                self._clear(id(stop))

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
