"""`harness report` as a user runs it, on journals of 25,000, 50,000 and 100,000 distinct cells.

Two shapes: `grid` (500 stacks x 200 scenarios, as bench/report_bench.py) and `stacks` (every cell
its own stack: one baseline each, as issue 24's hostile suite had it; the Markdown table then has
a row per cell). Each run is a real subprocess; wall, user+system CPU and the peak RSS come from
wait4, so memory growth across the three sizes can be read off (linear: the RSS per cell stays
flat). Goal (issue 24): under 5 s on 100,000 cells.

Usage: python bench/report_cli_bench.py [--sizes 25000,50000,100000] [--before FILE]
Writes bench/results/report-cli.json. --before: a report-cli.json of the code before a change
(its runs are kept under "before"), ideally run just before on the same machine: timings from
another day need not compare.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import report_bench  # noqa: E402


def cells(shape: str, n: int) -> list[str]:
    if shape == "grid":
        grid = [f"{s}/{c}" for s in report_bench.stacks(500) for c in report_bench.scenarios(200)]
        return grid[:n]
    return [
        f"torch-2.{i // 1000}.{i % 1000}_cu12.4_cudnn9.1_py3.11_offline/baseline" for i in range(n)
    ]


def journal(folder: Path, shape: str, n: int) -> None:
    rng = random.Random(7)
    folder.mkdir(parents=True)
    with (folder / "journal.jsonl").open("w") as f:
        for cell in cells(shape, n):
            rec = report_bench.record(cell, rng, "2025-06-01T00:00:00+00:00")
            f.write(json.dumps(rec, sort_keys=True) + "\n")


def report(results: Path, out: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "harness", "report", "--matrix", str(ROOT / "matrix.yaml")]
    argv += ["--results", str(results), "--out", str(out), "--allow-drift", "--allow-partial"]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) in (0, 1, 3), proc.stderr.read() if proc.stderr else ""
    return {
        "wall": round(wall, 2), "cpu": round(usage.ru_utime + usage.ru_stime, 2),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1), "load_before": round(load, 2),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="25000,50000,100000")
    ap.add_argument("--before", type=Path, help="a report-cli.json whose runs were the code before")
    args = ap.parse_args()
    # As a user's runs after the first have it (pip compiles a package when it installs it, and
    # Python writes what it compiles on first import): without it, each run here would compile
    # the harness's modules again (a fifth of a second where PYTHONDONTWRITEBYTECODE is set).
    compileall.compile_dir(ROOT / "harness", quiet=1)
    runs = []
    with tempfile.TemporaryDirectory(prefix="smx-report-") as tmp:
        for shape in ("grid", "stacks"):
            for n in (int(x) for x in args.sizes.split(",")):
                folder = Path(tmp) / f"{shape}-{n}"
                journal(folder / "results", shape, n)
                row = {"shape": shape, "cells": n, **report(folder / "results", folder / "out")}
                row["rss_kb_per_cell"] = round(row["max_rss_mb"] * 1024 / n, 2)
                print(json.dumps(row), flush=True)
                runs.append(row)
    out = ROOT / "bench" / "results" / "report-cli.json"
    doc: dict[str, object] = {"goal_wall_seconds_100k": 5, "cores": os.cpu_count(), "runs": runs}
    doc["bytecode"] = "the harness compiled before the runs (compileall)"
    if args.before:
        before = json.loads(args.before.read_text())
        doc["before"] = {k: v for k, v in before.items() if k not in ("goal_wall_seconds_100k",)}
    out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
