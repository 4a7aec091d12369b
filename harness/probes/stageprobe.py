#!/usr/bin/env python3
"""stackmatrix staged probe: pins a GPU-stack failure to the stage where it surfaces.

Runs inside the target with the standard library and the framework only. Usage:
    python stageprobe.py torch|tensorflow [--gpu]
`--gpu`: the run was planned for a GPU, so finding none fails the devices stage (in the
framework's own words where it has any) instead of skipping the GPU stages: a GPU job that
silently runs on the CPU is the failure.
One JSON line per event on stdout: {"probe": 1, "stage", "event": "start"} before a stage runs
(so a crash inside it, e.g. SIGABRT in cuDNN, is still pinned to it), then {"probe": 1, "stage",
"event": "end", "ok", "skipped", "seconds", "details", "error"}. Without a GPU the GPU stages end
with skipped="no device": never a pass that did not happen.

The seeds print versions and run one op; this does each step on its own, records what the
framework was built against next to what the process actually loaded (paths from
/proc/self/maps), and calls the cuDNN C API directly so sub-library faults the frameworks hide
without a GPU still show.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import tempfile
import time
import traceback

STAGES = (
    "import",
    "build_info",
    "devices",
    "tensor_op",
    "cudnn_api",
    "cudnn_conv",
    "train_step",
    "save_load",
    "memory",
)
_LIBS = re.compile(
    r"/(lib(?:cudart|cudnn\w*|cublas\w*|cuda|nvrtc\w*|cupti|nccl|nvJitLink|"
    r"cufft|curand|cusolver|cusparse\w*)\.so[.\d]*)$"
)


class Skip(Exception):
    """The stage cannot run here (e.g. no device); `details` says what was found instead."""

    def __init__(self, why, details=None):
        super().__init__(why)
        self.details = details or {}


def emit(**fields):
    sys.stdout.write(json.dumps({"probe": 1, **fields}, default=str) + "\n")
    sys.stdout.flush()


def loaded_libraries():
    """CUDA-stack libraries mapped into this process, by name -> path."""
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


# ---------------------------------------------------------------- the driver gate (ctypes)


def _cudart_path():
    for name, path in loaded_libraries().items():
        if name.startswith("libcudart.so"):
            return path
    for entry in sys.path:  # not loaded yet: the wheel's copy (cu12: cuda_runtime, cu13: cu13)
        for sub in ("cuda_runtime", "cu13"):
            lib = os.path.join(entry, "nvidia", sub, "lib")
            if os.path.isdir(lib):
                for f in sorted(os.listdir(lib)):
                    if re.match(r"libcudart\.so\.\d+$", f):
                        return os.path.join(lib, f)
    return None


def driver_gate():
    """The CUDA runtime's own check of the driver, through the libcudart the framework ships:
    cudaGetDeviceCount's code (34 stub, 35 driver too old or absent, 100 no device: the version
    gate passed), the driver API version the loaded libcuda reports, and which files they are."""
    gate = {"libcuda": None, "driver_api": None, "cudart": _cudart_path(), "runtime": None}
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        gate["libcuda_error"] = str(exc)
    else:
        v = ctypes.c_int(0)
        gate["libcuda_init"] = cuda.cuDriverGetVersion(ctypes.byref(v))
        gate["driver_api"] = v.value or None
        gate["libcuda"] = loaded_libraries().get("libcuda.so.1") or next(
            (p for n, p in loaded_libraries().items() if n.startswith("libcuda.so")), "libcuda.so.1"
        )
    if gate["cudart"] is None:
        return gate
    rt = ctypes.CDLL(gate["cudart"])
    v, n = ctypes.c_int(0), ctypes.c_int(0)
    if rt.cudaRuntimeGetVersion(ctypes.byref(v)) == 0:
        gate["runtime"] = v.value
    code = rt.cudaGetDeviceCount(ctypes.byref(n))
    rt.cudaGetErrorName.restype = rt.cudaGetErrorString.restype = ctypes.c_char_p
    gate["code"] = code
    gate["name"] = (rt.cudaGetErrorName(code) or b"").decode()
    gate["message"] = (rt.cudaGetErrorString(code) or b"").decode()
    return gate


def gate_line(gate):
    return (
        f"cudaGetDeviceCount returned {gate.get('code')} ({gate.get('name')}: "
        f"{gate.get('message')}): CUDA runtime {gate.get('runtime')} ({gate.get('cudart')}), "
        f"driver API {gate.get('driver_api')} ({gate.get('libcuda')})"
    )


def no_device(gate, own_error=None, want=False):
    """Without a device: a driver that refused the runtime is the failure (the framework's own
    words first, when it has any); so is finding none on a run planned for a GPU (`want`). With
    no driver at all, or one that passed the version gate and then found no device, discovery
    is done (found none) and the GPU stages skip. Returns the gate record for the stage's
    details."""
    refused = gate["libcuda"] is not None and gate.get("code") not in (None, 0, 100)
    if refused or want:
        found = gate_line(gate) if gate["libcuda"] is not None else gate.get("libcuda_error")
        raise RuntimeError(f"{own_error}\n{found}" if own_error else str(found))
    gate["verdict"] = (
        f"the driver passed the version gate: {gate_line(gate)}"
        if gate["libcuda"] is not None
        else "no libcuda.so.1: no driver"
    )
    return gate


# ---------------------------------------------------------------- cuDNN C API (ctypes)


def _cudnn_path():
    for name, path in loaded_libraries().items():
        if name.startswith("libcudnn.so"):
            return path, True
    for entry in sys.path:  # not loaded (e.g. TensorFlow without a GPU): the wheel's copy
        lib = os.path.join(entry, "nvidia", "cudnn", "lib")
        if os.path.isdir(lib):
            for f in sorted(os.listdir(lib)):
                if re.match(r"libcudnn\.so\.\d+$", f):
                    return os.path.join(lib, f), False
    for major in (9, 8):  # the system's (nvidia/cuda's libcudnn9-cuda-12), as its loader finds it
        try:
            ctypes.CDLL(f"libcudnn.so.{major}")
        except OSError:
            continue
        path = loaded_libraries().get(f"libcudnn.so.{major}")
        if path:
            return path, False
    return None, False


def cudnn_api(ctx):
    """Version, one descriptor per sub-library, and a handle (that one needs a device)."""
    path, by_framework = _cudnn_path()
    if path is None:
        raise RuntimeError(
            "no libcudnn found: not loaded by the framework, not in site-packages, not on the "
            "loader's path"
        )
    lib = ctypes.CDLL(path)
    lib.cudnnGetErrorString.restype = ctypes.c_char_p
    details = {"library": path, "loaded_by_framework": by_framework}
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    details["version"] = int(lib.cudnnGetVersion())
    failures = []
    # The CUDA a cuDNN build is for (no GPU needed): nvidia-cudnn-cu12 and -cu13 unpack into
    # the same folder, and a framework on CUDA 12 cannot use a cuDNN built for CUDA 13.
    lib.cudnnGetCudartVersion.restype = ctypes.c_size_t
    cudart = int(lib.cudnnGetCudartVersion())
    details["cudart_version"] = cudart
    framework_cuda = str(ctx.get("cuda") or "")
    if framework_cuda and cudart // 1000 != int(framework_cuda.split(".", maxsplit=1)[0]):
        built = f"{cudart // 1000}.{cudart % 1000 // 10}"
        failures.append(
            f"cuDNN version mismatch: {path} is built for CUDA {built} (cudnnGetCudartVersion"
            f" {cudart}), the framework for CUDA {framework_cuda}"
        )
    calls = (
        ("ops", "cudnnCreateTensorDescriptor", "cudnnDestroyTensorDescriptor"),
        ("cnn", "cudnnCreateConvolutionDescriptor", "cudnnDestroyConvolutionDescriptor"),
        ("adv", "cudnnCreateRNNDescriptor", "cudnnDestroyRNNDescriptor"),
    )
    for sublib, create, destroy in calls:
        desc = ctypes.c_void_p()
        status = getattr(lib, create)(ctypes.byref(desc))
        name = lib.cudnnGetErrorString(status).decode()
        details[sublib] = f"{create} -> {status} {name}"
        if status == 0:
            getattr(lib, destroy)(desc)
        else:
            failures.append(details[sublib])
    desc = ctypes.c_void_p()
    # CUDNN_BACKEND_POINTWISE_DESCRIPTOR = 0 (cudnn_graph.h): served by the graph sub-library.
    status = lib.cudnnBackendCreateDescriptor(0, ctypes.byref(desc))
    details["graph"] = (
        f"cudnnBackendCreateDescriptor -> {status} {lib.cudnnGetErrorString(status).decode()}"
    )
    if status == 0:
        lib.cudnnBackendDestroyDescriptor(desc)
    else:
        failures.append(details["graph"])
    if ctx.get("device"):
        handle = ctypes.c_void_p()
        status = lib.cudnnCreate(ctypes.byref(handle))
        details["handle"] = f"cudnnCreate -> {status} {lib.cudnnGetErrorString(status).decode()}"
        if status == 0:
            lib.cudnnDestroy(handle)
        else:
            failures.append(details["handle"])
    else:
        details["handle"] = "skipped: no device"
    if failures:
        raise RuntimeError("; ".join(failures))
    return details


# ---------------------------------------------------------------- torch


def torch_imp(ctx):
    import torch

    ctx["torch"] = torch
    return {"version": torch.__version__, "file": torch.__file__}


def torch_build_info(ctx):
    torch = ctx["torch"]
    info = {
        "built_cuda": torch.version.cuda,
        "cudnn_enabled_in_build": torch.backends.cudnn.is_available(),
    }
    ctx["cuda"] = torch.version.cuda
    # version() runs torch's own runtime-vs-compiled check and loads the cuDNN library.
    info["cudnn_runtime"] = torch.backends.cudnn.version()
    cudnn = getattr(torch._C, "_cudnn", None)
    if cudnn is not None:
        info["cudnn_compiled"] = ".".join(map(str, cudnn.getCompileVersion()))
    info["loaded"] = loaded_libraries()
    return info


def torch_devices(ctx):
    torch = ctx["torch"]
    count = torch.cuda.device_count()
    ctx["device"] = count > 0 and torch.cuda.is_available()
    info = {"count": count, "available": bool(ctx["device"])}
    if not ctx["device"]:
        gate = driver_gate()
        own = None
        if ctx.get("want_gpu") or (
            gate["libcuda"] is not None and gate.get("code") not in (None, 0, 100)
        ):
            try:
                torch.cuda.init()  # torch's own words for what the driver said
            except Exception as exc:
                own = str(exc)
        info["gate"] = no_device(gate, own, want=ctx.get("want_gpu", False))
    if ctx["device"]:
        info["names"] = [torch.cuda.get_device_name(i) for i in range(count)]
        info["capability"] = [list(torch.cuda.get_device_capability(i)) for i in range(count)]
        info["arch_list"] = torch.cuda.get_arch_list()
        info["driver"] = getattr(torch._C, "_cuda_getDriverVersion", lambda: None)()
    return info


def torch_need_device(ctx):
    if not ctx.get("device"):
        raise Skip("no device")
    return ctx["torch"]


def torch_tensor_op(ctx):
    torch = torch_need_device(ctx)
    a = torch.randn(512, 512)
    dev = a.cuda()
    # torch's own kernel first (a build with no code for this GPU fails here, in its own
    # words), then the math library's (cuBLAS)
    twice = (dev + dev).cpu()
    if not torch.equal(twice, a + a):
        raise RuntimeError("GPU addition differs from CPU")
    got = (dev @ dev).cpu()
    torch.cuda.synchronize()
    err = float((got - a @ a).abs().max())
    if not err < 1e-2:
        raise RuntimeError(f"GPU matmul differs from CPU by {err}")
    return {"max_abs_diff": err}


def torch_cudnn_conv(ctx):
    torch = torch_need_device(ctx)
    torch.backends.cudnn.enabled = True
    x = torch.randn(8, 3, 32, 32)
    conv = torch.nn.Conv2d(3, 16, 3)
    ref = conv(x)
    got = conv.cuda()(x.cuda()).cpu()
    torch.cuda.synchronize()
    err = float((got - ref).abs().max().detach())
    if not err < 1e-2:
        raise RuntimeError(f"cuDNN convolution differs from CPU by {err}")
    return {"max_abs_diff": err, "benchmark": torch.backends.cudnn.benchmark}


def torch_model(torch):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 4),
    )


def torch_train_step(ctx):
    torch = torch_need_device(ctx)
    torch.manual_seed(0)
    net = torch_model(torch).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(16, 3, 16, 16).cuda(), torch.randint(0, 4, (16,)).cuda()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if not torch.isfinite(loss):
        raise RuntimeError(f"loss is {loss.item()}")
    ctx["net"] = net
    return {"loss": float(loss)}


def torch_save_load(ctx):
    torch = torch_need_device(ctx)
    net = ctx.get("net") or torch_model(torch).cuda()
    x = torch.randn(4, 3, 16, 16).cuda()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "weights.pt")
        torch.save(net.state_dict(), path)
        fresh = torch_model(torch).cuda()
        fresh.load_state_dict(torch.load(path, map_location="cuda"))
    with torch.no_grad():
        err = float((fresh(x) - net(x)).abs().max())
    if not err < 1e-5:
        raise RuntimeError(f"reloaded weights infer differently ({err})")
    return {"max_abs_diff": err}


def oom_factor():
    """STACKMATRIX_PROBE_OOM=F: the memory stage asks for F times the device's memory (the
    gpu-oom scenario); unset: a 64 MiB block."""
    value = os.environ.get("STACKMATRIX_PROBE_OOM")
    return float(value) if value else None


def memory_limit():
    """The memory this process may use: its cgroup's limit (v2, then v1) or, without one, its
    data rlimit (the local backend's limit); None when neither is set."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 50:  # v1 says "no limit" with a huge number
            return int(text)
    import resource

    soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    return soft if soft != resource.RLIM_INFINITY else None


def host_oom_size():
    """STACKMATRIX_PROBE_HOST_OOM=F: the memory stage first fills F times the process's memory
    limit on the host, with or without a GPU (the host-memory-limit scenario); without a limit
    it is skipped rather than fill the machine. Unset: None."""
    value = os.environ.get("STACKMATRIX_PROBE_HOST_OOM")
    if not value:
        return None
    limit = memory_limit()
    if limit is None:
        raise Skip("no memory limit to exceed (STACKMATRIX_PROBE_HOST_OOM needs one)")
    return int(limit * float(value))


def torch_memory(ctx):
    size = host_oom_size()
    if size is not None:  # every byte written, so the pages are really taken (not overcommit)
        ctx["torch"].ones(size, dtype=ctx["torch"].uint8)
    torch = torch_need_device(ctx)
    factor = oom_factor()
    if factor is not None:
        total = torch.cuda.mem_get_info()[1]
        torch.empty(int(total * factor), dtype=torch.uint8, device="cuda")
    block = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    info = {
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
    }
    del block
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    info.update(free=free, total=total)
    return info


def torch_stages():
    return {
        "import": torch_imp,
        "build_info": torch_build_info,
        "devices": torch_devices,
        "tensor_op": torch_tensor_op,
        "cudnn_api": cudnn_api,
        "cudnn_conv": torch_cudnn_conv,
        "train_step": torch_train_step,
        "save_load": torch_save_load,
        "memory": torch_memory,
    }


# ---------------------------------------------------------------- tensorflow


def tf_imp(ctx):
    import tensorflow as tf

    ctx["tf"] = tf
    return {"version": tf.__version__, "file": tf.__file__}


def tf_build_info(ctx):
    tf = ctx["tf"]
    info = dict(tf.sysconfig.get_build_info())
    ctx["cuda"] = info.get("cuda_version")
    info["loaded"] = loaded_libraries()
    return {k: info[k] for k in sorted(info)}


def tf_devices(ctx):
    tf = ctx["tf"]
    gpus = tf.config.list_physical_devices("GPU")
    ctx["device"] = bool(gpus)
    info = {"count": len(gpus), "available": bool(gpus), "names": [g.name for g in gpus]}
    if not gpus:  # TF's own log says only "no device" (cuInit first): ask the runtime it ships
        info["gate"] = no_device(driver_gate(), want=ctx.get("want_gpu", False))
    for g in gpus:
        tf.config.experimental.set_memory_growth(g, True)
    if gpus:
        info["details"] = [tf.config.experimental.get_device_details(g) for g in gpus]
    return info


def tf_need_device(ctx):
    if not ctx.get("device"):
        raise Skip("no device")
    return ctx["tf"]


def tf_tensor_op(ctx):
    tf = tf_need_device(ctx)
    with tf.device("/GPU:0"):
        a = tf.random.normal((512, 512))
        got = tf.linalg.matmul(a, a)
    with tf.device("/CPU:0"):
        ref = tf.linalg.matmul(a, a)
    err = float(tf.reduce_max(tf.abs(got - ref)))
    if not err < 1e-2:
        raise RuntimeError(f"GPU matmul differs from CPU by {err}")
    return {"max_abs_diff": err}


def tf_cudnn_conv(ctx):
    tf = tf_need_device(ctx)
    x = tf.random.normal((8, 32, 32, 3))
    k = tf.random.normal((3, 3, 3, 16))
    with tf.device("/GPU:0"):
        got = tf.nn.conv2d(x, k, 1, "VALID")
    with tf.device("/CPU:0"):
        ref = tf.nn.conv2d(x, k, 1, "VALID")
    err = float(tf.reduce_max(tf.abs(got - ref)))
    if not err < 1e-2:
        raise RuntimeError(f"cuDNN convolution differs from CPU by {err}")
    return {"max_abs_diff": err}


def tf_model(tf):
    return tf.keras.Sequential(
        [
            tf.keras.Input((16, 16, 3)),
            tf.keras.layers.Conv2D(8, 3, activation="relu"),
            tf.keras.layers.GlobalAveragePooling2D(),
            tf.keras.layers.Dense(4),
        ]
    )


def tf_train_step(ctx):
    tf = tf_need_device(ctx)
    tf.random.set_seed(0)
    with tf.device("/GPU:0"):
        net = tf_model(tf)
        net.compile(
            optimizer="sgd",
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        x = tf.random.normal((16, 16, 16, 3))
        y = tf.random.uniform((16,), 0, 4, dtype=tf.int32)
        loss = net.train_on_batch(x, y)
    if not float(loss) == float(loss):
        raise RuntimeError(f"loss is {loss}")
    ctx["net"] = net
    return {"loss": float(loss)}


def tf_save_load(ctx):
    tf = tf_need_device(ctx)
    net = ctx.get("net") or tf_model(tf)
    x = tf.random.normal((4, 16, 16, 3))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.weights.h5")
        net.save_weights(path)
        with tf.device("/GPU:0"):
            fresh = tf_model(tf)
            fresh.load_weights(path)
            err = float(tf.reduce_max(tf.abs(fresh(x) - net(x))))
    if not err < 1e-5:
        raise RuntimeError(f"reloaded weights infer differently ({err})")
    return {"max_abs_diff": err}


def tf_memory(ctx):
    size = host_oom_size()
    if size is not None:
        tf = ctx["tf"]
        with tf.device("/CPU:0"):
            tf.ones([size], dtype=tf.uint8).numpy()
    tf = tf_need_device(ctx)
    factor = oom_factor()
    if factor is not None:
        with tf.device("/GPU:0"):
            total = ctx.get("device_memory") or 80 * 1024**3
            tf.zeros([int(total * factor)], dtype=tf.uint8).numpy()
    info = tf.config.experimental.get_memory_info("GPU:0")
    return {
        "memory_growth": tf.config.experimental.get_memory_growth(
            tf.config.list_physical_devices("GPU")[0]
        ),
        **info,
    }


def tensorflow_stages():
    return {
        "import": tf_imp,
        "build_info": tf_build_info,
        "devices": tf_devices,
        "tensor_op": tf_tensor_op,
        "cudnn_api": cudnn_api,
        "cudnn_conv": tf_cudnn_conv,
        "train_step": tf_train_step,
        "save_load": tf_save_load,
        "memory": tf_memory,
    }


FRAMEWORKS = {"torch": torch_stages, "tensorflow": tensorflow_stages}


def main(argv):
    if len(argv) not in (2, 3) or argv[1] not in FRAMEWORKS or argv[2:] not in ([], ["--gpu"]):
        sys.stderr.write(f"usage: {argv[0]} {'|'.join(FRAMEWORKS)} [--gpu]\n")
        return 2
    stages = FRAMEWORKS[argv[1]]()
    ctx = {"want_gpu": argv[2:] == ["--gpu"]}
    failed = None
    for stage in STAGES:
        if failed is not None:
            emit(
                stage=stage,
                event="end",
                ok=False,
                skipped=f"not run: {failed} failed",
                seconds=0.0,
                details={},
                error=None,
            )
            continue
        emit(stage=stage, event="start")
        start = time.monotonic()
        try:
            details = stages[stage](ctx)
            emit(
                stage=stage,
                event="end",
                ok=True,
                skipped=None,
                seconds=round(time.monotonic() - start, 4),
                details=details,
                error=None,
            )
        except Skip as why:
            emit(
                stage=stage,
                event="end",
                ok=True,
                skipped=str(why),
                seconds=round(time.monotonic() - start, 4),
                details=why.details,
                error=None,
            )
        except BaseException as exc:  # the failure is the result: report it, then stop
            failed = stage
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            emit(
                stage=stage,
                event="end",
                ok=False,
                skipped=None,
                seconds=round(time.monotonic() - start, 4),
                details={},
                error={"type": type(exc).__name__, "message": str(exc), "traceback": text[-8000:]},
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
