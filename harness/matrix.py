"""matrix.yaml -> validated axes, constraints and profiles -> cells with expectations; shards.

Pure: `parse_matrix` takes a Doc, `expand` takes values. Candidates go through named filters in a
fixed order (the compat rules, then the file's constraints, then its excludes); each filter counts
what it removed, so an empty plan can name the filter that removed the last stacks.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness import compat, faults
from harness.compat import Knowledge
from harness.drivers import DRIVER_HELP, DRIVER_LOCKS_TEXT, driver_version, is_driver_version
from harness.errors import ConfigError, HarnessError, choice_help
from harness.ids import SIZE_HELP, size_bytes
from harness.loader import Doc
from harness.model import (
    NO_DRIVER,
    STUB_DRIVER,
    Cell,
    DriverTarget,
    Evidence,
    Plan,
    Removal,
    Scenario,
    Stack,
    Variant,
    Where,
    major_minor,
    version_key,
)
from harness.schema import validate

AXES = ("framework", "cuda", "cudnn", "python", "base")
DEFAULT_DRIVER_SCENARIOS = ("baseline",)
MATCH_KEYS = ("framework", "framework_version", "cuda", "cudnn", "python", "base")
PINNED = "pinned"
DEFAULT_PROFILE = "smoke"


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """A partial stack: each key lists the values it accepts."""

    items: tuple[tuple[str, tuple[str, ...]], ...]
    where: Where

    def matches(self, cand: Candidate) -> bool:
        return all(cand.value(k) & set(vals) for k, vals in self.items)


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraint:
    id: str
    when: Match
    require: Match
    where: Where


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    name: str
    description: str
    driver: str | None
    drop_incompatible: bool
    scenarios: tuple[str, ...] | None
    default_variants: bool = False
    disk_budget: int | None = None  # bytes: `run`'s --disk-budget when none is given
    # (slug globs, scenarios): fault scenarios run only on the stacks a glob matches
    faults_on: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    driver_scenarios: tuple[str, ...]
    frameworks: tuple[tuple[str, tuple[str, ...]], ...] | None
    select: tuple[tuple[str, tuple[str, ...]], ...]
    include: tuple[tuple[Stack, Where], ...]
    where: Where


@dataclass(frozen=True, slots=True, kw_only=True)
class Matrix:
    file: str
    scenarios_dir: str
    default_profile: str
    frameworks: tuple[tuple[str, tuple[str, ...]], ...]
    axes: tuple[tuple[str, tuple[str, ...]], ...]
    constraints: tuple[Constraint, ...]
    excludes: tuple[Match, ...]
    profiles: tuple[Profile, ...]
    doc: Doc

    def axis(self, name: str) -> tuple[str, ...]:
        return dict(self.axes)[name]

    def profile(self, name: str | None) -> Profile:
        wanted = name or self.default_profile
        for p in self.profiles:
            if p.name == wanted:
                return p
        raise ConfigError(
            f"unknown profile '{wanted}'",
            where=self.doc.where(("profiles",), key=True),
            help=choice_help(wanted, [p.name for p in self.profiles], "profiles"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """A stack on its way through the filters, with the axis value it came from."""

    stack: Stack
    cudnn_axis: str  # 'pinned' or the version as written
    variant: Variant | None

    def value(self, key: str) -> set[str]:
        if key == "cudnn":
            return {self.cudnn_axis, self.stack.cudnn, major_minor(self.stack.cudnn)}
        return {str(getattr(self.stack, key))}


# ---------------------------------------------------------------- parsing


def _values(v: Any) -> tuple[str, ...]:
    return tuple(v) if isinstance(v, list) else (str(v),)


def _match(doc: Doc, path: tuple[str | int, ...], data: Mapping[str, Any]) -> Match:
    items = tuple((k, _values(v)) for k, v in sorted(data.items()))
    return Match(items=items, where=doc.where(path))


def _profile(doc: Doc, name: str, data: Mapping[str, Any]) -> Profile:
    path: tuple[str | int, ...] = ("profiles", name)
    select = data.get("select", {})
    frameworks = select.get("framework")
    include = tuple(
        (Stack(**{k: str(v) for k, v in inc.items()}), doc.where((*path, "include", i)))
        for i, inc in enumerate(data.get("include", []))
    )
    scen = data.get("scenarios")
    driver = data.get("driver")
    if driver is not None and driver != "none":
        driver_version(driver, doc.where((*path, "driver")), "profile driver")
    return Profile(
        name=name,
        description=str(data.get("description", "")).strip(),
        driver=driver,
        drop_incompatible=bool(data.get("drop_incompatible", False)),
        scenarios=tuple(scen) if scen is not None else None,
        default_variants=bool(data.get("default_variants", False)),
        disk_budget=_budget(doc, path, data.get("disk_budget")),
        faults_on=(
            tuple(data.get("faults_on", {}).get("stacks", ())),
            tuple(data.get("faults_on", {}).get("scenarios", ())),
        ),
        driver_scenarios=tuple(data.get("driver_scenarios", DEFAULT_DRIVER_SCENARIOS)),
        frameworks=tuple(sorted((k, tuple(v)) for k, v in frameworks.items()))
        if frameworks is not None
        else None,
        select=tuple(sorted((k, tuple(v)) for k, v in select.items() if k != "framework")),
        include=include,
        where=doc.where(path, key=True),
    )


def _budget(doc: Doc, path: tuple[str | int, ...], text: str | None) -> int | None:
    if text is None:
        return None
    size = size_bytes(text)
    if size is None:
        raise ConfigError(
            f"profile disk_budget {text!r}: not a size",
            where=doc.where((*path, "disk_budget")),
            help=SIZE_HELP,
        )
    return size


def parse_matrix(doc: Doc) -> Matrix:
    validate(doc, "matrix.schema.json")
    data = doc.data
    axes = data["axes"]
    matrix = Matrix(
        file=doc.file,
        scenarios_dir=str(data.get("scenarios", "scenarios")),
        default_profile=str(data.get("default_profile", DEFAULT_PROFILE)),
        frameworks=tuple(sorted((k, tuple(v)) for k, v in axes["framework"].items())),
        axes=(
            *((a, tuple(axes[a])) for a in AXES if a != "framework"),
            ("driver", tuple(str(d) for d in axes.get("driver", [NO_DRIVER]))),
        ),
        constraints=tuple(
            Constraint(
                id=c["id"],
                when=_match(doc, ("constraints", i, "when"), c["when"]),
                require=_match(doc, ("constraints", i, "require"), c["require"]),
                where=doc.where(("constraints", i, "id")),
            )
            for i, c in enumerate(data.get("constraints", []))
        ),
        excludes=tuple(
            _match(doc, ("exclude", i), e) for i, e in enumerate(data.get("exclude", []))
        ),
        profiles=tuple(_profile(doc, n, p or {}) for n, p in data["profiles"].items()),
        doc=doc,
    )
    for i, value in enumerate(matrix.axis("driver")):
        if value not in (NO_DRIVER, STUB_DRIVER) and not is_driver_version(value):
            raise ConfigError(
                f"bad driver {value!r} in axes.driver",
                where=doc.where(("axes", "driver", i)),
                help=f"'{NO_DRIVER}', '{STUB_DRIVER}' or a driver version from "
                f"{DRIVER_LOCKS_TEXT}; " + DRIVER_HELP,
            )
    _check_profiles(matrix)
    return matrix


def _check_subset(
    doc: Doc, path: tuple[str | int, ...], chosen: Sequence[str], allowed: Sequence[str], what: str
) -> None:
    for i, value in enumerate(chosen):
        if value not in allowed:
            raise ConfigError(
                f"{what} '{value}' is not in the matrix axes",
                where=doc.where((*path, i)),
                help=choice_help(value, allowed, "values") + " (a profile selects from `axes:`)",
            )


def _check_profiles(m: Matrix) -> None:
    doc, fws = m.doc, dict(m.frameworks)
    if m.default_profile not in {p.name for p in m.profiles}:
        raise ConfigError(
            f"default_profile '{m.default_profile}' is not defined",
            where=doc.where(("default_profile",))
            if "default_profile" in doc.data
            else doc.where(("profiles",), key=True),
            help=choice_help(m.default_profile, [p.name for p in m.profiles], "profiles"),
        )
    for p in m.profiles:
        base: tuple[str | int, ...] = ("profiles", p.name, "select")
        for fw, versions in p.frameworks or ():
            if fw not in fws:
                raise ConfigError(
                    f"framework '{fw}' is not in axes.framework",
                    where=doc.where((*base, "framework", fw), key=True),
                    help="add it to axes.framework first",
                )
            _check_subset(doc, (*base, "framework", fw), versions, fws[fw], f"{fw} version")
        for axis, values in p.select:
            _check_subset(doc, (*base, axis), values, m.axis(axis), axis)


def check_knowledge(m: Matrix, kb: Knowledge) -> None:
    """Every value in the axes must be one the compatibility knowledge knows."""
    doc = m.doc
    for fw, versions in m.frameworks:
        known = kb.versions(fw)
        for i, v in enumerate(versions):
            if kb.release(fw, v) is None:
                raise ConfigError(
                    f"{fw} {v} is not in the compatibility knowledge",
                    where=doc.where(("axes", "framework", fw, i)),
                    help=choice_help(v, known, f"{fw} releases")
                    + f" (add a cited row to harness/resources/compat/{fw}.yaml to test {v})",
                )
    for i, cuda in enumerate(m.axis("cuda")):
        if kb.toolkit(cuda) is None:
            raise ConfigError(
                f"CUDA {cuda} has no driver row in the compatibility knowledge",
                where=doc.where(("axes", "cuda", i)),
                help=choice_help(cuda, [t.cuda for t in kb.toolkits], "CUDA versions"),
            )
    for i, cudnn in enumerate(m.axis("cudnn")):
        if cudnn != PINNED and kb.cudnn_release(cudnn) is None:
            raise ConfigError(
                f"cuDNN {cudnn} is not in the compatibility knowledge",
                where=doc.where(("axes", "cudnn", i)),
                help=f"use '{PINNED}' (the cuDNN each release pins) or one of: "
                + ", ".join(c.release for c in kb.cudnn),
            )


# ---------------------------------------------------------------- expansion

Filter = tuple[str, Where | None, Callable[[Candidate], bool]]


def _builtin_filters(kb: Knowledge) -> list[Filter]:
    def variant(c: Candidate) -> bool:
        return c.variant is not None

    def python(c: Candidate) -> bool:
        rel = kb.release(c.stack.framework, c.stack.framework_version)
        return rel is not None and c.stack.python in rel.python

    def cudnn_cuda(c: Candidate) -> bool:
        if c.cudnn_axis == PINNED:
            return True
        row = kb.cudnn_release(c.stack.cudnn)
        return row is not None and row.supports_major(c.stack.cuda)

    def base(c: Candidate) -> bool:
        s = c.stack
        if s.base == "offline":
            return kb.offline_base(s.python) is not None
        built = c.variant.cudnn if c.variant else s.cudnn
        return kb.cuda_image(s.cuda, built, s.python) is not None

    def offline_cuda(c: Candidate) -> bool:
        # The offline base has no CUDA of its own: the release's wheels must bring it.
        return c.stack.base != "offline" or (
            c.variant is not None and c.variant.cuda_libs == "wheels"
        )

    return [
        ("published-variant", None, variant),
        ("python-supported", None, python),
        ("cudnn-supports-cuda-major", None, cudnn_cuda),
        ("base-provides-python", None, base),
        ("offline-needs-cuda-wheels", None, offline_cuda),
    ]


def _obeys(c: Constraint) -> Callable[[Candidate], bool]:
    return lambda x: not c.when.matches(x) or c.require.matches(x)


def _not_excluded(e: Match) -> Callable[[Candidate], bool]:
    return lambda x: not e.matches(x)


def _user_filters(m: Matrix) -> list[Filter]:
    out: list[Filter] = [(c.id, c.where, _obeys(c)) for c in m.constraints]
    out += [(f"exclude[{i}]", e.where, _not_excluded(e)) for i, e in enumerate(m.excludes)]
    return out


def _candidate(kb: Knowledge, wanted: Stack) -> Candidate:
    """`wanted` as the axes name it (cudnn may be 'pinned'), resolved against the knowledge."""
    rel = kb.release(wanted.framework, wanted.framework_version)
    var = rel.variant(wanted.cuda) if rel else None
    cudnn = wanted.cudnn
    if cudnn == PINNED:
        cudnn = kb.runtime_cudnn(var, wanted.base, wanted.python) if var else "none"
    return Candidate(stack=replace(wanted, cudnn=cudnn), cudnn_axis=wanted.cudnn, variant=var)


def _candidates(m: Matrix, p: Profile, kb: Knowledge) -> list[Candidate]:
    chosen = dict(p.select)
    fws = p.frameworks if p.frameworks is not None else m.frameworks
    pick = {a: chosen.get(a, m.axis(a)) for a in AXES if a != "framework"}
    return [
        _candidate(
            kb,
            Stack(
                framework=fw, framework_version=ver, cuda=cuda, cudnn=cudnn, python=py, base=base
            ),
        )
        for fw, versions in fws
        for ver, cuda, cudnn, py, base in itertools.product(
            versions, pick["cuda"], pick["cudnn"], pick["python"], pick["base"]
        )
    ]


def _run_filters(
    cands: list[Candidate], filters: list[Filter], p: Profile
) -> tuple[list[Candidate], list[Removal]]:
    removals = []
    for name, where, keep in filters:
        before = len(cands)
        cands = [c for c in cands if keep(c)]
        removals.append(Removal(constraint=name, removed=before - len(cands), where=where))
        if before and not cands:
            raise ConfigError(
                f"profile '{p.name}' has no stacks left: constraint '{name}' removed the last "
                f"{before} stack{'s' if before > 1 else ''}",
                where=where or p.where,
                help=f"loosen '{name}', or select more values in profiles.{p.name}.select",
            )
    return cands, removals


def _includes(p: Profile, kb: Knowledge) -> list[Candidate]:
    out = []
    for stack, where in p.include:
        if kb.release(stack.framework, stack.framework_version) is None:
            raise ConfigError(
                f"{stack.framework} {stack.framework_version} is not in the compatibility "
                "knowledge",
                where=where,
                help=choice_help(
                    stack.framework_version,
                    kb.versions(stack.framework),
                    f"{stack.framework} releases",
                ),
            )
        cand = _candidate(kb, stack)
        rel = kb.release(stack.framework, stack.framework_version)
        assert rel is not None
        for name, _, keep in _builtin_filters(kb):
            if not keep(cand):
                raise ConfigError(
                    f"included stack {cand.stack.slug} fails the compatibility rule '{name}'",
                    where=where,
                    help=f"{rel.framework} {rel.version} publishes CUDA "
                    f"{', '.join(v.cuda for v in rel.variants)} for Python "
                    f"{', '.join(rel.python)}; see harness/resources/compat/{rel.framework}.yaml",
                )
        out.append(cand)
    return out


def _scenarios(m: Matrix, p: Profile, scenarios: Mapping[str, Scenario]) -> list[Scenario]:
    if p.scenarios is None:
        return [scenarios[k] for k in sorted(scenarios)]
    for i, sid in enumerate(p.scenarios):
        if sid not in scenarios:
            raise ConfigError(
                f"unknown scenario '{sid}'",
                where=m.doc.where(("profiles", p.name, "scenarios", i)),
                help=choice_help(sid, scenarios, "scenarios") + f" (files in {m.scenarios_dir}/)",
            )
    return [scenarios[s] for s in p.scenarios]


def stack_order(s: Stack) -> tuple[Any, ...]:
    return (
        s.framework,
        version_key(s.framework_version),
        version_key(s.cuda),
        version_key(s.cudnn),
        version_key(s.python),
        s.base,
    )


def expand(
    m: Matrix,
    profile: str | None,
    kb: Knowledge,
    scenarios: Mapping[str, Scenario],
    driver: DriverTarget,
    *,
    placeable: Sequence[str] | None = None,
    installed: Mapping[str, str] | None = None,
) -> Plan:
    """The plan: every cell of one profile with its expectation and the reason for it.
    `placeable`: the drivers the driver lock can place in a run (None: no lock, unchecked);
    `installed`: stack slug -> the cudart version its lock installs (the driver rules read that
    release, not the label's)."""
    installed = installed or {}
    check_knowledge(m, kb)
    p = m.profile(profile)
    chosen = _scenarios(m, p, scenarios)
    placed = _placed(m, p, placeable, scenarios)
    cands, removals = _run_filters(
        _candidates(m, p, kb), _builtin_filters(kb) + _user_filters(m), p
    )
    cands += _includes(p, kb)
    if p.default_variants:

        def default(c: Candidate) -> bool:
            return c.variant is not None and c.variant.default

        cands, more = _run_filters(cands, [("default-variant-only", p.where, default)], p)
        removals += more
    faulted = [_scenario(m, p, scenarios, sid) for sid in p.faults_on[1]]
    if p.drop_incompatible and driver.version is not None:
        version = driver.version

        def runs(c: Candidate) -> bool:
            cudart = installed.get(c.stack.slug)
            return compat.driver_reason(c.stack.cuda, version, kb, cudart)[0]

        cands, more = _run_filters(cands, [("driver-can-run-cuda", p.where, runs)], p)
        removals += more
    unique = {c.stack: c for c in cands}
    cells = []
    for stack in sorted(unique, key=stack_order):
        variant = unique[stack].variant
        assert variant is not None  # the published-variant filter ran
        cudart = installed.get(stack.slug)
        cells += _cells_of(stack, variant, chosen, driver, kb, cudart=cudart)
        if any(fnmatch.fnmatchcase(stack.slug, g) for g in p.faults_on[0]):
            extra = [s for s in faulted if s not in chosen]
            cells += _cells_of(stack, variant, extra, driver, kb, cudart=cudart)
        on_driver = [scenarios[s] for s in p.driver_scenarios]
        if not _reaches_the_driver(stack, variant, on_driver, driver, kb):
            continue  # it fails before any driver is asked: a driver column would repeat that
        for value in placed:
            cells += _cells_of(stack, variant, on_driver, driver, kb, placed=value, cudart=cudart)
    if not cells:
        raise _selects_nothing(m, p, chosen, cands)
    _check_unique(cells, p)
    return Plan(profile=p.name, driver=driver, cells=tuple(cells), removals=tuple(removals))


def _scenario(m: Matrix, p: Profile, scenarios: Mapping[str, Scenario], sid: str) -> Scenario:
    if sid not in scenarios:
        i = p.faults_on[1].index(sid)
        raise ConfigError(
            f"unknown scenario '{sid}'",
            where=m.doc.where(("profiles", p.name, "faults_on", "scenarios", i)),
            help=choice_help(sid, scenarios, "scenarios"),
        )
    return scenarios[sid]


def _selects_nothing(
    m: Matrix, p: Profile, chosen: Sequence[Scenario], cands: Sequence[Candidate]
) -> ConfigError:
    """A profile whose selection left no cell: which selector emptied it."""
    frameworks = sorted({c.stack.framework for c in cands})
    if not frameworks:
        return ConfigError(
            f"profile '{p.name}' selects no stack",
            where=p.where,
            help=f"select more values in profiles.{p.name}.select",
        )
    names = ", ".join(s.id for s in chosen)
    where = m.doc.where(("profiles", p.name, "scenarios")) if p.scenarios is not None else p.where
    return ConfigError(
        f"profile '{p.name}' selects no cell: its scenarios ({names}) apply to none of its "
        f"frameworks ({', '.join(frameworks)})",
        where=where,
        help=f"add a scenario for {' or '.join(frameworks)} to profiles.{p.name}.scenarios, or "
        f"select a framework in profiles.{p.name}.select.framework that they apply to",
    )


def _placed(
    m: Matrix, p: Profile, placeable: Sequence[str] | None, scenarios: Mapping[str, Scenario]
) -> tuple[str, ...]:
    """The drivers this profile places in runs (select.driver, else axes.driver), checked
    against the lock; 'none' is the plain cells, always there."""
    chosen = dict(p.select).get("driver", m.axis("driver"))
    out = tuple(
        sorted(
            (v for v in chosen if v != NO_DRIVER),
            key=lambda v: (v != STUB_DRIVER, version_key(v) if v != STUB_DRIVER else ()),
        )
    )
    for v in out:
        if placeable is not None and v not in placeable:
            i = m.axis("driver").index(v)
            raise ConfigError(
                f"driver {v} is not in {DRIVER_LOCKS_TEXT}, so no run can place it",
                where=m.doc.where(("axes", "driver", i)),
                help="placeable: "
                + (", ".join(placeable) or f"none ({DRIVER_LOCKS_TEXT} is missing)")
                + "; `stackmatrix drivers --lock` writes the lock",
            )
    for i, sid in enumerate(p.driver_scenarios if out else ()):
        if sid not in scenarios:
            raise ConfigError(
                f"unknown scenario '{sid}'",
                where=m.doc.where(("profiles", p.name, "driver_scenarios", i)),
                help=choice_help(sid, scenarios, "scenarios"),
            )
    return out


def _reaches_the_driver(
    stack: Stack,
    variant: Variant,
    scens: Sequence[Scenario],
    driver: DriverTarget,
    kb: Knowledge,
) -> bool:
    """Does the stack, under these scenarios with no driver placed, get as far as device
    discovery (where the CUDA runtime asks the driver)? A stack that fails earlier (torch
    against an older cuDNN fails at build_info) shows the same failure at every driver."""
    for scen in scens:
        exp = compat.expect(stack, scen, variant, driver, kb).expected
        if exp.stage is None or exp.stage.order >= compat.DRIVER_STAGE.order:
            return True
    return False


def cell_id(slug: str, scenario: str, placed: str = NO_DRIVER) -> str:
    """`stack/scenario`, and `@driver` for a cell of the placed-driver axis."""
    return f"{slug}/{scenario}" + ("" if placed == NO_DRIVER else f"@{placed}")


def _cells_of(
    stack: Stack,
    variant: Variant,
    chosen: Sequence[Scenario],
    driver: DriverTarget,
    kb: Knowledge,
    *,
    placed: str = NO_DRIVER,
    cudart: str | None = None,
) -> list[Cell]:
    cells = []
    for scen in chosen:
        if stack.framework not in scen.frameworks:
            continue
        faults.resolve(scen.faults, stack)  # what a run could not apply is refused here
        d = compat.expect(stack, scen, variant, driver, kb, placed=placed, cudart=cudart)
        cells.append(
            Cell(
                id=cell_id(stack.slug, scen.id, placed),
                stack=stack,
                scenario=scen.id,
                expected=d.expected,
                evidence=driver.evidence if placed == NO_DRIVER else Evidence.DRIVER,
                because=d.because,
                checks=d.checks,
                driver=placed,
            )
        )
    return cells


def cells_for(
    stack: Stack, scenarios: Sequence[Scenario], kb: Knowledge, driver: DriverTarget
) -> list[Cell]:
    """Cells for a stack found on a machine (`--python`), not expanded from the matrix."""
    rel = kb.release(stack.framework, stack.framework_version)
    variant = rel.variant(stack.cuda) if rel else None
    if variant is None:
        raise HarnessError(
            f"{stack.framework} {stack.framework_version} with CUDA {stack.cuda} is not in the "
            "compatibility data, so its cells have no expected outcome",
            help="add its release row (with a source) to harness/resources/compat/, or run a "
            "stack of the matrix with --backend local and no --python",
        )
    return _cells_of(stack, variant, scenarios, driver, kb)


def _check_unique(cells: list[Cell], p: Profile) -> None:
    seen: dict[str, Stack] = {}
    for c in cells:
        other = seen.setdefault(c.id, c.stack)
        if other != c.stack:
            raise ConfigError(
                f"two stacks share the cell id '{c.id}': cuDNN {other.cudnn} and {c.stack.cudnn}",
                where=p.where,
                help="cell ids show cuDNN as major.minor; keep one cuDNN release per minor",
            )


# ---------------------------------------------------------------- shards


def shard(plan: Plan, index: int, total: int) -> Plan:
    """Shard `index` (1-based) of `total`. Cells of one stack stay together (one image build per
    shard); stacks go largest first to the least-loaded shard. Depends only on the cell ids."""
    groups: dict[str, list[Cell]] = {}
    for c in plan.cells:
        groups.setdefault(c.stack.slug, []).append(c)
    loads = [0] * total
    owner: dict[str, int] = {}
    for slug in sorted(groups, key=lambda s: (-len(groups[s]), s)):
        target = min(range(total), key=lambda i: (loads[i], i))
        owner[slug] = target
        loads[target] += len(groups[slug])
    cells = tuple(c for c in plan.cells if owner[c.stack.slug] == index - 1)
    return Plan(
        profile=plan.profile,
        driver=plan.driver,
        cells=cells,
        removals=plan.removals,
        shard=(index, total),
    )
