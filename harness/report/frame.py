"""The report's data: RunResults and Plans -> one pandas frame with one row per cell, sorted by
stack then scenario. Pure.

A cell's row is its latest result across every folder (the last thing that happened to it, even
an interrupted run); planned cells without a result are added with status `not-run` and shown
as predicted. A row's stack is the Stack its result or plan cell carries. Absent text is ""
throughout, so renderers never meet None or NaN.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from harness.errors import ConfigError
from harness.matrix import cell_id
from harness.model import (
    NO_DRIVER,
    Evidence,
    Expectation,
    Observed,
    Outcome,
    Plan,
    RunResult,
    Stack,
    Stage,
    Status,
    major_minor,
    stack_slug,
    verdict_text,
    version_keys,
)
from harness.report.safe import cell_id_ok, clean, shell

PREDICTED, NOT_RUN = "predicted", "not-run"  # a planned cell without a result: not a Status
UNOBSERVABLE = "unobservable"  # a class: the fault could not show here, so the run proves nothing
NOT_OBSERVABLE = "not observable here"  # its evidence level
# Evidence -> the level a finished run earns (gpu only where the host reported a GPU).
LEVELS = {
    Evidence.CPU.value: "cpu-verified",
    Evidence.DRIVER.value: "driver-verified",
    Evidence.GPU.value: "gpu-verified",
}
LEVEL_ORDER: tuple[str, ...] = (PREDICTED, "driver-verified", "cpu-verified", "gpu-verified")
LEVEL_ORDER += (NOT_OBSERVABLE, "unverified")
# The frame's status column holds Status values (str); `isin` wants the plain strings.
FINAL = tuple(s.value for s in Status if s.final)
_PASSED, _FAILED = Status.PASSED.value, Status.FAILED.value
# The frame's columns for a stack's parts: each a Stack field (cuDNN as major.minor, as in the
# slug, and as installed).
_PARTS: dict[str, str] = {
    "framework": "framework", "version": "framework_version", "cuda": "cuda", "cudnn": "cudnn",
    "cudnn_installed": "cudnn", "python": "python", "base": "base",
}  # fmt: skip
_STACK_FIELDS = ("framework", "framework_version", "cuda", "cudnn", "python", "base")
_STACK_PARTS = attrgetter(*_STACK_FIELDS)
_NO_PARTS = ("",) * len(_STACK_FIELDS)


def reproduce_command(cell: str, backend: str = "docker") -> str:
    """A local-backend cell is reproduced without Docker (its --python, if any, is the user's).
    The id is shell-quoted: it came from a file."""
    local = LOCAL_BACKEND if backend == "local" else ""
    return f"{REPRODUCE} {shlex.quote(cell)}{local}"


# A cell's command is REPRODUCE, a space, its id, and LOCAL_BACKEND for a local-backend cell.
REPRODUCE = shell("nox", "-s", "reproduce", "--")  # quoted once: 100,000 cells share it
LOCAL_BACKEND = " " + shell("--backend", "local")


# ---------------------------------------------------------------- results and plans -> rows

_TEXT = (
    "cell", "stack", "scenario", "status", "backend", "evidence", "started", "image", "error",
    "exp_outcome", "exp_signature", "exp_stage", "obs_outcome", "obs_signature", "obs_stage",
    "obs_line", "obs_fingerprint", "driver", "gpu", "secondary", "target", "because", "host",
    "engine",
)  # fmt: skip
_COLUMNS = (*_TEXT, "drift", "seconds", "obs_exit", "obs_signal", "base_image")
_PLANNED: tuple[str, ...] = ("cell", "stack", "scenario", "evidence", "exp_outcome")
_PLANNED += ("exp_signature", "exp_stage", "target", "because")
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
        """The slug of the Stack of these parts (in _STACK_FIELDS' order), made once."""
        slug = self._parts.get(parts)
        if slug is None:
            slug = self._parts[parts] = stack_slug(parts)
        return slug

    def absorb(self, other: Slugs) -> None:
        """Another's stacks (those of a journal's half read by a forked child) as well."""
        self.update(other)
        self._parts.update(other._parts)

    def parts(self) -> dict[str, tuple[str, ...]]:
        """slug -> its stack's parts (in _STACK_FIELDS' order), for every stack met."""
        out = {slug: parts for parts, slug in self._parts.items()}
        out.update(zip(self.values(), map(_STACK_PARTS, self), strict=True))
        return out


def _stage(stage: Stage | None) -> str:
    return stage.value if stage else ""


def _expected(e: Expectation) -> tuple[str, str, str]:
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
        r.image, r.error or "", *_expected(r.expected), *_observed(o), m.driver or "",
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
    parts = tuple(map(stack.get, _STACK_FIELDS))
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


def latest_results(results: Iterable[RunResult] | Rows, slugs: Slugs | None = None) -> pd.DataFrame:
    """One row per cell: the latest by `started`, then by input order (shards merge here). A
    result whose cell id is not `<its stack's slug>/<its scenario>` is left out: it is not a
    cell's result, and its row would collide with the cell's."""
    got = results if isinstance(results, Rows) else rows_of(results, slugs)
    rows = [
        row for row, placed in zip(got.rows, got.placed, strict=True)
        if row[0] == cell_id(str(row[1]), str(row[2]), placed)
    ]  # fmt: skip
    frame = pd.DataFrame.from_records(rows, columns=list(_COLUMNS))
    started = pd.to_datetime(frame["started"], utc=True, format="ISO8601", errors="coerce")
    frame = frame.assign(_t=started, _seq=np.arange(len(frame)))
    frame = frame.sort_values(["_t", "_seq"], kind="stable", na_position="first")
    return frame.drop_duplicates("cell", keep="last").drop(columns=["_t", "_seq"])


def planned_frame(plans: Sequence[Plan], slugs: Slugs) -> pd.DataFrame:
    rows = [
        (c.id, slugs[c.stack], c.scenario, c.evidence.value, *_expected(c.expected),
         c.driver if c.driver != NO_DRIVER else plan.driver.to_json(), c.because.detail)
        for plan in plans
        for c in plan.cells
    ]  # fmt: skip
    frame = pd.DataFrame.from_records(rows, columns=list(_PLANNED))
    return frame.drop_duplicates("cell", keep="last")


def combine(results: pd.DataFrame, planned: pd.DataFrame) -> pd.DataFrame:
    """Results plus the planned cells that have none (shown as predicted). A result takes its
    plan's reason (`because`) and planned driver; every text is cleaned of control characters.
    With a plan, a result for a cell the plan no longer has (the journal keeps history) is left
    out: the report is of the plan."""
    if len(planned):
        results = results[results["cell"].isin(planned["cell"])]
    todo = planned[~planned["cell"].isin(results["cell"])].assign(status=NOT_RUN, drift=False)
    because = dict(zip(planned["cell"].tolist(), planned["because"].tolist(), strict=True))
    target = dict(zip(planned["cell"].tolist(), planned["target"].tolist(), strict=True))
    cells = results["cell"].tolist()
    results = results.assign(
        because=[because.get(c, "") for c in cells],
        target=[target.get(c, t) for c, t in zip(cells, results["target"].tolist(), strict=True)],
    )
    frame = pd.concat([results, todo], ignore_index=True) if len(todo) else results
    for col in _TEXT:
        values = frame[col].tolist()
        texts = _texts(values)
        if texts is not values or not texts:  # a column left as it is needs no new one
            frame[col] = texts if texts else frame[col].astype(object)  # [] would be float
    frame["drift"] = frame["drift"].eq(True)  # a missing value is no drift
    for col in ("obs_exit", "obs_signal"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    frame["seconds"] = pd.to_numeric(frame["seconds"], errors="coerce")
    return frame


def _texts(values: list[Any]) -> list[str]:
    """_text of each value: the column itself where every value is a string and none has a
    character `clean` takes out (one scan of the column joined, as `clean` scans each), else
    each distinct value cleaned once."""
    try:
        joined = "".join(values)  # a TypeError at the first value that is not a string
    except TypeError:
        return each_once(_text, values)
    # printable: no character `clean` takes out (control characters, lone surrogates)
    return values if values and joined.isprintable() else each_once(_text, values)


def _text(value: object) -> str:
    """A cell of a text column: cleaned, "" where absent."""
    if type(value) is str:
        return clean(value)
    return "" if pd.isna(value) else clean(str(value))


_T = TypeVar("_T", bound=Hashable)
_R = TypeVar("_R")


def each_once(fn: Callable[[_T], _R], values: Sequence[_T]) -> list[_R]:
    """fn of each value, called once per distinct value (a column of 100,000 rows mostly holds
    a few dozen); the rest is dict lookups in C."""
    done = {v: fn(v) for v in dict.fromkeys(values)}
    return list(map(done.__getitem__, values))


def _per_distinct(fn: Callable[..., str], *columns: pd.Series) -> list[str]:
    """fn over rows, called once per distinct combination (a few dozen in 100k rows)."""
    done: dict[tuple[str, ...], str] = {}
    rows = zip(*(c.tolist() for c in columns), strict=True)
    return [done[r] if r in done else done.setdefault(r, fn(*r)) for r in rows]


def expected_text(outcome: str, signature: str, stage: str) -> str:
    return verdict_text(outcome, signature or None, stage or None)


def seen_text(status: str, signature: str, stage: str) -> str:
    """What a run showed: its verdict where it finished with one, else its status."""
    if status == _PASSED:
        return verdict_text(Outcome.PASS.value)
    if status == _FAILED:
        return verdict_text(Outcome.FAIL.value, signature or None, stage or None)
    if status == Status.TIMEOUT.value and stage:
        return f"{status} @ {stage}"
    return status


def _klass(frame: pd.DataFrame) -> Any:
    """A run that finished as expected where the fault could not show is `unobservable`: not a
    pass, whatever its exit status."""
    status, drift = frame["status"], frame["drift"]
    ran = status.isin([_PASSED, _FAILED])
    conditions = [
        status.eq(NOT_RUN),
        ran & drift,
        ran & frame["exp_outcome"].eq(Outcome.UNOBSERVABLE.value),
        status.eq(_PASSED),
        status.eq(_FAILED),
        status.eq(Status.TIMEOUT.value),
        status.eq(Status.INTERRUPTED.value),
    ]
    choices = [PREDICTED, "drift", UNOBSERVABLE, "pass", "expected-fail", "timeout", "interrupted"]
    return np.select(conditions, choices, default="errored")


def _level(frame: pd.DataFrame) -> Any:
    """predicted (a plan only); not observable here (the fault needs what this host lacks);
    cpu-, driver- or gpu-verified (a run finished; gpu only where the host's driver reported a
    GPU); unverified (it did not finish, or was planned for a GPU that the host did not have)."""
    status, klass = frame["status"], frame["klass"]
    verified = frame["evidence"].map(LEVELS).fillna("unverified")
    no_gpu = frame["evidence"].eq(Evidence.GPU.value) & frame["gpu"].eq("")
    done = status.isin(FINAL) & ~no_gpu
    return np.select(
        [status.eq(NOT_RUN), klass.eq(UNOBSERVABLE), done],
        [PREDICTED, NOT_OBSERVABLE, verified],
        default="unverified",
    )


def _stack_order(stacks: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Framework, then version, CUDA, cuDNN (major.minor, as in the slug) and Python in version
    order, then base and slug. Each distinct text is ranked once (100,000 stacks share a few
    dozen CUDA, cuDNN and Python versions), and the stacks are sorted by their ranks in C."""
    if not stacks:
        return []
    slugs = list(stacks)
    fw, version, cuda, cudnn, python, base = (list(c) for c in zip(*stacks.values(), strict=True))
    cudnn = each_once(major_minor, cudnn)
    keys = [_ranks(slugs), _ranks(base), _ranks(python, version_keys)]
    keys += [_ranks(cudnn, version_keys), _ranks(cuda, version_keys)]
    keys += [_ranks(version, version_keys), _ranks(fw)]
    return [slugs[i] for i in np.lexsort(keys).tolist()]


def _ranks(values: list[str], keys_of: Callable[[list[str]], list[Any]] | None = None) -> Any:
    """Each value's place among the distinct values sorted by the keys `keys_of` gives them (by
    the text itself without it; equal keys, equal places)."""
    codes, distinct = pd.factorize(np.array(values, dtype=object), sort=keys_of is None)
    if keys_of is None:
        return codes
    keys = keys_of(distinct.tolist())
    place, last, n = np.empty(len(keys), dtype=np.int64), None, -1
    for i in sorted(range(len(keys)), key=keys.__getitem__):
        if keys[i] != last:
            n, last = n + 1, keys[i]
        place[i] = n
    return place[codes]


def derive(frame: pd.DataFrame, stacks: Mapping[str, tuple[str, ...]]) -> pd.DataFrame:
    """Stack parts, verdicts, classes and evidence levels; rows sorted by stack, then scenario."""
    codes, slugs = pd.factorize(frame["stack"])
    # "" where `clean` took control characters out of a slug: it names no stack any more, and
    # its parts are "" (a text column holds text: the page escapes each, and None is none).
    # The parts of every stack at once, transposed in C: 100,000 stacks are a report's shape too.
    known = [stacks.get(slug, _NO_PARTS) for slug in slugs.tolist()]  # not a pandas loop
    columns = dict(zip(_STACK_FIELDS, zip(*known, _NO_PARTS, strict=True), strict=True))
    for part, name in _PARTS.items():
        values = list(columns[name])
        if part == "cudnn":  # major.minor, as in the slug
            values = each_once(major_minor, values)
        frame[part] = np.array(values, dtype=object)[codes]  # code -1: no stack (the last)
    exp = [frame[c] for c in ("exp_outcome", "exp_signature", "exp_stage")]
    frame["expected"] = _per_distinct(expected_text, *exp)
    seen = [frame[c] for c in ("status", "obs_signature", "obs_stage")]
    frame["verdict"] = _per_distinct(seen_text, *seen)
    predicted = frame["status"].eq(NOT_RUN)
    frame.loc[predicted, "verdict"] = frame.loc[predicted, "expected"]
    frame["klass"] = _klass(frame)
    frame["level"] = _level(frame)
    unseen = frame["klass"].eq(UNOBSERVABLE)
    frame.loc[unseen, "verdict"] = NOT_OBSERVABLE
    frame["signature"] = frame["obs_signature"].where(~predicted, frame["exp_signature"])
    cells = zip(frame["cell"].tolist(), frame["backend"].tolist(), strict=True)
    # "" where the id is not a plain name: it reaches no shell block (four renderers use it).
    # A plain name is its own shell quoting (shlex.quote leaves [\w@%+=:,./-] as it is).
    frame["reproduce"] = [
        f"{REPRODUCE} {c}{LOCAL_BACKEND if b == 'local' else ''}" if cell_id_ok(c) else ""
        for c, b in cells
    ]
    return _sorted(frame, _stack_order(stacks))


def _sorted(frame: pd.DataFrame, stack_order: list[str]) -> pd.DataFrame:
    """By stack (version order), then scenario; integer codes sort far faster than strings."""
    # -1 (first) for a stack the order lacks: one whose slug lost control characters
    order = {slug: i for i, slug in enumerate(stack_order)}
    stack = frame["stack"].map(order).fillna(-1).to_numpy(dtype=np.int64)
    scenario = pd.factorize(frame["scenario"], sort=True)[0]
    return frame.take(np.lexsort((scenario, stack))).reset_index(drop=True)


def build_frame(results: Sequence[RunResult] | Rows, plans: Sequence[Plan]) -> Any:
    got = results if isinstance(results, Rows) else rows_of(results)
    if not got.rows and not plans:
        raise ConfigError("no results and no plan.json in the results folders")
    latest = latest_results(got)
    planned = planned_frame(plans, got.slugs)
    return derive(combine(latest, planned), got.slugs.parts())
