"""The one way the harness starts a child process: timeout, and Ctrl-C -> terminate -> kill.

(nox's popen.py and tox's execute/api.py keep the same single choke point.)
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping, Sequence

from harness.model import ProcResult

GRACE_SECONDS = 5.0


def run(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> ProcResult:
    """Run argv, capture its text output. A missing program is a result (returncode None)."""
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
        out, err = _stop(proc)
    except BaseException:  # Ctrl-C: stop the child before letting the interrupt through
        _stop(proc)
        raise
    return ProcResult(
        argv=tuple(argv),
        returncode=proc.returncode,
        stdout=out,
        stderr=err,
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.terminate()
    try:
        return proc.communicate(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()
