"""The report's rows, read from journals without pandas: a journal record (or a RunResult)
-> one tuple of the frame's columns (COLUMNS), each stack's slug made once. Pure. The report
starts reading with this alone, while pandas loads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, cast

from harness.model import (
    NO_DRIVER,
    Evidence,
    Expectation,
    Observed,
    Outcome,
    RunResult,
    Stack,
    Stage,
    Status,
    stack_slug,
)
from harness.report.safe import clean

STACK_FIELDS = ("framework", "framework_version", "cuda", "cudnn", "python", "base")
_STACK_PARTS = attrgetter(*STACK_FIELDS)
NO_PARTS = ("",) * len(STACK_FIELDS)

TEXT = (
    "cell", "stack", "scenario", "status", "backend", "evidence", "started", "image", "error",
    "exp_outcome", "exp_signature", "exp_stage", "obs_outcome", "obs_signature", "obs_stage",
    "obs_line", "obs_fingerprint", "driver", "gpu", "secondary", "target", "because", "host",
    "engine",
)  # fmt: skip
COLUMNS = (*TEXT, "drift", "seconds", "obs_exit", "obs_signal", "base_image")
_NOT_OBSERVED = ("", "", "", "", "")


class Slugs(dict[Stack, str]):
    """Stack -> slug, each computed once: a few hundred stacks carry 100k results. A journal
    record's stack is looked up by its parts (of_parts), and no Stack is made for it."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: dict[tuple[str, ...], str] = {}

    def __missing__(self, stack: Stack) -> str:
        self[stack] = stack.slug
        return self[stack]

    def known(self, parts: tuple[object, ...]) -> str | None:
        """The slug of these parts where of_parts made it before."""
        return self._parts.get(parts)  # type: ignore[arg-type]

    def of_parts(self, parts: tuple[str, ...]) -> str:
        """The slug of the Stack of these parts (in STACK_FIELDS' order), made once."""
        slug = self._parts.get(parts)
        if slug is None:
            slug = self._parts[parts] = stack_slug(parts)
        return slug

    def absorb(self, other: Slugs) -> None:
        """Another's stacks (those of a journal's half read by a forked child) as well."""
        self.update(other)
        self._parts.update(other._parts)

    def parts(self) -> dict[str, tuple[str, ...]]:
        """slug -> its stack's parts (in STACK_FIELDS' order), for every stack met."""
        out = {slug: parts for parts, slug in self._parts.items()}
        out.update(zip(self.values(), map(_STACK_PARTS, self), strict=True))
        return out


def _stage(stage: Stage | None) -> str:
    return stage.value if stage else ""


def expected_parts(e: Expectation) -> tuple[str, str, str]:
    return e.outcome.value, e.signature or "", _stage(e.stage)


def _observed(o: Observed | None) -> tuple[str, ...]:
    """outcome, signature, stage, decisive line, fingerprint."""
    if o is None:
        return _NOT_OBSERVED
    return (o.outcome.value, o.signature or "", _stage(o.stage), o.decisive_line or "",
            o.fingerprint or "")  # fmt: skip


def _result_row(r: RunResult, slug: str) -> tuple[object, ...]:
    o, m = r.observed, r.machine
    return (
        r.cell, slug, r.scenario, r.status.value, r.backend, r.evidence.value, r.started,
        r.image, r.error or "", *expected_parts(r.expected), *_observed(o), m.driver or "",
        m.gpu or "", ";".join(o.secondary) if o else "",
        r.placed if r.placed != NO_DRIVER else m.driver or NO_DRIVER, "", m.host or "",
        m.engine or "", r.drift, r.seconds, o.exit_code if o else None, o.signal if o else None,
        clean(r.base_image),
    )  # fmt: skip


