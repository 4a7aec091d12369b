"""argv -> one call -> exit code. The only place that exits; HarnessError -> one message, exit 2.

Each command loads the plan, applies the selection (--shard, --stack, --cell), picks a backend
and hands over to the runner; what the options are is harness.args.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import hashlib
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from harness import host, inputs
from harness.args import MAX_JOBS, argv_where, build_parser
from harness.backends import Backend

if TYPE_CHECKING:
    from harness.backends.docker import DockerBackend
    from harness.report.rows import Rows
    from harness.report.types import Origin
from harness.backends.driverstore import DriverStore, read_driver_locks
from harness.compat import Knowledge, parse_knowledge, read_knowledge_docs
from harness.console import Console, human_bytes, on_github
from harness.diagnose import EXIT, checked_chunks, diagnosis, render_text, reproducers
from harness.drivers import DRIVER_LOCKS_TEXT, DriverLock
from harness.errors import ConfigError, HarnessError, MachineFault, choice_help
from harness.fs import atomic_write, fault_from, probe_writable, writable_dir
from harness.ids import SIZE_HELP, size_bytes
from harness.journal import JOURNAL, finished
from harness.loader import read_yaml
from harness.lock import WheelCache, cache_root, read_lock
from harness.matrix import DEFAULT_PROFILE, cells_for, expand, parse_matrix
from harness.model import DriverTarget, Plan, Scenario, Stack
from harness.plan import render
from harness.runner import Loop, ProbeRun, prepare_stacks, run_plan, work
from harness.scenarios import read_scenarios
from harness.select import parse_shard, select
from harness.signatures import Catalog, classify_chunks, read_catalog

CATALOG = "signatures.yaml"
MATRIX = "matrix.yaml"  # in the working folder: a checkout's
NO_DRIVER = DriverTarget(version=None, origin="none")


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """matrix.yaml, the knowledge, the scenarios and the catalog -> the plan of --profile."""

    plan: Plan
    kb: Knowledge
    root: Path  # the folder of matrix.yaml
    scenarios: dict[str, Scenario]
    catalog: Catalog
    drivers: DriverLock | None = None  # the driver lock: what runs can place
    disk_budget: int | None = None  # the profile's, for `run` without --disk-budget


def load(
    args: argparse.Namespace, argv: Sequence[str], driver: DriverTarget | None = None
) -> Loaded:
    name = matrix_of(args)
    path = Path(name)
    matrix = parse_matrix(read_yaml(path, display=name))
    kb = parse_knowledge(read_knowledge_docs())
    folder = path.parent / matrix.scenarios_dir
    scen_display = str(folder).removeprefix("./")
    catalog = read_catalog(folder / CATALOG, display=f"{scen_display}/{CATALOG}")
    scenarios = read_scenarios(folder, display=scen_display, known=catalog.ids)
    profile = matrix.profile(args.profile)
    if driver is None:
        driver = host.resolve_driver(args.driver, profile.driver, argv_where(argv, "--driver"))
    drivers = read_driver_locks(path.parent)
    placeable = drivers.values() if drivers else None
    installed = installed_cudart(path.parent / "images" / "locks")
    plan = expand(
        matrix, profile.name, kb, scenarios, driver, placeable=placeable, installed=installed
    )
    return Loaded(
        plan=plan, kb=kb, root=path.parent, scenarios=scenarios, catalog=catalog, drivers=drivers,
        disk_budget=profile.disk_budget,
    )  # fmt: skip


def shipped_matrix() -> Path:
    """The matrix shipped in the package, beside its scenarios and locks as in a checkout
    (harness/resources/: symbolic links to the repository's own files, copied into a wheel)."""
    found = resources.files("harness").joinpath("resources").joinpath("matrix.yaml")
    if not isinstance(found, Path):  # a zip import: the scenarios are read as files, by path
        raise HarnessError(
            f"stackmatrix's own data are not files here ({found}): install it as a wheel, "
            "or pass --matrix PATH"
        )
    return found


_UNWRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT})


