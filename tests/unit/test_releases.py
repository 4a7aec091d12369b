"""The `releases` profile without a run: one stack per release as PyPI installs it, and the lowest
driver branch each passes at, by NVIDIA's rules for the CUDA runtime it installs (cu11 -> R450,
cu12 -> R525, cu13 -> R580); and the cuda flavour's NVIDIA_REQUIRE_CUDA knowledge."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends.driverstore import read_driver_locks
from harness.cli import installed_cudart
from harness.compat import parse_knowledge, read_knowledge_docs, toolkit_reason
from harness.errors import ConfigError
from harness.loader import read_yaml
from harness.matrix import expand, parse_matrix
from harness.model import NO_DRIVER, DriverTarget, Outcome, Plan, Stack
from harness.scenarios import read_scenarios
from tests.conftest import ROOT

KB = parse_knowledge(read_knowledge_docs())
SCENARIOS = read_scenarios(ROOT / "scenarios", display="scenarios")
MATRIX = parse_matrix(read_yaml(ROOT / "matrix.yaml", display="matrix.yaml"))
LOCK = read_driver_locks(ROOT)
NONE = DriverTarget(version=None, origin="flag")


def plan(profile: str, driver: DriverTarget = NONE) -> Plan:
    assert LOCK is not None
    return expand(
        MATRIX,
        profile,
        KB,
        SCENARIOS,
        driver,
        placeable=LOCK.values(),
        installed=installed_cudart(ROOT / "images" / "locks"),
    )


RELEASES = plan("releases")


def lowest_pass(slug: str) -> str | None:
    """The lowest placed driver whose baseline the plan expects to pass."""
    passing = [
        c.driver
        for c in RELEASES.cells
        if c.stack.slug == slug
        and c.scenario == "baseline"
        and c.driver not in (NO_DRIVER, "stub")
        and c.expected.outcome is Outcome.PASS
    ]
    return min(passing, key=lambda v: tuple(int(x) for x in v.split(".")), default=None)


def test_one_stack_per_release_as_pypi_installs_it() -> None:
    stacks = {c.stack for c in RELEASES.cells}
    torch = sorted(s.framework_version for s in stacks if s.framework == "torch")
    tf = sorted(s.framework_version for s in stacks if s.framework == "tensorflow")
    assert len(torch) == 16 and len({v.rsplit(".", 1)[0] for v in torch}) == 16
    # 2.15-2.21: 2.13.1 has no CUDA wheels to put on the offline base, 2.14.1 no cp311 tensorrt
    assert len(tf) == 7
    assert {s.python for s in stacks} == {"3.11"} and {s.base for s in stacks} == {"offline"}
    for s in stacks:
        release = KB.release(s.framework, s.framework_version)
        assert release is not None
        variant = release.variant(s.cuda)
        assert (
            variant is not None
            and variant.default
            and variant.index.startswith("https://pypi.org/")
        )


@pytest.mark.parametrize(
    ("slug", "lowest"),
    [
        ("torch-2.0.1_cu11.7_cudnn8.5_py3.11_offline", "450.248.02"),
        ("torch-2.1.2_cu12.1_cudnn8.9_py3.11_offline", "525.147.05"),
        ("torch-2.3.1_cu12.1_cudnn8.9_py3.11_offline", "525.147.05"),
        ("torch-2.10.0_cu12.8_cudnn9.10_py3.11_offline", "525.147.05"),
        ("torch-2.11.0_cu13.0_cudnn9.19_py3.11_offline", "580.178.04"),
        ("torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline", "580.178.04"),
        ("tensorflow-2.15.1_cu12.2_cudnn8.9_py3.11_offline", "525.147.05"),
        ("tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline", "525.147.05"),
    ],
)
def test_the_lowest_passing_branch_follows_the_cuda_major(slug: str, lowest: str) -> None:
    assert lowest_pass(slug) == lowest


def test_every_release_has_a_boundary_consistent_with_its_cuda_major() -> None:
    floor = {"11": "450.248.02", "12": "525.147.05", "13": "580.178.04"}
    for stack in {c.stack for c in RELEASES.cells}:
        assert lowest_pass(stack.slug) == floor[stack.cuda.split(".")[0]], stack.slug


@pytest.mark.parametrize(
    ("slug", "driver", "outcome"),
    [
        ("torch-2.1.2_cu12.1_cudnn8.9_py3.11_offline", "510.60.02", Outcome.FAIL),
        ("torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline", "570.133.07", Outcome.FAIL),
        ("torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline", "stub", Outcome.FAIL),
        ("torch-2.0.1_cu11.7_cudnn8.5_py3.11_offline", "595.99.02", Outcome.PASS),
    ],
)
def test_each_side_of_a_boundary(slug: str, driver: str, outcome: Outcome) -> None:
    (cell,) = [c for c in RELEASES.cells if c.id == f"{slug}/baseline@{driver}"]
    assert cell.expected.outcome is outcome
    if outcome is Outcome.FAIL and driver != "stub":
        assert cell.expected.signature == "driver_too_old"


def test_faults_run_on_one_stack_per_cuda_major_and_framework() -> None:
    faulted = {(c.stack.framework, c.stack.cuda.split(".")[0]) for c in RELEASES.cells
               if c.scenario != "baseline"}  # fmt: skip
    assert {("torch", "11"), ("torch", "12"), ("torch", "13")} <= faulted
    # TensorFlow has no CUDA 11 stack on Python 3.11 (2.14.1's tensorrt pin: matrix.yaml)
    assert ("tensorflow", "12") in faulted
    assert not any(c.stack.framework == "tensorflow" and c.stack.cuda.startswith("11.")
                   for c in RELEASES.cells)  # fmt: skip


def test_the_128_image_refuses_a_525_driver_at_start() -> None:
    stack = Stack(
        framework="torch", framework_version="2.9.1", cuda="12.8", cudnn="9.10.2.21",
        python="3.10", base="cuda",
    )  # fmt: skip
    release = KB.release("torch", "2.9.1")
    assert release is not None
    variant = release.variant("12.8")
    assert variant is not None
    refused = toolkit_reason(stack, variant, "525.60.13", KB)
    assert refused is not None and "cuda>=12.8" in refused.detail
    assert toolkit_reason(stack, variant, "570.133.07", KB) is None


# Not yet sourced: no copy of dist/12.8.1/ubuntu2404/runtime/cudnn/Dockerfile was found (see
# cuda_images.yaml); the full profile's Python 3.12 cu12.8 stacks use it.
CUDNN_UNKNOWN = {"12.8.1-cudnn-runtime-ubuntu24.04"}


@pytest.mark.parametrize("profile", ["full", "standin"])
def test_every_cuda_tag_a_profile_uses_has_its_requirement_and_cudnn(profile: str) -> None:
    missing = set()
    for stack in {c.stack for c in plan(profile).cells if c.stack.base == "cuda"}:
        release = KB.release(stack.framework, stack.framework_version)
        assert release is not None
        variant = release.variant(stack.cuda)
        assert variant is not None
        image = KB.cuda_image(stack.cuda, variant.cudnn, stack.python)
        assert image is not None, stack.slug
        assert image.require_cuda and image.require_source.startswith("https://"), image.tag
        if not image.cudnn:
            missing.add(image.tag)
    assert missing <= CUDNN_UNKNOWN


def test_the_profile_carries_its_disk_budget() -> None:
    """`nox -s matrix -- --profile releases` alone must fit the disk: the profile says its
    budget (20 GB), which `run` takes when --disk-budget is not given."""
    assert MATRIX.profile("releases").disk_budget == 20 * 10**9
    assert MATRIX.profile("smoke").disk_budget is None


def test_a_profile_disk_budget_that_is_not_a_size_is_an_error_at_its_line(tmp_path: Path) -> None:
    text = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
    bad = text.replace("disk_budget: 20GB", "disk_budget: lots")
    assert bad != text
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "disk_budget: lots" in ln)
    (tmp_path / "matrix.yaml").write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        parse_matrix(read_yaml(tmp_path / "matrix.yaml", display="matrix.yaml"))
    assert "disk_budget 'lots': not a size" in err.value.message
    assert str(err.value.where).startswith(f"matrix.yaml:{line}:")
