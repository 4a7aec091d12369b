"""Installable alone: the wheel, in a fresh venv, runs `harness diagnose` and `harness doctor`
from a folder that is no checkout. The shipped matrix, scenarios and locks are the repository's.

The slow test builds the wheel (`pip wheel --no-deps` on a copy of the checkout) and installs it
with its dependencies from the package index, so it needs the network (CI has it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from importlib import resources
from pathlib import Path

import pytest

from harness.cli import main, shipped_matrix
from tests.conftest import ROOT

LOGS = ROOT / "tests" / "fixtures" / "logs"
LOG = LOGS / "cuda_runtime_missing__tf21-libcudart-10-1-cudart-stub-noise.log"
GOLDEN = ROOT / "tests" / "fixtures" / "diagnose" / "cudart-missing.txt"
# What the package carries of the checkout (pyproject's package-data), as repository paths.
SHIPPED = ("matrix.yaml", "scenarios/*.yaml", "images/locks/*.json", "images/locks/drivers/*.json")


def expected_signature(log: Path) -> str:
    name: str = json.loads(log.with_suffix(".expected.json").read_text())["signature"]
    return name


@pytest.mark.parametrize("pattern", SHIPPED)
def test_the_shipped_data_are_the_repositorys_files(pattern: str) -> None:
    """One copy: what the package reads (importlib.resources) is, byte for byte, the repository's
    file, and nothing of the repository's is left out."""
    package = resources.files("harness").joinpath("resources")
    repo = sorted(ROOT.glob(pattern))
    assert repo, pattern
    for path in repo:
        rel = path.relative_to(ROOT).as_posix()
        shipped = package.joinpath(*rel.split("/"))
        assert shipped.is_file(), f"harness/resources/{rel} is missing"
        assert shipped.read_bytes() == path.read_bytes(), f"harness/resources/{rel} differs"


def test_diagnose_outside_a_checkout_reads_the_shipped_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no matrix.yaml here
    assert main(["diagnose", str(LOG)]) == 0
    assert capsys.readouterr().out == GOLDEN.read_text()
    assert shipped_matrix().parent == Path(str(resources.files("harness"))) / "resources"


def test_an_explicit_matrix_is_still_required_to_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["diagnose", "--matrix", "matrix.yaml", str(LOG)]) == 2
    assert "no such file: matrix.yaml" in capsys.readouterr().err


def test_a_matrix_in_the_working_folder_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inside a checkout (a matrix.yaml here) that file is read, as before: a broken one says so."""
    (tmp_path / "matrix.yaml").write_text("schema: 1\n")
    monkeypatch.chdir(tmp_path)
    assert main(["diagnose", str(LOG)]) == 2
    assert "matrix.yaml" in capsys.readouterr().err


def _source_copy(into: Path) -> Path:
    """The checkout without its build outputs: `pip wheel .` reuses a build/ folder, so a wheel
    built in place could carry files that package-data no longer names."""
    skip = shutil.ignore_patterns(
        ".git", ".venv", ".nox", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
    )
    shutil.copytree(ROOT, into, symlinks=True, ignore=skip)
    return into


def _clean_env(home: Path) -> dict[str, str]:
    """The environment without anything that would reach the checkout's own harness."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.mark.slow
def test_the_wheel_runs_diagnose_and_doctor_in_a_fresh_venv(tmp_path: Path) -> None:
    dist, work = tmp_path / "dist", tmp_path / "work"
    work.mkdir()
    env = _clean_env(tmp_path)
    src = str(_source_copy(tmp_path / "src"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", src, "-w", str(dist)],
        check=True,
        env=env,
    )
    [wheel] = dist.glob("stackmatrix-*.whl")
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")
    bindir = tmp_path / "venv" / "bin"
    subprocess.run([bindir / "python", "-m", "pip", "install", "-q", wheel], check=True, env=env)

    def harness(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [bindir / "harness", *args],
            cwd=work, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    where = subprocess.run(
        [bindir / "python", "-c", "import harness; print(harness.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where.stdout

    done = harness("diagnose", str(LOG), "--format", "json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["signature"] == expected_signature(LOG) == "cuda_runtime_missing"
    assert got["reproduce"], "the shipped smoke profile has cells that reproduce it"

    text = harness("diagnose", str(LOG))
    assert text.returncode == 0 and text.stdout == GOLDEN.read_text(), text.stderr

    doctor = harness("doctor")
    assert doctor.returncode in (0, 1), doctor.stdout + doctor.stderr
    assert "Traceback" not in doctor.stdout + doctor.stderr
    assert doctor.stdout.rstrip().endswith(f"exit {doctor.returncode}"), doctor.stdout

    missing = harness("diagnose", str(work / "no-such.log"))
    assert missing.returncode == 2
    assert "Traceback" not in missing.stdout + missing.stderr
    assert missing.stderr.startswith("error: "), missing.stderr
