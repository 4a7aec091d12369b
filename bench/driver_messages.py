"""What each framework says, in its own words, at each placed NVIDIA driver, and what the CUDA
runtime it ships answers (the probe's gate), on the Docker backend with the stacks' images.

    python bench/driver_messages.py [--profile smoke] [--out bench/results/driver-messages.json]

For every baseline cell of the placed-driver axis: the framework's own lines that mention the
driver or cuInit (TensorFlow logs them; torch raises them), the probe's gate record from its
devices stage (cudaGetDeviceCount's code, the runtime and driver API versions, which files), and
the verdict. Needs the images (`harness build`); the driver files are fetched on first use.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import cli  # noqa: E402
from harness.args import build_parser  # noqa: E402
from harness.backends.driverstore import DriverStore  # noqa: E402
from harness.console import Console  # noqa: E402
from harness.lock import WheelCache, cache_root  # noqa: E402
from harness.runner import cell_ops, observe, probe_run, spec_for  # noqa: E402

OWN = re.compile(r"cuInit|driver|CUDA_ERROR|cuda", re.IGNORECASE)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--out", default=str(ROOT / "bench/results/driver-messages.json"))
    opts = ap.parse_args()
    argv = ["run", "--profile", opts.profile, "--driver", "none"]
    args = build_parser(cli.COMMANDS).parse_args(argv)
    loaded = cli.load(args, argv)
    assert loaded.drivers is not None, "no driver lock"
    env = os.environ
    backend = cli.docker_backend(loaded, Console())
    store = DriverStore(loaded.drivers, cache_root(env))
    wheels = WheelCache(cache_root(env))
    rows = []
    targets = {}
    for cell in loaded.plan.cells:
        if cell.scenario != "baseline":
            continue
        if cell.stack not in targets:
            targets[cell.stack] = backend.prepare(cell.stack)
        target = targets[cell.stack]
        ops = cell_ops(cell, loaded.scenarios)
        t = time.monotonic()
        run = probe_run(backend, spec_for(ops, target, wheels, gpu=False, drivers=store.folder), target)
        status, observed = observe(run, loaded.catalog)
        devices = next((e for e in run.report.events if e.stage == "devices"), None)
        rows.append(
            {
                "cell": cell.id,
                "driver": cell.driver,
                "expected": cell.expected.to_json(),
                "status": status.value,
                "observed": observed.to_json(),
                "framework_lines": [
                    ln.strip()[:400]
                    for ln in run.finished.output.splitlines()
                    if not ln.startswith('{"probe"') and OWN.search(ln)
                ][:8],
                "gate": (devices.details or {}) if devices else {},
                "devices_error": devices.error_message if devices else None,
                "seconds": round(time.monotonic() - t, 2),
            }
        )
        print(f"{cell.id}: {status.value} {observed.text if observed else ''}", flush=True)
    Path(opts.out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