def cache_dir(env: Mapping[str, str]) -> Path:
    """The cache folder (lock.cache_root), made and proved writable before any work: a cache
    the machine will not let us write (EACCES, EROFS, a full disk) is one line naming it, exit 3."""
    root = cache_root(env)
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe_writable(root)
    except OSError as exc:
        help = "make it writable, or set STACKMATRIX_CACHE to a folder you can write"
        if exc.errno in _UNWRITABLE:
            raise MachineFault(
                f"cannot write the cache {root}", detail=str(exc.strerror), help=help
            ) from None
        raise ConfigError(f"cannot use the cache {root}: {exc.strerror}", help=help) from None
    return root


def matrix_of(args: argparse.Namespace) -> str:
    """--matrix; without it (diagnose, doctor) ./matrix.yaml where there is one (a checkout),
    else the shipped matrix, so those two commands run from any folder."""
    given: str | None = args.matrix
    if given is not None:
        return given
    if os.path.lexists(MATRIX):
        return MATRIX
    return str(shipped_matrix())


def installed_cudart(locks: Path) -> dict[str, str]:
    """Stack slug -> the CUDA runtime (cudart wheel) version its committed lock installs."""
    out = {}
    for path in sorted(locks.glob("*.json")):
        lock = read_lock(path)
        if lock is None:
            continue
        for w in lock.wheels:
            if w.name in (
                "nvidia-cuda-runtime-cu11",
                "nvidia-cuda-runtime-cu12",
                "nvidia-cuda-runtime",
            ):
                out[lock.slug] = w.version
    return out


def selected(plan: Plan, args: argparse.Namespace, argv: Sequence[str]) -> Plan:
    """The plan narrowed by --shard, --stack and --cell (a selector that matches nothing: 2)."""
    shard = parse_shard(args.shard, argv_where(argv, "--shard"))
    if shard is None and not args.stack and not args.cell:
        return plan
    where = functools.partial(argv_where, argv)
    return select(plan, shard=shard, stacks=args.stack, cells=args.cell, where=where)


def interpreter(python: str, argv: Sequence[str]) -> str:
    """--python, where it names an executable file (not yet whether it is a Python 3: what runs
    it says so), a bare name found on PATH as a shell finds it (`--python python3.11`); else bad
    input, exit 2."""
    if os.sep not in python:
        python = shutil.which(python) or python
    if not os.path.isfile(python) or not os.access(python, os.X_OK):  # a folder is X_OK too
        raise ConfigError(
            f"--python {python} is not an executable interpreter"
            + (" (it is a folder)" if os.path.isdir(python) else ""),
            where=argv_where(argv, "--python"),
            help="give the path of a python, e.g. /opt/venv/bin/python",
        )
    return python


def backend_for(
    args: argparse.Namespace, argv: Sequence[str], loaded: Loaded, console: Console
) -> tuple[Backend, Plan]:
    """The backend --backend names, and the plan it runs (with --python: that interpreter's
    stack under the profile's scenarios)."""
    env, plan = os.environ, loaded.plan
    if args.backend == "local":
        from harness.backends.local import LocalBackend

        local = LocalBackend(root=cache_dir(env), env=env, locks=loaded.root / "images" / "locks")
        if args.python:
            stack = local.given(Path(interpreter(args.python, argv)))
            scens = [loaded.scenarios[s] for s in sorted({c.scenario for c in plan.cells})]
            plan = replace(plan, cells=tuple(cells_for(stack, scens, loaded.kb, plan.driver)))
        return local, plan
    if args.python:
        raise ConfigError(
            "--python needs --backend local",
            where=argv_where(argv, "--python"),
            help="add --backend local (Docker runs use the stack's image)",
        )
    relock, images = getattr(args, "relock", False), getattr(args, "image", False)
    return docker_backend(loaded, console, relock=relock, images=images), plan


