"""Properties: shards partition the plan; ids do not depend on how matrix.yaml is ordered."""

from __future__ import annotations

import random
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.compat import parse_knowledge, read_knowledge_docs
from harness.loader import parse_yaml
from harness.matrix import expand, parse_matrix, shard
from harness.model import (
    Cell,
    DriverTarget,
    Evidence,
    Expectation,
    Outcome,
    Plan,
    Reason,
    Stack,
)
from harness.scenarios import read_scenarios
from tests.conftest import ROOT

KB = parse_knowledge(read_knowledge_docs())
SCENARIOS = read_scenarios(ROOT / "scenarios", display="scenarios")
NONE = DriverTarget(version=None, origin="flag")
REASON = Reason(rule="r", detail="d", source="https://example.org/")

stacks = st.builds(
    Stack,
    framework=st.sampled_from(["torch", "tensorflow"]),
    framework_version=st.sampled_from(["2.15.0", "2.9.1", "2.21.0"]),
    cuda=st.sampled_from(["11.8", "12.8", "13.0"]),
    cudnn=st.sampled_from(["9.10.2.21", "9.13.0.50"]),
    python=st.sampled_from(["3.10", "3.11", "3.12"]),
    base=st.sampled_from(["offline", "cuda"]),
)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    chosen = draw(st.lists(stacks, unique=True, max_size=25))
    scen = draw(st.lists(st.sampled_from(["baseline", "a", "b", "c"]), unique=True, min_size=1))
    cells = tuple(
        Cell(
            id=f"{s.slug}/{x}",
            stack=s,
            scenario=x,
            expected=Expectation(outcome=Outcome.PASS),
            evidence=Evidence.CPU,
            because=REASON,
        )
        for s in chosen
        for x in scen
    )
    return Plan(profile="p", driver=NONE, cells=cells)


@given(plans(), st.integers(min_value=1, max_value=9))
def test_shards_partition_the_plan(plan: Plan, total: int) -> None:
    parts = [shard(plan, i, total) for i in range(1, total + 1)]
    ids = [c.id for p in parts for c in p.cells]
    assert sorted(ids) == sorted(c.id for c in plan.cells), "together: exactly the plan"
    assert len(ids) == len(set(ids)), "no cell in two shards"
    # Balanced: cells of one stack stay together, so shards differ by at most one stack's cells.
    per_stack = max(
        (sum(1 for c in plan.cells if c.stack == s.stack) for s in plan.cells), default=0
    )
    sizes = [len(p.cells) for p in parts]
    assert max(sizes) - min(sizes) <= per_stack
    # Deterministic, and in plan order.
    assert [c.id for c in shard(plan, 1, total).cells] == [c.id for c in parts[0].cells]
    for p in parts:
        order = [c.id for c in plan.cells if c in p.cells]
        assert [c.id for c in p.cells] == order


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        items = [_shuffled(v, rng) for v in value]
        rng.shuffle(items)
        return items
    return value


def _plan_of(text: str, profile: str, driver: DriverTarget) -> Plan:
    return expand(parse_matrix(parse_yaml(text, "matrix.yaml")), profile, KB, SCENARIOS, driver)


ORIGINAL = (ROOT / "matrix.yaml").read_text(encoding="utf-8")


@settings(max_examples=25, deadline=None)
@given(
    st.randoms(use_true_random=False),
    st.sampled_from(["smoke", "full"]),
    st.sampled_from([None, "470.57.02", "535.104.05", "580.65.06"]),
)
def test_ids_do_not_depend_on_order(rng: random.Random, profile: str, driver: str | None) -> None:
    target = DriverTarget(version=driver, origin="flag")
    data = yaml.safe_load(ORIGINAL)
    reordered = yaml.safe_dump(_shuffled(data, rng), sort_keys=False)
    a = _plan_of(ORIGINAL, profile, target)
    b = _plan_of(reordered, profile, target)
    assert [c.to_json() for c in a.cells] == [c.to_json() for c in b.cells]


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=6))
def test_shards_of_the_real_full_plan(total: int) -> None:
    plan = _plan_of(ORIGINAL, "full", NONE)
    ids = [c.id for i in range(1, total + 1) for c in shard(plan, i, total).cells]
    assert sorted(ids) == sorted(c.id for c in plan.cells)
    assert len(ids) == len(set(ids))
