#!/usr/bin/env bash
# Real failure logs from a GPU host (the device tool's H200: torch, JAX and CuPy preinstalled),
# each then named by `harness diagnose`. Usage: bash tools/gpu_logs.sh OUTDIR
# Each case runs in its own process with a time limit; its full output is OUTDIR/<case>.log and
# the diagnosis OUTDIR/<case>.json. What each case does is the one line beside its name.
set -u
out=${1:?usage: tools/gpu_logs.sh OUTDIR}
mkdir -p "$out"
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
run() {  # run NAME COMMAND...: the command's output to NAME.log, then the diagnosis
  local name=$1; shift
  timeout 120 "$@" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
  "$py" -m harness diagnose "$out/$name.log" --format json > "$out/$name.json" 2>&1
  echo "$name: $(tr -d '\n' < "$out/$name.json" | head -c 300)"
}
# JAX asks XLA for 400 GiB on the GPU
run jax-oom "$py" -c "import jax.numpy as jnp; print(jnp.ones((400 * 1024**3,), jnp.uint8).sum())"
# JAX told to preallocate 150% of the device when its GPU backend starts
XLA_PYTHON_CLIENT_MEM_FRACTION=1.5 run jax-prealloc-oom "$py" -c "import jax.numpy as jnp; print(jnp.ones(8).sum())"
# torch's own allocator, 4x the device
run torch-oom "$py" -c "import torch; t = torch.cuda.mem_get_info()[1]; torch.empty(4 * t, dtype=torch.uint8, device='cuda')"
# CuPy's memory pool, 4x the device
run cupy-oom "$py" -c "import cupy as cp; t = cp.cuda.runtime.memGetInfo()[1]; cp.empty(4 * t, cp.uint8)"
# a cuDNN convolution once the device is full: cuDNN's handle cannot be made
run cudnn-handle-oom "$py" -c "
import torch
free = torch.cuda.mem_get_info()[0]
hog = [torch.empty(free - (64 << 20), dtype=torch.uint8, device='cuda')]
x = torch.randn(1, 3, 8, 8, device='cuda'); w = torch.randn(4, 3, 3, 3, device='cuda')
while True:
    try:
        hog.append(torch.empty(1 << 20, dtype=torch.uint8, device='cuda'))
    except torch.OutOfMemoryError:
        break
print(torch.nn.functional.conv2d(x, w).sum())"
# two NCCL ranks on the one GPU, through torch.multiprocessing.spawn (run from tools/, so that
# the tracebacks name the script, not the folder this checkout is in)
run nccl-duplicate-gpu env -C "$here" "$py" nccl_spawn.py 2 29533
# one NCCL rank told to bootstrap over a network interface that does not exist
NCCL_DEBUG=WARN NCCL_SOCKET_IFNAME=nosuchif0 run nccl-no-interface env -C "$here" "$py" nccl_spawn.py 1 29534
# a CuPy kernel that writes far out of bounds
run illegal-address "$py" -c "
import cupy as cp
k = cp.RawKernel(r'extern \"C\" __global__ void w(float* p) { p[threadIdx.x * 100000000LL] = 1.0f; }', 'w')
a = cp.zeros(4, cp.float32); k((1,), (64,), (a,)); cp.cuda.runtime.deviceSynchronize()"
# an index out of range on the device: torch's device-side assert
run torch-device-assert "$py" -c "
import torch
x = torch.zeros(4, device='cuda'); i = torch.tensor([7], device='cuda'); print(x[i]); torch.cuda.synchronize()"
# torch with every device hidden, asked for one
CUDA_VISIBLE_DEVICES="" run torch-no-gpu "$py" -c "import torch; torch.zeros(1, device='cuda')"
# JAX with every device hidden, asked for the GPU backend
CUDA_VISIBLE_DEVICES="" run jax-no-gpu "$py" -c "import jax; print(jax.devices('gpu'))"
# the CUDA toolkit's stub libcuda preloaded: torch warns that CUDA initialization failed, raises
# nothing, and says the GPU is not available
stub=$(find /usr/local/cuda*/ /opt -path '*stubs/libcuda.so' 2>/dev/null | head -n 1)
LD_PRELOAD=${stub:-/nonexistent/stubs/libcuda.so} run torch-stub-libcuda "$py" -c "import torch; print('cuda available:', torch.cuda.is_available())"
# the system's older cuDNN preloaded ahead of torch's wheel copy
LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libcudnn.so.9 run torch-preload-old-cudnn "$py" -c "import torch; print(torch.backends.cudnn.version())"
# runs that work: the log of a healthy job must get no confident verdict
run torch-healthy "$py" -c "import torch; x = torch.randn(256, 256, device='cuda'); print(float((x @ x).sum()), torch.backends.cudnn.version())"
run jax-healthy "$py" -c "import jax, jax.numpy as jnp; print(jax.devices(), float(jnp.ones((256, 256)).sum()))"
