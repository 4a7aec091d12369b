"""The one way the harness starts a child process: timeout, and Ctrl-C -> terminate -> kill.

(nox's popen.py and tox's execute/api.py keep the same single choke point.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from harness.model import ProcResult

GRACE_SECONDS = 5.0


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
) -> ProcResult:
    """Run argv, capture its text output. A missing program is a result (returncode None).

    `group`: the child leads its own session and stopping it signals the whole group, so what it
    started (a container's worth of processes, without the container) goes too, and a grandchild
    holding the output pipe cannot keep us waiting after the timeout."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
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
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        out, err = _stop(proc, group)
    except BaseException:  # Ctrl-C: stop the child before letting the interrupt through
        _stop(proc, group)
        raise
    return ProcResult(
        argv=tuple(argv),
        returncode=proc.returncode,
        stdout=out,
        stderr=err,
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )


def _stop(proc: subprocess.Popen[str], group: bool = False) -> tuple[str, str]:
    _signal(proc, signal.SIGTERM, group)
    try:
        return proc.communicate(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL, group)
        return proc.communicate()


def _signal(proc: subprocess.Popen[str], sig: int, group: bool) -> None:
    if not group:
        proc.send_signal(sig)
        return
    # The group is named by the leader's pid (start_new_session); not yet reaped, it is ours.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
