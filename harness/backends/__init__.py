"""The backend seam: where a stack is prepared and its cells run.

`prepare(stack) -> Target` makes a stack runnable (Docker: build its image or find it cached;
local: a venv from its lock, or an interpreter the host has), `run(spec, target) -> Finished`
runs one probe with a cell's fault operations, `sweep()` removes what a killed harness left.
`identity(stack)` says, without building or starting anything, what a stack's results depend on
(a key of the journal): `harness run --dry-run` needs no engine.

The runner owns the loop and imports this protocol, never a backend module; the CLI picks one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.errors import HarnessError
from harness.model import Finished, Lock, RunSpec, Stack


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A prepared stack. `ref`: what the journal records (an image tag, a venv's path); `lock`:
    what another version's wheel is fetched for (index, Python, platforms)."""

    stack: Stack
    ref: str
    identity: str
    lock: Lock
    status: str = "ready"  # how it was prepared: 'built', 'cache-hit', 'given' (--python)
    seconds: float = 0.0
    downloaded: int = 0  # bytes fetched to prepare it
    size: int = 0  # bytes it takes (an image's size; 0 where not measured)
    base: str = ""  # what it was built FROM, where that is a stand-in (the cuda flavour here)
    image: str = ""  # the image a run starts, where it is not `ref` (an environment's base)
    env: str = ""  # the host folder mounted read-only at /opt/stack (an environment)

    def to_json(self) -> dict[str, object]:
        return {
            "slug": self.stack.slug,
            "ref": self.ref,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "downloaded": self.downloaded,
            "size": self.size,
            "image": self.image or self.ref,
            "env": self.env,
        }


class NotRunnableHere(HarnessError):
    """A stack this backend cannot run on this machine (a cuda-flavour image with no registry):
    its cells are left out, not failed."""


class PrepareFailed(HarnessError):
    """A stack could not be prepared (its build failed): each of its cells is an errored
    result; the other stacks still run."""


class Backend(Protocol):
    name: str

    def identity(self, stack: Stack) -> str | None:
        """What this stack's results depend on, from files alone (None: unknown before
        preparing, e.g. no lock yet)."""
        ...

    def prepare(self, stack: Stack) -> Target: ...

    def run(self, spec: RunSpec, target: Target) -> Finished: ...

    def sweep(self) -> list[str]: ...
