"""Real machine faults for tests: a tiny tmpfs (a disk that fills up) and a Unix-socket proxy in
front of the Docker engine that a test closes in the middle of a run (an engine that is gone).

Nothing here is a mock: the harness meets ENOSPC from the kernel and a refused or reset socket.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

# Mount a tmpfs of $1 bytes on $2, run the rest, copy what the tmpfs holds to $3 (the namespace,
# and with it the tmpfs, goes when the command ends), exit with the command's status.
_IN_TMPFS = (
    'mount -t tmpfs -o size="$1" tmpfs "$2" || exit 97; d=$2; k=$3; shift 3; '
    '"$@"; rc=$?; cp -a "$d/." "$k/"; exit $rc'
)


def namespace() -> list[str]:
    """A private mount namespace: plain `unshare --mount` as root (CI), a user namespace with
    root mapped where the test runs unprivileged."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1): cannot make a private tmpfs")
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *user, "--mount", "--propagation", "private"]


def in_tmpfs(
    size: int,
    folder: Path,
    keep: Path,
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run argv with `folder` a fresh tmpfs of `size` bytes; afterwards `keep` holds a copy of
    what was in it."""
    folder.mkdir(parents=True, exist_ok=True)
    keep.mkdir(parents=True, exist_ok=True)
    cmd = [*namespace(), "sh", "-c", _IN_TMPFS, "sh", str(size), str(folder), str(keep), *argv]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if res.returncode == 97:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    return res


class SocketProxy:
    """unix://<path> forwarding to the engine's socket, until close(): then the listening socket
    is gone and every open connection is cut, as when dockerd dies."""

    def __init__(self, target: str, path: Path):
        self.target, self.path = target, path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(64)
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                if self.closed:
                    client.close()
                    upstream.close()
                    return
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            conns, self.conns = self.conns, []
        self.server.close()
        self.path.unlink(missing_ok=True)
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
