"""Same answers on a saturated machine (issue 24): real concurrent `harness` processes beside real
busy loops, compared with the answer of one process on its own. No check of the harness may
depend on how fast the machine is (the catalog's old wall-clock budget refused the shipped
catalog on a busy 2-core runner: 6 of 16 diagnoses exited 2)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, harness_cli

LOG = ROOT / "tests/fixtures/diagnose/cudart-missing.txt"
BUSY = 4
DIAGNOSES = 16


@pytest.fixture
def busy_cores() -> Iterator[list[int]]:
    """BUSY processes spinning on the CPU until the test ends."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(BUSY)
    ]
    try:
        yield [p.pid for p in loops]
    finally:
        for p in loops:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def concurrently(argvs: list[list[str]], cwd: Path = ROOT) -> list[tuple[int, str, str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "harness", *argv],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=900)
        out.append((p.returncode, stdout, stderr))
    return out


def test_diagnoses_beside_busy_loops_agree(busy_cores: list[int]) -> None:
    alone = harness_cli("diagnose", str(LOG), "--format", "json", timeout=300)
    assert alone.returncode == 0, alone.stderr
    want = json.loads(alone.stdout)["signature"]
    assert all(Path(f"/proc/{pid}").exists() for pid in busy_cores)  # still spinning
    runs = concurrently([["diagnose", str(LOG), "--format", "json"]] * DIAGNOSES)
    codes = [rc for rc, _, _ in runs]
    assert codes == [0] * DIAGNOSES, [err for rc, _, err in runs if rc]
    assert {json.loads(out)["signature"] for _, out, _ in runs} == {want}


def test_plan_dry_run_and_report_beside_busy_loops_agree(
    busy_cores: list[int], tmp_path: Path
) -> None:
    report = ["report", "--results", "reports/results", "--allow-drift", "--allow-partial"]
    argvs = [
        ["plan", "--format", "json"],
        ["run", "--dry-run"],
        [*report, "--out", str(tmp_path / "alone")],
    ]
    alone = concurrently(argvs[:1]) + concurrently(argvs[1:2]) + concurrently(argvs[2:])
    # each loaded report its own folder: two writing one folder at once would each find the
    # other's report.json as "the previous report" or not, as the race falls
    loaded = concurrently(
        [
            *[argvs[0], argvs[1], [*report, "--out", str(tmp_path / "loaded0")]],
            *[argvs[0], argvs[1], [*report, "--out", str(tmp_path / "loaded1")]],
        ]
    )
    for i, (rc, out, err) in enumerate(loaded):
        want_rc, want_out, _ = alone[i % 3]
        assert rc == want_rc, err
        assert re.sub(r"loaded[01]", "alone", out) == want_out, argvs[i % 3]
    for name in ("COMPATIBILITY.md", "FAULTS.md", "SIGNATURES.md", "results.csv"):
        for folder in ("loaded0", "loaded1"):
            got = (tmp_path / folder / name).read_bytes()
            assert got == (tmp_path / "alone" / name).read_bytes(), (folder, name)
