"""The size of a diagnose-only install: `pip install stackmatrix` into a fresh venv.

Builds the wheel from a copy of this checkout (`pip wheel --no-deps`, or --wheel PATH), makes a
fresh venv in a temp folder, measures its site-packages (pip, setuptools: what any venv has),
installs the wheel with its runtime dependencies from the index, and measures again. The install
size is the difference; each distribution's size is the sum of the files its RECORD lists
(bytecode compiled at install included). The goal is 40 MB (10^6 bytes) or less.

Usage: python bench/install_size.py [--wheel dist/stackmatrix-0.1.0-py3-none-any.whl]
Writes bench/results/install-size.json. Needs the package index (the dependencies).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "install-size.json"
GOAL_MB = 40.0
MB = 1_000_000

# Run by the venv's own python: name -> (version, bytes of the files its RECORD lists).
_PER_DIST = """
import json, sys
from importlib import metadata
out = {}
for d in metadata.distributions():
    size = 0
    for f in d.files or ():
        p = f.locate()
        if p.is_file():
            size += p.stat().st_size
    out[d.metadata["Name"]] = [d.version, size]
json.dump(out, sys.stdout)
"""


def tree_size(folder: Path) -> int:
    """Bytes of the regular files under `folder` (links not followed, each file once)."""
    total, seen = 0, set()
    for dirpath, _, files in os.walk(folder):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            if (st.st_dev, st.st_ino) not in seen and not os.path.islink(
                os.path.join(dirpath, name)
            ):
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def site_packages(python: Path) -> Path:
    done = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(done.stdout.strip())


def build_wheel(into: Path) -> Path:
    """From a copy of the checkout without its build outputs: `pip wheel .` reuses build/."""
    src = into.parent / "src"
    skip = shutil.ignore_patterns(
        ".git", ".venv", ".nox", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
    )
    shutil.copytree(ROOT, src, symlinks=True, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(src), "-w", str(into)],
        check=True,
    )
    [wheel] = into.glob("stackmatrix-*.whl")
    return wheel


def measure(wheel: Path, tmp: Path) -> dict[str, object]:
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = site_packages(python)
    empty = tree_size(site)
    # from tmp, not the checkout: sys.path[0] ('') would find the checkout's stackmatrix.egg-info
    baseline = json.loads(
        subprocess.run(
            [str(python), "-c", _PER_DIST], check=True, capture_output=True, cwd=tmp
        ).stdout
    )
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        check=True,
    )
    full = tree_size(site)
    after = json.loads(
        subprocess.run(
            [str(python), "-c", _PER_DIST], check=True, capture_output=True, cwd=tmp
        ).stdout
    )
    rows = sorted(
        ((n, v, b) for n, (v, b) in after.items() if n not in baseline), key=lambda r: -r[2]
    )
    dists = [{"name": n, "version": v, "bytes": b, "mb": round(b / MB, 2)} for n, v, b in rows]
    total = full - empty
    return {
        "what": "site-packages of a fresh venv after `pip install <stackmatrix wheel>`, minus "
        "the same venv's site-packages before (pip, setuptools)",
        "wheel": wheel.name,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "empty_venv_bytes": empty,
        "total_bytes": total,
        "total_mb": round(total / MB, 2),
        "goal_mb": GOAL_MB,
        "pass": total <= GOAL_MB * MB,
        "distributions": dists,
        "distributions_sum_bytes": sum(b for _, _, b in rows),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path, help="a built wheel (default: build one from here)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="install-size-") as t:
        tmp = Path(t)
        wheel = args.wheel.resolve() if args.wheel else build_wheel(tmp / "dist")
        result = measure(wheel, tmp)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"install size {result['total_mb']} MB (goal <= {GOAL_MB} MB): "
          f"{'pass' if result['pass'] else 'FAIL'}")  # fmt: skip
    for d in result["distributions"]:  # type: ignore[attr-defined]
        print(f"  {d['name']:28s} {d['version']:12s} {d['mb']:7.2f} MB")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
