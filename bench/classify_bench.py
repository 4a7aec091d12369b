"""Classifier throughput and memory on >= 1 GB of mixed logs, on one core.

The corpus: 1,024 logs of 1 MiB each (--logs/--size to change). Each is realistic noise (Keras
progress bars, pip output, torch/TF warnings that look like errors, our own probe event lines)
with one real public log from tests/fixtures/logs/ spliced in at a random line, so every log has
a known answer: the throughput run is also an accuracy check under noise. Logs are written to a
temp folder first (not timed), then each is classified from disk in 1 MiB reads, as
`harness diagnose` does. Run pinned to one core (os.sched_setaffinity).

Usage: python bench/classify_bench.py [--logs 1024] [--size 1048576]
Writes bench/results/classify.json.

    python bench/classify_bench.py --stress [--mb 100]
    python bench/classify_bench.py --stress --mb 50 --against OLD/scenarios/signatures.yaml

The hard inputs instead (bench/results/classify-stress.json): a dense log (every line holds a
needle: real failure lines, repeated), a log of unique lines (the same lines, each with its own
timestamp and numbers), and single lines of 5, 10, 20 and 50 MB of dense errors with a
different, higher-priority error at the very end, which must be found.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.signatures import classify_chunks, read_catalog  # noqa: E402

NOISE = [
    "Epoch {e}/50",
    "{n}/1875 [==============================] - 12s 6ms/step - loss: 0.{n} - accuracy: 0.9{e}",
    "Collecting nvidia-cublas-cu12==12.{e}.4.1 (from torch==2.{e}.0)",
    "  Downloading nvidia_cudnn_cu12-9.{e}.0.50-py3-none-manylinux_2_27_x86_64.whl (571.0 MB)",
    "2024-03-01 10:{e:02d}:{n:02d}.123456: I tensorflow/core/util/port.cc:113] oneDNN custom "
    "operations are on. You may see slightly different numerical results due to floating-point "
    "round-off errors from different computation orders.",
    "2024-03-01 10:{e:02d}:{n:02d}.5: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] "
    "TF-TRT Warning: Could not find TensorRT",
    "2024-03-01 10:{e:02d}:{n:02d}.7: E external/local_xla/xla/stream_executor/cuda/"
    "cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to register factory for "
    "plugin cuDNN when one has already been registered",
    "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:456: UserWarning: Applied "
    "workaround for CuDNN issue, install nvrtc.so (Triggered internally at ../aten/src/ATen/"
    "native/cudnn/Conv_v8.cpp:80.)",
    '{{"probe": 1, "stage": "train_step", "event": "end", "ok": true, "seconds": 0.{n}}}',
    "step {n}: lr=0.001 grad_norm=1.{e} throughput={n} samples/s error_rate=0.0{e}",
    "INFO:root:Saved checkpoint to /scratch/run-{e}/ckpt-{n}.pt",
]


def corpus(folder: Path, logs: int, size: int, seed: int = 7) -> list[tuple[Path, str]]:
    rng = random.Random(seed)
    fixtures = sorted((ROOT / "tests" / "fixtures" / "logs").glob("*.log"))
    cases = []
    for f in fixtures:
        meta = json.loads(f.with_suffix(".meta.json").read_text())
        cases.append((f.read_text(encoding="utf-8", errors="replace"), meta["signature"]))
    out = []
    for i in range(logs):
        text, sig = cases[i % len(cases)]
        lines: list[str] = []
        total = 0
        while total < size - len(text):
            line = rng.choice(NOISE).format(e=rng.randrange(50), n=rng.randrange(10000))
            lines.append(line)
            total += len(line) + 1
        lines.insert(rng.randrange(len(lines) + 1), text.rstrip("\n"))
        path = folder / f"{i:05d}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append((path, sig))
    return out


def chunks(path: Path, size: int = 1 << 20):  # type: ignore[no-untyped-def]
    with path.open("rb") as f:
        while block := f.read(size):
            yield block


DENSE = [
    "RuntimeError: CUDA error: out of memory",
    "E0000 00:00:1712 12 cuda_dnn.cc:535] Could not create cudnn handle: "
    "CUDNN_STATUS_INTERNAL_ERROR",
    "host:2139:2250 [0] NCCL INFO Channel 00/02 :    0   1",
    "W tensorflow/x.cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: "
    "libnvinfer.so.7: cannot open shared object file: No such file or directory",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
]


def stress_logs(mb: int) -> list[tuple[str, bytes, str]]:
    n = mb * 1_000_000
    dense = "\n".join(DENSE[i % len(DENSE)] for i in range(n // 60)).encode()[:n]
    unique = "\n".join(
        f"2024-03-01T10:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i:06d}Z [rank {i % 8}] step "
        f"{i}: " + DENSE[i % len(DENSE)].replace("20.00", f"{i % 977}.00")
        for i in range(n // 100)
    ).encode()[:n]
    out = [("dense", dense + b"\n", "gpu_oom"), ("unique_lines", unique + b"\n", "gpu_oom")]
    for size in (5, 10, 20, 50):
        unit = b"RuntimeError: CUDA error: out of memory; "
        line = unit * (size * 1_000_000 // len(unit))
        out.append(
            (
                f"one_line_{size}mb",
                line + b"CUDA error: invalid device function\n",
                "arch_unsupported",
            )
        )
    return out


def pieces(data: bytes, size: int = 1 << 20) -> list[bytes]:
    """`data` in the 1 MiB reads `harness diagnose` makes."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def stress(mb: int) -> None:
    catalog = read_catalog(ROOT / "scenarios" / "signatures.yaml")
    results = []
    for name, data, want in stress_logs(mb):
        parts = pieces(data)
        start = time.process_time()
        got = classify_chunks(parts, catalog).signature
        seconds = time.process_time() - start
        results.append({
            "input": name, "bytes": len(data), "cpu_seconds": round(seconds, 3),
            "mb_per_s": round(len(data) / seconds / 1e6, 1), "expected": want, "got": got,
        })  # fmt: skip
        print(json.dumps(results[-1]))
    out = ROOT / "bench" / "results" / "classify-stress.json"
    out.write_text(json.dumps({"goal_mb_per_s": 100, "cores": 1, "runs": results}, indent=1) + "\n")


