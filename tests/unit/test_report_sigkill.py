"""A `harness report` SIGKILLed while it writes leaves every report file whole (issue 24): each is
the previous report's file or the new one, complete; never a torn file. A real process, a real
SIGKILL, timed on what it does to the out folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

FILES = ("COMPATIBILITY.md", "FAULTS.md", "SIGNATURES.md", "index.html", "results.csv")


def journal(folder: Path, n: int) -> Path:
    """n results of distinct cells, made from the shipped journal's first line."""
    first = json.loads((ROOT / "reports/results/journal.jsonl").read_text().splitlines()[0])
    slug = first["cell"].split("/")[0]
    folder.mkdir(parents=True)
    with (folder / "journal.jsonl").open("w") as f:
        for i in range(n):
            # the cell id and its scenario agree (a record whose id names another scenario
            # than its own is no result: the report would have nothing to write)
            rec = {
                **first,
                "cell": f"{slug}/fault-{i}",
                "scenario": f"fault-{i}",
                "key": f"{i:024x}",
            }
            f.write(json.dumps(rec, sort_keys=True) + "\n")
    return folder


def report(results: Path, out: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "harness", "report", "--results", str(results)]
    argv += ["--out", str(out), "--allow-drift", "--allow-partial"]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def snapshot(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in FILES}


def test_sigkill_while_writing_leaves_the_previous_report_whole(tmp_path: Path) -> None:
    small, big = journal(tmp_path / "small", 50), journal(tmp_path / "big", 8_000)
    out = tmp_path / "out"
    assert report(small, out).wait(timeout=300) in (0, 1, 3)
    old = snapshot(out)
    stamps = {name: os.stat(out / name).st_mtime_ns for name in FILES}
    proc = report(big, out)
    caught = ""
    while not caught and proc.poll() is None:  # kill at the first sign of writing
        for entry in os.scandir(out):
            if entry.name.startswith("."):
                caught = f"temp file {entry.name}"
            elif entry.name in stamps and entry.stat().st_mtime_ns != stamps[entry.name]:
                caught = f"{entry.name} replaced"
        if caught:
            os.kill(proc.pid, signal.SIGKILL)
        else:
            time.sleep(0.0005)
    assert proc.wait(timeout=60) == -signal.SIGKILL, "the report finished before it was killed"
    after = snapshot(out)
    assert report(big, tmp_path / "new").wait(timeout=300) in (0, 1, 3)
    new = snapshot(tmp_path / "new")
    for name in FILES:
        assert after[name] in (old[name], new[name]), f"{name} is torn (killed at: {caught})"
