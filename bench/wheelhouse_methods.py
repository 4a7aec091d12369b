"""How should the locked wheelhouse get into a stack image? Time three ways on a real lock.

  commit       run + commit: one container, no network, wheel cache bind-mounted read-only
               (what `harness build` does)
  context-ms   legacy builder, wheels in the build context, multi-stage (final image holds
               only /opt/stack)
  context-ss   legacy builder, wheels in the build context, single stage (COPY then install)

Usage: python bench/wheelhouse_methods.py [LOCK.json] [--methods commit,context-ms,context-ss]
Writes bench/results/wheelhouse-methods.json. Each image is removed after it is measured, and
the legacy builder runs with nocache so no method reuses another's layers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.backends.engine import Engine, connect  # noqa: E402
from harness.backends.offline import ensure_base, read_recipe  # noqa: E402
from harness.fetcher import fetch  # noqa: E402
from harness.lock import WheelCache, cache_root, read_lock  # noqa: E402
from harness.model import Mount, Stack  # noqa: E402
from harness.render import read_templates, render_files, split_dockerfile  # noqa: E402

MULTI = """FROM {base} AS install
COPY wheels/ /wheelhouse/wheels/
COPY install.sh requirements.txt /wheelhouse/meta/
RUN sh /wheelhouse/meta/install.sh
FROM {base}
COPY --from=install /opt/stack /opt/stack
RUN useradd --create-home --uid 1000 --user-group --shell /bin/sh stack
USER stack
"""
SINGLE = """FROM {base}
COPY wheels/ /wheelhouse/wheels/
COPY install.sh requirements.txt /wheelhouse/meta/
RUN sh /wheelhouse/meta/install.sh && rm -rf /wheelhouse
USER stack
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "lock",
        nargs="?",
        default=str(ROOT / "images/locks/torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline.json"),
    )
    ap.add_argument("--methods", default="commit,context-ms,context-ss")
    args = ap.parse_args()
    lock = read_lock(Path(args.lock))
    assert lock is not None
    env = os.environ
    cache = WheelCache(cache_root(env))
    fetch(lock, cache)
    client = connect(env)
    backend = Engine(client)
    base, _ = ensure_base(
        read_recipe(ROOT / "images/offline-base", "debian12"), backend, cache_root(env) / "tmp"
    )
    stack = Stack(
        **json.loads(
            json.dumps(
                {
                    "framework": "bench",
                    "framework_version": "0",
                    "cuda": "0",
                    "cudnn": "0",
                    "python": lock.python,
                    "base": "offline",
                }
            )
        )
    )
    dockerfile, files = render_files(
        stack,
        flavour="offline",
        base_ref=base.ref,
        index=lock.index,
        lock=lock,
        plain_requirements=[],
        templates=read_templates(ROOT / "images"),
    )
    results = []
    for method in args.methods.split(","):
        ref = f"stackmatrix/bench:{method}"
        backend.remove_image(ref)
        work = Path(tempfile.mkdtemp(dir=cache_root(env) / "tmp", prefix="bench-"))
        try:
            for name, text in files.items():
                (work / name).write_text(text)
            t = time.monotonic()
            if method == "commit":
                backend.commit_build(
                    split_dockerfile(dockerfile),
                    ref,
                    timeout=3600,
                    log_path=work / "log",
                    mounts=[
                        Mount(cache.dir, "/wheelhouse/wheels"),
                        Mount(work, "/wheelhouse/meta"),
                    ],
                )
            else:
                (work / "wheels").mkdir()
                for w in lock.wheels:  # hard links: building the context costs no copy
                    os.link(cache.dir / w.filename, work / "wheels" / w.filename)
                text = (MULTI if method == "context-ms" else SINGLE).format(base=base.ref)
                (work / "Dockerfile").write_text(text)
                client.images.build(
                    path=str(work),
                    tag=ref,
                    network_mode="none",
                    rm=True,
                    forcerm=True,
                    nocache=True,
                )
            seconds = time.monotonic() - t
            size = backend.image_size(ref)
            ok = backend.run(ref, ["/opt/stack/bin/python", "-c", "import torch"]).exit_code == 0
            results.append(
                {
                    "method": method,
                    "seconds": round(seconds, 1),
                    "image_bytes": size,
                    "import_ok": ok,
                }
            )
            print(
                f"{method:12s} {seconds:7.1f} s  {size / 1e9:5.2f} GB  import ok={ok}", flush=True
            )
        finally:
            backend.remove_image(ref)
            shutil.rmtree(work, ignore_errors=True)
    out = ROOT / "bench/results/wheelhouse-methods.json"
    out.write_text(
        json.dumps(
            {
                "lock": Path(args.lock).name,
                "wheels": len(lock.wheels),
                "wheel_bytes": lock.total_bytes,
                "cores": os.cpu_count(),
                "results": results,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
