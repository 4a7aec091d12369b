"""Runs: harness overhead per run against a bare `docker run`, and a warm re-run of the matrix.

  overhead  one cell (torch baseline and torch missing-cudnn), run N times through the harness
            (DockerBackend.run: create, start, wait, logs, remove, with its fault setup)
            and N times as the plain `docker run --rm ...` that `harness reproduce` prints for it,
            interleaved; medians compared (goal: harness within 15% of bare).
  warm      `harness run` on the smoke profile when every cell is in the journal: wall time
            (goal: under 5 s) and the containers the engine created meanwhile (goal: none),
            counted with `docker events`.

Needs the smoke images built and a complete journal in reports/results (run `nox -s matrix`
first). Usage: python bench/run_bench.py [--reps 7]. Writes bench/results/run.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.backends import Target  # noqa: E402
from harness.backends.docker import DockerBackend, docker_run_command  # noqa: E402
from harness.backends.engine import Engine, connect  # noqa: E402
from harness.backends.images import Builder, Paths  # noqa: E402
from harness.console import Console  # noqa: E402
from harness.faults import resolve  # noqa: E402
from harness.lock import WheelCache, cache_root, read_lock  # noqa: E402
from harness.render import read_templates  # noqa: E402
from harness.runner import spec_for  # noqa: E402
from harness.scenarios import read_scenarios  # noqa: E402

STACK_SLUG = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"


def image_of(slug: str) -> str:
    out = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "stackmatrix/stack"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return next(i for i in out if i.split(":", 1)[1].startswith(slug + "-"))


def overhead(reps: int) -> dict[str, object]:
    from harness.compat import parse_knowledge, read_knowledge_docs
    from harness.matrix import expand, parse_matrix
    from harness.loader import read_yaml
    from harness.model import DriverTarget

    scenarios = read_scenarios(ROOT / "scenarios", display="scenarios")
    matrix = parse_matrix(read_yaml(ROOT / "matrix.yaml"))
    plan = expand(
        matrix, "smoke", parse_knowledge(read_knowledge_docs()), scenarios,
        DriverTarget(version=None, origin="none"),
    )  # fmt: skip
    stack = next(c.stack for c in plan.cells if c.stack.slug == STACK_SLUG)
    lock = read_lock(ROOT / "images" / "locks" / f"{STACK_SLUG}.json")
    assert lock is not None
    engine = Engine(connect(os.environ))
    cache = cache_root(os.environ)
    paths = Paths(images=ROOT / "images", cache=cache, logs=ROOT / "reports" / "logs")
    kb = parse_knowledge(read_knowledge_docs())
    builder = Builder(kb=kb, engine=lambda: engine, paths=paths, console=Console(),
                      templates=read_templates(paths.images))  # fmt: skip
    backend = DockerBackend(builder, lambda: engine)
    image = image_of(STACK_SLUG)
    target = Target(stack=stack, ref=image, identity=image, lock=lock)
    out: dict[str, object] = {}
    for name in ("baseline", "missing-cudnn"):
        ops = resolve(scenarios[name].faults, stack)
        spec = spec_for(ops, target, WheelCache(cache), gpu=False)
        bare_cmd = docker_run_command(spec, image)
        harness_s, bare_s = [], []
        for _ in range(reps):
            t = time.perf_counter()
            backend.run(spec, target)
            harness_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            subprocess.run(["bash", "-c", bare_cmd], capture_output=True, check=False)
            bare_s.append(time.perf_counter() - t)
        h, b = statistics.median(harness_s), statistics.median(bare_s)
        out[name] = {
            "harness_median_s": round(h, 3),
            "bare_docker_run_median_s": round(b, 3),
            "overhead_pct": round((h / b - 1) * 100, 1),
            "harness_s": [round(x, 3) for x in harness_s],
            "bare_s": [round(x, 3) for x in bare_s],
        }
    out["goal_overhead_pct"] = 15
    return out


def warm() -> dict[str, object]:
    since = str(int(time.time()))
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--allow-drift"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - t
    until = str(int(time.time()) + 1)
    events = subprocess.run(
        ["docker", "events", "--since", since, "--until", until, "--filter", "type=container",
         "--filter", "event=create", "--format", "{{.Actor.Attributes.name}}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return {
        "seconds": round(seconds, 2),
        "goal_s": 5,
        "containers_created": len(events),
        "exit": done.returncode,
        "summary": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    result = {"overhead": overhead(args.reps), "warm_rerun": warm()}
    print(json.dumps(result, indent=1))
    (ROOT / "bench" / "results" / "run.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
