"""The subprocess choke point and host driver detection, for real on this machine."""

from __future__ import annotations

import shutil
import sys

import pytest

from harness import host, proc


def test_run_captures_output_and_status() -> None:
    res = proc.run([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], timeout=30)
    assert (res.returncode, res.stdout.strip(), res.timed_out) == (3, "out", False)


def test_a_missing_program_is_a_result() -> None:
    res = proc.run(["stackmatrix-no-such-program"], timeout=5)
    assert res.returncode is None
    assert "No such file" in res.stderr


def test_timeout_stops_the_child() -> None:
    res = proc.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert res.timed_out
    assert res.returncode is not None and res.returncode < 0
    assert res.seconds < 10


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this host has a GPU driver")
def test_no_driver_on_a_machine_without_a_gpu() -> None:
    found = host.detect_driver()
    assert found.version is None
    assert found.origin == "none"
