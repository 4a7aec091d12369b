"""The report's summary values: counts, what the plans cover, the header, and the diff against
the previous report's snapshot (report.json). Pure."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from harness.model import Plan
from harness.report.frame import LEVEL_ORDER, NOT_RUN, PREDICTED, UNOBSERVABLE
from harness.report.types import Change, Counts, Diff, Header, Origin

BAD = frozenset({"drift", "timeout", "errored"})  # what CI should look at
OBSERVED = frozenset({"pass", "expected-fail", "drift", "timeout"})  # a run showed this


_COUNTED = {
    "passed": "pass",
    "failed_as_expected": "expected-fail",
    "drift": "drift",
    "timeout": "timeout",
    "errored": "errored",
    "interrupted": "interrupted",
    "predicted": PREDICTED,
    "unobservable": UNOBSERVABLE,
}


def count(frame: pd.DataFrame) -> Counts:
    n: dict[str, int] = frame["klass"].value_counts().to_dict()
    by_level: dict[str, int] = frame["level"].value_counts().to_dict()
    levels = tuple((lvl, int(by_level[lvl])) for lvl in LEVEL_ORDER if by_level.get(lvl))
    counted = {f: int(n.get(k, 0)) for f, k in _COUNTED.items()}
    return Counts(cells=len(frame), levels=levels, **counted)


def lone_shard(plans: Sequence[Plan]) -> tuple[int, int] | None:
    """The shard these results are, where they are all of one shard (and so not the whole)."""
    shards = {p.shard for p in plans}
    return shards.pop() if len(shards) == 1 and None not in shards else None


def coverage_gaps(plans: Sequence[Plan]) -> tuple[str, ...]:
    """What the plans leave out of their profiles. None left out: each profile has a plan of
    all its cells, or plans of all its shards 1..N (shards merge into the whole)."""
    out: list[str] = []
    for profile in sorted({p.profile for p in plans}):
        out += _profile_gaps(profile, [p for p in plans if p.profile == profile])
    return tuple(out)


def _profile_gaps(profile: str, plans: Sequence[Plan]) -> list[str]:
    shards: dict[int, set[int]] = {}  # N -> the shard numbers here
    for p in plans:
        if p.selectors:  # --stack/--cell chose its cells: it covers nothing whole
            continue
        if p.shard is None:
            return []
        shards.setdefault(p.shard[1], set()).add(p.shard[0])
    missing = {n: sorted(set(range(1, n + 1)) - got) for n, got in sorted(shards.items())}
    if any(not m for m in missing.values()):
        return []
    gaps = [f"{profile}: {_shards(m, n)} not in these results" for n, m in missing.items()]
    chosen = sorted({s for p in plans for s in p.selectors})
    if chosen:
        gaps.append(f"{profile}: only the cells matching {' '.join(chosen)}")
    return gaps


def _shards(missing: Sequence[int], n: int) -> str:
    if len(missing) == 1:
        return f"shard {missing[0]}/{n}"
    if len(missing) <= 4:
        return "shards " + ", ".join(f"{i}/{n}" for i in missing)
    return f"{len(missing)} of {n} shards"


def _joined(values: Iterable[str], default: str) -> str:
    found = sorted({v for v in values if v})
    return ", ".join(found) if found else default


# What a summary adds when no cell ran on the machine that writes the report.
RERUN_HINT = "to run them here: `stackmatrix run --rerun` (or `nox -s matrix -- --rerun`)"


def provenance(frame: pd.DataFrame, here: str) -> str:
    """How many cells have a result from this machine (`here`: its host id), and which hosts
    and engines the others came from (the journal; records before schema 3 name none)."""
    ran = frame[frame["status"] != NOT_RUN]
    mine = int((ran["host"] == here).sum()) if here else 0
    text = f"{mine} of {len(frame)} ran here"
    others = ran[ran["host"] != here] if here else ran
    if len(others):
        groups = others.groupby(["host", "engine"], sort=True).size()
        where = "; ".join(_origin(h, e, int(n)) for (h, e), n in groups.items())
        text += f"; {len(others)} from the journal ({where})"
    if mine == 0 and len(ran):
        text += f"; {RERUN_HINT}"
    return text


def _origin(host: str, engine: str, n: int) -> str:
    if not host:
        return f"{n} whose records name no host (journaled before schema 3)"
    return f"{n} on host {host} with {engine or 'an unrecorded engine'}"


def header(
    frame: pd.DataFrame,
    plans: Sequence[Plan],
    completeness: str,
    origin: Origin,
    here: str = "",
) -> Header:
    ran = frame[frame["status"] != NOT_RUN]
    plan_driver = _joined((p.driver.to_json() for p in plans), "unknown")
    when = pd.to_datetime(ran["started"], utc=True, format="ISO8601", errors="coerce")
    newest = ran["started"].loc[when.idxmax()] if when.notna().any() else ""
    return Header(
        profile=_joined((p.profile for p in plans), "unknown (no plan.json)"),
        driver=_joined(ran["driver"].unique(), plan_driver),
        gpu=_joined(ran["gpu"].unique(), "none recorded"),
        newest=str(newest) or "no results",
        completeness=completeness,
        backends=_joined(ran["backend"].unique(), "none"),
        origin=origin,
        standins=_joined((str(v) for v in ran["base_image"].fillna("").unique()), ""),
        provenance=provenance(frame, here),
    )


# ---------------------------------------------------------------- diff


def snapshot(frame: pd.DataFrame) -> str:
    """Columns, not rows: small and fast to read back for 100k cells."""
    data = {"schema": 1, **{c: frame[c].tolist() for c in ("cell", "verdict", "klass")}}
    return json.dumps(data, separators=(",", ":")) + "\n"


def diff(previous: Any, frame: pd.DataFrame) -> Diff:
    """New failures include new cells that fail: the previous report did not have them."""
    try:
        old = pd.DataFrame({c: previous[c] for c in ("cell", "verdict", "klass")})
    except (KeyError, TypeError, ValueError):
        return Diff(previous=False)
    now = frame[["cell", "verdict", "klass"]]
    both = now.merge(old, on="cell", how="left", suffixes=("", "_old")).fillna("")
    bad, was_bad = both["klass"].isin(BAD), both["klass_old"].isin(BAD)
    observed = both["klass"].isin(OBSERVED) & both["klass_old"].isin(OBSERVED)
    changed = both[observed & (bad == was_bad) & (both["verdict"] != both["verdict_old"])]
    return Diff(
        previous=True,
        new_failures=tuple(both.loc[bad & ~was_bad, "cell"]),
        fixed=tuple(both.loc[was_bad & both["klass"].isin(OBSERVED - BAD), "cell"]),
        changed=tuple(
            Change(cell=c, before=b, after=a)
            for c, b, a in zip(
                changed["cell"], changed["verdict_old"], changed["verdict"], strict=True
            )
        ),
        added=tuple(sorted(set(frame["cell"]) - set(old["cell"]))),
        removed=tuple(sorted(set(old["cell"]) - set(frame["cell"]))),
    )
