"""The one way the harness starts a child process: timeout, and Ctrl-C -> terminate -> kill.

Ctrl-C reaches only the main thread: a child started by another thread is stopped the same way
when its `cancel` event is set, and `run` then raises `Cancelled`.

(nox's popen.py and tox's execute/api.py keep the same single choke point.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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


# ---------------------------------------------------------------- a forked helper


@dataclass
class Forked:
    """A forked child doing part of this process's work (`fork`); `names`: what it does."""

    pid: int
    names: tuple[str, ...]
    status: int | None = None  # its exit code, once reaped

    def wait(self, *, stop: bool = False) -> bool:
        """Whether its job finished; `stop`: this process is failing or being interrupted, so
        the child is stopped first (SIGTERM: it unwinds, and removes what it was writing)."""
        if self.status is None and stop:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
        while self.status is None:
            try:
                self.status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            except InterruptedError:
                continue
            except ChildProcessError:
                self.status = -1
        return self.status == 0


def fork(job: Callable[[], None], names: tuple[str, ...] = ()) -> Forked | None:
    """`job` in a forked child, which exits 0 when it returns and 1 on any exception (the parent
    then does the job itself, and meets what it raises). None where no child can be had: no
    fork here, or this process has other threads (a fork copies only this one: a lock another
    holds would never be released in the child). The child dies with this process (SIGKILL,
    PR_SET_PDEATHSIG) and unwinds on SIGTERM or SIGINT."""
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid:
        return Forked(pid, names)
    code = 1
    try:
        _die_with(parent)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _exit_on_signal)
        job()
        code = 0
    except BaseException:  # the parent does the job again, and raises what it raises
        pass
    finally:
        os._exit(code)  # no atexit handlers, no buffers flushed twice: the parent owns those


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(1)


def _die_with(parent: int) -> None:
    """SIGKILL to this child the moment its parent dies (Linux: prctl PR_SET_PDEATHSIG), so a
    SIGKILLed parent leaves no worker behind (its temp file, at worst, as the parent's own);
    elsewhere nothing. A parent that is interrupted stops its child itself (Forked.wait)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before prctl took effect
        raise SystemExit(1)
