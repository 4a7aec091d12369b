"""`--stack`/`--cell` globs and `--shard` on plans read from the golden plan fixtures."""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.model import Plan, Where
from harness.select import parse_shard, select
from tests.conftest import FIXTURES


def fixture_plan(name: str) -> Plan:
    return Plan.from_json(json.loads((FIXTURES / "plan" / name).read_text(encoding="utf-8")))


SMOKE = fixture_plan("smoke.json")
FULL = fixture_plan("full-470.57.02.json")
PLANS = {"smoke": SMOKE, "full": FULL}
HERE = Where("<command line>", 1, 1)


def at(option: str) -> Where:
    """A stand-in for the CLI's argv_where: each option at its own column."""
    return Where("<command line>", 1, {"--stack": 10, "--cell": 20, "--shard": 30}[option])


def ids(plan: Plan) -> list[str]:
    return [c.id for c in plan.cells]


def test_select_by_stack_glob() -> None:
    part = select(FULL, stacks=["torch-*"])
    assert part.cells and all(c.stack.framework == "torch" for c in part.cells)
    assert ids(part) == [c.id for c in FULL.cells if c.stack.framework == "torch"]
    assert part.selectors == ("--stack torch-*",)
    assert part.partial and part.shard is None
    assert (part.profile, part.driver, part.removals) == (FULL.profile, FULL.driver, FULL.removals)


def test_select_by_cell_glob() -> None:
    part = select(SMOKE, cells=["*/baseline", "*/missing-cudnn"])
    assert {c.scenario for c in part.cells} == {"baseline", "missing-cudnn"}
    assert len(part.cells) == 2 * len({c.stack for c in SMOKE.cells})
    assert part.selectors == ("--cell */baseline", "--cell */missing-cudnn")


def test_select_by_stack_and_cell_keeps_what_matches_both() -> None:
    part = select(FULL, stacks=["tensorflow-*", "*_cu11.8_*"], cells=["*/baseline"])
    assert part.cells
    for c in part.cells:
        assert c.scenario == "baseline"
        assert c.stack.framework == "tensorflow" or c.stack.cuda == "11.8"
    wanted = [
        c.id
        for c in FULL.cells
        if c.scenario == "baseline"
        and (c.stack.framework == "tensorflow" or c.stack.cuda == "11.8")
    ]
    assert ids(part) == wanted
    assert part.selectors == ("--stack tensorflow-*", "--stack *_cu11.8_*", "--cell */baseline")


def test_select_then_shard() -> None:
    chosen = select(FULL, stacks=["torch-*"])
    part = select(FULL, stacks=["torch-*"], shard=(2, 3))
    assert part.shard == (2, 3) and part.selectors == ("--stack torch-*",)
    assert set(ids(part)) < set(ids(chosen))
    stacks = {c.stack for c in part.cells}
    assert all(c in part.cells for c in chosen.cells if c.stack in stacks), "stacks stay whole"


def test_no_selection_is_the_whole_plan() -> None:
    assert select(SMOKE) == SMOKE
    assert not select(SMOKE).partial


def test_duplicate_patterns_are_applied_once() -> None:
    assert select(SMOKE, cells=["*/baseline", "*/baseline"]).selectors == ("--cell */baseline",)


