"""How the locked wheels go into /opt/stack: one pip, or one pip per part side by side.

In a fresh container from the offline base (wheel cache mounted read-only, no network), the
torch stack's first install step (its 28 locked wheels but cuDNN's) installed three ways:

  one-pip     one `pip install --require-hashes --no-deps`, bytecode compiled by pip (before)
  parts       the set dealt into one part per core, largest wheel first; a pip per part side by
              side with --no-compile, then `compileall -j 0` once (what install.sh does now)
  parts-pyc   the same parts, each pip compiling its own bytecode

Each variant's seconds (pip, compile, total) and the installed size. Needs the base image and
the torch lock's wheels in the cache (a `harness build` of the smoke profile leaves both).
Usage: python bench/install_parts.py [--reps N]   Writes bench/results/install-parts.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.lock import cache_root, read_lock  # noqa: E402
from harness.model import hashed_requirements  # noqa: E402
from harness.render import CUDNN_WHEEL  # noqa: E402

STACK = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"
OUT = ROOT / "bench/results/install-parts.json"

SCRIPT = r"""
set -eu
now() { date +%s.%N; }
PIP="/opt/stack/bin/python -m pip install -q --no-cache-dir --disable-pip-version-check --require-hashes --no-deps --no-index --find-links /wheelhouse/wheels"
python3 -m venv /opt/stack
jobs=$(nproc)
awk -v n="$jobs" '/^[^#]/ { print > ("/tmp/part-" (c++ % n) ".txt") }' /x/shared.txt
t0=$(now)
case "$1" in
  one-pip) $PIP -r /x/shared.txt ;;
  parts|parts-pyc)
    flag=""; [ "$1" = parts ] && flag=--no-compile
    pids=""
    for p in /tmp/part-*.txt; do $PIP $flag -r "$p" & pids="$pids $!"; done
    for pid in $pids; do wait "$pid"; done ;;
esac
t1=$(now)
[ "$1" = parts ] && /opt/stack/bin/python -m compileall -q -j 0 /opt/stack/lib > /dev/null || true
t2=$(now)
echo "RESULT $jobs $t0 $t1 $t2 $(du -sb /opt/stack | cut -f1)"
"""


def base_image() -> str:
    out = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "stackmatrix/base"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    debian12 = [r for r in out if ":debian12-" in r]
    if not debian12:
        sys.exit("no stackmatrix/base:debian12-* image: run `harness build` first")
    return debian12[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    lock = read_lock(ROOT / "images/locks" / f"{STACK}.json")
    assert lock is not None
    shared = [w for w in lock.wheels if not CUDNN_WHEEL.fullmatch(w.name)]
    wheels = cache_root(os.environ) / "wheels"
    base = base_image()
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        meta = Path(tmp)
        (meta / "shared.txt").write_text(hashed_requirements("bench", shared), encoding="utf-8")
        (meta / "run.sh").write_text(SCRIPT, encoding="utf-8")
        meta.chmod(0o755)
        for _ in range(a.reps):
            for variant in ("one-pip", "parts", "parts-pyc"):
                done = subprocess.run(
                    ["docker", "run", "--rm", "--network", "none",
                     "-v", f"{wheels}:/wheelhouse/wheels:ro", "-v", f"{meta}:/x:ro",
                     base, "sh", "/x/run.sh", variant],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
                _, jobs, t0, t1, t2, size = line.split()
                run = {
                    "variant": variant,
                    "parts": 1 if variant == "one-pip" else int(jobs),
                    "pip_seconds": round(float(t1) - float(t0), 1),
                    "compile_seconds": round(float(t2) - float(t1), 1),
                    "total_seconds": round(float(t2) - float(t0), 1),
                    "installed_bytes": int(size),
                }
                print(json.dumps(run))
                runs.append(run)
    info = subprocess.run(
        ["docker", "info", "--format", "{{.Driver}}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    result = {
        "stack": STACK,
        "wheels": len(shared),
        "wheel_bytes": sum(w.size for w in shared),
        "base": base,
        "storage_driver": info,
        "cores": os.cpu_count(),
        "runs": runs,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
