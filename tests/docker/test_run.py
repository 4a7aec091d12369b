"""`harness run` on the smoke profile, for real: every cell gives its expected outcome at cpu
evidence; a warm re-run starts no container; kill -9 mid-run, run again: nothing lost, nothing
duplicated, no container left."""

from __future__ import annotations

import collections
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.backends import Target
from harness.backends.docker import DockerBackend
from harness.backends.engine import Engine
from harness.backends.envs import EnvStore
from harness.backends.images import Builder, Paths
from harness.compat import parse_knowledge, read_knowledge_docs
from harness.console import Console
from harness.faults import resolve
from harness.journal import records
from harness.lock import WheelCache, cache_root, read_lock
from harness.model import Stack
from harness.render import read_templates
from harness.runner import probe_run, spec_for
from harness.scenarios import read_scenarios
from tests.conftest import ROOT, harness_build, harness_cli, in_stack

pytestmark = pytest.mark.slow
# Every cell of the smoke profile that runs here (all of its stacks are on the offline base).
SMOKE_CELLS = len(
    json.loads(harness_cli("plan", "--format", "json", "--driver", "none").stdout)["cells"]
)


def harness_run(results: Path) -> subprocess.CompletedProcess[str]:
    return harness_cli("run", "--results", str(results), "--driver", "none")


def test_smoke_matrix_runs_resumes_and_is_a_cache_hit(
    smoke_results: Path, docker_client: object, tmp_path: Path
) -> None:
    backend = Engine(docker_client)  # type: ignore[arg-type]
    harness_build()
    # It fills the shared results (test_run_local.py compares with them) unless run after it.
    results = tmp_path / "results" if smoke_results.exists() else smoke_results
    # Killed with -9 after a few results...
    child = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--results", str(results), "--driver", "none"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 900
        while len(records(results)) < 3 if results.exists() else True:
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.5)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
    before = len(records(results))
    # ...then run again: the rest runs, what was journaled is not run twice.
    res = harness_run(results)
    assert res.returncode == 0, res.stderr[-4000:]
    recs = records(results)
    per_cell = collections.Counter(str(r["cell"]) for r in recs)
    assert len(per_cell) == SMOKE_CELLS
    assert max(per_cell.values()) == 1, "no cell journaled twice"
    assert f"{SMOKE_CELLS - before} run, {before} cache hits, 0 drift" in res.stderr
    assert not any(r["drift"] for r in recs)
    assert backend.leftovers() == []
    # Warm: nothing changed, no container starts.
    t = time.monotonic()
    warm = harness_run(results)
    assert warm.returncode == 0
    assert f"0 run, {SMOKE_CELLS} cache hits" in warm.stderr
    assert time.monotonic() - t < 30
    for r in recs:
        assert {
            "schema",
            "cell",
            "backend",
            "status",
            "expected",
            "observed",
            "drift",
            "evidence",
            "started",
            "seconds",
        } <= set(r)
        placed = "@" in str(r["cell"])  # the placed-driver axis: NVIDIA's libcuda in the run
        assert r["evidence"] == ("driver" if placed else "cpu") and r["backend"] == "docker"
        assert r["placed_driver"] == (str(r["cell"]).rsplit("@", 1)[1] if placed else "none")
    # NVIDIA's own driver code decided these, with the frameworks' own words.
    by_cell = {str(r["cell"]): r for r in recs}
    torch550 = by_cell["torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/baseline@550.163.01"]
    assert torch550["observed"]["signature"] == "driver_too_old"
    assert torch550["observed"]["stage"] == "devices"
    assert "too old (found version 12040)" in torch550["observed"]["decisive_line"]
    assert (
        by_cell["tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline/baseline@535.261.03"]["status"]
        == "passed"
    )  # the CUDA 12.9 runtime passes the 535 (CUDA 12.2) driver's gate
    # A real OOM kill: the container's 2 GiB cgroup limit, filled by the probe's memory stage;
    # the engine's OOMKilled decides it (the log has no line of it)
    for fw in ("torch-2.15.0_cu13.2_cudnn9.26", "tensorflow-2.21.0_cu12.5_cudnn9.3"):
        oom = by_cell[f"{fw}_py3.11_offline/host-memory-limit"]["observed"]
        assert (oom["signature"], oom["stage"], oom["exit_code"]) == ("host_oom", "memory", 137)
        assert "OOMKilled" in oom["decisive_line"]
    stubs = [r for c, r in by_cell.items() if c.endswith("@stub") and "cudnn9.13" not in c]
    assert stubs and all(r["observed"]["signature"] == "stub_driver" for r in stubs)


