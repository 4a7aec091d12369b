"""Shards for real with --backend local: two `harness run --shard I/2` processes at once, then
one `harness report` that merges them (COMPLETE), while each shard alone is PARTIAL (exit 3).
The same through ci/slurm/stackmatrix.sbatch as two array tasks and its `report` job.

Cheap: a matrix of two stacks (torch and TensorFlow, baseline only) whose locks hold only the
tiny MarkupSafe wheel, so no framework wheel is ever fetched; both stacks get the same small
venv, the probe fails at `import` (drift: the report judges it, it is not what is tested)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.lock import WheelCache
from tests.conftest import ROOT
from tests.local.conftest import TINY_LOCK, TINY_WHEEL

STACKS = (
    "tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline",
    "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline",
)
MATRIX = f"""\
schema: 1
scenarios: {ROOT / "scenarios"}
default_profile: shards
axes:
  framework: {{torch: ["2.15.0"], tensorflow: ["2.21.0"]}}
  cuda: ["12.5", "13.2"]
  cudnn: [pinned]
  python: ["3.11"]
  base: [offline]
profiles:
  shards:
    scenarios: [baseline]
"""
SLURM = ROOT / "ci" / "slurm" / "stackmatrix.sbatch"
PARTIAL_EXIT = 3


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, tiny_cache: WheelCache) -> Path:
    """A matrix of two stacks, a MarkupSafe lock for each, and a wheel cache that holds it."""
    root = tmp_path_factory.mktemp("project")
    (root / "matrix.yaml").write_text(MATRIX, encoding="utf-8")
    locks = root / "images" / "locks"
    locks.mkdir(parents=True)
    for slug in STACKS:
        lock = dataclasses.replace(TINY_LOCK, slug=slug).to_json()
        (locks / f"{slug}.json").write_text(json.dumps(lock, indent=1), encoding="utf-8")
    wheels = root / "cache" / "wheels"
    wheels.mkdir(parents=True)
    shutil.copy(tiny_cache.dir / TINY_WHEEL.filename, wheels / TINY_WHEEL.filename)
    return root


def environ(project: Path, **extra: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # `harness` for the Slurm script
    return {
        **os.environ,
        "STACKMATRIX_CACHE": str(project / "cache"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        **extra,
    }


def run(argv: list[str], project: Path, env: dict[str, str]) -> tuple[int, str]:
    res = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return res.returncode, res.stdout + res.stderr


def concurrently(argvs: list[list[str]], project: Path, envs: list[dict[str, str]]) -> None:
    """Start every process, then wait for each: each must exit 0."""
    procs = [
        subprocess.Popen(
            argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        for argv, env in zip(argvs, envs, strict=True)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out


def report(project: Path, out: str, *results: str, partial: bool = False) -> tuple[int, str]:
    folders = [w for r in results for w in ("--results", r)]
    flags = ["--allow-drift", *(["--allow-partial"] if partial else [])]
    argv = [sys.executable, "-m", "harness", "report", *folders, "--out", out, *flags]
    return run(argv, project, environ(project))


def journal_cells(folder: Path) -> list[str]:
    lines = (folder / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["cell"] for line in lines]


def test_two_concurrent_shards_merge_into_a_complete_report(project: Path) -> None:
    base = [sys.executable, "-m", "harness", "run", "--backend", "local", "--driver", "none"]
    argvs = [[*base, "--shard", f"{i}/2", "--results", f"s{i}", "--allow-drift"] for i in (1, 2)]
    concurrently(argvs, project, [environ(project)] * 2)
    cells = [journal_cells(project / s) for s in ("s1", "s2")]
    assert all(len(c) == 1 for c in cells), cells  # one whole stack each
    assert sorted(c.split("/")[0] for c in cells[0] + cells[1]) == sorted(STACKS)

    code, out = report(project, "merged", "s1", "s2")
    assert code == 0, out
    assert "COMPLETE: 2 of 2 cells have results" in out
    assert "PARTIAL" not in out
    assert "COMPLETE" in (project / "merged" / "COMPATIBILITY.md").read_text(encoding="utf-8")

    for i in (1, 2):
        code, out = report(project, f"alone{i}", f"s{i}")
        assert code == PARTIAL_EXIT, out
        assert f"PARTIAL: shard {i} of 2" in out
        assert f"shard {3 - i}/2 not in these results" in out
        code, out = report(project, f"alone{i}", f"s{i}", partial=True)
        assert code == 0, out


def test_the_slurm_script_runs_an_array_and_merges_it(project: Path) -> None:
    """ci/slurm/stackmatrix.sbatch as Slurm runs it (bash, SLURM_ARRAY_* set), no Slurm."""
    argv = ["bash", str(SLURM), "--matrix", "matrix.yaml", "--driver", "none"]
    tasks = [
        environ(project, STACKMATRIX_RESULTS="slurm", SLURM_ARRAY_TASK_ID=str(i),
                SLURM_ARRAY_TASK_COUNT="2")
        for i in (1, 2)
    ]  # fmt: skip
    concurrently([argv, argv], project, tasks)
    assert sorted(p.name for p in (project / "slurm").iterdir()) == ["shard-1", "shard-2"]

    merge = ["bash", str(SLURM), "report", "--allow-drift"]
    env = environ(project, STACKMATRIX_RESULTS="slurm", STACKMATRIX_REPORT="slurm-report")
    code, out = run(merge, project, env)
    assert code == 0, out
    assert "COMPLETE: 2 of 2 cells have results" in out
    assert (project / "slurm-report" / "index.html").is_file()

    shutil.rmtree(project / "slurm" / "shard-2")  # a task that never ran: the merge says so
    code, out = run(merge, project, env)
    assert code == PARTIAL_EXIT, out
    assert "PARTIAL: shard 1 of 2" in out
