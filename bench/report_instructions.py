"""The instructions `harness report` executes on a journal of N distinct cells: a count that a
noisy machine does not move, where its wall and CPU time (bench/report_cli_bench.py) move by a
half from run to run on a shared VM.

valgrind's cachegrind (--cache-sim=no: instructions only) runs the report and follows its forked
children (the journal's second part is read by one, index.html and results.csv are written by
another); the count is summed over the three. PYTHONHASHSEED is fixed, so two runs of the same
code on the same journal count within a few hundredths of a percent.

Usage: python bench/report_instructions.py [--shape stacks|grid] [--cells 25000] [--root DIR]
--root: the checkout whose harness runs (a worktree of the code before a change, say); the
journal is the same for any root. Needs valgrind (Debian: apt-get install valgrind). Takes
about a minute for 25,000 cells, four for 100,000.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import report_cli_bench  # noqa: E402

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(root: Path, results: Path, out: Path, logs: Path) -> list[int]:
    """Each process' instructions, in the order they ended."""
    argv = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", f"--log-file={logs}/%p.log",
        f"--cachegrind-out-file={logs}/%p.out", sys.executable, "-m", "harness", "report",
        "--matrix", str(root / "matrix.yaml"), "--results", str(results), "--out", str(out),
        "--allow-drift", "--allow-partial",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(argv, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    found = []
    for log in sorted(logs.glob("*.log")):
        found += [int(n.replace(",", "")) for n in _REFS.findall(log.read_text())]
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=["stacks", "grid"], default="stacks")
    ap.add_argument("--cells", type=int, default=25_000)
    ap.add_argument("--root", type=Path, default=ROOT)
    args = ap.parse_args()
    compileall.compile_dir(args.root / "harness", quiet=1)  # as report_cli_bench does
    with tempfile.TemporaryDirectory(prefix="smx-instr-") as tmp:
        folder = Path(tmp)
        report_cli_bench.journal(folder / "results", args.shape, args.cells)
        (folder / "logs").mkdir()
        each = count(args.root.resolve(), folder / "results", folder / "out", folder / "logs")
    row = {"shape": args.shape, "cells": args.cells, "root": str(args.root)}
    row |= {"instructions": sum(each), "per_process": each}
    print(json.dumps(row))


if __name__ == "__main__":
    main()
