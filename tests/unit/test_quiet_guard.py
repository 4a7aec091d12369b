"""ci/quiet_guard.py: a silent command gets our lines, its own output passes through in order,
and its exit status is the script's."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

GUARD = str(ROOT / "ci" / "quiet_guard.py")


def guard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, GUARD, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_silent_spell_gets_a_line_and_the_exit_status_is_the_commands() -> None:
    done = guard(
        "--every", "0.4", "unpacking", "--", "sh", "-c", "echo a; sleep 1.5; echo b; exit 3"
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 3
    assert lines[0] == "a" and lines[-1] == "b"
    assert len(lines) >= 4  # at least two of ours in 1.5 s of silence
    assert all(ln.startswith("unpacking: ") and ln.endswith(" s") for ln in lines[1:-1])


def test_a_talkative_command_gets_no_extra_line() -> None:
    script = "for i in 1 2 3 4 5 6; do echo $i; sleep 0.2; done"
    done = guard("--every", "1", "x", "--", "sh", "-c", script)
    assert (done.returncode, done.stdout.split()) == (0, ["1", "2", "3", "4", "5", "6"])


def test_a_bad_call_is_exit_2_with_the_usage() -> None:
    for args in (("x",), ("x", "cmd"), ("--every", "zero", "x", "--", "true")):
        done = guard(*args)
        assert done.returncode == 2 and "usage: quiet_guard.py" in done.stderr
