"""Every scenario on the smoke profile's real torch and TensorFlow stacks, no GPU: the fault is
applied at run time in a fresh container and the probe stops where the scenario says it must.

(Classifying the observed failure into its signature comes with the signature catalog.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.backends.docker import DockerBackend
from harness.lock import WheelCache, cache_root, read_lock
from harness.model import Evidence, Outcome, Stack
from harness.runner import probe_run
from harness.scenarios import read_scenarios
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCENARIOS = read_scenarios(ROOT / "scenarios", display="scenarios")
STACKS = [
    "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline",
    "tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline",
]


@pytest.fixture(scope="module")
def refs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("build") / "build.json"
    argv = [sys.executable, "-m", "harness", "build", "--json", str(out)]
    for slug in STACKS:
        argv += ["--stack", slug]
    res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=5000, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return {r["slug"]: r["ref"] for r in json.loads(out.read_text())}


@pytest.mark.parametrize("slug", STACKS, ids=lambda s: s.split("_")[0])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_shows_where_it_must(
    refs: dict[str, str], docker_client: object, slug: str, scenario: str
) -> None:
    backend = DockerBackend(docker_client)  # type: ignore[arg-type]
    sc = SCENARIOS[scenario]
    ref = refs[slug]
    stack = Stack(**json.loads(backend.image_labels(ref)["stackmatrix.stack"]))
    expected = sc.expectation(stack.framework, Evidence.CPU)
    assert expected is not None
    lock = read_lock(ROOT / "images" / "locks" / f"{slug}.json")
    assert lock is not None
    run = probe_run(
        backend,
        stack=stack,
        image=ref,
        scenario=sc,
        lock=lock,
        cache=WheelCache(cache_root(dict(os.environ))),
    )
    report = run.report
    if expected.outcome in (Outcome.PASS, Outcome.UNOBSERVABLE):
        # Unobservable: the fault is there, and a run without a GPU cannot tell.
        assert run.finished.exit_code == 0 and report.passed, run.finished.output[-2000:]
    else:
        assert not report.passed
        assert (report.failed_stage or report.crashed_stage) is expected.stage, run.finished.output[
            -2000:
        ]
    assert backend.leftovers() == []


def test_the_image_is_untouched_by_a_fault(refs: dict[str, str], docker_client: object) -> None:
    """Faults live in the run's container only: the next plain run sees the intact stack."""
    backend = DockerBackend(docker_client)  # type: ignore[arg-type]
    ref = refs[STACKS[0]]
    path = "/opt/stack/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9"
    stack = Stack(**json.loads(backend.image_labels(ref)["stackmatrix.stack"]))
    lock = read_lock(ROOT / "images" / "locks" / f"{STACKS[0]}.json")
    assert lock is not None
    probe_run(
        backend,
        stack=stack,
        image=ref,
        scenario=SCENARIOS["corrupt-library"],
        lock=lock,
        cache=WheelCache(cache_root(dict(os.environ))),
    )
    done = backend.run(ref, ["sh", "-c", f"stat -c %s {path}"])
    assert done.exit_code == 0 and int(done.output.strip()) > 1_000_000
