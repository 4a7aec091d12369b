"""An engine that stops answering (its socket open, no reply) is detected within a minute, at
the start of a command and while a cell runs: the cell in flight is journaled `interrupted` and
the run exits 3. The engine is the real one behind a Unix-socket proxy that can be frozen: from
then on it swallows every request and answers nothing, its connections left open."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.backends.engine import Engine, engine_host
from harness.journal import records
from tests.conftest import ROOT, harness_build
from tests.docker.test_machine_faults import containers_of

pytestmark = pytest.mark.slow
STACK = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"


class Proxy:
    """A Unix socket that forwards to the engine's until frozen, then answers nothing."""

    def __init__(self, path: Path, upstream: str):
        self.path, self.upstream = path, upstream
        self.frozen, self.stopping = threading.Event(), threading.Event()
        self.held: list[socket.socket] = []  # every socket it made or took, closed at the end
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(64)
        self.server.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.held.append(conn)
            if self.frozen.is_set():
                continue  # open, and never a reply
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.held.append(up)
            up.connect(self.upstream)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        a.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                data = a.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            if self.frozen.is_set():
                continue  # swallowed: whoever sent it waits for an answer that never comes
            try:
                b.sendall(data)
            except OSError:
                break
        if not self.frozen.is_set():
            for end in (a, b):
                end.close()

    def close(self) -> None:
        self.stopping.set()
        self.server.close()
        for s in self.held:
            s.close()


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[Proxy]:
    upstream = engine_host(dict(os.environ)).removeprefix("unix://")
    p = Proxy(tmp_path / "docker.sock", upstream)
    yield p
    p.close()


def harness(proxy: Proxy, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DOCKER_HOST": f"unix://{proxy.path}"}
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_silent_engine_at_the_start_is_exit_3_within_a_minute(proxy: Proxy) -> None:
    proxy.frozen.set()
    t = time.monotonic()
    child = harness(proxy, "build", "--stack", STACK)
    _, stderr = child.communicate(timeout=120)
    took = time.monotonic() - t
    assert child.returncode == 3, stderr[-2000:]
    assert took < 60, took
    assert "cannot reach the Docker engine" in stderr and "no answer in 15 s" in stderr
    assert "Traceback" not in stderr


def test_an_engine_that_stops_answering_mid_run_interrupts_the_cell_within_a_minute(
    proxy: Proxy, docker_client: object, tmp_path: Path
) -> None:
    harness_build("--stack", STACK)  # its environment made (a cache hit) over the real socket
    results = tmp_path / "results"
    child = harness(proxy, "run", "--results", str(results), "--jobs", "1", "--cell", f"{STACK}/*")
    try:
        deadline = time.monotonic() + 300
        while len(records(results)) < 2 if results.exists() else True:
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        proxy.frozen.set()
        t = time.monotonic()
        _, stderr = child.communicate(timeout=180)
        took = time.monotonic() - t
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == 3, stderr[-3000:]
    assert took < 60, took
    assert "the Docker engine stopped answering" in stderr and "Traceback" not in stderr
    recs = records(results)
    assert recs[-1]["status"] == "interrupted", recs[-1]
    assert len({r["cell"] for r in recs}) == len(recs)
    # What it could not remove, the next run's sweep (on the answering engine) does.
    engine = Engine(docker_client)  # type: ignore[arg-type]
    engine.sweep()
    assert containers_of(docker_client, child.pid) == []
