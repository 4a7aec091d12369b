"""What the host's NVIDIA driver and GPUs are: NVML first (no child process), then nvidia-smi."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import re
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness import proc
from harness.drivers import driver_version, is_driver_version
from harness.model import DriverTarget, Gpu, Machine, Where

NVML_SUCCESS = 0


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
    return lines[0] if lines and is_driver_version(lines[0]) else None


def detect_driver() -> DriverTarget:
    version = _nvml_driver()
    if version is not None:
        return DriverTarget(version=version, origin="nvml")
    version = _smi_driver()
    if version is not None:
        return DriverTarget(version=version, origin="nvidia-smi")
    return DriverTarget(version=None, origin="none")


# ---------------------------------------------------------------- GPUs


@contextlib.contextmanager
def _nvml() -> Iterator[ctypes.CDLL | None]:
    """NVML initialized, or None where the library is absent or will not start."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        yield None
        return
    if nvml.nvmlInit_v2() != NVML_SUCCESS:
        yield None
        return
    try:
        yield nvml
    finally:
        nvml.nvmlShutdown()


def _nvml_gpus() -> tuple[Gpu, ...] | None:
    """nvmlDeviceGetCount_v2, ...GetHandleByIndex_v2, ...GetName, ...GetCudaComputeCapability.
    https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"""
    with _nvml() as nvml:
        if nvml is None:
            return None
        count = ctypes.c_uint()
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != NVML_SUCCESS:
            return None
        gpus = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(handle)):
                continue
            name = ctypes.create_string_buffer(96)
            nvml.nvmlDeviceGetName(handle, name, ctypes.c_uint(len(name)))
            major, minor = ctypes.c_int(), ctypes.c_int()
            ok = nvml.nvmlDeviceGetCudaComputeCapability(
                handle, ctypes.byref(major), ctypes.byref(minor)
            )
            cap = f"{major.value}.{minor.value}" if ok == NVML_SUCCESS else None
            gpus.append(Gpu(index=i, name=name.value.decode(errors="replace"), capability=cap))
        return tuple(gpus)


def parse_smi_gpus(text: str) -> tuple[Gpu, ...]:
    """`nvidia-smi --query-gpu=index,name,compute_cap --format=csv,noheader` (compute_cap may be
    missing: older drivers do not know the field, and it is then queried without it)."""
    gpus = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        cap = cells[2] if len(cells) > 2 and re.fullmatch(r"[0-9]+\.[0-9]+", cells[2]) else None
        gpus.append(Gpu(index=int(cells[0]), name=cells[1], capability=cap))
    return tuple(gpus)


def _smi_gpus() -> tuple[Gpu, ...] | None:
    for fields in ("index,name,compute_cap", "index,name"):
        res = proc.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], timeout=20)
        if res.returncode is None:
            return None
        if res.returncode == 0:
            return parse_smi_gpus(res.stdout)
    return None


def detect_gpus() -> tuple[Gpu, ...]:
    """The GPUs the driver sees, with compute capability; () with no driver."""
    found = _nvml_gpus()
    if found is None:
        found = _smi_gpus()
    return found or ()


def machine(engine: str | None = None) -> Machine:
    """This host's driver, GPUs and id, and what runs the cells, as journaled with every result."""
    return Machine.of(detect_driver().version, detect_gpus(), host=host_id(), engine=engine)


# machine-id(5): the same on every boot, unique per installation; not to be shown as it is, so
# a digest of it (as sd_id128_get_machine_app_specific does) stands for it in the journal.
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def host_id(files: Sequence[str] = MACHINE_ID_FILES) -> str:
    """This machine as the journal and the report know it: 12 hex digits of a digest of its
    machine id, else of its host name (a container without /etc/machine-id)."""
    for name in files:
        try:
            text = Path(name).read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            continue
        if text and text != "uninitialized":
            return _digest(f"machine-id\0{text}")
    return _digest(f"hostname\0{socket.gethostname()}")


def _digest(text: str) -> str:
    return hashlib.sha256(f"stackmatrix\0{text}".encode()).hexdigest()[:12]


def resolve_driver(flag: str | None, profile_driver: str | None, where: Where) -> DriverTarget:
    """--driver, else the host's (NVML / nvidia-smi), else the profile's, else none."""
    if flag is not None:
        if flag == "none":
            return DriverTarget(version=None, origin="flag")
        return DriverTarget(version=driver_version(flag, where, "--driver"), origin="flag")
    found = detect_driver()
    if found.version is not None:
        return found
    if profile_driver is not None and profile_driver != "none":
        return DriverTarget(version=profile_driver, origin="profile")
    return found
