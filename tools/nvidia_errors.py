"""Regenerate harness/resources/nvidia_errors.json from the headers in NVIDIA's PyPI wheels.

    pip download --no-deps -d /tmp/nvw nvidia-cuda-runtime-cu12==12.9.79 \
        nvidia-cudnn-cu12==9.28.0.42 nvidia-nccl-cu12==2.32.3 nvidia-cudnn-cu11==8.9.6.50
    python tools/nvidia_errors.py /tmp/nvw/*.whl > harness/resources/nvidia_errors.json

Every row is code -> name -> message (the header's doc comment) -> signature. The header gives
the first three; SIGNATURE below is ours, and says which failure each enumerator is evidence of
(None: the code says nothing about the stack, e.g. an invalid argument). LEGACY carries the
CUDA runtime numbers used before CUDA 10.1 renumbered cudaError_t, which old logs still print.
cuDNN 8's cudnnStatus_t (cudnn_ops_infer.h, api `cudnn8`) is read beside cuDNN 9's: cuDNN 9
renumbered and renamed it (CUDNN_STATUS_ARCH_MISMATCH = 6 became
CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH = 3007), and logs of cuDNN 7 and 8 print the old names.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import PurePosixPath

HEADERS = {  # header file -> (api, enum it holds)
    "driver_types.h": ("runtime", "cudaError"),
    "cuda.h": ("driver", "cudaError_enum"),
    "cudnn_graph.h": ("cudnn", "cudnnStatus_t"),
    "cudnn_ops_infer.h": ("cudnn8", "cudnnStatus_t"),  # cuDNN 8 (its header has no doc strings)
    "nccl.h": ("nccl", "ncclResult_t"),
}

# enumerator -> signature. Why each: the enumerator's own doc string (in the table).
SIGNATURE: dict[str, str] = {
    # "The requested device function does not exist or is not compiled for the proper device
    # architecture": no code for this GPU in the binary (an extension or framework built for
    # other sm_XX, or PTX it cannot JIT). That is arch_unsupported, not a driver problem.
    "cudaErrorInvalidDeviceFunction": "arch_unsupported",
    "cudaErrorNoKernelImageForDevice": "arch_unsupported",
    "cudaErrorUnsupportedPtxVersion": "arch_unsupported",
    "cudaErrorInvalidPtx": "arch_unsupported",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "arch_unsupported",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "arch_unsupported",
    "CUDA_ERROR_INVALID_PTX": "arch_unsupported",
    "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH": "arch_unsupported",
    # cuDNN 8's names (its header has no doc strings; cuDNN 8's API reference, section
    # cudnnStatus_t, says of them: a feature absent from the current GPU device; a resource
    # allocation inside cuDNN failed, usually cudaMalloc; a version mismatch; an access to GPU
    # memory space failed).
    "CUDNN_STATUS_ARCH_MISMATCH": "arch_unsupported",
    "CUDNN_STATUS_ALLOC_FAILED": "gpu_oom",
    "CUDNN_STATUS_VERSION_MISMATCH": "cudnn_version_mismatch",
    "CUDNN_STATUS_MAPPING_ERROR": "cudnn_init_failure",
    "cudaErrorInsufficientDriver": "driver_too_old",
    "cudaErrorSystemDriverMismatch": "driver_too_old",
    "cudaErrorCompatNotSupportedOnDevice": "driver_too_old",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "driver_too_old",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": "driver_too_old",
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER": "driver_too_old",
    # "not yet ready to start any CUDA work ... all required driver daemons are actively
    # running": on NVSwitch systems, Fabric Manager (pytorch/pytorch#35710)
    "cudaErrorSystemNotReady": "fabric_manager_not_running",
    "CUDA_ERROR_SYSTEM_NOT_READY": "fabric_manager_not_running",
    "cudaErrorStubLibrary": "stub_driver",
    "CUDA_ERROR_STUB_LIBRARY": "stub_driver",
    "cudaErrorNoDevice": "no_gpu_or_driver",
    "CUDA_ERROR_NO_DEVICE": "no_gpu_or_driver",
    "cudaErrorMemoryAllocation": "gpu_oom",
    "CUDA_ERROR_OUT_OF_MEMORY": "gpu_oom",
    "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED": "gpu_oom",
    # The kernel faults: each doc string says the device hit it "while executing a kernel"
    # (700, 714-719), and each leaves the context unusable ("any further CUDA work will return
    # the same error"). An out-of-bounds write shows as any of them (reports/evidence/logs/
    # illegal-address.log: a CuPy kernel writing out of bounds gave 717 on an H200).
    "cudaErrorIllegalAddress": "illegal_memory_access",
    "cudaErrorMisalignedAddress": "illegal_memory_access",
    "cudaErrorInvalidAddressSpace": "illegal_memory_access",
    "cudaErrorInvalidPc": "illegal_memory_access",
    "cudaErrorHardwareStackError": "illegal_memory_access",
    "cudaErrorIllegalInstruction": "illegal_memory_access",
    "cudaErrorLaunchFailure": "illegal_memory_access",
    "cudaErrorAssert": "illegal_memory_access",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "illegal_memory_access",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "illegal_memory_access",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE": "illegal_memory_access",
    "CUDA_ERROR_INVALID_PC": "illegal_memory_access",
    "CUDA_ERROR_HARDWARE_STACK_ERROR": "illegal_memory_access",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "illegal_memory_access",
    "CUDA_ERROR_LAUNCH_FAILED": "illegal_memory_access",
    "CUDA_ERROR_ASSERT": "illegal_memory_access",
    "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED": "cudnn_missing",
    "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE": "cudnn_missing",
    "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH": "cudnn_version_mismatch",
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART": "cudnn_version_mismatch",
    "CUDNN_STATUS_NOT_INITIALIZED": "cudnn_init_failure",
    "CUDNN_STATUS_INTERNAL_ERROR": "cudnn_init_failure",
    "CUDNN_STATUS_EXECUTION_FAILED": "cudnn_init_failure",
    "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER": "cudnn_init_failure",
    "CUDNN_STATUS_EXECUTION_FAILED_CUDART": "cudnn_init_failure",
    "ncclUnhandledCudaError": "nccl_error",
    "ncclSystemError": "nccl_error",
    "ncclInternalError": "nccl_error",
    "ncclInvalidUsage": "nccl_error",
    "ncclRemoteError": "nccl_error",
    "ncclTimeout": "nccl_error",
    # "all CUDA devices are busy or unavailable at the current time" / "requested CUDA device
    # is unavailable at the current time"; "an exclusive-thread device that is already in use
    # by a different thread": a compute mode that admits one process (or none), held.
    "cudaErrorDevicesUnavailable": "gpu_busy",
    "CUDA_ERROR_DEVICE_UNAVAILABLE": "gpu_busy",
    "cudaErrorDeviceAlreadyInUse": "gpu_busy",
    # "an uncorrectable ECC error was detected during execution", "an uncorrectable NVLink
    # error was detected during the execution": the hardware, not the stack.
    "cudaErrorECCUncorrectable": "gpu_hardware_fault",
    "CUDA_ERROR_ECC_UNCORRECTABLE": "gpu_hardware_fault",
    "cudaErrorNvlinkUncorrectable": "gpu_hardware_fault",
    "CUDA_ERROR_NVLINK_UNCORRECTABLE": "gpu_hardware_fault",
    # "the device ordinal supplied by the user does not correspond to a valid CUDA device":
    # an index past the devices this process can see.
    "cudaErrorInvalidDevice": "invalid_device_ordinal",
    "CUDA_ERROR_INVALID_DEVICE": "invalid_device_ordinal",
}
# Messages distinctive enough to match as text (most doc strings are prose, or too generic).
# The kernel faults' texts are what cudaGetErrorString/cuGetErrorString return for them (the
# same text for the runtime and the driver code), which frameworks print after "CUDA error: ".
# (700's text, "an illegal memory access was encountered", is a catalog pattern already.)
MESSAGE_PATTERNS = {
    "cudaErrorInvalidDeviceFunction": "invalid device function",
    "cudaErrorInvalidAddressSpace": "operation not supported on global/shared address space",
    "cudaErrorInvalidPc": "invalid program counter",
    "cudaErrorHardwareStackError": "hardware stack error",
    "cudaErrorIllegalInstruction": "an illegal instruction was encountered",
    "cudaErrorLaunchFailure": "unspecified launch failure",
}

# cudaError_t before CUDA 10.1 (the renumbering). Source: the CUDA 10.0 runtime API reference.
LEGACY_SOURCE = (
    "https://docs.nvidia.com/cuda/archive/10.0/cuda-runtime-api/group__CUDART__TYPES.html"
)
LEGACY = [
    (8, "cudaErrorInvalidDeviceFunction", "invalid device function"),
    (10, "cudaErrorInvalidDevice", "invalid device ordinal"),
    (38, "cudaErrorNoDevice", "no CUDA-capable device is detected"),
    (39, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"),
    (
        48,
        "cudaErrorNoKernelImageForDevice",
        "no kernel image is available for execution on the device",
    ),
]

_ENTRY = re.compile(
    r"(?:/\*\*(?P<doc>(?:(?!\*/).)*)\*/\s*)?"
    r"(?P<name>(?:cuda|CUDA_|CUDNN_STATUS_|nccl)\w+)\s*=\s*(?P<code>\d+)\s*,?"
    r"(?:\s*/\*\*<(?P<post>(?:(?!\*/).)*)\*/)?",
    re.S,
)


def _clean(doc: str | None) -> str:
    text = " ".join((doc or "").replace("*", " ").split())
    text = re.sub(r"\s*@since.*$", "", text)
    text = re.sub(r"\\(?:ref|p|c)\s+", "", text).replace("::", "")
    return text.split(". ")[0].rstrip(".")


def _body(text: str, enum: str) -> str:
    if enum == "ncclResult_t":
        m = re.search(r"typedef enum \{(.*?)\}\s*ncclResult_t;", text, re.S)
    elif enum == "cudnnStatus_t":
        m = re.search(r"typedef enum \{(.*?)\}\s*cudnnStatus_t;", text, re.S)
    else:
        m = re.search(rf"enum\s+(?:__device_builtin__\s+)?{enum}\s*\{{(.*?)\}}", text, re.S)
    if m is None:
        raise SystemExit(f"enum {enum} not found")
    return m.group(1)


def rows(wheels: list[str]) -> tuple[list[dict[str, object]], list[str]]:
    out: list[dict[str, object]] = []
    cited: list[str] = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                name = PurePosixPath(member).name
                if name not in HEADERS or "/include/" not in member:
                    continue
                api, enum = HEADERS[name]
                cited.append(f"{PurePosixPath(wheel).name}:{member}")
                body = _body(zf.read(member).decode("utf-8", "replace"), enum)
                for m in _ENTRY.finditer(body):
                    ident = m.group("name")
                    out.append({
                        "api": api, "code": int(m.group("code")), "name": ident,
                        "message": _clean(m.group("doc") or m.group("post")),
                        "signature": SIGNATURE.get(ident),
                        "match_message": MESSAGE_PATTERNS.get(ident),
                        "source": f"{PurePosixPath(wheel).name}:{member}",
                    })  # fmt: skip
    for code, ident, message in LEGACY:
        out.append({
            "api": "runtime_legacy", "code": code, "name": ident, "message": message,
            "signature": SIGNATURE[ident], "match_message": None, "source": LEGACY_SOURCE,
        })  # fmt: skip
    return out, cited


def main(argv: list[str]) -> int:
    table, cited = rows(argv)
    doc = {
        "schema": 1,
        "generated_by": "python tools/nvidia_errors.py <wheels> (see its docstring)",
        "headers": sorted(cited),
        "errors": table,
    }
    sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
