"""What `harness plan` prints: a table for people, JSON for tools, a GitHub Actions matrix."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from harness.errors import ConfigError
from harness.matrix import shard
from harness.model import Cell, Plan, Stack

FORMATS = ("table", "json", "github")
MAX_JOBS = 256  # GitHub Actions: "a matrix can generate a maximum of 256 jobs per workflow run"


def expected_text(cell: Cell) -> str:
    return cell.expected.text


def driver_text(plan: Plan) -> str:
    d = plan.driver
    if d.version is None:
        return "driver none (no GPU: cpu evidence)"
    return f"driver {d.version} (from {d.origin}: gpu evidence)"


def render_table(plan: Plan) -> str:
    stacks = len({c.stack for c in plan.cells})
    shard = f" · shard {plan.shard[0]}/{plan.shard[1]}" if plan.shard else ""
    head = (
        f"profile {plan.profile} · {driver_text(plan)} · {len(plan.cells)} cells "
        f"({stacks} stacks){shard}"
    )
    rows = [[c.id, expected_text(c), f"{c.because.rule}: {c.because.detail}"] for c in plan.cells]
    table = tabulate(rows, headers=["cell", "expected", "because"], tablefmt="simple")
    removed = [f"{r.constraint} -{r.removed}" for r in plan.removals if r.removed]
    tail = f"constraints removed: {', '.join(removed)}" if removed else "constraints removed: none"
    sources = sorted({c.because.source for c in plan.cells})
    src = "\n".join(f"  {s}" for s in sources)
    return f"{head}\n\n{table}\n\n{tail}\nsources of the deciding rows:\n{src}\n"


def github_matrix(
    plan: Plan, *, max_jobs: int = MAX_JOBS, args: Sequence[str] = ()
) -> dict[str, Any]:
    """A `strategy.matrix` value: `{"include": [...]}`, one job per group of whole stacks (one
    image build per stack), at most `max_jobs` jobs (GitHub refuses more than 256). Job k is
    `harness run ARGS --shard k/N`: `args` must repeat the options that made this plan
    (profile, driver, --stack/--cell), so that each job selects what its entry lists."""
    if max_jobs < 1:
        raise ConfigError(
            f"bad --max-jobs {max_jobs}",
            help=f"give at least 1 (GitHub runs at most {MAX_JOBS} jobs from one matrix)",
        )
    if plan.shard is not None:
        raise ConfigError(
            "--format github makes its own shards",
            help="leave out --shard (each job's args carry its --shard k/N)",
        )
    if not plan.cells:
        raise ConfigError(
            f"profile '{plan.profile}' has no cells: a GitHub matrix needs at least one job",
            help="select more stacks or cells (GitHub fails a job whose matrix is empty)",
        )
    total = min(max_jobs, len({c.stack.slug for c in plan.cells}))
    return {"include": [_job(shard(plan, k, total), args) for k in range(1, total + 1)]}


def _job(part: Plan, args: Sequence[str]) -> dict[str, Any]:
    assert part.shard is not None
    spec = f"{part.shard[0]}/{part.shard[1]}"
    slugs = list(dict.fromkeys(c.stack.slug for c in part.cells))
    return {
        "name": job_name(part, spec),
        "shard": spec,
        "stacks": slugs,
        "cells": len(part.cells),
        "driver": part.driver.to_json(),
        "evidence": part.driver.evidence.value,
        "args": shlex.join([*args, "--shard", spec]),
    }


def job_name(part: Plan, spec: str) -> str:
    """`2/5 torch-2.15.0_cu13.2_cudnn9.13_py3.11_offline +3`: the shard, its first stack, how
    many more."""
    slugs = list(dict.fromkeys(c.stack.slug for c in part.cells))
    more = f" +{len(slugs) - 1}" if len(slugs) > 1 else ""
    return f"{spec} {slugs[0]}{more}"


def render(plan: Plan, fmt: str, *, max_jobs: int = MAX_JOBS, args: Sequence[str] = ()) -> str:
    """`args`/`max_jobs` matter for the github format only (see `github_matrix`)."""
    if fmt == "json":
        return json.dumps(plan.to_json(), indent=2) + "\n"
    if fmt == "github":
        matrix = github_matrix(plan, max_jobs=max_jobs, args=args)
        return json.dumps(matrix, separators=(",", ":")) + "\n"
    return render_table(plan)


def group(plan: Plan) -> list[tuple[Stack, tuple[Cell, ...]]]:
    """One entry per stack, in plan order, with the cells that run on it (faults apply at run
    time: one image or venv serves every scenario)."""
    by_stack: dict[Stack, list[Cell]] = {}
    for cell in plan.cells:
        by_stack.setdefault(cell.stack, []).append(cell)
    return [(s, tuple(cells)) for s, cells in by_stack.items()]
