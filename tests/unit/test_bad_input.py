"""Every bad input gets one `file:line:col: error:` line and a `help:` line, exit 2, no traceback.

One fixture per case (tests/fixtures/matrix/bad_*.yaml) with its exact message (bad_*.expected).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import FIXTURES, ROOT
from tests.unit.golden import check_golden

MATRIX = FIXTURES / "matrix"
BAD_FILES = sorted(p.name for p in MATRIX.glob("bad_*.yaml"))

# Command-line mistakes on a good matrix: (case, extra argv).
BAD_ARGS = [
    ("shard_zero", ["--shard", "0/2"]),
    ("shard_past_end", ["--shard", "3/2"]),
    ("shard_not_numbers", ["--shard=a/b"]),
    ("driver_not_a_version", ["--driver", "latest"]),
    ("unknown_profile", ["--profile", "smok"]),
]


def run_plan(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    monkeypatch.chdir(ROOT)
    code = main(["plan", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_one_error(code: int, out: str, err: str) -> None:
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].count(": error: ") == 1
    assert lines[1].startswith("help: ")


@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_matrix_file(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rel = (MATRIX / name).relative_to(ROOT).as_posix()
    code, out, err = run_plan(["--matrix", rel, "--driver", "none"], capsys, monkeypatch)
    assert_one_error(code, out, err)
    if name not in ("bad_empty_file.yaml",):
        assert err.startswith(f"{rel}:"), "the error names the file, line and column"
    check_golden(MATRIX / name.replace(".yaml", ".expected"), err)


@pytest.mark.parametrize(("case", "argv"), BAD_ARGS, ids=[c for c, _ in BAD_ARGS])
def test_bad_command_line(
    case: str, argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rel = (MATRIX / "ok_minimal.yaml").relative_to(ROOT).as_posix()
    driver = [] if "--driver" in argv else ["--driver", "none"]
    code, out, err = run_plan(["--matrix", rel, *driver, *argv], capsys, monkeypatch)
    assert_one_error(code, out, err)
    check_golden(MATRIX / f"args_{case}.expected", err)


def test_missing_matrix_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_plan(["--matrix", "no/such/matrix.yaml"], capsys, monkeypatch)
    assert code == 2
    assert out == ""
    assert err == (
        "error: no such file: no/such/matrix.yaml\nhelp: pass an existing file with --matrix PATH\n"
    )


def test_traceback_flag_shows_the_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.errors import ConfigError

    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError):
        main(["--traceback", "plan", "--matrix", "no/such.yaml"])


def test_every_bad_fixture_has_its_expected_text() -> None:
    for name in BAD_FILES:
        assert (MATRIX / name.replace(".yaml", ".expected")).exists(), name
    assert len(BAD_FILES) >= 12


def test_fixture_paths_are_relative() -> None:
    for p in MATRIX.glob("*.yaml"):
        assert str(Path("/work")) not in p.read_text(encoding="utf-8")


def test_require_gpu_without_one_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import host
    from harness.model import Machine

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(host, "machine", lambda: Machine(driver=None, gpu=None))
    results = tmp_path / "results"
    argv = ["run", "--backend", "local", "--profile", "gpu", "--require-gpu"]
    code = main([*argv, "--results", str(results)])
    out = capsys.readouterr()
    assert_one_error(code, out.out, out.err)
    assert "no NVIDIA GPU found on this host" in out.err
    assert not results.exists(), "nothing was run or written"