def docker_backend(
    loaded: Loaded, console: Console, *, relock: bool = False, images: bool = False
) -> DockerBackend:
    from harness.backends.docker import DockerBackend
    from harness.backends.engine import Engine, connect, engine_host
    from harness.backends.envs import EnvStore
    from harness.backends.images import Builder, Paths
    from harness.render import read_templates

    env = os.environ

    @functools.cache
    def engine() -> Engine:  # connected on first use: --dry-run never connects
        return Engine(connect(env), engine_host(env))

    paths = Paths(
        images=loaded.root / "images", cache=cache_dir(env), logs=loaded.root / "reports/logs"
    )
    templates = read_templates(paths.images)
    builder = Builder(
        kb=loaded.kb, engine=engine, paths=paths, console=console, templates=templates,
        relock=relock,
    )  # fmt: skip
    return DockerBackend(builder, engine, envs=EnvStore(paths.cache), images=images)


def engine_of(backend: Backend) -> str:
    """What runs the cells, as the journal records it: the Docker engine and its version (the
    engine connected now), or the backend's name."""
    engine = getattr(backend, "engine", None)
    if engine is None:
        return backend.name
    from harness.backends.engine import engine_info

    with engine.answering():
        version = engine_info(engine.client).get("Version")
    return f"Docker {version if isinstance(version, str) else '?'}"


def _sweep(backend: Backend, console: Console) -> None:
    for name in backend.sweep():
        console.step("sweep", f"removed {name}, left by a harness process that was killed")


def cmd_plan(args: argparse.Namespace, argv: Sequence[str]) -> int:
    plan = selected(load(args, argv).plan, args, argv)
    # what each GitHub job passes to `stackmatrix run`, so its --shard k/N splits this same plan
    base = ["--profile", plan.profile, "--driver", plan.driver.to_json()]
    base += [w for g in args.stack for w in ("--stack", g)]
    base += [w for g in args.cell for w in ("--cell", g)]
    sys.stdout.write(render(plan, args.format, max_jobs=args.max_jobs, args=base))
    return 0


def cmd_build(args: argparse.Namespace, argv: Sequence[str]) -> int:
    # What is built does not depend on the driver: plan for none, so no GPU probing happens.
    loaded = load(args, argv, NO_DRIVER)
    console = Console()
    backend, plan = backend_for(args, argv, loaded, console)
    _sweep(backend, console)
    targets = prepare_stacks(selected(plan, args, argv), backend, console)
    built = sum(t.status == "built" for t in targets)
    down = sum(t.downloaded for t in targets)
    console.line(
        f"{len(targets)} stacks: {built} built, {len(targets) - built} ready or cache hits, "
        f"{human_bytes(down)} downloaded"
    )
    if args.json:
        atomic_write(Path(args.json), json.dumps([t.to_json() for t in targets], indent=1) + "\n")
    return 0


def jobs_of(args: argparse.Namespace, argv: Sequence[str], plan: Plan) -> int:
    """--jobs, checked; without it 2 for Docker cells that need no GPU (a build overlaps the
    cells before it, two cells share the cores), else 1."""
    jobs: int | None = args.jobs
    if jobs is None:
        return 2 if args.backend == "docker" and plan.driver.version is None else 1
    where = argv_where(argv, "--jobs")
    if not 1 <= jobs <= MAX_JOBS:
        raise ConfigError(
            f"--jobs {jobs}: give a number from 1 to {MAX_JOBS}",
            where=where,
            help="--jobs 1 runs one thing at a time; 2 builds the next image while cells run",
        )
    if jobs > 1 and args.backend == "local":
        raise ConfigError(
            f"--jobs {jobs}: the local backend runs one thing at a time",
            where=where,
            help="drop --jobs (or give --jobs 1), or run the cells with --backend docker",
        )
    return jobs


