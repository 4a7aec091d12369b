"""Cited compatibility tables -> what a stack is expected to do on a driver.

Pure: `parse_knowledge` takes parsed documents, `expect` takes values. Every Reason carries the
public source of the row that decided it, so `harness plan` can say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from importlib import resources
from typing import Any, TypeVar

from harness.errors import ConfigError
from harness.loader import Doc, parse_yaml
from harness.model import (
    NO_DRIVER,
    STUB_DRIVER,
    BaseOS,
    CudaImage,
    CudaRange,
    CudnnCheck,
    CudnnLoad,
    CudnnRelease,
    DriverTarget,
    Evidence,
    Expectation,
    MinorCompat,
    Outcome,
    Reason,
    Release,
    Scenario,
    Stack,
    Stage,
    ToolkitDriver,
    Variant,
    major_minor,
    version_key,
)

KNOWLEDGE_FILES = ("drivers", "cudnn", "torch", "tensorflow", "cuda_images", "bases")
DRIVER_STAGE = Stage.DEVICES  # where a too-old driver surfaces: device discovery
STUB_SOURCE = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
TOOLKIT_RULES = "https://github.com/NVIDIA/libnvidia-container/blob/master/src/dsl.c"


@dataclass(frozen=True, slots=True, kw_only=True)
class Knowledge:
    toolkits: tuple[ToolkitDriver, ...]
    minor_compat: tuple[MinorCompat, ...]
    cudnn: tuple[CudnnRelease, ...]
    releases: tuple[Release, ...]
    cudnn_checks: tuple[CudnnCheck, ...]
    images: tuple[CudaImage, ...]
    bases: tuple[BaseOS, ...]
    cudnn_loads: tuple[CudnnLoad, ...] = ()

    def frameworks(self) -> tuple[str, ...]:
        return tuple(sorted({r.framework for r in self.releases}))

    def release(self, framework: str, version: str) -> Release | None:
        return next(
            (r for r in self.releases if r.framework == framework and r.version == version), None
        )

    def versions(self, framework: str) -> list[str]:
        return [r.version for r in self.releases if r.framework == framework]

    def toolkit(self, cuda: str) -> ToolkitDriver | None:
        return next((t for t in self.toolkits if t.cuda == cuda), None)

    def driver_cuda(self, driver: str) -> ToolkitDriver | None:
        """The newest CUDA toolkit whose minimum driver `driver` meets: the CUDA version the
        driver reports (cuDriverGetVersion), by NVIDIA's Table 3."""
        dv = version_key(driver)
        rows = [t for t in self.toolkits if version_key(t.min_driver) <= dv]
        return max(rows, key=lambda t: version_key(t.cuda), default=None)

    def compat_for(self, cuda: str) -> MinorCompat | None:
        major = int(cuda.split(".", maxsplit=1)[0])
        return next((m for m in self.minor_compat if m.cuda_major == major), None)

    def cudnn_release(self, cudnn: str) -> CudnnRelease | None:
        mm = major_minor(cudnn)
        return next((c for c in self.cudnn if c.cudnn == mm), None)

    def cudnn_check(self, framework: str) -> CudnnCheck | None:
        return next((c for c in self.cudnn_checks if c.framework == framework), None)

    def offline_base(self, python: str) -> BaseOS | None:
        """The Debian release whose own python3 is `python` (the offline base uses the distro's)."""
        rows = [b for b in self.bases if b.os.startswith("debian") and b.python == python]
        return max(rows, key=lambda b: version_key(b.os[len("debian") :]), default=None)

    def cuda_image(self, cuda: str, cudnn: str, python: str) -> CudaImage | None:
        """The newest nvidia/cuda cuDNN runtime tag for this CUDA and cuDNN major whose OS ships
        `python` as its python3."""
        oses = {b.os for b in self.bases if b.python == python}
        major = cudnn.split(".", maxsplit=1)[0]
        rows = [
            i
            for i in self.images
            if i.cuda == cuda
            and i.os in oses
            and (i.cudnn is None or i.cudnn.split(".")[0] == major)
        ]
        return max(rows, key=lambda i: (version_key(i.cuda_release), i.os), default=None)

    def runtime_cudnn(self, variant: Variant, base: str, python: str) -> str:
        """The cuDNN a stack will load. On the `cuda` base a release whose CUDA libraries are
        optional (an extra such as tensorflow[and-cuda]) or external is installed without them and
        loads the image's cuDNN; everywhere else it loads what it pins."""
        uses_image = base == "cuda" and (variant.extra is not None or variant.cuda_libs == "system")
        if uses_image:
            image = self.cuda_image(variant.cuda, variant.cudnn, python)
            if image is not None and image.cudnn is not None:
                return image.cudnn
        return variant.cudnn


