"""What `harness plan` prints: a table for people, JSON for tools, a GitHub Actions matrix."""

from __future__ import annotations

import json
from typing import Any

from tabulate import tabulate

from harness.model import Cell, Outcome, Plan, Stack

FORMATS = ("table", "json", "github")


def expected_text(cell: Cell) -> str:
    e = cell.expected
    if e.outcome is Outcome.FAIL:
        return f"fail: {e.signature} @ {e.stage.value if e.stage else '?'}"
    return str(e.outcome.value)


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


def github_matrix(plan: Plan) -> dict[str, Any]:
    """A `strategy.matrix` value: `{"include": [...]}`, one entry per cell."""
    include = []
    for c in plan.cells:
        entry: dict[str, Any] = {
            "cell": c.id,
            **c.stack.to_json(),
            "scenario": c.scenario,
            "evidence": c.evidence.value,
            "expected": expected_text(c),
        }
        include.append(entry)
    return {"include": include}


def render(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(plan.to_json(), indent=2) + "\n"
    if fmt == "github":
        return json.dumps(github_matrix(plan), separators=(",", ":")) + "\n"
    return render_table(plan)


def group(plan: Plan) -> list[tuple[Stack, tuple[Cell, ...]]]:
    """One entry per stack, in plan order, with the cells that run on it (faults apply at run
    time: one image or venv serves every scenario)."""
    by_stack: dict[Stack, list[Cell]] = {}
    for cell in plan.cells:
        by_stack.setdefault(cell.stack, []).append(cell)
    return [(s, tuple(cells)) for s, cells in by_stack.items()]
