"""The staged probe in the real smoke images (built or found by `harness build`), no GPU here:
baselines pass with the GPU stages skipped, and torch meets the older cuDNN at build_info."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends.engine import Engine
from harness.events import parse
from harness.model import Mount, ProbeReport, Stage
from tests.conftest import ROOT, harness_build, in_stack

pytestmark = pytest.mark.slow

PROBE = ROOT / "harness" / "probes" / "stageprobe.py"
GPU_STAGES = {Stage.TENSOR_OP, Stage.CUDNN_CONV, Stage.TRAIN_STEP, Stage.SAVE_LOAD, Stage.MEMORY}


@pytest.fixture(scope="module")
def smoke_images() -> dict[str, dict[str, str]]:
    return harness_build()


def probe(backend: Engine, built: dict[str, str], framework: str) -> tuple[int | None, ProbeReport]:
    done = in_stack(
        backend,
        built,
        ["python", "/probe/stageprobe.py", framework],
        mounts=(Mount(Path(PROBE.parent), "/probe"),),
    )
    stdout = "\n".join(ln for ln in done.output.splitlines() if ln.startswith('{"probe"'))
    return done.exit_code, parse(stdout)


@pytest.fixture(scope="module")
def backend(docker_client: object) -> Engine:
    return Engine(docker_client)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("slug", "framework"),
    [
        ("torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline", "torch"),
        ("tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline", "tensorflow"),
    ],
)
def test_baseline_passes_with_gpu_stages_skipped(
    smoke_images: dict[str, dict[str, str]], backend: Engine, slug: str, framework: str
) -> None:
    code, report = probe(backend, smoke_images[slug], framework)
    assert code == 0 and report.passed
    by_stage = {e.stage: e for e in report.events}
    assert set(by_stage) == set(Stage) - {Stage.START}  # start is the container runtime's
    for stage in GPU_STAGES:
        assert by_stage[stage].skipped == "no device", stage
    devices = by_stage[Stage.DEVICES].details
    assert devices["count"] == 0
    assert devices["gate"]["verdict"] == "no libcuda.so.1: no driver"  # nothing placed here
    assert devices["gate"]["code"] == 35 and devices["gate"]["runtime"]  # its own cudart asked
    api = by_stage[Stage.CUDNN_API].details
    for sublib in ("ops", "cnn", "adv", "graph"):
        assert api[sublib].endswith("-> 0 CUDNN_STATUS_SUCCESS"), api
    assert api["handle"] == "skipped: no device"
    # Which files the process loaded, and from where: the wheels in the image's venv.
    loaded = by_stage[Stage.BUILD_INFO].details["loaded"]
    assert loaded and all(p.startswith("/opt/stack/") for p in loaded.values())
    # torch loads its cuDNN at build_info; TensorFlow without a GPU never does.
    assert api["loaded_by_framework"] is (framework == "torch")


def test_torch_meets_an_older_cudnn_at_build_info(
    smoke_images: dict[str, dict[str, str]], backend: Engine
) -> None:
    code, report = probe(
        backend, smoke_images["torch-2.15.0_cu13.2_cudnn9.13_py3.11_offline"], "torch"
    )
    assert code == 1
    assert report.failed_stage is Stage.BUILD_INFO
    failed = next(e for e in report.events if e.stage is Stage.BUILD_INFO)
    assert failed.error_message is not None
    assert failed.error_message.startswith(
        "cuDNN version incompatibility: PyTorch was compiled  against (9, 26, 0) but found "
        "runtime version (9, 13, 0)."
    )
    later = [e for e in report.events if e.stage.order > Stage.BUILD_INFO.order]
    assert later and all(e.skipped == "not run: build_info failed" for e in later)
