"""`harness run --jobs 2` for real, on smoke stacks whose images exist: two cells run at once and
every cell lands once with its expected verdict; Ctrl-C (or SIGTERM) while two cells run kills
both containers, journals both `interrupted`, exits 130 as a run of one at a time does, leaves no
container, and the same command then finishes the rest."""

from __future__ import annotations

import collections
import fnmatch
import json
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from harness.journal import FINAL, records
from tests.conftest import ROOT, harness_build
from tests.docker.test_machine_faults import containers_of

pytestmark = pytest.mark.slow
STACK = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"
TWO_STACKS = ["torch-*/missing-cud*"]  # 3 quick cells on each of the two torch stacks
SIX = [f"{STACK}/missing-*", f"{STACK}/no-*"]  # one stack's 6 quick cells
# Every cell of one stack (21, 2-4 s each on its environment): time to catch two in flight.
EVERY = [f"{STACK}/*"]
# ... as many as the smoke plan has (tests/fixtures/plan/smoke.json, which test_plan keeps true)
EVERY_CELLS = sum(
    fnmatch.fnmatchcase(c["id"], EVERY[0])
    for c in json.loads((ROOT / "tests/fixtures/plan/smoke.json").read_text())["cells"]
)
# `python -m harness` as a terminal starts it: Ctrl-C raises KeyboardInterrupt, whatever SIGINT
# disposition the test runner's process passed on (a background job inherits it ignored).
CHILD = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from harness.cli import main; sys.exit(main())"
)


def run_argv(results: Path, cells: list[str], jobs: int = 2) -> list[str]:
    argv = [sys.executable, "-c", CHILD, "run", "--results", str(results), "--driver", "none"]
    return [*argv, "--jobs", str(jobs), *(w for c in cells for w in ("--cell", c))]


def run(results: Path, cells: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        run_argv(results, cells), cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )


def span(record: dict[str, object]) -> tuple[datetime, datetime]:
    start = datetime.fromisoformat(str(record["started"]))
    return start, start + timedelta(seconds=float(record["seconds"]))  # type: ignore[arg-type]


def test_two_cells_at_once_each_cell_once_with_its_verdict(
    docker_client: object, tmp_path: Path
) -> None:
    harness_build("--stack", "torch-*")  # a cache hit: the images exist
    results = tmp_path / "results"
    res = run(results, TWO_STACKS)
    assert res.returncode == 0, res.stderr[-4000:]
    recs = records(results)
    assert collections.Counter(str(r["cell"]) for r in recs) == dict.fromkeys(
        (str(r["cell"]) for r in recs), 1
    )
    assert len(recs) == 6 and {r["status"] for r in recs} <= FINAL
    assert not any(r["drift"] for r in recs), "each verdict is the expected one"
    assert "6 cells: 6 run, 0 cache hits, 0 drift" in res.stderr
    numbered = [ln for ln in res.stderr.splitlines() if ln.startswith("[run ") and " ok" in ln]
    assert [ln.split("]")[0] for ln in numbered] == [f"[run {i}/6" for i in range(1, 7)]
    assert "::group::" not in res.stderr and "Traceback" not in res.stderr
    spans = sorted(span(r) for r in recs)
    overlap = max(
        min(a[1], b[1]) - max(a[0], b[0]) for i, a in enumerate(spans) for b in spans[i + 1 :]
    )
    # (on environments these cells take 1-2 s each: half a second of overlap is two at once)
    assert overlap > timedelta(seconds=0.5), "two cells ran at the same time"


def running(client: object, pid: int) -> list[str]:
    """The running containers of harness process `pid` (one list call: no race with a removal)."""
    listed = client.api.containers(filters={"name": "stackmatrix-run-", "status": "running"})  # type: ignore[attr-defined]
    names = (str(n).lstrip("/") for c in listed for n in c["Names"])
    return sorted(n for n in names if f"-{pid}-" in n)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_while_two_cells_run(
    docker_client: object, tmp_path: Path, sig: signal.Signals
) -> None:
    harness_build("--stack", STACK)
    results = tmp_path / "results"
    child = subprocess.Popen(
        run_argv(results, EVERY),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while True:  # two cells in flight, and still the same two a second later
            assert child.poll() is None and time.monotonic() < deadline
            two = running(docker_client, child.pid)
            if len(two) == 2:
                time.sleep(1)
                if running(docker_client, child.pid) == two:
                    break
            time.sleep(0.2)
        child.send_signal(sig)
        _, stderr = child.communicate(timeout=120)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 130, stderr[-3000:]
    assert stderr.rstrip().endswith("interrupted") and "Traceback" not in stderr
    assert containers_of(docker_client, child.pid) == [], "every container was removed"
    recs = records(results)
    landed = len(recs) - 2
    assert [r["status"] for r in recs[landed:]] == ["interrupted", "interrupted"], "in flight"
    assert all(r["status"] in FINAL for r in recs[:landed]), "the cells that landed before"
    assert len({r["cell"] for r in recs}) == len(recs), "each journaled once"
    assert not any(r["drift"] for r in recs), "no verdict from a killed container"
    assert not [p for p in results.iterdir() if p.name.startswith(".")], "no temp file"
    # The same command finishes the job: every cell once with a final result.
    again = run(results, EVERY)
    assert again.returncode == 0, again.stderr[-3000:]
    finals = collections.Counter(str(r["cell"]) for r in records(results) if r["status"] in FINAL)
    assert sorted(finals.values()) == [1] * EVERY_CELLS
    want = f"{EVERY_CELLS} cells: {EVERY_CELLS - landed} run, {landed} cache hits, 0 drift"
    assert want in again.stderr
