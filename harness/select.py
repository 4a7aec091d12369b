"""Part of a plan: `--stack`/`--cell` globs and `--shard I/N` (like cibuildwheel's build selectors).

Pure: takes a Plan and the options' values, returns a Plan that says what chose it (`selectors`,
`shard`), so a report can tell a partial run from a whole profile.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from fnmatch import fnmatchcase

from harness.errors import ConfigError
from harness.matrix import shard as shard_plan
from harness.model import Plan, Where

SHARD_RE = re.compile(r"([0-9]{1,9})/([0-9]{1,9})")  # ASCII digits; shard counts stay small
MAX_SHARDS = 10_000
COMMAND_LINE = Where("<command line>", 1, 1)
SHOWN = 5  # choices a help line names when none is close


def parse_shard(text: str | None, where: Where) -> tuple[int, int] | None:
    """`--shard I/N` as (I, N), 1 <= I <= N; None when the option was not given."""
    if text is None:
        return None
    m = SHARD_RE.fullmatch(text)
    if m is None or not (1 <= int(m.group(1)) <= int(m.group(2)) <= MAX_SHARDS):
        raise ConfigError(
            f"bad --shard {text!r}",
            where=where,
            help=f"write I/N with 1 <= I <= N <= {MAX_SHARDS}, e.g. --shard 1/4 "
            "(shards count from 1)",
        )
    return int(m.group(1)), int(m.group(2))


def select(
    plan: Plan,
    *,
    shard: tuple[int, int] | None = None,
    stacks: Sequence[str] = (),
    cells: Sequence[str] = (),
    where: Callable[[str], Where] | None = None,
) -> Plan:
    """The cells whose stack slug matches any `stacks` glob (when given) and whose id matches any
    `cells` glob (when given); then shard I/N of those (whole stacks, balanced). A glob that
    matches nothing, or an empty result, is a ConfigError."""
    place = where or (lambda _option: COMMAND_LINE)
    stacks, cells = _unique(stacks), _unique(cells)
    slugs = _unique([c.stack.slug for c in plan.cells])
    ids = [c.id for c in plan.cells]
    _check_patterns("--stack", stacks, slugs, "stacks", place)
    _check_patterns("--cell", cells, ids, "cells", place)
    kept = tuple(
        c
        for c in plan.cells
        if (not stacks or _matches(c.stack.slug, stacks)) and (not cells or _matches(c.id, cells))
    )
    if not kept:
        raise _empty(plan, stacks, cells, place)
    selectors = (
        *plan.selectors,
        *(f"--stack {p}" for p in stacks),
        *(f"--cell {p}" for p in cells),
    )
    chosen = replace(plan, cells=kept, selectors=selectors)
    if shard is None:
        return chosen
    return _shard(chosen, shard, place("--shard"))


def _empty(
    plan: Plan, stacks: Sequence[str], cells: Sequence[str], place: Callable[[str], Where]
) -> ConfigError:
    if not plan.cells:
        return ConfigError(
            f"profile '{plan.profile}' has no cells to select from",
            where=place("--stack" if stacks else "--cell"),
        )
    return ConfigError(
        "no cell matches both --stack and --cell",
        where=place("--cell"),
        help=f"the stacks chosen by --stack {' '.join(stacks)} have no cell matching "
        f"--cell {' '.join(cells)}; `stackmatrix plan` with --stack alone lists their cells",
    )


def _shard(plan: Plan, spec: tuple[int, int], where: Where) -> Plan:
    index, total = spec
    if not 1 <= index <= total <= MAX_SHARDS:
        raise ConfigError(
            f"bad --shard '{index}/{total}'",
            where=where,
            help="write I/N with 1 <= I <= N, e.g. --shard 1/4 (shards count from 1)",
        )
    part = shard_plan(plan, index, total)
    if not part.cells:
        count = len({c.stack.slug for c in plan.cells})
        raise ConfigError(
            f"shard {index}/{total} is empty: the selection has {count} "
            f"stack{'s' if count != 1 else ''}, and a stack is never split",
            where=where,
            help=f"use at most {count} shards (`stackmatrix plan --format github` picks the count)",
        )
    return replace(part, selectors=plan.selectors)


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def _check_patterns(
    option: str,
    patterns: Sequence[str],
    names: Sequence[str],
    what: str,
    place: Callable[[str], Where],
) -> None:
    for pattern in patterns:
        if not any(fnmatchcase(n, pattern) for n in names):
            raise ConfigError(
                f"{option} '{pattern}' matches no {what[:-1]} of this plan",
                where=place(option),
                help=pattern_help(pattern, names, what),
            )


# Where names split into words: '_' and '/', and after the '-' before a version
# ('torch-2.15.0_cu13.2' -> 'torch-', '2.15.0', 'cu13.2'); a pattern also at its wildcards.
WORD_SPLIT = r"(?<=-)(?=\d)|[_/]"
PATTERN_SPLIT = re.compile(rf"({WORD_SPLIT}|[*?]|\[[^\]]*\])")


def pattern_help(pattern: str, names: Sequence[str], what: str) -> str:
    """Close matches for a glob that matched nothing, or the first few names."""
    if not names:
        return f"the plan has no {what}"
    fixed = _respelled(pattern, names)
    if fixed is not None:
        return f"did you mean '{fixed}'?"
    for wider in (f"*/{pattern}", f"{pattern}/*", f"*{pattern.strip('*')}*"):
        if wider != pattern and any(fnmatchcase(n, wider) for n in names):
            return f"did you mean '{wider}'? (a pattern must match the whole name)"
    if any(fnmatchcase(n.lower(), pattern.lower()) for n in names):
        return "patterns are case-sensitive"
    close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    listed = f", ... ({len(names)} in all; `stackmatrix plan` lists them)"
    more = listed if len(names) > SHOWN else ""
    return f"known {what}: {', '.join(names[:SHOWN])}{more}"


def _respelled(pattern: str, names: Sequence[str]) -> str | None:
    """The pattern with each unknown word replaced by the closest known one ('pytorch-*' ->
    'torch-*', '*_cu12.9_*' -> '*_cu12.8_*'), when that matches something."""
    words = sorted({w for n in names for w in re.split(WORD_SPLIT, n) if w})
    parts = [
        p if p in words or PATTERN_SPLIT.fullmatch(p) else _closest(p, words)
        for p in PATTERN_SPLIT.split(pattern)
    ]
    fixed = "".join(parts)
    if fixed != pattern and any(fnmatchcase(n, fixed) for n in names):
        return fixed
    return None


def _closest(word: str, words: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, words, n=1, cutoff=0.6)
    return close[0] if close else word
