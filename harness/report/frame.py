"""The report's data: RunResults and Plans -> one pandas frame with one row per cell, sorted by
stack then scenario. Pure.

A cell's row is its latest result across every folder (the last thing that happened to it, even
an interrupted run); planned cells without a result are added with status `not-run` and shown
as predicted. A row's stack is the Stack its result or plan cell carries. Absent text is ""
throughout, so renderers never meet None or NaN.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, TypeVar

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from harness.errors import ConfigError
from harness.matrix import cell_id
from harness.model import (
    NO_DRIVER,
    Evidence,
    Outcome,
    Plan,
    RunResult,
    Status,
    major_minor,
    verdict_text,
    version_keys,
)
from harness.report.rows import (
    COLUMNS,
    NO_PARTS,
    STACK_FIELDS,
    TEXT,
    Rows,
    Slugs,
    expected_parts,
    rows_of,
)
from harness.report.safe import cell_id_ok, clean, clean_each, shell

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


def reproduce_command(cell: str, backend: str = "docker") -> str:
    """A local-backend cell is reproduced without Docker (its --python, if any, is the user's).
    The id is shell-quoted: it came from a file."""
    local = LOCAL_BACKEND if backend == "local" else ""
    return f"{REPRODUCE} {shlex.quote(cell)}{local}"


# A cell's command is REPRODUCE, a space, its id, and LOCAL_BACKEND for a local-backend cell.
REPRODUCE = shell("nox", "-s", "reproduce", "--")  # quoted once: 100,000 cells share it
LOCAL_BACKEND = " " + shell("--backend", "local")


# ---------------------------------------------------------------- results and plans -> rows

_PLANNED: tuple[str, ...] = ("cell", "stack", "scenario", "evidence", "exp_outcome")
_PLANNED += ("exp_signature", "exp_stage", "target", "because")


def latest_results(results: Iterable[RunResult] | Rows, slugs: Slugs | None = None) -> pd.DataFrame:
    """One row per cell: the latest by `started`, then by input order (shards merge here). A
    result whose cell id is not `<its stack's slug>/<its scenario>` is left out: it is not a
    cell's result, and its row would collide with the cell's."""
    got = results if isinstance(results, Rows) else rows_of(results, slugs)
    rows = [
        row for row, placed in zip(got.rows, got.placed, strict=True)
        if row[0] == cell_id(str(row[1]), str(row[2]), placed)
    ]  # fmt: skip
    frame = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    started = pd.to_datetime(frame["started"], utc=True, format="ISO8601", errors="coerce")
    frame = frame.assign(_t=started, _seq=np.arange(len(frame)))
    frame = frame.sort_values(["_t", "_seq"], kind="stable", na_position="first")
    return frame.drop_duplicates("cell", keep="last").drop(columns=["_t", "_seq"])


def planned_frame(plans: Sequence[Plan], slugs: Slugs) -> pd.DataFrame:
    rows = [
        (c.id, slugs[c.stack], c.scenario, c.evidence.value, *expected_parts(c.expected),
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
    for col in TEXT:
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
    each distinct value cleaned once (all of them together)."""
    try:
        joined = "".join(values)  # a TypeError at the first value that is not a string
    except TypeError:
        return each_once(_text, values)
    # printable: no character `clean` takes out (control characters, lone surrogates)
    if values and joined.isprintable():
        return values
    distinct = list(dict.fromkeys(values))  # a long line repeated is cleaned once
    done = dict(zip(distinct, clean_each(distinct), strict=True))
    return list(map(done.__getitem__, values))


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
    keys = [_ranks(base), _ranks(python, versions=True), _ranks(cudnn, versions=True)]
    keys += [_ranks(cuda, versions=True), _ranks(version, versions=True), _ranks(fw)]
    order = np.lexsort(keys)
    # the slug decides only between stacks whose other keys tie (sorting 100,000 distinct
    # slugs as text took a sixth of a second): ranked where two do
    ranked = np.stack(keys)[:, order]
    if len(order) > 1 and (ranked[:, 1:] == ranked[:, :-1]).all(axis=0).any():
        order = np.lexsort([_ranks(slugs), *keys])
    return [slugs[i] for i in order.tolist()]


def _ranks(values: list[str], *, versions: bool = False) -> Any:
    """Each value's place among the distinct values sorted as text, or as versions (by
    version_keys: equal keys, equal places; bare releases in numpy, release_ranks)."""
    codes, distinct = pd.factorize(np.array(values, dtype=object), sort=not versions)
    if not versions:
        return codes
    texts = distinct.tolist()
    place = release_ranks(texts)
    if place is not None:
        return place[codes]
    keys = version_keys(texts)
    place, last, n = np.empty(len(keys), dtype=np.int64), None, -1
    for i in sorted(range(len(keys)), key=keys.__getitem__):
        if keys[i] != last:
            n, last = n + 1, keys[i]
        place[i] = n
    return place[codes]


_LONG = re.compile(r"[0-9]{19}")  # more digits than an int64 surely holds


def release_ranks(texts: list[str]) -> Any:
    """The places `_ranks` gives bare releases ("2.15.0", "12.9") by version_keys, worked out
    in numpy (100,000 distinct framework versions took a quarter of a second in Python), or None
    where a text is not a bare release or has a number too long for an int64. Each release is a
    row of its numbers without trailing zeros, padded with -1: below every number, as a shorter
    tuple sorts before a longer one it begins."""
    dotted = ".".join(texts)
    # digits between single dots (a text "" or "1." would make "..", or a dot at an end)
    bare = dotted.isascii() and dotted.replace(".", "").isdigit() and ".." not in dotted
    if not bare or dotted.startswith(".") or dotted.endswith(".") or _LONG.search(dotted):
        return None
    values = np.fromstring(dotted, dtype=np.int64, sep=".")  # in C: a split and int() took 10x
    counts = np.fromiter(map(str.count, texts, repeat(".")), np.int64, len(texts)) + 1
    if len(values) != counts.sum():  # fromstring stops where it cannot read on
        return None
    rows = np.repeat(np.arange(len(texts)), counts)
    cols = np.arange(len(values)) - np.repeat(np.cumsum(counts) - counts, counts)
    table = np.full((len(texts), int(counts.max())), -1, dtype=np.int64)
    table[rows, cols] = values
    nonzero = table > 0
    width = table.shape[1]
    last = np.where(nonzero.any(axis=1), width - 1 - np.argmax(nonzero[:, ::-1], axis=1), -1)
    table[np.arange(width) > last[:, None]] = -1  # trailing zeros: 1.0 == 1
    order = np.lexsort(table.T[::-1])
    ranked = table[order]
    steps = np.concatenate(([0], np.cumsum((ranked[1:] != ranked[:-1]).any(axis=1))))
    place = np.empty(len(texts), dtype=np.int64)
    place[order] = steps
    return place


def derive(frame: pd.DataFrame, stacks: Mapping[str, tuple[str, ...]]) -> pd.DataFrame:
    """Stack parts, verdicts, classes and evidence levels; rows sorted by stack, then scenario."""
    codes, slugs = pd.factorize(frame["stack"])
    # "" where `clean` took control characters out of a slug: it names no stack any more, and
    # its parts are "" (a text column holds text: the page escapes each, and None is none).
    # The parts of every stack at once, transposed in C: 100,000 stacks are a report's shape too.
    known = [stacks.get(slug, NO_PARTS) for slug in slugs.tolist()]  # not a pandas loop
    columns = dict(zip(STACK_FIELDS, zip(*known, NO_PARTS, strict=True), strict=True))
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
