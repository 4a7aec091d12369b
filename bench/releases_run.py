"""The `releases` profile regenerated on this machine, timed, with the disk it takes at its peak.

    python bench/releases_run.py --yes [--cold] [--budget SIZE] [--out FILE]

  1. with --cold: the cache ($STACKMATRIX_CACHE: wheels, drivers, environments) emptied,
     every stackmatrix/* image removed and the profile's journal set aside, so that every
     cell runs (DESTRUCTIVE; the journal is put back if the run fails);
  2. `python3 tools/nox.py -s matrix -- --profile releases [--disk-budget SIZE]` (without
     --budget, the profile's disk_budget of matrix.yaml), every output line stamped with its
     second (the journal and report land in reports/releases/);
  3. every 5 s the bytes used on the file system that holds the cache and the engine's data
     (the same one here); the peak minus the bytes used at the start is the run's peak disk.

Writes bench/results/releases-run.json (and the stamped log beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from cold_smoke import cold

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench/results/releases-run.json"


def used(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def profile_budget(log: str) -> str | None:
    """The budget the run said it took from the profile ("disk budget 20.0 GB: the profile's")."""
    for line in log.splitlines():
        if "disk budget " in line and "the profile's" in line:
            return line.split("disk budget ", 1)[1].split(":", 1)[0]
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--yes", action="store_true")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--budget", default=None)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    if not a.yes:
        sys.exit("runs the whole releases profile (an hour, tens of GB): pass --yes")
    cache = Path(os.environ.get("STACKMATRIX_CACHE", Path.home() / ".cache/stackmatrix"))
    journal = ROOT / "reports/releases/results/journal.jsonl"
    aside = journal.with_name("journal.jsonl.before-bench")
    if a.cold:
        cold()  # cold_smoke's: every stackmatrix image removed, the cache emptied
        if journal.exists():  # every cell runs again (put back if the run fails)
            journal.replace(aside)
    cache.mkdir(parents=True, exist_ok=True)
    start = used(cache)
    peak = [start]
    stop = threading.Event()

    samples: list[tuple[float, int]] = []  # (second, bytes above the start), each 5 s
    t0 = time.monotonic()

    def sample() -> None:
        while not stop.wait(5):
            now = used(cache)
            peak[0] = max(peak[0], now)
            samples.append((round(time.monotonic() - t0, 1), now - start))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    log = a.out.with_suffix(".log")
    cmd = ["python3", "tools/nox.py", "-s", "matrix", "--", "--profile", "releases"]
    cmd += ["--disk-budget", a.budget] if a.budget else []
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.replace(str(ROOT), ".")  # the log names the checkout, not this machine
            out.write(f"{time.monotonic() - t0:8.1f} {line}")
            out.flush()
        code = proc.wait()
    if code != 0 and aside.exists():
        journal.replace(aside.with_name("journal.jsonl.failed-bench"))
        aside.replace(journal)
    aside.unlink(missing_ok=True)
    wall = time.monotonic() - t0
    stop.set()
    thread.join()
    peak[0] = max(peak[0], used(cache))
    text = log.read_text(encoding="utf-8")
    result = {
        "command": " ".join(cmd),
        "exit": code,
        "wall_seconds": round(wall, 1),
        "cold": a.cold,
        "disk_budget": a.budget or profile_budget(text),
        "disk_samples": samples,
        "disk_used_at_start": start,
        "disk_peak_bytes_above_start": peak[0] - start,
        "disk_peak_gb_above_start": round((peak[0] - start) / 1e9, 1),
        "evictions": sum("[disk] removed" in ln for ln in text.splitlines()),
        "summary": [ln[9:] for ln in text.splitlines() if "cells:" in ln or "COMPLETE" in ln],
        "storage_driver": subprocess.run(
            ["docker", "info", "--format", "{{.Driver}}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip(),  # fmt: skip
        "cores": os.cpu_count(),
    }
    a.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main())