def _loop(
    args: argparse.Namespace,
    loaded: Loaded,
    backend: Backend,
    *,
    force: bool = False,
    keep: Callable[[ProbeRun], None] | None = None,
    jobs: int = 1,
) -> Loop:
    return Loop(
        backend=backend,
        scenarios=loaded.scenarios,
        results=Path(args.results),
        catalog=loaded.catalog,
        console=Console(),
        wheels=WheelCache(cache_dir(os.environ)),
        drivers=DriverStore(loaded.drivers, cache_dir(os.environ)) if loaded.drivers else None,
        machine=host.machine(engine_of(backend)),
        force=force,
        keep=keep,
        jobs=jobs,
    )


def results_folder(profile: str) -> str:
    """Where a profile's journal lives when --results is not given: smoke's in reports/results,
    another's in reports/<profile>/results (beside its report), as `nox -s matrix` has it. A
    profile's name is an id (matrix.schema.json): a safe path part."""
    return "reports/results" if profile == DEFAULT_PROFILE else f"reports/{profile}/results"


def journal_folder(args: argparse.Namespace, argv: Sequence[str], *, look: bool) -> None:
    """--results, where the journal goes: a file there, or a folder that cannot be written, is
    bad input (exit 2) before anything is built or run. `look`: only look (a file there), make
    nothing yet: a command refused for another reason leaves no folder behind."""
    path, help = Path(args.results), "give --results a folder you can write to"
    if not look:
        writable_dir(path, "--results")
    elif path.exists() and not path.is_dir():
        raise ConfigError(
            f"--results {path} is a file, not a folder",
            where=argv_where(argv, "--results"),
            help=help,
        )


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Prepare each stack (an image, a venv), then run its cells into the journal."""
    loaded = load(args, argv)
    console = Console()
    backend, plan = backend_for(args, argv, loaded, console)
    args.results = args.results or results_folder(plan.profile)
    journal_folder(args, argv, look=True)
    plan = selected(plan, args, argv)
    jobs = jobs_of(args, argv, plan)
    if args.disk_budget:
        budget = parse_size(args.disk_budget, "--disk-budget", argv)
        if args.backend != "docker":
            raise ConfigError(
                "--disk-budget: only the Docker backend keeps stacks in the cache",
                where=argv_where(argv, "--disk-budget"),
                help="drop --disk-budget, or run with --backend docker",
            )
        backend.budget = budget  # type: ignore[attr-defined]
    elif loaded.disk_budget is not None and args.backend == "docker" and not args.dry_run:
        backend.budget = loaded.disk_budget  # type: ignore[attr-defined]
        console.line(
            f"disk budget {human_bytes(loaded.disk_budget)}: the profile's "
            f"({plan.profile}'s disk_budget in matrix.yaml; --disk-budget SIZE sets another)"
        )
    if args.dry_run:
        done = {} if args.rerun else finished(Path(args.results))
        items = work(plan, loaded.scenarios, backend.identity, done, catalog=loaded.catalog.digest)
        for w in items:
            console.line(f"{w.action:8s} {w.cell.id}")
        runs = sum(w.action == "run" for w in items)
        console.line(f"{len(items)} cells: {runs} to run, {len(items) - runs} cached or not here")
        return 0
    if args.require_gpu and host.machine().gpu is None:
        raise ConfigError(
            "--require-gpu: no NVIDIA GPU found on this host (NVML and nvidia-smi saw none)",
            where=argv_where(argv, "--require-gpu"),
            help="run it on the GPU host; without --require-gpu the cells run with cpu evidence "
            "(GPU stages skipped), which is what a machine without a GPU can show",
        )
    journal_folder(args, argv, look=False)
    _sweep(backend, console)
    atomic_write(Path(args.results) / "plan.json", render(plan, "json"))
    results, hits = run_plan(plan, _loop(args, loaded, backend, force=args.rerun, jobs=jobs))
    drift = [r for r in results if r.drift]
    console.line(
        f"{len(plan.cells)} cells: {len(results)} run, {hits} cache hits, {len(drift)} drift; "
        f"journal: {Path(args.results) / JOURNAL}"
    )
    for r in drift:
        console.line(f"DRIFT {r.cell}: expected {r.expected.text}, got {r.verdict}")
    return 1 if drift and not args.allow_drift else 0


def cmd_reproduce(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run one cell again, whatever the journal holds; print what a user needs to see it."""
    loaded = load(args, argv)
    console = Console()
    backend, plan = backend_for(args, argv, loaded, console)
    args.results = args.results or results_folder(plan.profile)
    journal_folder(args, argv, look=True)
    ids = [c.id for c in plan.cells]
    if args.cell not in ids:
        raise ConfigError(
            f"no cell '{args.cell}' in profile '{plan.profile}'",
            where=argv_where(argv, "reproduce"),
            help=choice_help(args.cell, ids, "cells"),
        )
    plan = replace(plan, cells=tuple(c for c in plan.cells if c.id == args.cell))
    journal_folder(args, argv, look=False)
    probe: list[ProbeRun] = []
    results, _ = run_plan(plan, _loop(args, loaded, backend, force=True, keep=probe.append))
    if not results:
        raise HarnessError(f"{args.cell} is not run by the {backend.name} backend on this machine")
    [result] = results
    for e in probe[0].report.events if probe else ():
        state = f"skipped: {e.skipped}" if e.skipped else f"FAILED: {e.error_message}"
        print(f"  {e.stage.value:11s} {'ok' if e.ok and not e.skipped else state}")
    word = "DRIFT" if result.drift else "as expected"
    print(f"verdict: {result.verdict} ({word}; expected {result.expected.text})")
    if result.observed and result.observed.decisive_line:
        print(f"decisive line: {result.observed.decisive_line}")
    print(f"journal: {json.dumps(result.to_json(), sort_keys=True)}")
    command = getattr(backend, "command", None)
    if probe and command is not None:  # the very run that was journaled, as one command
        print(f"run it yourself:\n  {command(probe[0].spec, probe[0].target)}")
    return 1 if result.drift else 0