@pytest.mark.parametrize(
    ("kwargs", "option", "message", "help_has"),
    [
        ({"stacks": ["pytorch-*"]}, "--stack", "--stack 'pytorch-*' matches no", "'torch-*'?"),
        ({"stacks": ["*_cu12.9_*"]}, "--stack", "matches no stack", "'*_cu12.8_*'?"),
        ({"stacks": ["torch"]}, "--stack", "matches no stack", "did you mean '*torch*'?"),
        ({"stacks": ["TORCH-*"]}, "--stack", "matches no stack", "case-sensitive"),
        ({"stacks": ["jax-*"]}, "--stack", "matches no stack", "known stacks: "),
        ({"cells": ["baseline"]}, "--cell", "--cell 'baseline' matches no", "'*/baseline'?"),
        ({"cells": ["*/baselin"]}, "--cell", "matches no cell", "did you mean '*/baseline'?"),
        ({"stacks": ["torch-*"], "cells": ["tensorflow-*"]}, "--cell", "both", "--stack torch-*"),
    ],
)
def test_a_pattern_that_matches_nothing_is_a_config_error(
    kwargs: dict[str, list[str]], option: str, message: str, help_has: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        select(FULL, where=at, **kwargs)  # type: ignore[arg-type]
    err = info.value
    assert err.exit_code == 2
    assert err.where == at(option)
    assert err.help and help_has in err.help
    assert "\nhelp: " in err.render()


def test_help_names_only_the_first_few_choices() -> None:
    with pytest.raises(ConfigError) as info:
        select(FULL, stacks=["jax-*"])
    assert info.value.where == HERE, "the default place: the command line"
    help_text = info.value.help or ""
    assert help_text.count("_py") == 5 and "(23 in all" in help_text


def test_an_empty_shard_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="shard 3/3 is empty") as info:
        select(SMOKE, stacks=["torch-*"], shard=(3, 3), where=at)
    assert info.value.where == at("--shard")
    assert "at most 2 shards" in (info.value.help or "")
    with pytest.raises(ConfigError, match="bad --shard '0/2'"):
        select(SMOKE, shard=(0, 2))


@pytest.mark.parametrize(("text", "value"), [("1/1", (1, 1)), ("2/4", (2, 4)), ("04/10", (4, 10))])
def test_parse_shard(text: str, value: tuple[int, int]) -> None:
    assert parse_shard(text, HERE) == value


@pytest.mark.parametrize(
    "text", ["0/2", "3/2", "a/b", "1/", "/2", "1/2/3", " 1/2", "1/2\n", "-1/2", "1.0/2"]
)
def test_parse_shard_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="bad --shard") as info:
        parse_shard(text, at("--shard"))
    assert info.value.where == at("--shard")
    assert "1 <= I <= N" in (info.value.help or "")


def test_parse_shard_absent() -> None:
    assert parse_shard(None, HERE) is None


STACK_GLOBS = ["torch-*", "tensorflow-*", "*_cu12.*", "*_offline", "*_py3.10_*"]
CELL_GLOBS = ["*/baseline", "*/missing-*", "*/no-*", "torch-*", "*"]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(sorted(PLANS)),
    st.lists(st.sampled_from(STACK_GLOBS), max_size=2, unique=True),
    st.lists(st.sampled_from(CELL_GLOBS), max_size=2, unique=True),
    st.integers(min_value=1, max_value=8),
)
def test_shards_of_a_selection_partition_it(
    name: str, stacks: list[str], cells: list[str], total: int
) -> None:
    plan = PLANS[name]
    try:
        chosen = select(plan, stacks=stacks, cells=cells)
    except ConfigError:  # a glob this plan does not match, or no cell matches both
        assert not _expected(plan, stacks, cells) or _any_misses(plan, stacks, cells)
        return
    assert ids(chosen) == _expected(plan, stacks, cells)
    n_stacks = len({c.stack.slug for c in chosen.cells})
    parts = []
    for k in range(1, total + 1):
        if k > n_stacks:  # more shards than stacks: the extra ones are empty, and say so
            with pytest.raises(ConfigError, match="is empty"):
                select(plan, stacks=stacks, cells=cells, shard=(k, total))
            continue
        part = select(plan, stacks=stacks, cells=cells, shard=(k, total))
        assert part.shard == (k, total) and part.selectors == chosen.selectors
        parts.append(part)
    got = [i for p in parts for i in ids(p)]
    assert sorted(got) == sorted(ids(chosen)), "together: exactly the selection"
    assert len(got) == len(set(got)), "no cell in two shards"


def _expected(plan: Plan, stacks: list[str], cells: list[str]) -> list[str]:
    return [
        c.id
        for c in plan.cells
        if (not stacks or any(fnmatchcase(c.stack.slug, p) for p in stacks))
        and (not cells or any(fnmatchcase(c.id, p) for p in cells))
    ]


def _any_misses(plan: Plan, stacks: list[str], cells: list[str]) -> bool:
    return any(not any(fnmatchcase(c.stack.slug, p) for c in plan.cells) for p in stacks) or any(
        not any(fnmatchcase(c.id, p) for c in plan.cells) for p in cells
    )
