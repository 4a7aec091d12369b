"""A newcomer's cold `nox -s matrix` (README's command) on the smoke profile, by phase, as a fresh machine sees it.

  1. a fresh clone of this checkout in a temp folder, its committed journal removed (so every
     cell runs here, none is a cache hit);
  2. no stackmatrix/* image on the engine and an empty wheel cache ($STACKMATRIX_CACHE);
  3. with --no-mmdebstrap: `apt-get remove mmdebstrap` first, so the harness installs it;
  4. README's main command (the first of "The two commands", read from README.md: today
     `python3 tools/nox.py -s matrix`), every output line stamped
     with its second; the longest silence between two lines is the progress check (goal: 10 s).

The phases come from the harness's own lines: installing mmdebstrap, the base (mmdebstrap +
import), each stack's download wait, install (RUN steps) and commit, and the cells.

DESTRUCTIVE: removes every stackmatrix/* image and the wheel cache. Usage:
    python bench/cold_smoke.py --yes [--no-mmdebstrap] [--out FILE.json]
    DOCKER_HOST=unix:///PATH/docker.sock python bench/cold_smoke.py --yes ...   # another engine
(A second dockerd for a storage-driver comparison needs its own --data-root, --exec-root, -H and
bridge: started with --bridge none it deletes the first engine's docker0.)
    python bench/cold_smoke.py --log stamped.log      # only parse a stamped log
Writes bench/results/cold-smoke.json (and cold-smoke.log beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench/results/cold-smoke.json"

_STAMP = re.compile(r"^\s*(\d+\.\d)\s(.*)$")
_BUILT = re.compile(
    r"^\[(?P<slug>[^\]]+)\] built in (?P<s>[\d.]+) s \((?P<phases>[^)]*)\), (?P<size>.+)$"
)
_PHASE = re.compile(r"(\w+) (\d+) s")
_CELL = re.compile(r"^\[run \d+/\d+\] \S+: \w+.* \((?P<s>[\d.]+) s\)")


def cold() -> Path:
    """Every stackmatrix/* image removed and the cache ($STACKMATRIX_CACHE) emptied: the cache."""
    refs = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for ref in refs:
        if ref.startswith("stackmatrix/"):
            subprocess.run(["docker", "rmi", "-f", ref], check=True, capture_output=True)
    cache = Path(os.environ.get("STACKMATRIX_CACHE", Path.home() / ".cache/stackmatrix"))
    shutil.rmtree(cache, ignore_errors=True)
    return cache


def readme_command(readme: Path) -> str:
    """The first command of the first fenced `sh` block under README's "## The two commands"."""
    text = readme.read_text(encoding="utf-8").split("## The two commands", 1)[1]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return next(ln.split("#", 1)[0].strip() for ln in block.splitlines() if ln.strip())


def stamped(cmd: list[str], cwd: Path, log: Path, env: dict[str, str]) -> int:
    t0 = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(f"{time.monotonic() - t0:8.1f} {line}")
            out.flush()
        return proc.wait()


def parse(log: Path) -> dict[str, object]:
    lines = []
    for raw in log.read_text(encoding="utf-8").splitlines():
        m = _STAMP.match(raw)
        if m:
            lines.append((float(m.group(1)), m.group(2)))
    times = [t for t, _ in lines]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    out: dict[str, object] = {
        "wall_seconds": times[-1] if times else None,
        "lines": len(lines),
        "longest_silence_seconds": round(max(gaps), 1) if gaps else None,
    }

    def at(pattern: str) -> float | None:
        return next((t for t, text in lines if re.search(pattern, text)), None)

    phases: dict[str, object] = {
        "install_mmdebstrap": _span(at(r"installing it now"), at(r"mmdebstrap installed")),
        "base": _span(at(r"mmdebstrap installed|offline base: built here"), at(r"\[base\] .*: built")),
    }
    stacks = []
    for _, text in lines:
        m = _BUILT.match(text)
        if m:
            stacks.append({
                "slug": m.group("slug"),
                "seconds": float(m.group("s")),
                "phases": {k: int(v) for k, v in _PHASE.findall(m.group("phases"))},
                "size": m.group("size"),
            })  # fmt: skip
    phases["stacks"] = stacks
    cells = [(t, float(m.group("s"))) for t, text in lines if (m := _CELL.match(text))]
    built = [t for t, text in lines if _BUILT.match(text)]
    # With --jobs N cells overlap each other and the next image's build: `seconds` sums every
    # cell's own time, `wall` is from the first cell's start to the last cell's end.
    phases["cells"] = {
        "count": len(cells),
        "seconds": round(sum(s for _, s in cells), 1),
        "wall": round(cells[-1][0] - min(t - s for t, s in cells), 1) if cells else None,
        "after_last_build": round(cells[-1][0] - built[-1], 1) if cells and built else None,
    }
    phases["nox_setup"] = at(r"nox > (harness|stackmatrix) run --dry-run")
    phases["builds_done_at"] = built[-1] if built else None
    out["phases"] = phases
    return out


def _span(a: float | None, b: float | None) -> float | None:
    return round(b - a, 1) if a is not None and b is not None else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--yes", action="store_true")
    ap.add_argument("--no-mmdebstrap", action="store_true")
    ap.add_argument("--log", type=Path)
    ap.add_argument("--note", default="")
    ap.add_argument("--out", type=Path, default=OUT, help="result JSON (the log goes beside it)")
    a = ap.parse_args()
    if a.log is not None:
        result = parse(a.log)
    else:
        if not a.yes:
            sys.exit("destructive (removes stackmatrix images and the wheel cache): pass --yes")
        cold()
        if a.no_mmdebstrap:
            subprocess.run(["apt-get", "remove", "-y", "-qq", "mmdebstrap"], check=True)
        with tempfile.TemporaryDirectory(prefix="stackmatrix-cold-") as tmp:
            clone = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            (clone / "reports/results/journal.jsonl").unlink(missing_ok=True)
            log = a.out.with_suffix(".log")
            cmd = readme_command(clone / "README.md")
            code = stamped(["bash", "-c", cmd], clone, log, dict(os.environ))
        result = parse(log)
        result["exit"] = code
    driver = subprocess.run(
        ["docker", "info", "--format", "{{.Driver}}"], capture_output=True, text=True, check=False
    ).stdout.strip()
    result["machine"] = {"cores": os.cpu_count(), "storage_driver": driver or None}
    result["goal_seconds"] = 300
    result["note"] = a.note
    a.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
