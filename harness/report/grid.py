"""The release x driver grid of a profile whose baseline ran at several placed drivers (the
`releases` profile: one driver per NVIDIA production branch): one row per stack, one column per
placed driver (none, the stub, each branch), and for each row the oldest branch observed to pass
beside the oldest one NVIDIA's rules declare for the CUDA runtime it installs. Pure.

Only a run that finished decides: `passed` is a pass, `failed` a fail; a cell planned and not
run, errored, interrupted, timed out or not observable here decides nothing, and a row whose
answer hangs on such a cell is "not decided", never an agreement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd  # type: ignore[import-untyped]

from harness.compat import Knowledge, declared_driver, driver_reason
from harness.errors import ConfigError
from harness.model import NO_DRIVER, STUB_DRIVER, Reason, Status, version_key
from harness.report.frame import UNOBSERVABLE

BASELINE = "baseline"
MIN_BRANCHES = 2  # placed drivers (not the stub) that make a profile's table a release grid
AGREE, DISAGREE, UNDECIDED = "agree", "disagree", "not decided"
NO_DRIVERS = "no driver cells"  # the plan asks no driver: the stack fails before the driver
_PASS, _FAIL = Status.PASSED.value, Status.FAILED.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    placed: str  # none, stub or a driver version
    title: str  # none, stub, R535 (the version itself where two share a branch)
    level: str = ""  # the evidence level of every observed cell in it; "" where they differ

    @property
    def branch(self) -> bool:
        return self.placed not in (NO_DRIVER, STUB_DRIVER)


@dataclass(frozen=True, slots=True, kw_only=True)
class GridCell:
    """One baseline cell; `cell` "" where the plan has none at that column."""

    cell: str = ""
    status: str = ""
    klass: str = ""
    level: str = ""
    verdict: str = ""
    signature: str = ""
    line: str = ""
    backend: str = "docker"

    @property
    def gate(self) -> str | None:
        """pass, fail, or None: this cell decides nothing (not run, not finished, unobservable)."""
        if self.klass == UNOBSERVABLE or self.status not in (_PASS, _FAIL):
            return None
        return "pass" if self.status == _PASS else "fail"


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    stack: str
    framework: str
    label: str  # framework and version (and what tells two stacks of one release apart)
    cuda: str  # the stack's CUDA, or the cudart its lock installs where known
    cells: tuple[GridCell, ...]  # one per column
    lowest: str = ""  # the title of the oldest branch column observed to pass; "" none
    declared: str = ""  # the title of the oldest branch column NVIDIA's rules admit; "" none
    declared_min: str = ""  # that rule's minimum driver; "" where the knowledge has no row
    why: Reason | None = None  # the cited row behind `declared_min`
    agreement: str = UNDECIDED
    unobserved: tuple[str, ...] = ()  # columns whose cell would decide, with no result
    decisive: GridCell | None = None  # for a disagreement: the cell that shows it
    finding: str = ""  # for a disagreement: what it is, in words


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseGrid:
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]

    @property
    def disagreements(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.agreement == DISAGREE)

    @property
    def undecided(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.agreement == UNDECIDED)

    @property
    def driverless(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.agreement == NO_DRIVERS)

    def reasons(self) -> tuple[Reason, ...]:
        return tuple(dict.fromkeys(r.why for r in self.rows if r.why is not None))


def placed_of(cell: str) -> str:
    """The placed driver a cell id names (`stack/baseline@535.261.03`), `none` if it names none."""
    return cell.rpartition("/")[2].partition("@")[2] or NO_DRIVER


def _baseline(frame: pd.DataFrame) -> pd.DataFrame:
    base = frame[frame["scenario"] == BASELINE]
    return base.assign(placed=[placed_of(c) for c in base["cell"].tolist()])


def is_release_grid(frame: pd.DataFrame) -> bool:
    """The baseline ran (or is planned) at two or more placed drivers other than the stub."""
    placed = set(_baseline(frame)["placed"].tolist()) - {NO_DRIVER, STUB_DRIVER}
    return len(placed) >= MIN_BRANCHES


def _columns(base: pd.DataFrame) -> tuple[Column, ...]:
    placed = set(base["placed"].tolist())
    branches = sorted(placed - {NO_DRIVER, STUB_DRIVER}, key=version_key)
    majors = [b.split(".", 1)[0] for b in branches]
    titles = [f"R{m}" if majors.count(m) == 1 else b for m, b in zip(majors, branches, strict=True)]
    cols = [(p, p) for p in (NO_DRIVER, STUB_DRIVER) if p in placed]
    cols += list(zip(branches, titles, strict=True))
    out = []
    for p, title in cols:
        mine = base[(base["placed"] == p) & base["status"].isin([_PASS, _FAIL])]
        levels = set(mine["level"].tolist())
        out.append(Column(placed=p, title=title, level=levels.pop() if len(levels) == 1 else ""))
    return tuple(out)


def _labels(stacks: pd.DataFrame) -> dict[str, str]:
    """framework version; where one release has several stacks, what tells them apart."""
    parts = ("cuda", "cudnn_installed", "python", "base")
    words = {"cuda": "CUDA {}", "cudnn_installed": "cuDNN {}", "python": "py{}", "base": "{}"}
    out = {}
    for (fw, version), group in stacks.groupby(["framework", "version"], sort=False):
        differ = [p for p in parts if group[p].nunique() > 1]
        for slug, row in zip(group["stack"].tolist(), group.to_dict("records"), strict=True):
            extra = " ".join(words[p].format(row[p]) for p in differ)
            out[slug] = f"{fw} {version}" + (f" {extra}" if extra else "")
    return out


def _cell(row: Mapping[str, object]) -> GridCell:
    return GridCell(
        cell=str(row["cell"]),
        status=str(row["status"]),
        klass=str(row["klass"]),
        level=str(row["level"]),
        verdict=str(row["verdict"]),
        signature=str(row["signature"]),
        line=str(row["obs_line"]),
        backend=str(row["backend"]),
    )


def build_grid(
    frame: pd.DataFrame, kb: Knowledge, installed: Mapping[str, str] | None = None
) -> ReleaseGrid:
    """`installed`: stack slug -> the cudart its lock installs (the rules read that release)."""
    installed = installed or {}
    base = _baseline(frame)
    columns = _columns(base)
    stacks = base.drop_duplicates("stack")  # the frame's stack order
    labels = _labels(stacks)
    by_cell = {(s, p): _cell(r) for s, p, r in zip(
        base["stack"].tolist(), base["placed"].tolist(), base.to_dict("records"), strict=True
    )}  # fmt: skip
    rows = []
    for slug, fw, cuda in stacks[["stack", "framework", "cuda"]].to_numpy().tolist():
        cells = tuple(by_cell.get((slug, c.placed), GridCell()) for c in columns)
        cudart = installed.get(slug)
        row = Row(stack=slug, framework=fw, label=labels[slug], cuda=cudart or cuda, cells=cells)
        rows.append(judge(row, columns, kb, cuda, cudart))
    return ReleaseGrid(columns=columns, rows=tuple(rows))


def _admits(cuda: str, driver: str, kb: Knowledge, cudart: str | None) -> bool:
    try:
        return driver_reason(cuda, driver, kb, cudart)[0]
    except (ConfigError, ValueError):
        return False


def judge(
    row: Row, columns: tuple[Column, ...], kb: Knowledge, cuda: str, cudart: str | None = None
) -> Row:
    """The row's oldest passing branch, its declared one, and whether they agree."""
    branch = [(c, cell) for c, cell in zip(columns, row.cells, strict=True) if c.branch]
    declared = declared_driver(cuda, kb)
    d = next((i for i, (c, _) in enumerate(branch) if declared and
              _admits(cuda, c.placed, kb, cudart)), None)  # fmt: skip
    gates = [cell.gate for _, cell in branch]
    low = next((i for i, g in enumerate(gates) if g == "pass"), None)
    row = _with(row, branch, low, d, declared)
    if not any(cell.cell for _, cell in branch):
        return replace(row, agreement=NO_DRIVERS)
    if declared is None:
        return row  # nothing declared: nothing to agree with
    if low is not None and (d is None or low < d):
        c, cell = branch[low]
        floor = declared[0]
        text = f"passes at {c.title} ({c.placed}), older than the declared {branch_of(floor)}"
        return _disagree(row, cell, f"{text} (>= {floor})")
    if d is not None and gates[d] == "fail":
        c, cell = branch[d]
        return _disagree(row, cell, f"fails at the declared {c.title} ({c.placed}): {cell.verdict}")
    # Agreement needs every branch below the declared one observed to fail, and the declared
    # one observed to pass (or, with none declared among the columns, every column to fail).
    deciding = branch[: d + 1] if d is not None else branch
    missing = tuple(c.title for (c, _), g in zip(deciding, gates, strict=False) if g is None)
    return replace(row, agreement=UNDECIDED if missing else AGREE, unobserved=missing)


def _with(
    row: Row,
    branch: list[tuple[Column, GridCell]],
    low: int | None,
    d: int | None,
    declared: tuple[str, Reason] | None,
) -> Row:
    return replace(
        row,
        lowest=branch[low][0].title if low is not None else "",
        declared=branch[d][0].title if d is not None else "",
        declared_min=declared[0] if declared else "",
        why=declared[1] if declared else None,
    )


def _disagree(row: Row, cell: GridCell, finding: str) -> Row:
    return replace(row, agreement=DISAGREE, decisive=cell, finding=finding)


def branch_of(driver: str) -> str:
    """`525.60.13` -> `R525`: NVIDIA names a production branch by the driver's major."""
    return f"R{driver.split('.', 1)[0]}" if driver else ""
