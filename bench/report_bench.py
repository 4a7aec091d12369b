"""`write_all` on a big synthetic matrix: 500 stacks x 200 scenarios = 100,000 cells.

The results are split over 4 shard folders (as a sharded CI run leaves them), 2% of the cells
ran twice (the later record must win), and a plan.json lists every cell plus 1% never run (so
the report is PARTIAL and has predicted cells). Decisive lines carry `<`, `&` and ANSI colours.

  first    write_all into an empty out folder (no previous report), 3 times, fresh folders
  second   write_all again into a used folder, after 1% of the cells changed (the diff path)
  phases   the first run's parts timed one by one (where the time goes)

Each run records wall and CPU seconds (the CPU time is what other load on a shared machine
does not inflate) and the load average before it.
Goal: wall time under 10 s on the 2-core reference machine.
Usage: python bench/report_bench.py [--stacks 500] [--scenarios 200]
Writes bench/results/report_bench.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.model import Pattern, Signature, Stack, Stage, Where  # noqa: E402
from harness.report import export, frame, html, md, read, summary, write  # noqa: E402

SHARDS = 4
SIGS = ("cudnn_missing", "cuda_runtime_missing", "cudnn_version_mismatch", "corrupt_library",
        "no_gpu", "oom", "unknown")  # fmt: skip
STAGES = ("import", "build_info", "devices", "cudnn_api", "cudnn_conv", "train_step")


def stacks(n: int) -> list[str]:
    frameworks = [("torch", v) for v in ("2.4.1", "2.5.1", "2.6.0", "2.7.1", "2.15.0")]
    frameworks += [("tensorflow", v) for v in ("2.13.0", "2.16.1", "2.20.0", "2.21.0")]
    cudas = ("11.8", "12.1", "12.4", "12.5", "12.8", "13.0", "13.2")
    cudnns = ("8.9", "9.1", "9.3", "9.13", "9.26")
    pythons, bases = ("3.10", "3.11", "3.12"), ("offline", "cuda")
    axes = itertools.product(frameworks, cudas, cudnns, pythons, bases)
    slugs = [f"{f}-{v}_cu{c}_cudnn{d}_py{p}_{b}" for (f, v), c, d, p, b in axes]
    return random.Random(1).sample(slugs, n)


def scenarios(n: int) -> list[str]:
    what = ("missing", "corrupt", "older", "newer", "shadowed", "truncated", "wrong-abi", "stale")
    libs = ("cudnn", "cublas", "cudart", "nvrtc", "cufft", "curand", "cusolver", "cusparse",
            "nccl", "nvjitlink", "cupti", "libstdcxx", "ld-path", "driver", "gpu")  # fmt: skip
    ids = ["baseline"] + [f"{w}-{lib}" for w in what for lib in libs]
    ids += [f"{w}-{lib}-{k}" for k in range(2, 9) for w in what for lib in libs]
    return ids[:n]


def stack_json(slug: str) -> dict[str, str]:
    return Stack.from_slug(slug).to_json()


def record(cell: str, rng: random.Random, started: str) -> dict[str, Any]:
    roll = rng.random()
    sig, stage = rng.choice(SIGS), rng.choice(STAGES)
    fail = {"outcome": "fail", "signature": sig, "stage": stage}
    passed = {"outcome": "pass", "signature": None, "stage": None}
    line = f"\x1b[31mE0101 cuda_dnn.cc:535] <lib{sig}.so.9> & could not load ({cell})\x1b[0m"
    secondary = ["cuda_runtime_missing"] if sig == "cudnn_missing" else []
    observed: dict[str, Any] = {**fail, "decisive_line": line, "exit_code": 1, "signal": None,
                                "secondary": secondary}  # fmt: skip
    status, expected, drift, error = "failed", fail, False, None
    if roll < 0.55:
        status, expected = "passed", passed
        observed = {**passed, "decisive_line": None, "exit_code": 0, "signal": None,
                    "secondary": []}  # fmt: skip
    elif roll < 0.60:
        expected, drift = passed, True
    elif roll < 0.61:
        status, observed, drift = "timeout", {**observed, "exit_code": None}, True
    elif roll < 0.615:
        status, observed, drift = "errored", None, True
        error = "Traceback (most recent call last):\n  ...\nRuntimeError: docker <daemon> gone"
    elif roll < 0.62:
        status, observed, drift = "interrupted", None, True
    slug, _, scenario = cell.partition("/")
    return {
        "schema": 2, "cell": cell, "stack": stack_json(slug), "scenario": scenario,
        "key": f"{rng.getrandbits(96):024x}", "backend": "docker",
        "status": status, "expected": expected, "observed": observed, "drift": drift,
        "evidence": "gpu", "started": started, "seconds": round(rng.uniform(2, 90), 3),
        "image": f"stackmatrix/stack:{cell.split('/', 1)[0]}-0123456789ab", "error": error,
        "driver": "580.65.06", "gpu": "NVIDIA H100 80GB HBM3",
    }  # fmt: skip


def generate(folder: Path, n_stacks: int, n_scenarios: int) -> list[str]:
    rng = random.Random(7)
    cells = [f"{s}/{c}" for s in stacks(n_stacks) for c in scenarios(n_scenarios)]
    ran = cells[: len(cells) - len(cells) // 100]  # 1% planned but never run
    lines: list[list[str]] = [[] for _ in range(SHARDS)]
    for i, cell in enumerate(ran):
        started = f"2025-06-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"
        lines[i % SHARDS].append(json.dumps(record(cell, rng, started), sort_keys=True))
    for cell in rng.sample(ran, len(ran) // 50):  # a re-run, a day later: it must win
        lines[rng.randrange(SHARDS)].append(
            json.dumps(record(cell, rng, "2025-06-02T00:00:00+00:00"), sort_keys=True)
        )
    for k, shard in enumerate(lines):
        (folder / f"shard{k}").mkdir(parents=True)
        (folder / f"shard{k}" / "journal.jsonl").write_text("\n".join(shard) + "\n")
    because = {"rule": "bench", "detail": "synthetic", "source": "bench/report_bench.py"}
    stack = {s: stack_json(s) for s in {c.split("/")[0] for c in cells}}
    plan = {"profile": "bench", "driver": "580.65.06", "cells": [
        {"id": c, "stack": stack[c.split("/")[0]], "scenario": c.split("/")[1], "evidence": "gpu",
         "expected": {"outcome": "pass", "signature": None, "stage": None},
         "because": because} for c in cells]}  # fmt: skip
    (folder / "shard0" / "plan.json").write_text(json.dumps(plan))
    return ran


def change(folder: Path, ran: list[str]) -> None:
    """1% of the cells run again and now fail differently (new failures, changed verdicts)."""
    rng = random.Random(11)
    with (folder / "shard1" / "journal.jsonl").open("a") as f:
        for cell in rng.sample(ran, len(ran) // 100):
            rec = record(cell, rng, "2025-06-03T00:00:00+00:00")
            f.write(json.dumps(rec, sort_keys=True) + "\n")


def catalog() -> tuple[Signature, ...]:
    return tuple(
        Signature(id=s, title=s.replace("_", " "), stage=Stage.IMPORT,
                  patterns=(Pattern(regex=s, needle=s),), signals=(), cause=f"{s} <cause>",
                  fix=("step one", "step two"), frameworks=("torch", "tensorflow"), priority=1,
                  sources=("https://example.org/issue",), where=Where("signatures.yaml", 1, 1))
        for s in SIGS)  # fmt: skip


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    value = fn()
    return round(time.perf_counter() - t, 3), value


def run(fn: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    load = os.getloadavg()[0]
    cpu = time.process_time()
    wall, value = timed(fn)
    numbers = {"wall": wall, "cpu": round(time.process_time() - cpu, 3), "load_before": load}
    return numbers, value


def phases(folders: list[Path], sigs: tuple[Signature, ...]) -> dict[str, float]:
    """The first run's work, one part at a time (write_all minus the file writes)."""
    out: dict[str, float] = {}
    out["read"], results = timed(lambda: read.read_results(folders))
    out["read_plans"], plans = timed(lambda: read.read_plans(folders))
    out["frame"], table = timed(lambda: frame.build_frame(results, plans))
    head = summary.header(table, plans, "x")
    out["compatibility_md"], _ = timed(lambda: md.compatibility(table, head))
    out["signatures_md"], _ = timed(lambda: md.signatures(table, sigs))
    out["heatmap_png"], _ = timed(lambda: html.heatmap_png(table))
    out["index_html"], _ = timed(lambda: html.render_page(table, head.pairs(), {}))
    out["results_csv"], _ = timed(lambda: export.csv_text(table))
    out["junit_xml"], _ = timed(lambda: export.junit_xml(table))
    out["snapshot_json"], _ = timed(lambda: summary.snapshot(table))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", type=int, default=500)
    ap.add_argument("--scenarios", type=int, default=200)
    args = ap.parse_args()
    sigs = catalog()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        ran = generate(base / "results", args.stacks, args.scenarios)
        folders = sorted((base / "results").iterdir())
        env = {"GITHUB_STEP_SUMMARY": str(base / "summary.md")}
        first = []
        for k in range(3):
            out = base / f"reports{k}"
            numbers, s1 = run(lambda o=out: write.write_all(folders, o, catalog=sigs, env=env))
            first.append(numbers)
        change(base / "results", ran)
        second, s2 = run(lambda: write.write_all(folders, out, catalog=sigs, env=env))
        sizes = {p.name: p.stat().st_size for p in s2.paths}
        parts = phases(folders, sigs)
    result = {
        "machine": {"cores": os.cpu_count()},
        "stacks": args.stacks, "scenarios": args.scenarios,
        "records": len(ran) + len(ran) // 50 + len(ran) // 100, "cells": s1.counts.cells,
        "first": first, "second": second, "phases_seconds": parts,
        "counts": s1.counts.__repr__(), "partial": s1.partial,
        "diff": md.diff_line(s2.diff), "bytes": sizes,
    }  # fmt: skip
    dest = ROOT / "bench/results/report_bench.json"
    dest.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
