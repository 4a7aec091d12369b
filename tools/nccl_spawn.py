"""NCCL ranks on the one GPU through torch.multiprocessing.spawn (tools/gpu_logs.sh).

Usage: python tools/nccl_spawn.py NPROCS PORT. Two ranks on one device is NCCL's "Duplicate GPU
detected"; the environment (NCCL_SOCKET_IFNAME, ...) makes the other faults.
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def work(rank: int, nprocs: int, port: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("nccl", rank=rank, world_size=nprocs)
    torch.cuda.set_device(0)
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1])
    mp.spawn(work, args=(n, sys.argv[2]), nprocs=n)
