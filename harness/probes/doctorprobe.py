"""What `harness doctor` asks an interpreter, run as a child: standard library and the frameworks
only, never `harness` (it runs under the user's --python, whatever that has installed).

    doctorprobe.py env               the interpreter, the frameworks it can import, nvidia wheels
    doctorprobe.py framework NAME    import NAME (torch|tensorflow), step by step
    doctorprobe.py libversion PATH   load one CUDA-stack library by path and ask its version

Each mode prints JSON lines starting {"doctor": 1, ...} and flushes after each, so a child that
dies inside a step (a broken cuDNN aborts the process: shared/research/faultlab.md rows 1a-1c)
still leaves every step before it. Loading a library is the only way to learn what it is, and the
way that can kill a process: that is why this runs in a child and one library per child.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import traceback

FRAMEWORKS = ("torch", "tensorflow")
_LIBS = re.compile(r"/(lib(?:cuda|cudart|cublas|cublasLt|cudnn\w*|nccl)\.so[.\d]*)$")
_WHEELS = re.compile(r"^(nvidia[-_]|cuda[-_]|torch$|tensorflow|numpy$)", re.I)


def emit(**fields):
    sys.stdout.write(json.dumps({"doctor": 1, **fields}, default=str) + "\n")
    sys.stdout.flush()


def loaded_libraries():
    """CUDA-stack libraries mapped into this process: file name -> path (/proc/self/maps)."""
    found = {}
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(" ", 5)[-1].strip()
                m = _LIBS.search(path)
                if m and m.group(1) not in found:
                    found[m.group(1)] = path
    except OSError:
        pass
    return dict(sorted(found.items()))


# ---------------------------------------------------------------- env


def own_libraries():
    """Library files the installed wheels ship (site-packages/nvidia/*/lib, torch/lib)."""
    out = []
    for entry in sys.path:
        if not os.path.isdir(entry):
            continue
        folders = [os.path.join(entry, "torch", "lib")]
        nvidia = os.path.join(entry, "nvidia")
        if os.path.isdir(nvidia):
            folders += [os.path.join(nvidia, d, "lib") for d in sorted(os.listdir(nvidia))]
        for folder in folders:
            if os.path.isdir(folder):
                for name in sorted(os.listdir(folder)):
                    path = os.path.join(folder, name)
                    if _LIBS.search(path) and path not in out:
                        out.append(path)
    return out


def changed_files(dist):
    """Shared libraries an nvidia-* wheel installed that are gone or not the size its RECORD
    says (truncated, or replaced by another release's file). Sizes only: hashing is gigabytes."""
    missing, changed = [], []
    for f in dist.files or ():
        if ".so" not in f.name or f.size is None:
            continue
        path = str(f.locate())
        try:
            size = os.stat(path).st_size
        except OSError:
            missing.append(path)
            continue
        if size != f.size:
            changed.append([path, f.size, size])
    return missing, changed


def env():
    wheels, damaged = {}, []
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] or ""
        if _WHEELS.match(name):
            wheels[name] = dist.version
        if name.lower().startswith("nvidia"):
            missing, changed = changed_files(dist)
            if missing or changed:
                damaged.append({"wheel": name, "missing": missing, "changed": changed})
    emit(
        step="env",
        ok=True,
        python=sys.version.split()[0],
        executable=sys.executable,
        importable=[f for f in FRAMEWORKS if importlib.util.find_spec(f) is not None],
        wheels=sorted(wheels.items()),
        damaged=damaged,
        own_libs=own_libraries(),
    )


# ---------------------------------------------------------------- frameworks


def torch_steps():
    def imp(ctx):
        import torch

        ctx["torch"] = torch
        return {"version": torch.__version__, "file": torch.__file__}

    def build(ctx):
        torch = ctx["torch"]
        arch = torch.cuda.get_arch_list() if torch.version.cuda else []
        cudnn = getattr(torch._C, "_cudnn", None)
        compiled = cudnn.getCompileVersion() if cudnn is not None else None
        return {
            "built_cuda": torch.version.cuda,
            "built_cudnn": ".".join(map(str, compiled)) if compiled else None,
            "arch_list": list(arch),
        }

    def cudnn(ctx):
        # version() loads cuDNN and runs torch's runtime-vs-compiled check (no GPU needed).
        raw = ctx["torch"].backends.cudnn.version()
        return {"runtime_cudnn": raw}

    def devices(ctx):
        torch = ctx["torch"]
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        caps = [".".join(map(str, torch.cuda.get_device_capability(i))) for i in range(count)]
        return {"count": count, "capabilities": caps}

    return (("import", imp), ("build", build), ("cudnn", cudnn), ("devices", devices))


def tensorflow_steps():
    def imp(ctx):
        import tensorflow as tf

        ctx["tf"] = tf
        return {"version": tf.__version__, "file": tf.__file__}

    def build(ctx):
        info = dict(ctx["tf"].sysconfig.get_build_info())
        return {
            "built_cuda": info.get("cuda_version"),
            "built_cudnn": info.get("cudnn_version"),
            "arch_list": list(info.get("cuda_compute_capabilities") or []),
        }

    def devices(ctx):
        tf = ctx["tf"]
        gpus = tf.config.list_physical_devices("GPU")
        caps = []
        for g in gpus:
            cc = tf.config.experimental.get_device_details(g).get("compute_capability")
            caps.append(".".join(map(str, cc)) if cc else None)
        return {"count": len(gpus), "capabilities": caps}

    return (("import", imp), ("build", build), ("devices", devices))


def framework(name):
    steps = {"torch": torch_steps, "tensorflow": tensorflow_steps}[name]()
    ctx = {}
    for step, fn in steps:
        try:
            details = fn(ctx)
        except BaseException as exc:  # the failure is the fact: report it, then stop
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            emit(step=step, ok=False, error=text[-8000:], loaded=loaded_libraries())
            return 1
        emit(step=step, ok=True, loaded=loaded_libraries(), **details)
    return 0


# ---------------------------------------------------------------- one library


def _int_call(lib, fn):
    value = ctypes.c_int()
    status = getattr(lib, fn)(ctypes.byref(value))
    return status, value.value


def cudnn_version(lib):
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    v = int(lib.cudnnGetVersion())
    # cuDNN 9: major*10000 + minor*100 + patch; cuDNN <= 8: major*1000 + minor*100 + patch
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
    return {"version": f"{major}.{rest // 100}.{rest % 100}", "raw": v, "call": "cudnnGetVersion"}


def cudart_version(lib):
    status, v = _int_call(lib, "cudaRuntimeGetVersion")
    if status != 0:
        return {"error": f"cudaRuntimeGetVersion -> {status}"}
    return {"version": f"{v // 1000}.{v % 1000 // 10}", "raw": v, "call": "cudaRuntimeGetVersion"}


def cublas_version(lib):
    parts = []
    for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL (library_types.h)
        value = ctypes.c_int()
        status = lib.cublasGetProperty(prop, ctypes.byref(value))
        if status != 0:
            return {"error": f"cublasGetProperty -> {status}"}
        parts.append(str(value.value))
    return {"version": ".".join(parts), "call": "cublasGetProperty"}


def nccl_version(lib):
    status, v = _int_call(lib, "ncclGetVersion")
    if status != 0:
        return {"error": f"ncclGetVersion -> {status}"}
    major, rest = (v // 10000, v % 10000) if v >= 20900 else (v // 1000, v % 1000)
    return {"version": f"{major}.{rest // 100}.{rest % 100}", "raw": v, "call": "ncclGetVersion"}


def cuda_driver_version(lib):
    status, v = _int_call(lib, "cuDriverGetVersion")
    if status == 34:  # CUDA_ERROR_STUB_LIBRARY: the toolkit's link-time stub, not a driver
        return {"stub": True, "error": "cuDriverGetVersion -> 34 CUDA_ERROR_STUB_LIBRARY"}
    if status != 0:
        return {"error": f"cuDriverGetVersion -> {status}"}
    return {"version": f"{v // 1000}.{v % 1000 // 10}", "raw": v, "call": "cuDriverGetVersion"}


QUERIES = (
    ("libcudnn", cudnn_version),
    ("libcudart.", cudart_version),
    ("libcublas.", cublas_version),
    ("libnccl.", nccl_version),
    ("libcuda.", cuda_driver_version),
)


def libversion(path):
    name = os.path.basename(path)
    query = next((q for prefix, q in QUERIES if name.startswith(prefix)), None)
    if query is None:
        emit(step="libversion", ok=False, path=path, error=f"no version call for {name}")
        return 2
    try:
        lib = ctypes.CDLL(path)
        details = query(lib)
    except Exception as exc:  # OSError from dlopen (undefined symbol, missing file), a bad symbol
        emit(step="libversion", ok=False, path=path, error=f"{type(exc).__name__}: {exc}")
        return 1
    emit(step="libversion", ok="error" not in details, path=path, **details)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "env":
        env()
        return 0
    if len(argv) == 3 and argv[1] == "framework" and argv[2] in FRAMEWORKS:
        return framework(argv[2])
    if len(argv) == 3 and argv[1] == "libversion":
        return libversion(argv[2])
    sys.stderr.write(f"usage: {argv[0]} env | framework {'|'.join(FRAMEWORKS)} | libversion PATH\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