def cmd_diagnose(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """A user's log -> signature, cause, fix, reproducing cells. Exit 0 a cause (or a consequence
    found alone), 1 an unknown failure, 3 no failure found, 2 bad input."""
    loaded = load(args, argv, DriverTarget(version=None, origin="none"))
    name = "standard input" if args.log == "-" else args.log
    help = "give the path of a log file, or - to read standard input"
    if args.log == "-":
        if sys.stdin is None:  # started with stdin closed (`<&-`)
            raise ConfigError(
                f"cannot read {name}: standard input is closed",
                where=argv_where(argv, "diagnose"),
                help=help,
            )
        stream: BinaryIO = sys.stdin.buffer
    else:  # a regular file only: a FIFO would block, /dev/zero never ends
        stream = os.fdopen(inputs.open_regular(Path(args.log), name, help), "rb")
    context = _Context()
    with stream:
        try:
            chunks = context.keep(checked_chunks(stream, name))
            verdict = classify_chunks(chunks, loaded.catalog)
        except (OSError, ValueError) as exc:  # ValueError: a closed file
            raise ConfigError(
                f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
    flag = f" --profile {args.profile}" if args.profile else ""
    found = reproducers(verdict.signature, loaded.plan, loaded.scenarios, profile_flag=flag)
    result = diagnosis(verdict, loaded.catalog, found, context.text())
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=1) + "\n")
    else:
        sys.stdout.write(render_text(result))
    return EXIT[result.verdict]