def against(mb: int, other: Path, reps: int) -> None:
    """This catalog and another (an older commit's scenarios/signatures.yaml), read once each by
    this checkout's code, on the dense and unique-lines inputs in turn, `reps` times: machine
    drift between two runs (25 % on a shared VM) then falls on both alike. Prints MB/s; writes
    nothing."""
    catalogs = {
        "this": read_catalog(ROOT / "scenarios" / "signatures.yaml"),
        "other": read_catalog(other),
    }
    for name, data, _ in stress_logs(mb)[:2]:
        parts = pieces(data)
        rates: dict[str, list[float]] = {k: [] for k in catalogs}
        for _ in range(reps):
            for key, catalog in catalogs.items():
                start = time.process_time()
                classify_chunks(parts, catalog)
                rates[key].append(round(len(data) / (time.process_time() - start) / 1e6, 1))
        print(json.dumps({"input": name, "mb_per_s": rates}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=1024)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--stress", action="store_true")
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--against", type=Path, help="another catalog to alternate with (--stress)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.stress and args.against:
        against(args.mb, args.against, args.reps)
        return
    if args.stress:
        stress(args.mb)
        return
    catalog = read_catalog(ROOT / "scenarios" / "signatures.yaml")
    folder = Path(tempfile.mkdtemp(prefix="smx-classify-"))
    try:
        logs = corpus(folder, args.logs, args.size)
        total = sum(p.stat().st_size for p, _ in logs)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        right = 0
        wrong: dict[str, int] = {}
        start = time.perf_counter()
        for path, sig in logs:
            got = classify_chunks(chunks(path), catalog).signature
            if got == sig:
                right += 1
            else:
                key = f"{sig} -> {got}"
                wrong[key] = wrong.get(key, 0) + 1
        seconds = time.perf_counter() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = {
        "logs": len(logs),
        "bytes": total,
        "seconds": round(seconds, 2),
        "mb_per_s": round(total / seconds / 1e6, 1),
        "goal_mb_per_s": 100,
        "cores": 1,
        "peak_rss_mib": round(rss_after / 1024, 1),
        "rss_growth_during_scan_mib": round((rss_after - rss_before) / 1024, 1),
        "signature_right": right,
        "signature_wrong": dict(sorted(wrong.items())),
        "fixtures": len({s for _, s in logs}),
    }
    print(json.dumps(result, indent=1))
    out = ROOT / "bench" / "results" / "classify.json"
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
