#!/usr/bin/env bash
# Real failure logs from a GPU host (the device tool's H200: torch, JAX and CuPy preinstalled),
# each then named by `harness diagnose`. Usage: bash tools/gpu_logs.sh OUTDIR
# Each case runs in its own process with a time limit; its full output is OUTDIR/<case>.log and
# the diagnosis OUTDIR/<case>.json. What each case does is the one line beside its name.
set -u
out=${1:?usage: tools/gpu_logs.sh OUTDIR}
mkdir -p "$out"
py=${PYTHON:-python3}
run() {  # run NAME COMMAND...: the command's output to NAME.log, then the diagnosis
  local name=$1; shift
  timeout 120 "$@" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
  $py -m harness diagnose "$out/$name.log" --format json > "$out/$name.json" 2>&1
  echo "$name: $(tr -d '\n' < "$out/$name.json" | head -c 300)"
}
# JAX asks XLA for 400 GiB on the GPU
run jax-oom $py -c "import jax.numpy as jnp; print(jnp.ones((400 * 1024**3,), jnp.uint8).sum())"
# torch's own allocator, 4x the device
run torch-oom $py -c "import torch; t = torch.cuda.mem_get_info()[1]; torch.empty(4 * t, dtype=torch.uint8, device='cuda')"
# two NCCL ranks on the one GPU, through torch.multiprocessing.spawn
cat > "$out/nccl_spawn.py" <<'PY'
import os, torch, torch.distributed as dist, torch.multiprocessing as mp
def work(rank):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    dist.init_process_group("nccl", rank=rank, world_size=2)
    torch.cuda.set_device(0)
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(work, nprocs=2)
PY
run nccl-duplicate-gpu $py "$out/nccl_spawn.py"
# a CuPy kernel that writes far out of bounds
run illegal-address $py -c "
import cupy as cp
k = cp.RawKernel(r'extern \"C\" __global__ void w(float* p) { p[threadIdx.x * 100000000LL] = 1.0f; }', 'w')
a = cp.zeros(4, cp.float32); k((1,), (64,), (a,)); cp.cuda.runtime.deviceSynchronize()"
# torch with every device hidden, asked for one
CUDA_VISIBLE_DEVICES= run torch-no-gpu $py -c "import torch; torch.zeros(1, device='cuda')"
# JAX with every device hidden, asked for the GPU backend
CUDA_VISIBLE_DEVICES= run jax-no-gpu $py -c "import jax; print(jax.devices('gpu'))"
# the system's older cuDNN preloaded ahead of torch's wheel copy
LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libcudnn.so.9 run torch-preload-old-cudnn $py -c "import torch; print(torch.backends.cudnn.version())"
# a run that works: the log of a healthy job must get no confident verdict
run torch-healthy $py -c "import torch; x = torch.randn(256, 256, device='cuda'); print(float((x @ x).sum()), torch.backends.cudnn.version())"
