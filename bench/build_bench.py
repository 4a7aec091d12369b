"""Cold and warm `harness build` on the smoke profile, and adding a stack that shares wheels.

  cold     no stackmatrix images (base included) and an empty wheel cache
  warm     the same command again, nothing changed (goal: under 5 s, 0 built, 0 bytes)
  second   one torch stack removed with the one wheel only it uses (its older cuDNN), then
           rebuilt: the cost of adding a stack that shares the rest of its wheels

DESTRUCTIVE: removes every stackmatrix/* image and empties $STACKMATRIX_CACHE (default
~/.cache/stackmatrix). Usage: python bench/build_bench.py [--yes]
Writes bench/results/build-smoke.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.lock import cache_root, read_lock  # noqa: E402

SECOND = "torch-2.15.0_cu13.2_cudnn9.13_py3.11_offline"
FIRST = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def images() -> list[str]:
    out = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [i for i in out if i.startswith("stackmatrix/")]


def build(*args: str) -> dict[str, object]:
    out = ROOT / "bench/results/.last-build.json"
    wheels = cache_root(os.environ) / "wheels"
    before = du(wheels)
    t = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "harness", "build", "--json", str(out), *args], cwd=ROOT, check=True
    )
    seconds = time.monotonic() - t
    results = json.loads(out.read_text())
    out.unlink()
    return {
        "args": list(args),
        "wall_seconds": round(seconds, 1),
        "built": sum(r["status"] == "built" for r in results),
        "cache_hits": sum(r["status"] == "cache-hit" for r in results),
        "downloaded_bytes_reported": sum(r["downloaded"] for r in results),
        "wheel_cache_growth_bytes": du(wheels) - before,
        "stacks": results,
    }


def main() -> None:
    if "--yes" not in sys.argv:
        sys.exit("destructive (removes stackmatrix images and the wheel cache): pass --yes")
    cache = cache_root(os.environ)
    for ref in images():
        subprocess.run(["docker", "rmi", "-f", ref], check=True, capture_output=True)
    shutil.rmtree(cache, ignore_errors=True)
    report: dict[str, object] = {"machine": {"cores": os.cpu_count()}}
    report["cold"] = build()
    report["warm"] = build()
    second = [s for s in report["cold"]["stacks"] if s["slug"] == SECOND][0]  # type: ignore[index]
    subprocess.run(["docker", "rmi", "-f", second["ref"]], check=True, capture_output=True)
    first, other = (
        read_lock(ROOT / f"images/locks/{FIRST}.json"),
        read_lock(ROOT / f"images/locks/{SECOND}.json"),
    )
    assert first is not None and other is not None
    only = {w.filename for w in other.wheels} - {w.filename for w in first.wheels}
    for name in only:
        (cache / "wheels" / name).unlink()
    report["second"] = {"unique_wheels": sorted(only), **build("--stack", SECOND)}
    (ROOT / "bench/results/build-smoke.json").write_text(json.dumps(report, indent=1) + "\n")
    for k in ("cold", "warm", "second"):
        r = report[k]
        print(
            f"{k:7s} {r['wall_seconds']:7.1f} s  built {r['built']}  "  # type: ignore[index]
            f"downloaded {r['downloaded_bytes_reported'] / 1e9:.2f} GB "  # type: ignore[index]
            f"(cache grew {r['wheel_cache_growth_bytes'] / 1e9:.2f} GB)"
        )  # type: ignore[index]


if __name__ == "__main__":
    main()
