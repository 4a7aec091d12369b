"""Fault primitives -> run spec (pure)."""

from __future__ import annotations

import pytest

from harness.errors import ConfigError
from harness.faults import run_spec
from harness.model import Fault
from tests.conftest import TORCH_STACK

STACK = TORCH_STACK
SITE = "/opt/stack/lib/python3.11/site-packages"


def spec(*faults: Fault, gpu: bool = True):  # type: ignore[no-untyped-def]
    return run_spec(STACK, "img", ("python", "p.py", "torch"), faults, gpu=gpu)


def f(primitive: str, **args: str) -> Fault:
    return Fault(primitive=primitive, args=tuple(sorted(args.items())))


def test_file_faults_become_setup_commands() -> None:
    s = spec(
        f("hide", path="{site}/nvidia/cudnn/lib/libcudnn_cnn.so.*"),
        f("truncate", path="{site}/x.so", bytes="10"),
    )
    assert s.setup[0] == f"rm -rf -- {SITE}/nvidia/cudnn/lib/libcudnn_cnn.so.*"
    assert (
        s.setup[1] == f"head -c 10 {SITE}/x.so > {SITE}/x.so.cut && rm -f {SITE}/x.so && "
        f"mv {SITE}/x.so.cut {SITE}/x.so"
    )


def test_another_versions_file_is_mounted_and_swapped_in() -> None:
    s = spec(
        f(
            "replace",
            path="{site}/lib.so.9",
            wheel="nvidia-cudnn-cu{cuda_major}==9.13.0.50",
            member="nvidia/cudnn/lib/libcudnn_graph.so.9",
        )
    )
    [w] = s.wheel_files
    assert w.pin == "nvidia-cudnn-cu13==9.13.0.50" and w.target == "/faults/0"
    assert s.setup == (f"rm -rf -- {SITE}/lib.so.9 && cp -R /faults/0 {SITE}/lib.so.9",)


def test_env_gpu_and_memory() -> None:
    s = spec(
        f("no_gpu"),
        f("env_set", name="A", value="1"),
        f("env_unset", name="B"),
        f("memory_limit", bytes="1000000"),
    )
    assert dict(s.env) == {"A": "1", "CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void"}
    assert s.unset == ("B",) and s.memory_limit == 1_000_000 and s.gpu is False
    assert spec().gpu is True


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (f("hide"), "needs 'path'"),
        (f("hide", path="{nope}/x"), "unknown placeholder"),
        (f("pip_layer"), "not applied at run time"),
    ],
)
def test_bad_faults(fault: Fault, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        spec(fault)
