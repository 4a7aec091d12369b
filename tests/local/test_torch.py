"""The real torch stack without Docker: its venv built from the lock (the shared wheel cache; the
venv is kept in the shared cache too, so a second session reuses it), the staged probe run
through LocalBackend for every scenario, the stage it fails at read as the scenario expects it
without a GPU, and the venv unchanged after each."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.backends.local import LocalBackend
from harness.events import parse
from harness.faults import run_spec
from harness.lock import WheelCache, cache_root, extract, read_lock
from harness.model import Evidence, Lock, Mount, Outcome
from harness.scenarios import read_scenarios
from tests.conftest import ROOT, TORCH_STACK
from tests.local.conftest import leftovers, stat_digest, tree_digest

pytestmark = pytest.mark.slow
LOCK = ROOT / "images" / "locks" / f"{TORCH_STACK.slug}.json"
PROBE = ROOT / "harness" / "probes"
SCENARIOS = read_scenarios(ROOT / "scenarios", display="scenarios")
CUDNN = "lib/python3.11/site-packages/nvidia/cudnn"


@pytest.fixture(scope="module")
def torch_env(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[LocalBackend, str, WheelCache, Lock]:
    env = {**os.environ, "TMPDIR": str(tmp_path_factory.mktemp("tmp"))}
    cache = WheelCache(cache_root(env))
    lock = read_lock(LOCK)
    assert lock is not None, f"no lock at {LOCK}"
    backend = LocalBackend(root=cache_root(env), env=env)
    start = time.monotonic()
    image = backend.ensure_venv(lock, cache)
    print(f"torch venv ready in {time.monotonic() - start:.1f} s: {image}")
    return backend, image, cache, lock


@pytest.mark.parametrize(
    "name", sorted(n for n, s in SCENARIOS.items() if s.expectation("torch", Evidence.CPU))
)
def test_the_probe_fails_where_the_scenario_expects(
    torch_env: tuple[LocalBackend, str, WheelCache, Lock], name: str
) -> None:
    backend, image, cache, lock = torch_env
    expected = SCENARIOS[name].expectation("torch", Evidence.CPU)
    assert expected is not None
    argv = ("python", "/probe/stageprobe.py", "torch")
    spec = run_spec(TORCH_STACK, image, argv, SCENARIOS[name].faults, gpu=False, timeout=600)
    mounts = [Mount(PROBE, "/probe")]
    mounts += [Mount(extract(cache, lock, w.pin, w.member), w.target) for w in spec.wheel_files]
    venv = Path(image).resolve()
    before = (stat_digest(venv), tree_digest(venv / CUDNN))

    start = time.monotonic()
    done = backend.run_spec(spec, tuple(mounts))
    print(f"{name}: exit {done.exit_code} in {time.monotonic() - start:.1f} s")

    report = parse("\n".join(ln for ln in done.output.splitlines() if ln.startswith('{"probe"')))
    if expected.outcome is Outcome.FAIL:
        stage = report.failed_stage or report.crashed_stage
        assert stage is expected.stage, done.output[-3000:]
    else:  # pass, or unobservable: cannot be told from no fault, so it must pass too
        assert report.passed and done.exit_code == 0, done.output[-3000:]
        devices = next(e for e in report.events if e.stage.value == "devices")
        assert devices.details["available"] is False  # a cpu run hides the host's GPUs
    assert (stat_digest(venv), tree_digest(venv / CUDNN)) == before
    assert leftovers(backend.root / "runs", backend.scratch) == []