@dataclass
class Rows:
    """Results as the frame's rows (what _result_row makes of each), each with the driver placed
    in its run (for its cell id), and the Stacks they name by slug."""

    rows: list[tuple[object, ...]] = field(default_factory=list)
    placed: list[str] = field(default_factory=list)
    slugs: Slugs = field(default_factory=Slugs)
    texts: dict[str, str] = field(default_factory=dict, repr=False)  # each text once (record)

    def add(self, r: RunResult) -> None:
        self.rows.append(_result_row(r, self.slugs[r.stack]))
        self.placed.append(r.placed)

    def record(self, d: Mapping[str, Any]) -> bool:
        """The row of a journal record that journal.record_problem passed, made from it directly
        (100,000 RunResults cost seconds); False where RunResult.from_json might refuse it or
        read it otherwise: the caller goes that way (and gets its error)."""
        row = _record_row(d, self.slugs, self.texts.setdefault)
        if row is None:
            return False
        self.rows.append(row[0])
        self.placed.append(row[1])
        return True

    def only(self, cells: set[str]) -> Rows:
        keep = [i for i, row in enumerate(self.rows) if row[0] in cells]
        return Rows([self.rows[i] for i in keep], [self.placed[i] for i in keep], self.slugs)


def rows_of(results: Iterable[RunResult], slugs: Slugs | None = None) -> Rows:
    rows = Rows(slugs=Slugs() if slugs is None else slugs)
    for r in results:
        rows.add(r)
    return rows


_STATUS = frozenset(s.value for s in Status)
_OUTCOME = frozenset(o.value for o in Outcome)
_EVIDENCE = frozenset(e.value for e in Evidence)
_STAGE = frozenset(s.value for s in Stage)


def _record_row(
    d: Mapping[str, Any], slugs: Slugs, share: Callable[[str, str], str]
) -> tuple[tuple[object, ...], str] | None:
    """_result_row(RunResult.from_json(d)) and its placed driver, for a record whose every field
    is of the type record_problem allows; None where from_json could raise or would convert a
    value (str() of a non-string): the slow way then says what it says. The hot path of a large
    report: each lookup bound once. `share(text, text)`: the text equal to it met before, or
    this one, now kept (record_problem let only strings into the text fields, so no 1 meets a
    True)."""
    get = d.get
    stack, cell, scenario = get("stack"), get("cell"), get("scenario")
    status, evidence, e = get("status"), get("evidence"), get("expected")
    placed, base = get("placed_driver", NO_DRIVER), get("base_image", "")
    if (
        type(stack) is not dict or type(cell) is not str or type(scenario) is not str
        or status not in _STATUS or evidence not in _EVIDENCE or type(e) is not dict
        or "key" not in d or "drift" not in d or type(placed) is not str or type(base) is not str
    ):  # fmt: skip
        return None
    parts = tuple(map(stack.get, STACK_FIELDS))
    slug = slugs.known(parts)
    if slug is None:
        if not all(type(p) is str for p in parts):
            return None
        slug = slugs.of_parts(cast("tuple[str, ...]", parts))
    eget = e.get
    exp_stage = eget("stage") or ""
    if eget("outcome") not in _OUTCOME or (exp_stage and exp_stage not in _STAGE):
        return None
    o = get("observed")
    driver = get("driver") or ""
    if o:
        oget = o.get
        obs_stage = oget("stage") or ""
        if oget("outcome") not in _OUTCOME or (obs_stage and obs_stage not in _STAGE):
            return None
        observed = (o["outcome"], oget("signature") or "", obs_stage,
                    oget("decisive_line") or "", oget("fingerprint") or "")  # fmt: skip
        secondary = oget("secondary")
        seen = (";".join(secondary) if secondary else "", oget("exit_code"), oget("signal"))
    else:
        observed, seen = _NOT_OBSERVED, _UNSEEN
    texts = (
        scenario, status, get("backend", "docker"), evidence, get("started", ""),
        get("image", ""), get("error") or "", e["outcome"], eget("signature") or "", exp_stage,
        *observed, driver, get("gpu") or "", seen[0],
        placed if placed != NO_DRIVER else driver or NO_DRIVER, "", get("host") or "",
        get("engine") or "",
    )  # fmt: skip
    # Equal texts made one object (share: a dict's setdefault, in C): a column of 100,000 rows
    # then holds a few dozen objects, not 100,000 copies scattered over the heap, and every
    # pass over it after (the frame, each file) reads memory that is already in the cache.
    row = (
        cell, slug, *map(share, texts, texts), bool(d["drift"]), float(get("seconds", 0.0)),
        seen[1], seen[2], clean(base) if base else "",
    )  # fmt: skip
    return row, placed


_UNSEEN = ("", None, None)  # secondary, exit code and signal of a run that observed nothing
