"""What the host's NVIDIA driver is: NVML first (no child process), then nvidia-smi."""

from __future__ import annotations

import ctypes
import re

from harness import proc
from harness.model import DriverTarget

NVML_SUCCESS = 0
_DRIVER_RE = re.compile(r"^\d+(\.\d+)+$")


def _nvml_driver() -> str | None:
    """nvmlInit_v2 + nvmlSystemGetDriverVersion, through the library the driver installs.
    https://docs.nvidia.com/deploy/nvml-api/group__nvmlSystemQueries.html"""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    try:
        if nvml.nvmlInit_v2() != NVML_SUCCESS:
            return None
        buf = ctypes.create_string_buffer(96)
        ok = nvml.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(len(buf))) == NVML_SUCCESS
        return buf.value.decode() if ok else None
    finally:
        shutdown = getattr(nvml, "nvmlShutdown", None)
        if shutdown is not None:
            shutdown()


def _smi_driver() -> str | None:
    res = proc.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], timeout=20
    )
    if res.returncode != 0:
        return None
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
    return lines[0] if lines and _DRIVER_RE.match(lines[0]) else None


def detect_driver() -> DriverTarget:
    version = _nvml_driver()
    if version is not None:
        return DriverTarget(version=version, origin="nvml")
    version = _smi_driver()
    if version is not None:
        return DriverTarget(version=version, origin="nvidia-smi")
    return DriverTarget(version=None, origin="none")