class _Context:
    """The head and tail of a log as it streams by: where versions and paths are read from."""

    SIZE = 64 << 10

    def __init__(self) -> None:
        self.head, self.tail = b"", b""

    def keep(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            if len(self.head) < self.SIZE:
                self.head += chunk[: self.SIZE - len(self.head)]
            self.tail = (self.tail + chunk)[-self.SIZE :]
            yield chunk

    def text(self) -> tuple[str, ...]:
        return tuple(part.decode("utf-8", "replace") for part in (self.tail, self.head) if part)


def catalog_of(matrix_path: str) -> Catalog:
    """The signature catalog beside the scenarios that matrix.yaml names."""
    matrix = parse_matrix(read_yaml(Path(matrix_path), display=matrix_path))
    folder = Path(matrix_path).parent / matrix.scenarios_dir
    return read_catalog(folder / CATALOG, display=f"{folder}/{CATALOG}".removeprefix("./"))


ANNOTATIONS = 50  # drift annotations at most (GitHub shows 10 per step anyway)
PARTIAL_EXIT = 3  # the results do not cover the plan, or nothing finished at all


def report_origin(matrix_path: str, env: Mapping[str, str]) -> Origin:
    """The harness version, its git commit (GITHUB_SHA on GitHub; else `git rev-parse`) and the
    digest of the matrix file the report was made against."""
    from harness import __version__, proc
    from harness.report.types import Origin

    commit = env.get("GITHUB_SHA", "")[:12]
    if not commit:
        where = str(Path(matrix_path).resolve().parent)
        done = proc.run(["git", "-C", where, "rev-parse", "--short=12", "HEAD"], timeout=10)
        commit = done.stdout.strip() if done.returncode == 0 else ""
        # what decides a result, changed or added since that commit: not made by it alone
        what = ["harness", "scenarios", "images", Path(matrix_path).name]
        status = ["git", "-C", where, "status", "--porcelain", "--", *what]
        changed = proc.run(status, timeout=10) if commit else None
        if changed is not None and changed.returncode == 0 and changed.stdout.strip():
            commit += " with uncommitted changes"
    try:
        digest = "sha256:" + hashlib.sha256(Path(matrix_path).read_bytes()).hexdigest()[:16]
    except OSError:
        digest = "unknown"
    return Origin(version=__version__, commit=commit or "unknown", matrix=digest)


def cmd_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Journals (shards merge) -> reports/. Exit 1 on drift unless --allow-drift; 3 when the
    results do not cover the plan unless --allow-partial; 3 when no cell finished at all."""
    from harness.report import read  # without pandas: reading starts while pandas loads

    results = [Path(r) for r in (args.results or ["reports/results"])]
    for r in results:
        if not (r / JOURNAL).is_file():
            raise ConfigError(
                f"no results journal in {r} (looked for {r / JOURNAL})",
                where=argv_where(argv, "--results"),
                help="run `stackmatrix run` first, or pass the folder it wrote with --results",
            )
    writable_dir(Path(args.out), "--out")
    loaded: list[Catalog] = []

    def meanwhile() -> None:  # while a forked child reads a large journal's second part
        import harness.report.write  # noqa: F401 (pandas, for this command only)

        loaded.append(catalog_of(args.matrix))

    # no cycle collection from the first record read to the last file written: between
    # reading and writing it would walk every row once more (read.cycles_uncollected)
    with read.cycles_uncollected():
        runs = read.read_rows(results, meanwhile=meanwhile)
        return _reported(args, argv, results, runs, loaded[0])


def _reported(
    args: argparse.Namespace,
    argv: Sequence[str],
    results: list[Path],
    runs: Rows,
    loaded: Catalog,
) -> int:
    """cmd_report's report written from the rows read, and its exit status."""
    from harness.report import write_all

    narrow = args.shard or args.stack or args.cell
    choose = (lambda plan: selected(plan, args, argv)) if narrow else None
    console = Console(sys.stdout, ci=on_github(os.environ))
    with console.group("stackmatrix report"):
        summary = write_all(
            results,
            Path(args.out),
            catalog=loaded.signatures,
            env=os.environ,
            choose=choose,
            origin=report_origin(args.matrix, os.environ),
            installed=installed_cudart(Path(args.matrix).parent / "images" / "locks"),
            here=host.host_id(),
            rows=runs,
        )
        sys.stdout.write(summary.text())
    for cell, why in list(zip(summary.drift, summary.why, strict=False))[:ANNOTATIONS]:
        console.annotate("error", f"{cell}: {why}", title="stackmatrix drift")
    if summary.empty:
        console.annotate("error", "no cell has a result", title="stackmatrix: empty run")
        print("error: no cell has a result: an empty run is no evidence", file=sys.stderr)
        return PARTIAL_EXIT
    if summary.drift and not args.allow_drift:
        return 1
    if summary.partial and not args.allow_partial:
        console.annotate("error", summary.completeness, title="stackmatrix: partial results")
        print(
            f"error: {summary.completeness}\n"
            "help: report every shard together, or pass --allow-partial for a part on its own",
            file=sys.stderr,
        )
        return PARTIAL_EXIT
    return 0


def cmd_doctor(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """This machine: driver, GPUs, CUDA/cuDNN libraries on the loader path, what each framework
    loads, and what will fail before it does. Exit 1 when something will."""
    from harness import doctor

    catalog = catalog_of(matrix_of(args))
    python = interpreter(args.python or sys.executable, argv)
    kb = parse_knowledge(read_knowledge_docs())
    report = doctor.run(python=python, env=os.environ, kb=kb, catalog=catalog)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=1) + "\n")
    else:
        sys.stdout.write(report.text())
    return report.exit_code