# ---------------------------------------------------------------- parsing


def _rows(
    doc: Doc, key: str, source_key: str = "source"
) -> list[tuple[tuple[str | int, ...], Mapping[str, Any]]]:
    data = doc.data if isinstance(doc.data, Mapping) else {}
    rows = data.get(key)
    if not isinstance(rows, list):
        raise ConfigError(f"'{key}' must be a list", where=doc.where((key,)))
    out = []
    for i, row in enumerate(rows):
        path: tuple[str | int, ...] = (key, i)
        if not isinstance(row, Mapping):
            raise ConfigError(f"{key}[{i}] must be a mapping", where=doc.where(path))
        _require_source(doc, path, row, source_key)
        out.append((path, row))
    return out


def _require_source(
    doc: Doc, path: tuple[str | int, ...], row: Mapping[str, Any], key: str = "source"
) -> None:
    src = row.get(key)
    if not (isinstance(src, str) and src.startswith("https://")):
        raise ConfigError(
            "compatibility row without a public source",
            where=doc.where(path),
            help=f"every row needs `{key}: https://...` naming where its values were read",
        )


def _s(row: Mapping[str, Any], key: str) -> str:
    return str(row[key])


def _opt(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    return None if value is None else str(value)


def _stage(value: Any) -> Stage | None:
    return None if value in (None, "unobservable") else Stage(str(value))


T = TypeVar("T")


def _plain(cls: type[T], row: Mapping[str, Any]) -> T:
    """A flat row -> the dataclass with the same field names ('int' fields as int, the rest str)."""
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in row and row[f.name] is not None:
            values[f.name] = int(row[f.name]) if f.type == "int" else str(row[f.name])
    return cls(**values)


def _toolkit(row: Mapping[str, Any]) -> ToolkitDriver:
    flat = {k: v for k, v in row.items() if k not in ("updates", "runtime_versions")}
    return replace(
        _plain(ToolkitDriver, flat),
        updates=tuple((str(u["release"]), str(u["min_driver"])) for u in row.get("updates", [])),
        runtimes=tuple(
            (str(u["release"]), str(u["cudart"])) for u in row.get("runtime_versions", [])
        ),
    )


def _image(row: Mapping[str, Any]) -> CudaImage:
    env = row.get("env") or {}
    src = row.get("env_source") or ()
    return replace(
        _plain(CudaImage, {k: v for k, v in row.items() if k not in ("env", "env_source")}),
        env=tuple((str(k), str(v)) for k, v in env.items()),
        env_source=(src,) if isinstance(src, str) else tuple(str(s) for s in src),
    )


def _table(doc: Doc, key: str, cls: type[T]) -> tuple[T, ...]:
    return tuple(_plain(cls, r) for _, r in _rows(doc, key))


def _framework(doc: Doc) -> tuple[list[Release], CudnnCheck]:
    fw = str(doc.data["framework"])
    releases = []
    for path, row in _rows(doc, "releases", "python_source"):
        variants = []
        for j, v in enumerate(row["variants"]):
            _require_source(doc, (*path, "variants", j), v)
            variants.append(
                Variant(
                    cuda=_s(v, "cuda"),
                    cudnn=_s(v, "cudnn"),
                    index=_s(v, "index"),
                    extra=_opt(v, "extra"),
                    default=bool(v.get("default", False)),
                    cuda_libs=str(v.get("cuda_libs", "wheels")),
                    source=_s(v, "source"),
                )
            )
        releases.append(
            Release(
                framework=fw,
                package=str(doc.data["package"]),
                version=_s(row, "version"),
                python=tuple(str(p) for p in row["python"]),
                python_source=_s(row, "python_source"),
                variants=tuple(variants),
            )
        )
    chk = doc.data["cudnn_check"]
    _require_source(doc, ("cudnn_check",), chk)
    check = CudnnCheck(
        framework=fw,
        rule=_s(chk, "rule"),
        stage_cpu=_stage(chk.get("stage_cpu")),
        stage_gpu=_stage(chk.get("stage_gpu")),
        source=_s(chk, "source"),
    )
    return releases, check


def parse_knowledge(docs: Mapping[str, Doc]) -> Knowledge:
    drivers, cudnn, images, bases = (
        docs["drivers"],
        docs["cudnn"],
        docs["cuda_images"],
        docs["bases"],
    )
    releases: list[Release] = []
    checks: list[CudnnCheck] = []
    for name in ("torch", "tensorflow"):
        rel, chk = _framework(docs[name])
        releases += rel
        checks.append(chk)
    try:
        return Knowledge(
            toolkits=tuple(_toolkit(r) for _, r in _rows(drivers, "toolkits")),
            minor_compat=_table(drivers, "minor_version_compatibility", MinorCompat),
            cudnn=tuple(
                CudnnRelease(
                    cudnn=_s(r, "cudnn"),
                    release=_s(r, "release"),
                    cuda=tuple(_plain(CudaRange, c) for c in r["cuda"]),
                    source=_s(r, "source"),
                )
                for _, r in _rows(cudnn, "releases")
            ),
            releases=tuple(releases),
            cudnn_checks=tuple(checks),
            images=tuple(_image(r) for _, r in _rows(images, "images")),
            cudnn_loads=tuple(
                CudnnLoad(
                    cudnn=_s(r, "cudnn"),
                    frameworks=tuple(str(f) for f in r["frameworks"]),
                    stage=Stage(_s(r, "stage")),
                    signature=_s(r, "signature"),
                    source=_s(r, "source"),
                )
                for _, r in _rows(cudnn, "needs_libcuda")
            ),
            bases=_table(bases, "bases", BaseOS),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"malformed compatibility knowledge: {exc!r}") from None


def read_knowledge_docs() -> dict[str, Doc]:
    """The shipped knowledge files, parsed (I/O: package resources)."""
    root = resources.files("harness").joinpath("resources").joinpath("compat")
    return {
        name: parse_yaml(
            root.joinpath(f"{name}.yaml").read_text(encoding="utf-8"),
            f"harness/resources/compat/{name}.yaml",
        )
        for name in KNOWLEDGE_FILES
    }


# ---------------------------------------------------------------- the container toolkit's rules


def _holds(left: str, op: str, right: str) -> bool:
    a, b = version_key(left), version_key(right)  # PEP 440: 12.4 == 12.4.0
    return {
        "=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
    }[op]  # fmt: skip


def _condition(text: str) -> tuple[str, str, str] | None:
    for op in (">=", "<=", "!=", "=", "<", ">"):
        name, sep, value = text.partition(op)
        if sep and name and value:
            return name, op, value
    return None


def require_cuda(requirement: str, driver: str, cuda: str) -> tuple[bool, str]:
    """Does a driver (its version, and the CUDA version it reports) meet an image's
    NVIDIA_REQUIRE_CUDA as nvidia-container-cli reads it: clauses separated by spaces, any one
    of which admits; conditions inside a clause joined by commas, all of which must hold. A
    `brand` condition is taken as met (the plan does not know the GPU's brand: a data-centre GPU
    of that brand is assumed). (admitted, the clause that admitted it or the unmet condition)."""
    unmet = ""
    for clause in requirement.split():
        ok = True
        for cond in clause.split(","):
            parsed = _condition(cond)
            if parsed is None:
                continue
            name, op, value = parsed
            if name == "brand":
                continue
            left = {"cuda": cuda, "driver": driver}.get(name)
            if left is None or not _holds(left, op, value):
                ok, unmet = False, f"{name} {op} {value}"
                break
        if ok:
            return True, clause
    return False, unmet


def toolkit_reason(stack: Stack, variant: Variant, driver: str, kb: Knowledge) -> Reason | None:
    """On the `cuda` base: a Reason to refuse the container at start, or None (admitted, or the
    tag's requirement is not known)."""
    if stack.base != "cuda":
        return None
    image = kb.cuda_image(stack.cuda, variant.cudnn, stack.python)
    reports = kb.driver_cuda(driver)
    if image is None or not image.require_cuda or reports is None:
        return None
    ok, why = require_cuda(image.require_cuda, driver, reports.cuda)
    if ok:
        return None
    first, *rest = image.require_cuda.split()
    more = f" and {len(rest)} brand clauses" if rest else ""
    return Reason(
        rule="toolkit-require-cuda",
        detail=f"nvidia/cuda:{image.tag} sets NVIDIA_REQUIRE_CUDA '{first}'{more}; driver "
        f"{driver} reports CUDA {reports.cuda} and no clause admits it (unsatisfied: {why}), "
        "so nvidia-container-cli refuses to start the container",
        source=image.require_source or image.source,
    )


# ---------------------------------------------------------------- expectations


def installed_toolkit(
    cuda: str, cudart: str | None, kb: Knowledge
) -> tuple[ToolkitDriver | None, str, str]:
    """The toolkit row, release and minimum driver of what a stack's lock installs (its cudart
    wheel's release and that Update's row), else of its label's GA release."""
    if cudart is not None:
        for tk in kb.toolkits:
            found = tk.release_of(cudart)
            if found is not None:
                release, minimum = found
                return tk, f"{release} (cudart {cudart}, as the lock installs it)", minimum
    row = kb.toolkit(cuda)
    return row, row.toolkit if row else cuda, row.min_driver if row else ""


def driver_reason(
    cuda: str, driver: str, kb: Knowledge, cudart: str | None = None
) -> tuple[bool, Reason]:
    """Can `driver` run the CUDA a stack installs (`cudart`, else its label `cuda`)? With that
    release's own minimum (full features), else minor-version compatibility."""
    tk, release, minimum = installed_toolkit(cuda, cudart, kb)
    if tk is None:
        raise ConfigError(
            f"no driver data for CUDA {cuda} in harness/resources/compat/drivers.yaml"
        )
    cuda = tk.cuda
    mc = kb.compat_for(cuda)
    dv = version_key(driver)
    if dv >= version_key(minimum):
        return True, Reason(
            rule="driver-minimum",
            detail=f"driver {driver} >= {minimum}, the minimum for CUDA {release}: full features",
            source=tk.source,
        )
    if mc is not None and dv >= version_key(mc.min_driver):
        return True, Reason(
            rule="driver-minor-version-compatibility",
            detail=(
                f"driver {driver} < {minimum} (CUDA {release}) but >= {mc.min_driver}, "
                f"which runs CUDA {mc.cuda_major}.x by minor-version compatibility "
                "(no PTX JIT of newer code)"
            ),
            source=mc.source,
        )
    floor = mc.min_driver if mc is not None else minimum
    return False, Reason(
        rule="driver-minimum",
        detail=f"driver {driver} < {floor}, the oldest that runs CUDA {cuda}",
        source=mc.source if mc is not None else tk.source,
    )


def declared_driver(cuda: str, kb: Knowledge) -> tuple[str, Reason] | None:
    """The oldest driver NVIDIA declares for a CUDA runtime: its major's minor-version
    compatibility minimum, else its toolkit's own (Table 3); None where the knowledge has no row
    for it (or `cuda` is not a version). Cited, for the report's "declared" column."""
    try:
        mc = kb.compat_for(cuda)
    except ValueError:
        return None
    if mc is not None:
        detail = f"CUDA {mc.cuda_major}.x runs on >= {mc.min_driver} (minor-version compatibility)"
        return mc.min_driver, Reason(rule="driver-minor-version-compatibility", detail=detail,
                                     source=mc.source)  # fmt: skip
    tk = kb.toolkit(cuda)
    if tk is None:
        return None
    detail = f"CUDA {tk.toolkit} needs >= {tk.min_driver}"
    return tk.min_driver, Reason(rule="driver-minimum", detail=detail, source=tk.source)


def cudnn_reason(stack: Stack, variant: Variant, kb: Knowledge) -> tuple[bool, Reason]:
    """Runtime cuDNN vs the one the release was built with: same major, runtime minor not older."""
    check = kb.cudnn_check(stack.framework)
    assert check is not None  # parse_knowledge reads one per framework
    built, runtime = variant.cudnn, stack.cudnn
    if major_minor(built) == major_minor(runtime):
        return True, Reason(
            rule="cudnn-pinned",
            detail=f"{stack.framework} {stack.framework_version} (CUDA {variant.cuda}) "
            f"is built with cuDNN {built}",
            source=variant.source,
        )
    b, r = version_key(major_minor(built)), version_key(major_minor(runtime))
    ok = built.partition(".")[0] == runtime.partition(".")[0] and r >= b
    word = "accepts" if ok else "rejects"
    return ok, Reason(
        rule="cudnn-runtime-vs-build",
        detail=f"{stack.framework} built with cuDNN {built} {word} runtime cuDNN {runtime} "
        f"({check.rule})",
        source=check.source,
    )


@dataclass(frozen=True, slots=True)
class Decision:
    expected: Expectation
    because: Reason
    checks: tuple[Reason, ...]


def placed_reason(
    cuda: str, placed: str, kb: Knowledge, cudart: str | None = None
) -> tuple[Expectation | None, Reason]:
    """A driver placed in a run (no GPU): the CUDA runtime's own version gate decides. None: the
    gate passes (the GPU stages then find no device)."""
    if placed == STUB_DRIVER:
        return Expectation(
            outcome=Outcome.FAIL, signature="stub_driver", stage=DRIVER_STAGE
        ), Reason(
            rule="driver-stub",
            detail="the CUDA toolkit's stub libcuda answers every call with "
            "cudaErrorStubLibrary (34)",
            source=STUB_SOURCE,
        )
    ok, reason = driver_reason(cuda, placed, kb, cudart)
    if ok:
        return None, reason
    return Expectation(outcome=Outcome.FAIL, signature="driver_too_old", stage=DRIVER_STAGE), reason


def expect(
    stack: Stack,
    scenario: Scenario,
    variant: Variant,
    driver: DriverTarget,
    kb: Knowledge,
    *,
    placed: str = NO_DRIVER,
    cudart: str | None = None,
) -> Decision:
    """What this stack under this scenario must show on this driver, and why.

    Failures from the environment (driver, cuDNN) and the scenario's own expectation compete: the
    one at the earliest stage is what a run will show first. A `placed` driver (NVIDIA's
    user-space driver put into a run without a GPU) replaces the host's: driver evidence.
    """
    evidence = driver.evidence if placed == NO_DRIVER else Evidence.DRIVER
    scen = (
        scenario.expectation(stack.framework, evidence)
        or (
            scenario.expectation(stack.framework, Evidence.CPU)
            if evidence is Evidence.DRIVER
            else None
        )
        or Expectation(outcome=Outcome.UNOBSERVABLE)
    )
    scen_reason = Reason(
        rule=f"scenario:{scenario.id}",
        detail=f"{scenario.title}: {scen.outcome.value} for {stack.framework} "
        f"at {evidence.value} evidence",
        source=str(scenario.where.file),
    )
    fails: list[tuple[Expectation, Reason]] = []
    passed: list[Reason] = []
    hidden: list[Reason] = []  # environment faults that cannot show at this evidence level

    ok, reason = cudnn_reason(stack, variant, kb)
    check = kb.cudnn_check(stack.framework)
    at = Evidence.CPU if evidence is Evidence.DRIVER else evidence  # no GPU either way
    stage = check.stage(at) if check else None
    if ok:
        passed.append(reason)
    elif stage is None:
        hidden.append(replace(reason, detail=f"{reason.detail}; cannot show without a GPU"))
    else:
        fail = Expectation(outcome=Outcome.FAIL, signature="cudnn_version_mismatch", stage=stage)
        fails.append((fail, reason))
    if placed == NO_DRIVER and driver.version is None:
        fails += [
            (Expectation(outcome=Outcome.FAIL, signature=row.signature, stage=row.stage),
             Reason(rule="cudnn:needs-libcuda", detail=f"cuDNN {row.cudnn}'s convolution "
                    "library loads libcuda.so, and no driver is here", source=row.source))
            for row in kb.cudnn_loads
            if row.cudnn == major_minor(stack.cudnn) and stack.framework in row.frameworks
        ]  # fmt: skip
    if placed != NO_DRIVER:
        gate, reason = placed_reason(stack.cuda, placed, kb, cudart)
        if gate is None:
            passed.append(reason)
        else:
            fails.append((gate, reason))
    elif driver.version is not None:
        refused = toolkit_reason(stack, variant, driver.version, kb)
        if refused is not None:
            start = Expectation(outcome=Outcome.FAIL, signature="driver_too_old", stage=Stage.START)
            fails.append((start, refused))
        ok, reason = driver_reason(stack.cuda, driver.version, kb, cudart)
        if ok:
            passed.append(reason)
        else:
            fail = Expectation(outcome=Outcome.FAIL, signature="driver_too_old", stage=DRIVER_STAGE)
            fails.append((fail, reason))
    if scen.outcome is Outcome.FAIL:
        fails.append((scen, scen_reason))

    if fails:
        # The earliest stage shows first; at the same stage the injected fault is the more
        # specific cause (a truncated library crashes before any version check runs).
        exp, why = min(
            fails,
            key=lambda f: (f[0].stage.order if f[0].stage else 0, f[1] is not scen_reason),
        )
    elif scen.outcome is Outcome.PASS and passed:
        # A pass is decided by the last compat row that let it through (the driver on a GPU).
        exp, why = scen, passed[-1]
    else:
        exp, why = scen, scen_reason
    considered = (*passed, *hidden, *(r for _, r in fails), scen_reason)
    rest = tuple(dict.fromkeys(r for r in considered if r != why))
    return Decision(exp, why, rest)
