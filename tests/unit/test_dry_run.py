"""`harness run --dry-run`: what each cell would do, from files alone, with no Docker engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.journal import append, finished
from harness.runner import cell_key
from tests.conftest import ROOT


def dry_run(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, list[str]]:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # no engine at all
    code = main(["run", "--dry-run", "--driver", "none", *args])
    return code, capsys.readouterr().err.splitlines()


def test_every_cell_is_listed_without_an_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, lines = dry_run(["--results", str(tmp_path)], capsys, monkeypatch)
    assert code == 0
    plan = json.loads(Path(ROOT / "tests/fixtures/plan/smoke.json").read_text())
    listed = [ln.split()[1] for ln in lines[:-1]]
    assert sorted(listed) == sorted(c["id"] for c in plan["cells"])
    assert all(ln.split()[0] == "run" for ln in lines[:-1])
    assert lines[-1] == f"{len(listed)} cells: {len(listed)} to run, 0 cached or not here"
    assert not (tmp_path / "plan.json").exists(), "a dry run writes nothing"


def test_a_journaled_cell_is_cached_and_a_changed_one_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys from files alone: the dry run's key of a cell is the one a real run journals."""
    cell = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/baseline"
    args = ["--results", str(tmp_path), "--cell", cell]
    code, lines = dry_run(args, capsys, monkeypatch)
    assert code == 0 and lines[0] == f"run      {cell}"
    key = _key_of(cell, monkeypatch)
    append(tmp_path, {"schema": 2, "cell": cell, "key": key, "status": "passed"})
    assert finished(tmp_path) == {cell: key}
    _, lines = dry_run(args, capsys, monkeypatch)
    assert lines[0] == f"cached   {cell}"
    _, lines = dry_run([*args, "--rerun"], capsys, monkeypatch)
    assert lines[0] == f"run      {cell}", "--rerun runs a journaled cell again"
    append(tmp_path, {"schema": 2, "cell": cell, "key": "another", "status": "passed"})
    _, lines = dry_run(args, capsys, monkeypatch)
    assert lines[0] == f"run      {cell}"


def _key_of(cell_id: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The key as the runner computes it, through the CLI's own loading and Docker identity."""
    import argparse

    from harness.cli import docker_backend, load
    from harness.console import Console
    from harness.faults import resolve

    monkeypatch.chdir(ROOT)
    ns = argparse.Namespace(matrix="matrix.yaml", profile=None, driver="none")
    loaded = load(ns, [])
    [cell] = [c for c in loaded.plan.cells if c.id == cell_id]
    identity = docker_backend(loaded, Console()).identity(cell.stack)
    assert identity is not None
    ops = resolve(loaded.scenarios[cell.scenario].faults, cell.stack)
    return cell_key(cell, identity, ops, "none", loaded.catalog.digest)


def test_a_missing_engine_is_only_met_by_a_real_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    args = ["run", "--driver", "none", "--results", str(tmp_path), "--cell", "*/baseline"]
    assert main(args) == 3
    assert "cannot reach the Docker engine" in capsys.readouterr().err
    assert not (tmp_path / "plan.json").exists()


def test_another_profile_reads_its_own_journal_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --results, a profile other than smoke journals into reports/<profile>/results,
    as `nox -s matrix -- --profile X` has it: its dry run reads that journal, not smoke's."""
    cell = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/baseline"
    record = {"schema": 2, "cell": cell, "key": _key_of(cell, monkeypatch), "status": "passed"}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    argv = ["run", "--dry-run", "--driver", "none", "--matrix", str(ROOT / "matrix.yaml")]
    argv += ["--profile", "full", "--cell", cell]

    def first_line() -> str:
        assert main(argv) == 0
        return capsys.readouterr().err.splitlines()[0]

    append(tmp_path / "reports/results", record)  # smoke's journal: not the full profile's
    assert first_line() == f"run      {cell}"
    append(tmp_path / "reports/full/results", record)
    assert first_line() == f"cached   {cell}"
    assert main([*argv[:-4], "--cell", cell]) == 0, "smoke (the default) reads reports/results"
    assert capsys.readouterr().err.splitlines()[0] == f"cached   {cell}"
