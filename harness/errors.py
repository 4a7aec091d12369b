"""The error tree. Every user-facing failure is a HarnessError with an exit code.

The CLI catches HarnessError once and prints it as `file:line:col: error: ...` plus a `help:` line
(the shape compilers and cibuildwheel use), never a traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from harness.model import Where


class HarnessError(Exception):
    """Base of all errors the harness reports to a user."""

    exit_code = 1

    def __init__(self, message: str, *, where: Where | None = None, help: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.help = help

    def render(self) -> str:
        """The error as a terminal shows it: what the user gave (a profile, a path, a line of a
        file) may hold control characters, and they are written as escapes, never sent."""
        prefix = f"{self.where}: " if self.where is not None else ""
        text = f"{prefix}error: {self.message}"
        if self.help:
            text += f"\nhelp: {self.help}"
        return visible(text)


# Control characters but tab and newline (C0, DEL, C1): ESC starts a terminal's sequences
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with each control character but tab and newline as its escape (\\x1b)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class MachineFault(HarnessError):
    """The machine failed, not a stack: the engine stopped answering (or answered 5xx), a disk
    filled up (results, wheel cache, image store), a folder became read-only. The run stops
    at once (the cell in flight is recorded `interrupted`, where the journal can still take it)
    and exits 3; the same command, run again on a healthy machine, finishes the job."""

    exit_code = 3

    def __init__(self, what: str, *, detail: str = "", help: str | None = None):
        super().__init__(what + (f" ({detail})" if detail else ""), help=help or RERUN)
        self.what, self.detail = what, detail

    def after(self, done: int, total: int) -> MachineFault:
        """The same fault, saying how far the run got: `... after 2 of 46 results (...)`."""
        return MachineFault(
            f"{self.what} after {done} of {total} results", detail=self.detail, help=self.help
        )


RERUN = "fix that, then run the same command: finished cells are kept"


class ConfigError(HarnessError):
    """A user's input is wrong: matrix, scenario, knowledge file or command line."""

    exit_code = 2


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest known spelling, for a `help: did you mean ...?` line."""
    options = sorted(set(choices))
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if close:
        return close[0]
    # A known name with something stuck on ('cudnn_verison' for 'cudnn').
    prefixed = [o for o in options if len(o) >= 3 and (word.startswith(o) or o.startswith(word))]
    return max(prefixed, key=len) if prefixed else None


def choice_help(word: str, choices: Iterable[str], what: str) -> str:
    options = sorted(set(choices))
    guess = did_you_mean(word, options)
    if guess is not None:
        return f"did you mean '{guess}'?"
    return f"known {what}: {', '.join(options)}"
