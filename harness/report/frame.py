"""The report's data: every results folder's journal and plan.json → one pandas frame with one
row per cell, sorted by stack then scenario.

A cell's row is its latest record across every folder (the last thing that happened to it, even
an interrupted run); planned cells without a record are added with status `not-run` and shown
as predicted. Absent text is "" throughout, so renderers never meet None or NaN.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from harness.errors import ConfigError
from harness.journal import FINAL, records
from harness.model import Where, version_key

PLAN = "plan.json"
PREDICTED, NOT_RUN = "predicted", "not-run"
_SLUG = re.compile(
    r"^(?P<framework>[A-Za-z0-9]+)-(?P<version>[^_]+)_cu(?P<cuda>[^_]+)"
    r"_cudnn(?P<cudnn>[^_]+)_py(?P<python>[^_]+)_(?P<base>.+)$"
)
# Terminal colours and other control characters in a log line: noise in every rendering (the
# journal keeps the raw line). Tab and newline stay. A lone surrogate (JSON can carry one as
# "\ud800") cannot be written as UTF-8 at all.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NO_PARTS = dict.fromkeys(("version", "cuda", "cudnn", "python", "base"), "?")


@dataclass(frozen=True, slots=True, kw_only=True)
class CellName:
    """A cell id taken apart:
    `<framework>-<version>_cu<cuda>_cudnn<cudnn>_py<python>_<base>/<scenario>`."""

    stack: str
    scenario: str
    framework: str
    version: str
    cuda: str
    cudnn: str
    python: str
    base: str


def parse_cell_id(cell: str) -> CellName:
    """Never fails: an id that does not follow the pattern keeps its text, parts are '?'."""
    stack, _, scenario = cell.rpartition("/") if "/" in cell else (cell, "", "")
    m = _SLUG.match(stack)
    parts = m.groupdict() if m else dict(_NO_PARTS)
    parts.setdefault("framework", stack.split("-", 1)[0] or "?")
    return CellName(stack=stack, scenario=scenario, **parts)


def reproduce_command(cell: str, backend: str = "docker") -> str:
    """A local-backend cell is reproduced without Docker (its --python, if any, is the user's)."""
    return f"nox -s reproduce -- {cell}" + (" --backend local" if backend == "local" else "")


# ---------------------------------------------------------------- reading (I/O only)


def read_plans(folders: Sequence[Path]) -> list[tuple[Path, Any]]:
    out = []
    for path in (f / PLAN for f in folders):
        if path.exists():
            try:
                out.append((path, json.loads(path.read_text(encoding="utf-8"))))
            except ValueError as exc:
                raise ConfigError(f"not JSON: {exc}", where=Where(str(path))) from None
    return out


def read_records(folders: Sequence[Path]) -> list[dict[str, object]]:
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(
                f"results folder {folder} does not exist",
                help="run `nox -s matrix` first, or pass --results FOLDER",
            )
    # Folder order, then file order: the tie-break when two records start in the same second.
    return [r for folder in folders for r in records(folder)]


# ---------------------------------------------------------------- the frame (pure)

_TEXT = (
    "cell", "status", "backend", "evidence", "started", "image", "error",
    "exp_outcome", "exp_signature", "exp_stage", "obs_outcome", "obs_signature", "obs_stage",
    "obs_line", "obs_fingerprint", "driver", "gpu", "secondary",
)  # fmt: skip
_COLUMNS = (*_TEXT, "drift", "seconds", "obs_exit", "obs_signal")


def _record_row(r: Mapping[str, Any]) -> tuple[object, ...]:
    exp, obs = r.get("expected") or {}, r.get("observed") or {}
    text = (
        r.get("cell"), r.get("status"), r.get("backend"), r.get("evidence"), r.get("started"),
        r.get("image"), r.get("error"), exp.get("outcome"), exp.get("signature"),
        exp.get("stage"), obs.get("outcome"), obs.get("signature"), obs.get("stage"),
        obs.get("decisive_line"), obs.get("fingerprint"), r.get("driver"), r.get("gpu"),
        ";".join(map(str, r.get("verdict_secondary") or obs.get("secondary") or ())),
    )  # fmt: skip
    num = (bool(r.get("drift")), r.get("seconds"), obs.get("exit_code"), obs.get("signal"))
    return (*("" if v is None else v for v in text), *num)  # combine() makes them str


def latest_records(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per cell: the latest by `started`, then by input order (shards merge here)."""
    frame = pd.DataFrame.from_records([_record_row(r) for r in rows], columns=list(_COLUMNS))
    started = pd.to_datetime(frame["started"], utc=True, format="ISO8601", errors="coerce")
    frame = frame.assign(_t=started, _seq=np.arange(len(frame)))
    frame = frame.sort_values(["_t", "_seq"], kind="stable", na_position="first")
    return frame.drop_duplicates("cell", keep="last").drop(columns=["_t", "_seq"])


def planned_frame(plans: Sequence[tuple[Path, Any]]) -> pd.DataFrame:
    rows = []
    for path, plan in plans:
        try:
            for c in plan["cells"]:
                e = c["expected"]
                rows.append((c["id"], c["evidence"], e["outcome"], e["signature"], e["stage"]))
        except (KeyError, TypeError) as exc:
            raise ConfigError(
                f"not a plan: {type(exc).__name__} {exc}",
                where=Where(str(path)),
                help="write it with `harness plan --format json`",
            ) from None
    cols = ["cell", "evidence", "exp_outcome", "exp_signature", "exp_stage"]
    frame = pd.DataFrame.from_records(rows, columns=cols).drop_duplicates("cell", keep="last")
    return frame.fillna("")


def combine(results: pd.DataFrame, planned: pd.DataFrame) -> pd.DataFrame:
    """Results plus the planned cells that have none (shown as predicted)."""
    todo = planned[~planned["cell"].isin(results["cell"])].assign(status=NOT_RUN, drift=False)
    frame = pd.concat([results, todo], ignore_index=True) if len(todo) else results
    for col in _TEXT:
        frame[col] = frame[col].fillna("").astype(str)
    for col in ("obs_line", "error"):
        frame[col] = [printable(v) if v else v for v in frame[col].tolist()]
    frame["drift"] = frame["drift"].eq(True)  # a missing value is no drift
    for col in ("obs_exit", "obs_signal"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    frame["seconds"] = pd.to_numeric(frame["seconds"], errors="coerce")
    return frame


def printable(text: str) -> str:
    text = _CONTROL.sub("", text)
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _per_distinct(fn: Callable[..., str], *columns: pd.Series) -> list[str]:
    """fn over rows, called once per distinct combination (a few dozen in 100k rows)."""
    done: dict[tuple[str, ...], str] = {}
    rows = zip(*(c.tolist() for c in columns), strict=True)
    return [done[r] if r in done else done.setdefault(r, fn(*r)) for r in rows]


def _fail_text(signature: str, stage: str) -> str:
    at = f" @ {stage}" if stage else ""
    return f"fail: {signature}{at}" if signature else f"fail{at}"


def expected_text(outcome: str, signature: str, stage: str) -> str:
    return _fail_text(signature, stage) if outcome == "fail" else outcome or "?"


def verdict_text(status: str, signature: str, stage: str) -> str:
    if status == "passed":
        return "pass"
    if status == "failed":
        return _fail_text(signature, stage)
    if status == "timeout" and stage:
        return f"timeout @ {stage}"
    return status


def _klass(frame: pd.DataFrame) -> Any:
    status, drift = frame["status"], frame["drift"]
    conditions = [
        status.eq(NOT_RUN),
        status.isin(["passed", "failed"]) & drift,
        status.eq("passed"),
        status.eq("failed"),
        status.eq("timeout"),
        status.eq("interrupted"),
    ]
    choices = [PREDICTED, "drift", "pass", "expected-fail", "timeout", "interrupted"]
    return np.select(conditions, choices, default="errored")


def _level(frame: pd.DataFrame) -> Any:
    """predicted (a plan only), cpu-/gpu-verified (a run finished; gpu only where the host's
    driver reported a GPU), unverified (it did not finish, or was planned for a GPU that the
    host did not have)."""
    status = frame["status"]
    verified = frame["evidence"].replace("", "?") + "-verified"
    no_gpu = frame["evidence"].eq("gpu") & frame["gpu"].eq("")
    done = status.isin(FINAL) & ~no_gpu
    return np.where(status.eq(NOT_RUN), PREDICTED, np.where(done, verified, "unverified"))


def _stack_order(names: Mapping[str, CellName]) -> list[str]:
    def key(stack: str) -> tuple[Any, ...]:
        n = names[stack]
        parts = (n.version, n.cuda, n.cudnn, n.python)
        return (n.framework, *(version_key(p) for p in parts), n.base, stack)

    return sorted(names, key=key)


def _split_ids(cells: list[str]) -> tuple[list[str], list[str]]:
    parts = [c.rpartition("/") for c in cells]
    return [s or c for s, _, c in parts], [c if s else "" for s, _, c in parts]


def derive(frame: pd.DataFrame) -> pd.DataFrame:
    """Names, verdicts, classes and evidence levels; rows sorted by stack, then scenario."""
    stack, scenario = _split_ids(frame["cell"].tolist())
    frame = frame.assign(stack=stack, scenario=scenario)
    names = {s: parse_cell_id(s + "/") for s in frame["stack"].unique()}
    for part in ("framework", "version", "cuda", "cudnn", "python", "base"):
        frame[part] = frame["stack"].map({s: getattr(n, part) for s, n in names.items()})
    exp = [frame[c] for c in ("exp_outcome", "exp_signature", "exp_stage")]
    frame["expected"] = _per_distinct(expected_text, *exp)
    seen = [frame[c] for c in ("status", "obs_signature", "obs_stage")]
    frame["verdict"] = _per_distinct(verdict_text, *seen)
    predicted = frame["status"].eq(NOT_RUN)
    frame.loc[predicted, "verdict"] = frame.loc[predicted, "expected"]
    frame["klass"], frame["level"] = _klass(frame), _level(frame)
    frame["signature"] = frame["obs_signature"].where(~predicted, frame["exp_signature"])
    return _sorted(frame, _stack_order(names))


def _sorted(frame: pd.DataFrame, stack_order: list[str]) -> pd.DataFrame:
    """By stack (version order), then scenario; integer codes sort far faster than strings."""
    stack = pd.Categorical(frame["stack"], categories=stack_order).codes
    scenario = pd.factorize(frame["scenario"], sort=True)[0]
    return frame.take(np.lexsort((scenario, stack))).reset_index(drop=True)


def build_frame(rows: Sequence[Mapping[str, Any]], plans: Sequence[tuple[Path, Any]]) -> Any:
    if not rows and not plans:
        raise ConfigError("no results and no plan.json in the results folders")
    results = latest_records(rows)
    planned = planned_frame(plans)
    return derive(combine(results, planned))
