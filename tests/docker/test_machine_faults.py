"""When the machine fails under `harness run`, for real: the engine goes away mid-run (a Unix
socket proxy in front of it, closed), the results disk fills up (a tiny tmpfs), the harness is
killed with -9 at a moment Hypothesis picks. Each time: one error line and a help line, exit 3,
no traceback, no DRIFT; then a run on the healthy machine finishes the job with every cell
exactly once and no container left."""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.journal import FINAL, records
from tests.conftest import ROOT
from tests.faultkit import SocketProxy, in_tmpfs

pytestmark = pytest.mark.slow
STACK = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"  # a smoke stack whose image exists
MISSING = [f"{STACK}/missing-*"]  # 4 quick cells
SIX = [*MISSING, f"{STACK}/no-*"]  # and 2 more


def run_argv(results: Path, cells: list[str]) -> list[str]:
    argv = [sys.executable, "-m", "harness", "run", "--results", str(results), "--driver", "none"]
    return argv + [w for c in cells for w in ("--cell", c)]


def run(results: Path, cells: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        run_argv(results, cells), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def finals(results: Path) -> collections.Counter[str]:
    return collections.Counter(str(r["cell"]) for r in records(results) if r["status"] in FINAL)


def containers_of(client: object, pid: int) -> list[str]:
    """Containers made by the harness process `pid` (others' tests share the engine)."""
    listed = client.containers.list(  # type: ignore[attr-defined]
        all=True, filters={"name": "stackmatrix-"}, ignore_removed=True
    )
    return [str(c.name) for c in listed if f"-{pid}-" in str(c.name)]


def assert_one_clear_line(stderr: str, error: str, help: str) -> None:
    assert "Traceback" not in stderr and "DRIFT" not in stderr, stderr[-3000:]
    last, hint = stderr.strip().splitlines()[-2:]
    assert re.fullmatch(error, last), last
    assert hint.startswith(help), hint


def test_the_engine_gone_mid_run_stops_it_and_the_next_run_finishes(
    docker_client: object, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    assert run(results, [f"{STACK}/missing-cudart"]).returncode == 0  # the image is there
    shutil.rmtree(results)
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    proxy = SocketProxy(host.removeprefix("unix://"), tmp_path / "docker.sock")
    child = subprocess.Popen(
        run_argv(results, MISSING),
        cwd=ROOT,
        env={**os.environ, "DOCKER_HOST": proxy.url},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (results.exists() and records(results)):
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.1)
        proxy.close()  # the engine is gone, a cell in flight
        _, stderr = child.communicate(timeout=120)
    finally:
        child.kill()
        proxy.close()
    assert child.returncode == 3, stderr[-3000:]
    assert_one_clear_line(
        stderr,
        rf"error: the Docker engine stopped answering after [12] of 4 results "
        rf"\({re.escape(proxy.url)}: .+\)",
        "help: start it, then run the same command: finished cells are kept",
    )
    # With two cells at a time the other one may land its own (final) result just after the
    # interrupted one: a cell in flight is interrupted, and nothing is drift.
    kept = records(results)
    assert any(r["status"] == "interrupted" for r in kept), [r["status"] for r in kept]
    assert not any(r["drift"] for r in kept)
    # The healthy engine: the rest runs, each cell once, and nothing of the lost run is left.
    again = run(results, MISSING)
    assert again.returncode == 0, again.stderr[-3000:]
    assert finals(results) == dict.fromkeys((c for c in finals(results)), 1)
    assert len(finals(results)) == 4
    assert containers_of(docker_client, child.pid) == []


def test_a_full_results_disk_stops_the_run_and_the_next_run_finishes(
    docker_client: object, tmp_path: Path
) -> None:
    results, kept = tmp_path / "results", tmp_path / "kept"
    # 3 pages: plan.json takes 2, the journal gets 1 (4 of the 6 results).
    res = in_tmpfs(3 * 4096, results, kept, run_argv(results, SIX), cwd=ROOT)
    assert res.returncode == 3, res.stderr[-3000:]
    journal = results / "journal.jsonl"
    assert_one_clear_line(
        res.stderr,
        rf"error: the disk is full: cannot write {re.escape(str(journal))} after [1-5] of 6 "
        r"results \(needs [0-9,]+ bytes, [0-9,]+ bytes free there\)",
        "help: free space there",
    )
    data = (kept / "journal.jsonl").read_bytes()
    assert data.endswith(b"\n") and 0 < len(records(kept)) < 6, "complete lines only"
    again = run(kept, SIX)  # the same results, on a disk with room
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(finals(kept).values()) == [1] * 6


@settings(
    max_examples=3,
    deadline=None,
    database=None,
    phases=[Phase.generate],  # no shrinking: each example is a real run
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(delay=st.floats(min_value=0.3, max_value=6.0))
def test_killed_with_9_at_any_point_the_next_run_finishes_each_cell_once(
    docker_client: object, delay: float
) -> None:
    cells = [f"{STACK}/missing-cublas", f"{STACK}/missing-cudart"]  # 2 quick cells
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        child = subprocess.Popen(
            run_argv(results, cells), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        again = run(results, cells)
        assert again.returncode == 0, again.stderr[-3000:]
        assert sorted(finals(results).values()) == [1, 1]
        assert containers_of(docker_client, child.pid) == []
        assert not [p for p in results.iterdir() if p.name.startswith(".")], "no temp file"