def cmd_render(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Print a stack's Dockerfile and files, to build elsewhere (e.g. FROM nvidia/cuda)."""
    loaded = load(args, argv, NO_DRIVER)
    wanted = args.stack.split("/")[0]
    stacks = {c.stack.slug: c.stack for c in loaded.plan.cells}
    if wanted not in stacks:
        raise ConfigError(
            f"no stack '{wanted}' in profile '{loaded.plan.profile}'",
            where=argv_where(argv, "render"),
            help=choice_help(wanted, stacks, "stacks"),
        )
    spec = docker_backend(loaded, Console()).builder.render(stacks[wanted])
    files = {"Dockerfile": spec.dockerfile, **dict(spec.files)}
    if args.out:  # a folder: an existing file there is refused, never written through
        writable_dir(Path(args.out), "--out")
    for name, text in files.items():
        if args.out:
            atomic_write(Path(args.out) / name, text)
        else:
            sys.stdout.write(f"==> {name} <==\n{text}" + ("" if text.endswith("\n") else "\n"))
    if args.out:
        print(f"wrote {', '.join(files)} to {args.out}", file=sys.stderr)
    return 0


def cmd_drivers(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """The driver locks: each placeable driver's branch, version, the CUDA version its libcuda
    reports, and where its packages' sha256 were read."""
    from harness.backends.driverstore import lock_drivers
    from harness.drivers import version_key_of

    root = Path(args.matrix).parent
    if args.profile is not None:  # one lock serves every profile; a profile given must exist
        parse_matrix(read_yaml(Path(args.matrix), display=args.matrix)).profile(args.profile)
    cache = cache_dir(os.environ)
    lock = lock_drivers(root, cache) if args.lock else read_driver_locks(root)
    if lock is None:
        raise ConfigError(
            f"no driver lock: {root / DRIVER_LOCKS_TEXT} is missing",
            help="`stackmatrix drivers --lock` writes them (the archives must be reachable)",
        )
    store = DriverStore(lock, cache)
    print(f"{'branch':<7} {'driver':<11} {'CUDA':<5} {'packages':<58} source")
    for d in sorted(lock.drivers, key=version_key_of):
        where = store.folder(d.driver) if args.fetch else None
        pkgs = ", ".join(f"{p.package}={p.version} ({p.suite})" for p in d.packages)
        line = f"{d.branch:<7} {d.driver:<11} {d.cuda or '-':<5} {pkgs:<58} {d.source}"
        print(line + (f"  -> {where}" if where else ""))
    return 0


def parse_size(text: str, option: str, argv: Sequence[str]) -> int:
    """'40GB', '40G', '500MiB', '1000000' -> bytes (K, M, G, T: powers of 1000; with i: 1024)."""
    size = size_bytes(text)
    if size is None:
        raise ConfigError(
            f"{option} {text!r}: not a size", where=argv_where(argv, option), help=SIZE_HELP
        )
    return size


def cmd_gc(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Remove what no stack of matrix.yaml needs (with --stack: what those stacks prepared),
    then, with --budget, evict until the cache is within it. What a running harness holds stays."""
    from harness.backends import keep
    from harness.render import IMAGE_REPO, STEP_REPO

    budget = parse_size(args.budget, "--budget", argv) if args.budget else None
    loaded = load(args, argv, NO_DRIVER)
    console = Console()
    backend = docker_backend(loaded, console)
    store, wheels = backend.envs, backend.builder.wheels
    assert store is not None  # the backend keeps environments unless --image
    wanted, wanted_images = set(), set()
    for stack in every_stack(loaded, Path(matrix_of(args))):
        with contextlib.suppress(HarnessError):  # not runnable here: nothing of it is kept
            ident = backend.identity(stack)
            if ident is not None:
                wanted.add(ident.rpartition(":")[2])
            spec = backend.builder.identity(stack)
            built = backend.builder.built_ref(stack, spec.lock) if spec and spec.lock else None
            if built is not None:
                wanted_images.add(built)
    _sweep(backend, console)
    engine = backend.engine
    images = engine.images_of(IMAGE_REPO) + engine.images_of(STEP_REPO)
    removed = keep.collect(
        store, wanted=wanted, stacks=args.stack, images=images,
        remove_image=engine.remove_image, wanted_images=wanted_images,
    )  # fmt: skip
    if budget is not None:
        removed += keep.over_budget(store, wheels, budget, keep=set(), needed_wheels=set())
    for r in removed:
        console.step("gc", r.line())
    parts = keep.usage(store, wheels)
    said = ", ".join(f"{k} {human_bytes(v)}" for k, v in parts.items())
    freed = sum(r.bytes for r in removed)
    console.line(
        f"{len(removed)} removed ({human_bytes(freed)}); the cache {store.root.parent} now holds "
        f"{human_bytes(sum(parts.values()))}: {said}"
    )
    return 0


def every_stack(loaded: Loaded, path: Path) -> list[Stack]:
    """The stacks of every profile of the matrix file (what `harness gc` keeps)."""
    matrix = parse_matrix(read_yaml(path, display=str(path)))
    out: dict[str, Stack] = {}
    for profile in matrix.profiles:
        plan = expand(
            matrix, profile.name, loaded.kb, loaded.scenarios, NO_DRIVER,
            placeable=loaded.drivers.values() if loaded.drivers else None,
            installed=installed_cudart(loaded.root / "images" / "locks"),
        )  # fmt: skip
        out.update((c.stack.slug, c.stack) for c in plan.cells)
    return list(out.values())


COMMANDS = {
    "plan": cmd_plan,
    "gc": cmd_gc,
    "build": cmd_build,
    "run": cmd_run,
    "reproduce": cmd_reproduce,
    "diagnose": cmd_diagnose,
    "report": cmd_report,
    "doctor": cmd_doctor,
    "render": cmd_render,
    "drivers": cmd_drivers,
}


def _terminate(signum: int, frame: object) -> None:
    # `kill` (SIGTERM) unwinds like Ctrl-C, so every `finally` removes what it made.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        signal.signal(signal.SIGTERM, _terminate)
    args = build_parser(COMMANDS).parse_args(args_list)
    try:
        code: int = args.func(args, args_list)
        return code
    except HarnessError as exc:
        if args.traceback:
            raise
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a full or read-only disk met by a write that does not say so itself
        fault = fault_from(exc, Path(exc.filename if isinstance(exc.filename, str) else "."))
        if fault is None or args.traceback:
            raise
        print(fault.render(), file=sys.stderr)
        return fault.exit_code