def test_the_environment_is_untouched_by_a_fault(docker_client: object) -> None:
    """Faults are mounts over the run's read-only view: the next plain run, and the host
    folder itself, see the intact stack."""
    engine = Engine(docker_client)  # type: ignore[arg-type]
    slug = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"
    built = harness_build("--stack", slug)[slug]
    rel = "lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9"
    env = Path(built["env"])
    size = (env / rel).stat().st_size
    stack = Stack.from_slug(slug)
    lock = read_lock(ROOT / "images" / "locks" / f"{slug}.json")
    assert lock is not None
    scenario = read_scenarios(ROOT / "scenarios", display="scenarios")["corrupt-library"]
    cache = cache_root(dict(os.environ))
    paths = Paths(images=ROOT / "images", cache=cache, logs=ROOT / "reports" / "logs")
    builder = Builder(
        kb=parse_knowledge(read_knowledge_docs()), engine=lambda: engine, paths=paths,
        templates=read_templates(paths.images), console=Console(),
    )  # fmt: skip
    backend = DockerBackend(builder, lambda: engine, envs=EnvStore(cache))
    target = Target(
        stack=stack, ref=built["ref"], identity=built["ref"], lock=lock, image=built["image"],
        env=built["env"],
    )  # fmt: skip
    spec = spec_for(resolve(scenario.faults, stack), target, WheelCache(cache), gpu=False)
    run = probe_run(backend, spec, target)
    assert run.signal == 7  # SIGBUS: the truncated copy was used in that run
    assert (env / rel).stat().st_size == size > 1_000_000
    done = in_stack(engine, built, ["sh", "-c", f"stat -c %s /opt/stack/{rel}"])
    assert done.exit_code == 0 and int(done.output.strip()) == size


def test_reproduce_prints_a_command_that_reproduces(tmp_path: Path) -> None:
    cell = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/missing-cudnn-sublib"
    res = harness_cli("reproduce", cell, "--driver", "none", "--results", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    assert "  cudnn_api   FAILED: cudnnCreateConvolutionDescriptor -> 3009" in out
    assert "verdict: failed fail: cudnn_missing @ cudnn_api (as expected;" in out
    assert (
        "decisive line: Invalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor" in out
    )
    journal = json.loads(out.split("journal: ", 1)[1].splitlines()[0])
    assert journal["cell"] == cell and journal["observed"]["stage"] == "cudnn_api"
    assert journal["observed"]["signature"] == "cudnn_missing"
    assert [r["cell"] for r in records(tmp_path)] == [cell]
    command = out.split("run it yourself:\n", 1)[1].strip()
    assert command.startswith("docker run --rm --network none")
    pasted = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=600, check=False
    )
    from harness.events import parse

    report = parse(pasted.stdout)
    assert report.failed_stage is not None and report.failed_stage.value == "cudnn_api"


def _report(out: Path, *folders: Path) -> dict[str, object]:
    """The report of some results folders, without what depends on when the cells ran."""
    args = [a for f in folders for a in ("--results", str(f))]
    # A --cell selection is part of the profile: PARTIAL, exit 3 unless asked for on its own.
    res = harness_cli("report", *args, "--out", str(out))
    assert res.returncode == 3 and "PARTIAL: 6 of 6 cells" in res.stderr, res.stderr[-3000:]
    res = harness_cli("report", *args, "--out", str(out), "--allow-partial")
    assert res.returncode == 0, res.stderr[-3000:]
    with (out / "results.csv").open(newline="") as f:
        rows = [
            {k: v for k, v in r.items() if k not in ("seconds", "started")}
            for r in csv.DictReader(f)
        ]
    text = (out / "COMPATIBILITY.md").read_text()
    text = re.sub(r"(?m)^- \*\*newest result\*\*: .*$", "", text)
    return {"COMPATIBILITY.md": text, "results.csv": rows}


def test_two_shards_report_as_the_unsharded_run(tmp_path: Path) -> None:
    """--shard 1/2 and 2/2 into their own folders, merged by `harness report`, give the report
    of the same selection run whole (timings aside)."""
    chosen = ["--driver", "none", "--cell", "*/baseline", "--cell", "*/missing-cudnn"]
    folders = {name: tmp_path / name for name in ("whole", "a", "b")}
    for name, extra in (("whole", []), ("a", ["--shard", "1/2"]), ("b", ["--shard", "2/2"])):
        res = harness_cli("run", "--results", str(folders[name]), *chosen, *extra)
        assert res.returncode == 0, res.stderr[-3000:]
    shards = [records(folders[n]) for n in ("a", "b")]
    assert shards[0] and shards[1] and len(shards[0]) + len(shards[1]) == 6
    whole = _report(tmp_path / "r-whole", folders["whole"])
    merged = _report(tmp_path / "r-merged", folders["a"], folders["b"])
    assert merged == whole
