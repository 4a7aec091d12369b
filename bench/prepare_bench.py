"""What preparing a stack costs, an environment on the host against a committed image, in the same
run on this machine (issue "Stacks prepared at the disk's speed"):

  1. an added stack whose wheels are cached and whose sibling is prepared (the smoke profile's
     torch with cuDNN 9.13 beside the one with 9.26: 28 of 29 wheels shared):
       after:  `harness gc --stack S` then `harness build --stack S` (goal <= 30 s)
       before: its image removed, then `harness build --image --stack S` (the shared install
               step's image present, as a second torch image found it)
  2. the disk that stack adds: its environment's own files (the rest are links into uv's
     cache) against its image's own layer;
  3. a new stack whose wheels are cached but that shares nothing prepared (TensorFlow):
       after: gc + build; before: `harness build --image` with no step image of its own;
  4. `import torch` plus a tensor op in a fresh container on each (3 runs each);
  5. an unchanged re-run of the smoke profile: wall time and containers created (goal < 1 s, 0).

Needs the smoke profile's wheels in the cache and its environments made (`harness build`).
The --image builds and their step image are removed at the end. Usage:
    python bench/prepare_bench.py [--reps 3] [--results DIR] [--out FILE]
Writes bench/results/prepare.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench/results/prepare.json"
SIBLING = "torch-2.15.0_cu13.2_cudnn9.13_py3.11_offline"
ALONE = "tensorflow-2.21.0_cu12.5_cudnn9.3_py3.11_offline"
PREPARED = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"
CELL = "import torch; x = torch.ones(256, 256); print(torch.__version__, float((x @ x).sum()))"


def harness(*args: str) -> tuple[float, str]:
    t = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if res.returncode != 0:
        sys.exit(f"harness {' '.join(args)}: exit {res.returncode}\n{res.stderr[-3000:]}")
    return time.monotonic() - t, res.stderr + res.stdout


def built(*args: str) -> dict[str, dict[str, str]]:
    out = ROOT / "bench/results/.build.json"
    harness("build", "--json", str(out), *args)
    got = {r["slug"]: r for r in json.loads(out.read_text())}
    out.unlink()
    return got


def docker(*args: str) -> str:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def own_bytes(path: Path) -> int:
    total, seen = 0, set()
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            st = os.lstat(os.path.join(root, name))
            if st.st_nlink == 1 and st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total


def cell_seconds(run: list[str], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t = time.monotonic()
        subprocess.run(run, capture_output=True, check=True)
        out.append(round(time.monotonic() - t, 2))
    return out


def containers_created(since: float, until: float) -> int:
    text = docker(
        "events", "--since", f"{since:.3f}", "--until", f"{until:.3f}",
        "--filter", "type=container", "--filter", "event=create", "--format", "{{.ID}}",
    )  # fmt: skip
    return len(text.splitlines())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--results", default="reports/results", help="a journal of the smoke run")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    result: dict[str, object] = {
        "storage_driver": docker("info", "--format", "{{.Driver}}"),
        "cores": os.cpu_count(),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
            check=False,
        ).stdout.strip(),  # fmt: skip
    }
    envs = built()  # the smoke profile's environments, made or found
    assert envs[PREPARED]["env"], "the sibling is an environment"

    # 1-2, after: the added stack's environment, gone and made again.
    gc_s, _ = harness("gc", "--stack", SIBLING)
    build_s, log = harness("build", "--stack", SIBLING)
    after = built("--stack", SIBLING)[SIBLING]
    result["after"] = {
        "gc_seconds": round(gc_s, 1), "build_seconds": round(build_s, 1),
        "ready_seconds": round(gc_s + build_s, 1),
        "own_bytes": own_bytes(Path(after["env"])),
        "log": [ln for ln in log.splitlines() if "built in" in ln],
    }  # fmt: skip

    # 1-2, before: the same stack as a committed image, its sibling's step image present.
    images = built("--image", "--stack", PREPARED)  # builds the shared step (setup, not timed)
    sibling_image = built("--image", "--stack", SIBLING)[SIBLING]["ref"]
    docker("rmi", sibling_image)
    t = time.monotonic()
    again = built("--image", "--stack", SIBLING)[SIBLING]
    image_s = time.monotonic() - t
    step = [r for r in docker("image", "ls", "stackmatrix/step", "--format", "{{.Repository}}:{{.Tag}}").splitlines()]  # fmt: skip
    layers = json.loads(docker("image", "inspect", again["ref"], "--format", "{{json .RootFS.Layers}}"))  # fmt: skip
    history = docker("history", "--no-trunc", "--format", "{{.Size}}", again["ref"]).splitlines()
    result["before"] = {
        "build_seconds": round(image_s, 1),
        "image_size": int(docker("image", "inspect", again["ref"], "--format", "{{.Size}}")),
        "own_layer": history[0] if history else "",
        "layers": len(layers),
    }

    # 3. a stack that shares nothing prepared, its wheels cached
    gc_s, _ = harness("gc", "--stack", ALONE)
    build_s, log = harness("build", "--stack", ALONE)
    alone = built("--stack", ALONE)[ALONE]
    t = time.monotonic()
    alone_image = built("--image", "--stack", ALONE)[ALONE]
    alone_image_s = time.monotonic() - t
    result["alone"] = {
        "stack": ALONE,
        "after": {"ready_seconds": round(gc_s + build_s, 1), "own_bytes": own_bytes(Path(alone["env"]))},
        "before": {
            "build_seconds": round(alone_image_s, 1),
            "image_size": int(docker("image", "inspect", alone_image["ref"], "--format", "{{.Size}}")),
        },
    }  # fmt: skip
    step += [r for r in docker("image", "ls", "stackmatrix/step", "--format", "{{.Repository}}:{{.Tag}}").splitlines() if r not in step]  # fmt: skip

    # 4. a cell's interpreter start on each
    base = envs[PREPARED]["image"]
    on_env = [
        "docker", "run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
        "--user", "1000:1000", "--mount",
        f"type=bind,source={envs[PREPARED]['env']},target=/opt/stack,readonly",
        base, "/opt/stack/bin/python", "-c", CELL,
    ]  # fmt: skip
    on_image = ["docker", "run", "--rm", "--network", "none", images[PREPARED]["ref"], "python", "-c", CELL]  # fmt: skip
    result["cell"] = {
        "environment": cell_seconds(on_env, args.reps),
        "image": cell_seconds(on_image, args.reps),
    }
    for key in ("environment", "image"):
        result["cell"][f"{key}_median"] = statistics.median(result["cell"][key])  # type: ignore[index]

    # 5. an unchanged re-run: every cell a cache hit, no container.
    harness("run", "--results", args.results)  # whatever is missing runs first (not timed)
    since = time.time()
    rerun_s, log = harness("run", "--results", args.results)
    result["rerun"] = {
        "seconds": round(rerun_s, 2),
        "containers": containers_created(since, time.time() + 0.5),
        "summary": [ln for ln in log.splitlines() if "cache hits" in ln],
    }
    for ref in (images[PREPARED]["ref"], again["ref"], alone_image["ref"], *step):
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True, check=False)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
