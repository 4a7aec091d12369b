"""`--backend local` against Docker on the smoke profile, for real: every cell (cpu evidence)
gets the same verdict (status, outcome, stage, signature) from a venv built from the stack's lock
as from the stack's image, without drift; no run writes into a venv, and no run folder is left.

The Docker side is the shared smoke results (test_run.py, which runs first, fills them; run alone,
this test runs the Docker cells itself)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.backends.local import LocalBackend
from harness.journal import records
from harness.lock import WheelCache, cache_root, read_lock
from tests.conftest import ROOT, harness_build, harness_cli
from tests.docker.test_run import SMOKE_CELLS
from tests.local.conftest import leftovers, stat_digest

pytestmark = pytest.mark.slow


def verdicts(results: Path, backend: str) -> dict[str, tuple[Any, ...]]:
    out = {}
    for r in records(results):
        assert r["backend"] == backend, r["cell"]
        obs = r["observed"] or {}
        out[str(r["cell"])] = (
            r["status"],
            obs.get("outcome"),
            obs.get("stage"),
            obs.get("signature"),
            r["drift"],
        )
    return out


def test_local_backend_gives_dockers_verdict_on_every_smoke_cell(
    smoke_results: Path, docker_client: object, tmp_path: Path
) -> None:
    refs = harness_build()
    res = harness_cli("run", "--results", str(smoke_results), "--driver", "none")
    assert res.returncode == 0, res.stderr[-4000:]
    docker = verdicts(smoke_results, "docker")

    # The venvs first, so what the runs might write into them can be seen.
    env = dict(os.environ)
    backend, cache = LocalBackend(root=cache_root(env), env=env), WheelCache(cache_root(env))
    venvs = []
    for slug in refs:
        lock = read_lock(ROOT / "images" / "locks" / f"{slug}.json")
        assert lock is not None, slug
        venvs.append(Path(backend.ensure_venv(lock, cache)).resolve())
    before = [stat_digest(v) for v in venvs]

    local_results = tmp_path / "local"
    res = harness_cli(
        "run", "--backend", "local", "--results", str(local_results), "--driver", "none"
    )
    assert res.returncode == 0, res.stderr[-4000:]
    local = verdicts(local_results, "local")

    assert len(docker) == len(local) == SMOKE_CELLS
    differ = {c: (docker.get(c), local.get(c)) for c in docker.keys() | local.keys()}
    differ = {c: pair for c, pair in differ.items() if pair[0] != pair[1]}
    assert differ == {}, "cell: (docker verdict, local verdict)"
    assert not any(v[-1] for v in local.values()), "no drift"
    assert [stat_digest(v) for v in venvs] == before, "a run wrote into a venv"
    assert leftovers(backend.root / "runs", backend.scratch) == []


def test_reproduce_with_the_local_backend(tmp_path: Path) -> None:
    cell = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/missing-cudnn-sublib"
    res = harness_cli(
        "reproduce", cell, "--backend", "local", "--driver", "none", "--results", str(tmp_path)
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "  cudnn_api   FAILED: cudnnCreateConvolutionDescriptor -> 3009" in res.stdout
    assert "verdict: failed fail: cudnn_missing @ cudnn_api (as expected;" in res.stdout
    assert "docker run" not in res.stdout
    [rec] = records(tmp_path)
    assert rec["cell"] == cell and rec["backend"] == "local"
    missing = harness_cli("reproduce", "no/such-cell", "--backend", "local", "--driver", "none")
    assert missing.returncode == 2 and "no cell 'no/such-cell'" in missing.stderr
