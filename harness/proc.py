"""The one way the harness starts a child process: timeout, and Ctrl-C -> terminate -> kill.

Ctrl-C reaches only the main thread: a child started by another thread is stopped the same way
when its `cancel` event is set, and `run` then raises `Cancelled`.

(nox's popen.py and tox's execute/api.py keep the same single choke point.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from harness.model import ProcResult

GRACE_SECONDS = 5.0
POLL_SECONDS = 0.2  # how often a child with a `cancel` event checks it
CAPTURE_LIMIT = 16 << 20  # bytes kept of each of stdout and stderr: the head and the tail
_CHUNK = 64 << 10


class _Capture(threading.Thread):
    """Drains one pipe to its end, keeping the first and the last `limit // 2` bytes (a child
    that prints without end, `yes`, costs no memory past that)."""

    def __init__(self, pipe: IO[bytes], limit: int):
        super().__init__(daemon=True)
        self.pipe, self.half = pipe, limit // 2
        self.head, self.tail, self.dropped = bytearray(), bytearray(), 0

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := self.pipe.read1(_CHUNK):  # type: ignore[attr-defined]
                room = self.half - len(self.head)
                self.head += chunk[:room]
                self.tail += chunk[max(room, 0) :]
                if len(self.tail) > self.half:
                    self.dropped += len(self.tail) - self.half
                    del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        cut = f"\n[... {self.dropped} bytes cut ...]\n".encode() if self.dropped else b""
        text = bytes(self.head + cut + self.tail).decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")  # as text=True reads it


class Cancelled(Exception):
    """A child was stopped because its `cancel` event was set (the run that wanted it ended)."""


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (finds what a harness killed with -9 left)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    group: bool = False,
    capture_limit: int = CAPTURE_LIMIT,
    cancel: threading.Event | None = None,
) -> ProcResult:
    """Run argv, capture its text output. A missing program is a result (returncode None).

    `group`: the child leads its own session and stopping it signals the whole group, so what it
    started (a container's worth of processes, without the container) goes too, and a grandchild
    holding the output pipe cannot keep us waiting after the timeout. `cancel`: once it is set,
    the child is stopped as on Ctrl-C and `Cancelled` is raised (it is checked every
    POLL_SECONDS; a set event starts nothing)."""
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{argv[0]}: not started, its run was cancelled")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            start_new_session=group,
        )
    except OSError as exc:
        return ProcResult(
            argv=tuple(argv),
            returncode=None,
            stdout="",
            stderr=str(exc),
            seconds=time.monotonic() - start,
        )
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_Capture(proc.stdout, capture_limit), _Capture(proc.stderr, capture_limit)]
    for r in readers:
        r.start()
    timed_out = cancelled = False
    try:
        if cancel is None:
            proc.wait(timeout=timeout)
        else:
            cancelled = _wait(proc, timeout, cancel)
            if cancelled:
                _stop(proc, group)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop(proc, group)
    except BaseException:  # Ctrl-C: stop the child before letting the interrupt through
        _stop(proc, group)
        raise
    finally:
        for r in readers:  # a grandchild holding the pipe open must not keep us here
            r.join(GRACE_SECONDS)
        for pipe in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
    if cancelled:
        raise Cancelled(f"{argv[0]}: stopped, its run was cancelled")
    out, err = readers[0].text(), readers[1].text()
    return ProcResult(
        argv=tuple(argv),
        returncode=proc.returncode,
        stdout=out,
        stderr=err,
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )


def _wait(proc: subprocess.Popen[bytes], timeout: float, cancel: threading.Event) -> bool:
    """Wait for the child as `proc.wait(timeout)` does, or until `cancel` is set: whether it was."""
    deadline = time.monotonic() + timeout
    while not cancel.is_set():
        left = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(0.0, min(POLL_SECONDS, left)))
        except subprocess.TimeoutExpired:
            if left <= POLL_SECONDS:
                raise
            continue
        return False
    return True


def _stop(proc: subprocess.Popen[bytes], group: bool = False) -> None:
    _signal(proc, signal.SIGTERM, group)
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL, group)
        proc.wait()


def _signal(proc: subprocess.Popen[bytes], sig: int, group: bool) -> None:
    if not group:
        proc.send_signal(sig)
        return
    # The group is named by the leader's pid (start_new_session); not yet reaped, it is ours.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
