"""The staged probe in the real smoke images (built or found by `harness build`), no GPU here:
baselines pass with the GPU stages skipped, a run planned for a GPU (`--gpu`) fails at devices
in the framework's words, and torch meets the older cuDNN at build_info."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends.engine import Engine
from harness.events import parse
from harness.model import Mount, ProbeReport, Stage
from harness.signatures import classify, read_catalog
from tests.conftest import ROOT, harness_build, in_stack

pytestmark = pytest.mark.slow

PROBE = ROOT / "harness" / "probes" / "stageprobe.py"
GPU_STAGES = {Stage.TENSOR_OP, Stage.CUDNN_CONV, Stage.TRAIN_STEP, Stage.SAVE_LOAD, Stage.MEMORY}


@pytest.fixture(scope="module")
def smoke_images() -> dict[str, dict[str, str]]:
    return harness_build()


def probe(
    backend: Engine, built: dict[str, str], framework: str, *more: str
) -> tuple[int | None, ProbeReport]:
    return probe_output(backend, built, framework, *more)[:2]


def probe_output(
    backend: Engine, built: dict[str, str], framework: str, *more: str
) -> tuple[int | None, ProbeReport, str]:
    done = in_stack(
        backend,
        built,
        ["python", "/probe/stageprobe.py", framework, *more],
        mounts=(Mount(Path(PROBE.parent), "/probe"),),
    )
    stdout = "\n".join(ln for ln in done.output.splitlines() if ln.startswith('{"probe"'))
    return done.exit_code, parse(stdout), done.output


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


@pytest.mark.parametrize(
    ("slug", "framework", "words"),
    [
        # torch's own error from torch.cuda.init(), then what the CUDA runtime it ships said
        ("torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline", "torch", "Found no NVIDIA driver"),
        ("tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline", "tensorflow", "libcuda.so.1: "),
    ],
)
def test_a_run_planned_for_a_gpu_that_finds_none_fails_at_devices(
    smoke_images: dict[str, dict[str, str]],
    backend: Engine,
    slug: str,
    framework: str,
    words: str,
) -> None:
    """The probe with `--gpu` (the runner adds it to runs planned for the host's GPU) where
    there is none: the GPU job that would silently run on the CPU fails at devices, and the
    catalog names it, not a pass whose GPU stages skipped (as a GPU host's no-gpu-visible
    cell first showed)."""
    code, report, output = probe_output(backend, smoke_images[slug], framework, "--gpu")
    assert code == 1 and report.failed_stage is Stage.DEVICES
    failed = next(e for e in report.events if e.stage is Stage.DEVICES)
    assert failed.error_message is not None and words in failed.error_message
    printed = [ln for ln in output.splitlines() if not ln.startswith('{"probe"')]
    text = "\n".join([*printed, failed.traceback or ""])  # what the runner classifies
    verdict = classify(text, read_catalog(ROOT / "scenarios" / "signatures.yaml"))
    assert verdict.signature == "no_gpu_or_driver"
    later = [e for e in report.events if e.stage.order > Stage.DEVICES.order]
    assert later and all(e.skipped == "not run: devices failed" for e in later)


def test_the_probe_refuses_an_argument_it_does_not_know(
    smoke_images: dict[str, dict[str, str]], backend: Engine
) -> None:
    code, report, output = probe_output(
        backend, smoke_images["torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"], "torch", "--gpus"
    )
    assert code == 2 and not report.events and "usage:" in output


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
