"""Hostile cases of issue 24, each through the real command line: a clear error with exit 2, or
correct behaviour; no traceback, no escape sequence of an interpreter on the terminal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, TORCH_STACK, harness_cli
from tests.unit.test_linear import checkout_copy

RAW = ("\x1b", "\x07", "\x9b", "\x90", "\x9d")  # ESC, BEL, and the C1 CSI, DCS, OSC


def test_render_out_an_existing_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "Dockerfile.mine"
    target.write_text("mine\n")
    res = harness_cli("render", TORCH_STACK.slug, "--out", str(target), timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[0] == f"error: --out {target} is a file, not a folder"
    assert "Traceback" not in res.stderr
    assert target.read_text() == "mine\n"  # left whole
    res = harness_cli("render", TORCH_STACK.slug, "--out", str(target / "sub"), timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    res = harness_cli("render", TORCH_STACK.slug, "--out", str(tmp_path / "ctx"), timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "ctx" / "Dockerfile").is_file()


EVIL = (
    "#!/bin/sh\n"
    # OSC 0 (window title), OSC 52 (write the clipboard), CSI colour, DCS, a C1 CSI in UTF-8
    "printf '\\033]0;pwned\\007\\033]52;c;ZXZpbA==\\007\\033[31mred\\033P+q\\033\\\\ \\302\\233"
    "2J\\n'\n"
    "printf '\\033]52;c;ZXZpbA==\\007 on stderr \\033[2J\\n' >&2\n"
    "exit 1\n"
)


def test_doctor_never_passes_an_interpreters_escapes_to_the_terminal(tmp_path: Path) -> None:
    evil = tmp_path / "python"
    evil.write_text(EVIL)
    evil.chmod(0o755)
    for fmt in ("text", "json"):
        res = harness_cli("doctor", "--python", str(evil), "--format", fmt, timeout=300)
        assert res.returncode == 1, res.stderr  # a finding: the interpreter cannot be probed
        assert "cannot probe" in res.stdout
        for raw in RAW:
            assert raw not in res.stdout and raw not in res.stderr, (fmt, raw, res.stdout)


def test_doctor_python_a_folder_is_bad_input(tmp_path: Path) -> None:
    res = harness_cli("doctor", "--python", str(tmp_path), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert (
        f"error: --python {tmp_path} is not an executable interpreter (it is a folder)"
        in (res.stderr.splitlines()[0])
    )


SMOKE_FW = 'framework: {torch: ["2.15.0"], tensorflow: ["2.21.0"]}'
SMOKE_DRIVERS = 'driver: [none, stub, "470.256.02", "535.261.03", "550.163.01"]\n'


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (SMOKE_FW, "framework: {}", "profiles.smoke.select.framework must not be empty"),
        (
            f"{SMOKE_DRIVERS}    driver_scenarios: [baseline]",
            f"{SMOKE_DRIVERS}    driver_scenarios: [baseline]\n    scenarios: []",
            "profiles.smoke.scenarios must not be empty",
        ),
        (
            f'{SMOKE_FW}\n      python: ["3.11"]\n      base: [offline]\n      '
            f"{SMOKE_DRIVERS}    driver_scenarios: [baseline]",
            'framework: {torch: ["2.15.0"]}\n      python: ["3.11"]\n      base: [offline]\n'
            "      driver: [none]\n    scenarios: [numpy-abi-mismatch]",
            "profile 'smoke' selects no cell: its scenarios (numpy-abi-mismatch) apply to none "
            "of its frameworks (torch)",
        ),
    ],
)
@pytest.mark.parametrize("command", [("plan",), ("run", "--dry-run")])
def test_a_profile_that_selects_nothing_is_an_error(
    tmp_path: Path, old: str, new: str, message: str, command: tuple[str, ...]
) -> None:
    matrix = checkout_copy(tmp_path)
    text = (ROOT / "matrix.yaml").read_text()
    assert text.count(old) == 1
    matrix.write_text(text.replace(old, new))
    res = harness_cli(*command, "--matrix", str(matrix), "--profile", "smoke", timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"{matrix}:") and f": error: {message}" in first, res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", "--profile", "\x1b]0;pwned\x07"),
        ("diagnose", "--profile", "\x1b[31mred\x9b2J", str(ROOT / "tests/fixtures/logs")),
        ("render", "\x1b]52;c;ZXZpbA==\x07"),
        ("reproduce", "x/\x1b[2J"),
    ],
)
def test_an_error_never_sends_what_the_user_gave_raw_to_the_terminal(argv: tuple[str, ...]) -> None:
    """A profile, stack or cell named with escape sequences is named back in the error with
    them written as escapes (\\x1b), whatever the command."""
    res = harness_cli(*argv, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    for raw in RAW:
        assert raw not in res.stdout and raw not in res.stderr, (argv, raw, res.stderr)
    assert "\\x1b" in res.stderr


def test_drivers_checks_the_profile_it_is_given() -> None:
    res = harness_cli("drivers", "--profile", "nope", timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "unknown profile 'nope'" in res.stderr and "Traceback" not in res.stderr
    res = harness_cli("drivers", "--profile", "releases", timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("branch ")


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "--dry-run"),
        ("run", "--backend", "local"),
        ("reproduce", f"{TORCH_STACK.slug}/baseline"),
    ],
)
def test_results_that_is_a_file_is_bad_input_before_anything_runs(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    """--results names a file: exit 2 saying so (it was a FileExistsError's traceback when
    plan.json was written into it, before the first cell), and the file is left whole."""
    target = tmp_path / "journal-here"
    target.write_text("mine\n")
    res = harness_cli(*argv, "--results", str(target), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"--results {target} is a file, not a folder" in res.stderr
    assert "Traceback" not in res.stderr
    assert target.read_text() == "mine\n"


@pytest.mark.parametrize("command", [("build",), ("run", "--dry-run"), ("reproduce", "x/baseline")])
def test_a_python_that_is_no_file_is_bad_input_for_the_local_backend(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """--python naming nothing, or a folder: exit 2, as doctor says it (it was exit 3, "could
    not be inspected", as for an interpreter that fails)."""
    for python in (tmp_path / "none", tmp_path):
        res = harness_cli(*command, "--backend", "local", "--python", str(python), timeout=120)
        assert res.returncode == 2, res.stdout + res.stderr
        assert f"--python {python} is not an executable interpreter" in res.stderr
        assert "Traceback" not in res.stderr


def test_a_python_named_bare_is_found_on_path() -> None:
    """`--python python3` is the interpreter a shell would run (PATH), not ./python3."""
    res = harness_cli("doctor", "--python", "python3", "--format", "json", timeout=300)
    assert res.returncode in (0, 1), res.stderr  # a report (1: something will fail here)
    assert "not an executable interpreter" not in res.stderr
    assert json.loads(res.stdout)["interpreter"]["path"] == shutil.which("python3")


@pytest.mark.parametrize(
    "host", ["tcp://256.1.1.1:99999", "tcp://[::1", "garbage", "tcp://h", "\x1b]0;pwned\x07"]
)
def test_a_docker_host_that_is_no_address_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    """DOCKER_HOST that docker-py cannot parse: exit 2 naming it (escaped), no traceback (it was
    urllib's ValueError or docker-py's DockerException); one it parses but cannot reach stays
    the engine's fault (exit 3)."""
    monkeypatch.setenv("DOCKER_HOST", host)
    cell = f"{TORCH_STACK.slug}/baseline"
    res = harness_cli("run", "--cell", cell, "--results", str(tmp_path / "r"), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "is not an address the Docker client can use" in res.stderr
    assert "Traceback" not in res.stderr
    for raw in RAW:
        assert raw not in res.stderr
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    res = harness_cli("run", "--cell", cell, "--results", str(tmp_path / "r"), timeout=120)
    assert res.returncode == 3 and "cannot reach the Docker engine" in res.stderr, res.stderr
