"""What a failed build tells the user: the step, why (exit, OOM, timeout, disk full), the tail."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
import urllib3

from harness.backends.engine import build_failure, engine_fault, storage_note
from harness.model import DockerfilePlan, Finished

PLAN = DockerfilePlan(base="b", runs=("sh install.sh",), changes=())


@pytest.mark.parametrize(
    ("done", "words"),
    [
        (
            Finished(exit_code=1, output="+ a\n+ pip install x\nERROR: boom\n", oom_killed=False),
            "failed with exit status 1 at step: pip install x",
        ),
        (
            Finished(exit_code=137, output="+ pip install x\n", oom_killed=True),
            "was killed for memory (OOM)",
        ),
        (Finished(exit_code=None, output="", oom_killed=False), "timed out at step: sh install.sh"),
        (
            Finished(
                exit_code=1,
                output="+ cp\nOSError: [Errno 28] No space left on device\n",
                oom_killed=False,
            ),
            "the disk is full",
        ),
    ],
)
def test_build_failure(done: Finished, words: str) -> None:
    err = build_failure("stackmatrix/stack:x", PLAN, done, Path("reports/logs/x.log"))
    assert words in err.message
    assert err.help is not None and err.help.startswith("the full log is in reports/logs/x.log")
    # A full disk is the machine's fault, not the stack's: exit 3, and the run stops.
    assert err.exit_code == (3 if "disk is full" in words else 1)


def test_only_the_last_30_lines() -> None:
    out = "".join(f"line {i}\n" for i in range(100))
    err = build_failure("r", PLAN, Finished(exit_code=2, output=out, oom_killed=False), Path("l"))
    assert "line 69" not in err.message and "line 70" in err.message and "line 99" in err.message


def test_a_lost_engine_is_a_machine_fault_in_the_systems_words() -> None:
    inner = ConnectionRefusedError(111, "Connection refused")
    lost = requests.exceptions.ConnectionError(
        urllib3.exceptions.ProtocolError("Connection aborted.", inner)
    )
    fault = engine_fault(lost, "unix:///x.sock")
    assert fault is not None and fault.exit_code == 3
    words = "the Docker engine stopped answering (unix:///x.sock: Connection refused)"
    assert fault.message == words
    assert engine_fault(ValueError("a harness bug"), "unix:///x.sock") is None


def test_a_slow_storage_driver_gets_a_note_and_overlay2_none() -> None:
    for driver in ("overlay2", "btrfs", "zfs", "", "windowsfilter"):
        assert storage_note(driver) is None
    fuse = storage_note("fuse-overlayfs")
    assert fuse is not None and fuse.startswith("the engine stores layers with fuse-overlayfs:")
    assert '"storage-driver": "overlay2"' in fuse and "/etc/docker/daemon.json" in fuse
    vfs = storage_note("vfs")
    assert vfs is not None and "copies every layer in full" in vfs
