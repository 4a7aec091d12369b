"""argv -> one call -> exit code. The only place that exits; HarnessError -> one message, exit 2."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from harness import __version__, host
from harness.backends.docker import DockerBackend, connect, docker_run_command
from harness.base import read_recipe
from harness.build import Builder, Paths, build_plan, group
from harness.compat import Knowledge, parse_knowledge, read_knowledge_docs
from harness.console import Console, human_bytes
from harness.diagnose import checked_chunks, diagnosis, render_text, reproducers
from harness.errors import ConfigError, HarnessError, choice_help
from harness.fs import atomic_write
from harness.journal import JOURNAL
from harness.loader import read_yaml
from harness.lock import WheelCache, cache_root, host_lock, read_lock
from harness.matrix import cells_for, expand, parse_matrix, shard
from harness.model import Cell, DriverTarget, Lock, Plan, Scenario, Stack, Where
from harness.plan import FORMATS, render
from harness.render import cuda_base_ref, image_spec, read_templates
from harness.runner import (
    Backend,
    Execute,
    ProbeRun,
    cell_key,
    prepare,
    probe_run,
    run_cells,
)
from harness.scenarios import read_scenarios
from harness.signatures import UNKNOWN, Catalog, classify_chunks, read_catalog

CATALOG = "signatures.yaml"

DRIVER_RE = re.compile(r"^\d+(\.\d+){1,3}$")
SHARD_RE = re.compile(r"^(\d+)/(\d+)$")


def argv_where(argv: Sequence[str], option: str) -> Where:
    """The place of an option's value on the command line, as <command line>:1:column."""
    col = 1
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return Where("<command line>", 1, col + len(arg) + 1)
        if arg.startswith(option + "="):
            return Where("<command line>", 1, col + len(option) + 1)
        col += len(arg) + 1
    return Where("<command line>", 1, 1)


def parse_shard(text: str | None, where: Where) -> tuple[int, int] | None:
    if text is None:
        return None
    m = SHARD_RE.match(text)
    if m is None or not (1 <= int(m.group(1)) <= int(m.group(2))):
        raise ConfigError(
            f"bad --shard '{text}'",
            where=where,
            help="write I/N with 1 <= I <= N, e.g. --shard 1/4 (shards count from 1)",
        )
    return int(m.group(1)), int(m.group(2))


def resolve_driver(flag: str | None, profile_driver: str | None, where: Where) -> DriverTarget:
    """--driver, else the host's (NVML / nvidia-smi), else the profile's, else none."""
    if flag is not None:
        if flag == "none":
            return DriverTarget(version=None, origin="flag")
        if not DRIVER_RE.match(flag):
            raise ConfigError(
                f"bad --driver '{flag}'",
                where=where,
                help="give a Linux driver version as nvidia-smi prints it (e.g. 535.104.05), "
                "or 'none' for a machine without a GPU",
            )
        return DriverTarget(version=flag, origin="flag")
    found = host.detect_driver()
    if found.version is not None:
        return found
    if profile_driver is not None and profile_driver != "none":
        return DriverTarget(version=profile_driver, origin="profile")
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """matrix.yaml, the knowledge, the scenarios and the catalog -> the plan of --profile."""

    plan: Plan
    kb: Knowledge
    root: Path  # the folder of matrix.yaml
    scenarios: dict[str, Scenario]
    catalog: Catalog


def load_plan(
    args: argparse.Namespace, argv: Sequence[str], driver: DriverTarget | None = None
) -> tuple[Plan, Knowledge, Path]:
    loaded = load(args, argv, driver)
    return loaded.plan, loaded.kb, loaded.root


def load(
    args: argparse.Namespace, argv: Sequence[str], driver: DriverTarget | None = None
) -> Loaded:
    path = Path(args.matrix)
    matrix = parse_matrix(read_yaml(path, display=args.matrix))
    kb = parse_knowledge(read_knowledge_docs())
    folder = path.parent / matrix.scenarios_dir
    scen_display = str(folder).removeprefix("./")
    catalog = read_catalog(folder / CATALOG, display=f"{scen_display}/{CATALOG}")
    scenarios = read_scenarios(folder, display=scen_display, known=catalog.ids)
    profile = matrix.profile(args.profile)
    if driver is None:
        driver = resolve_driver(args.driver, profile.driver, argv_where(argv, "--driver"))
    plan = expand(matrix, profile.name, kb, scenarios, driver)
    return Loaded(plan=plan, kb=kb, root=path.parent, scenarios=scenarios, catalog=catalog)


def cmd_plan(args: argparse.Namespace, argv: Sequence[str]) -> int:
    shard_spec = parse_shard(args.shard, argv_where(argv, "--shard"))
    plan, _, _ = load_plan(args, argv)
    if shard_spec is not None:
        plan = shard(plan, *shard_spec)
    sys.stdout.write(render(plan, args.format))
    return 0


def _builder(args: argparse.Namespace, kb: Knowledge, root: Path, console: Console) -> Builder:
    env = os.environ
    paths = Paths(images=root / "images", cache=cache_root(env), logs=root / "reports" / "logs")
    backend = DockerBackend(connect(env))
    for name in backend.sweep():
        console.step("sweep", f"removed {name}, left by a harness process that was killed")
    return Builder(
        kb=kb,
        backend=backend,
        paths=paths,
        console=console,
        templates=read_templates(paths.images),
        relock=getattr(args, "relock", False),
    )


def cmd_build(args: argparse.Namespace, argv: Sequence[str]) -> int:
    # Images do not depend on the driver: plan for none, so no GPU probing happens here.
    plan, kb, root = load_plan(args, argv, DriverTarget(version=None, origin="none"))
    console = Console()
    start = time.monotonic()
    results = build_plan(_builder(args, kb, root, console), plan, args.stack)
    built = sum(r.status == "built" for r in results)
    hits = sum(r.status == "cache-hit" for r in results)
    down = sum(r.downloaded for r in results)
    console.line(
        f"{len(results)} stacks: {built} built, {hits} cache hits, "
        f"{human_bytes(down)} downloaded, {time.monotonic() - start:.1f} s"
    )
    if args.json:
        atomic_write(Path(args.json), json.dumps([r.to_json() for r in results], indent=1) + "\n")
    return 0


def _cells(
    loaded: Loaded, builder: Builder, console: Console, only: str | None = None
) -> tuple[list[tuple[Cell, str, str]], Execute]:
    """(cell, image, key) for every runnable cell, and how to run one: images built or reused."""
    plan, scenarios, catalog = loaded.plan, loaded.scenarios, loaded.catalog
    gpu = plan.driver.version is not None
    work: list[tuple[Cell, str, str]] = []
    runs: dict[str, Callable[[], ProbeRun]] = {}
    for stack, cell_ids in group(plan):
        if only is not None and only not in cell_ids:
            continue
        job, _ = builder.job(stack, cell_ids)
        built = builder.build(job)
        if built.status == "render-only":
            console.step("run", f"{stack.slug}: {len(cell_ids)} cells not run here (cuda flavour)")
            continue
        lock = job.spec.lock
        assert lock is not None
        for cell in (c for c in plan.cells if c.stack == stack and only in (None, c.id)):
            scen = scenarios[cell.scenario]
            key = cell_key(cell, built.ref, scen, plan.driver.to_json(), catalog.digest)
            work.append((cell, built.ref, key))
            runs[cell.id] = partial(
                _run_prepared,
                builder.backend,
                stack=stack,
                image=built.ref,
                scenario=scen,
                lock=lock,
                cache=builder.wheels,
                gpu=gpu,
            )
    return work, lambda cell: runs[cell.id]()


def _run_prepared(
    backend: Backend,
    *,
    stack: Stack,
    image: str,
    scenario: Scenario,
    lock: Lock,
    cache: WheelCache,
    gpu: bool,
) -> ProbeRun:
    spec, mounts = prepare(
        stack=stack, image=image, scenario=scenario, lock=lock, cache=cache, gpu=gpu
    )
    return probe_run(backend, spec, mounts)


def _local_cells(
    loaded: Loaded, args: argparse.Namespace, console: Console, only: str | None = None
) -> tuple[Plan, list[tuple[Cell, str, str]], Execute]:
    """--backend local: each stack's venv from its lock (or the --python interpreter's stack);
    `only`: just that cell's stack and the cell (none where the plan has no such cell)."""
    from harness.backends.local import LocalBackend

    env = os.environ
    backend = LocalBackend(root=cache_root(env), env=env)
    for name in backend.sweep():
        console.step("sweep", f"removed {name}, left by a harness process that was killed")
    cache = WheelCache(cache_root(env))
    plan, gpu = loaded.plan, loaded.plan.driver.version is not None
    images: dict[Stack, tuple[str, Lock]] = {}
    if args.python:
        image, stack = backend.use_python(Path(args.python))
        chosen = sorted({c.scenario for c in plan.cells})
        scens = [loaded.scenarios[s] for s in chosen]
        cells = cells_for(stack, scens, loaded.kb, plan.driver)
        plan = replace(plan, cells=tuple(cells))
        images[stack] = (image, host_lock(stack))
    selected = [c for c in plan.cells if only in (None, c.id)]
    wanted = {c.stack for c in selected}
    for stack, _ in group(plan):
        if stack in images or stack not in wanted:
            continue
        if stack.base != "offline":
            console.step("run", f"{stack.slug}: not run locally (its CUDA comes from the image)")
            continue
        lock = read_lock(loaded.root / "images" / "locks" / f"{stack.slug}.json")
        if lock is None:
            raise HarnessError(
                f"no lock for {stack.slug} in images/locks/",
                help="`harness build --stack SLUG --relock` on a machine with Docker writes it",
            )
        images[stack] = (backend.ensure_venv(lock, cache), lock)
        console.step("venv", f"{stack.slug}: {images[stack][0]}")
    work, runs = [], {}
    for cell in selected:
        if cell.stack not in images:
            continue
        image, lock = images[cell.stack]
        scen = loaded.scenarios[cell.scenario]
        key = cell_key(cell, image, scen, plan.driver.to_json(), loaded.catalog.digest)
        work.append((cell, image, key))
        # prepared when run, not now: a cache hit fetches no fault wheel
        runs[cell.id] = partial(
            _run_prepared, backend, stack=cell.stack, image=image, scenario=scen, lock=lock,
            cache=cache, gpu=gpu,
        )  # fmt: skip
    return plan, work, lambda cell: runs[cell.id]()


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Build (or reuse) each stack's image (or venv), then run its cells into the journal."""
    loaded = load(args, argv)
    plan = loaded.plan
    console = Console()
    results_dir = Path(args.results)
    machine = host.machine()
    if args.require_gpu and machine.gpu is None:
        raise ConfigError(
            "--require-gpu: no NVIDIA GPU found on this host (NVML and nvidia-smi saw none)",
            where=argv_where(argv, "--require-gpu"),
            help="run it on the GPU host; without --require-gpu the cells run with cpu evidence "
            "(GPU stages skipped), which is what a machine without a GPU can show",
        )
    if args.backend == "local":
        plan, work, execute = _local_cells(loaded, args, console)
    else:
        _no_python(args, argv)
        work, execute = _cells(loaded, _builder(args, loaded.kb, loaded.root, console), console)
    write_plan(results_dir, plan)
    start = time.monotonic()
    results = run_cells(
        work,
        execute,
        results=results_dir,
        backend=args.backend,
        console=console,
        catalog=loaded.catalog,
        machine=machine,
    )
    drift = [r for r in results if r.drift]
    console.line(
        f"{len(work)} cells: {len(results)} run, {len(work) - len(results)} cache hits, "
        f"{len(drift)} drift, {time.monotonic() - start:.1f} s; journal: "
        f"{results_dir / JOURNAL}"
    )
    for r in drift:
        console.line(
            f"DRIFT {r.cell}: expected {_verdict(r.expected.to_json())}, "
            f"got {r.status} {_verdict(r.observed.to_json() if r.observed else {})}"
        )
    return 1 if drift and not args.allow_drift else 0


def _no_python(args: argparse.Namespace, argv: Sequence[str]) -> None:
    if args.python:
        raise ConfigError(
            "--python needs --backend local",
            where=argv_where(argv, "--python"),
            help="add --backend local (Docker runs use the stack's image)",
        )


def _known_cell(cell: str, plan: Plan, argv: Sequence[str]) -> None:
    ids = [c.id for c in plan.cells]
    if cell not in ids:
        raise ConfigError(
            f"no cell '{cell}' in profile '{plan.profile}'",
            where=argv_where(argv, "reproduce"),
            help=choice_help(cell, ids, "cells"),
        )


def cmd_reproduce(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run one cell again, whatever the journal holds; print what a user needs to see it."""
    loaded = load(args, argv)
    console = Console()
    if args.backend == "local":  # with --python the cells are the interpreter's stack's
        plan, work, execute = _local_cells(loaded, args, console, only=args.cell)
        _known_cell(args.cell, plan, argv)
    else:
        _no_python(args, argv)
        _known_cell(args.cell, loaded.plan, argv)
        builder = _builder(args, loaded.kb, loaded.root, console)
        work, execute = _cells(loaded, builder, console, only=args.cell)
    if not work:
        raise HarnessError(
            f"{args.cell} is a cuda-flavour cell: it runs where nvidia/cuda can be pulled",
            help=f"`harness render {args.cell}` prints its Dockerfile",
        )
    cell = work[0][0]
    probe: list[ProbeRun] = []

    def run_and_keep(c: Cell) -> ProbeRun:
        probe.append(execute(c))
        return probe[-1]

    [result] = run_cells(
        work,
        run_and_keep,
        results=Path(args.results),
        backend=args.backend,
        console=console,
        catalog=loaded.catalog,
        force=True,
        machine=host.machine(),
    )
    for e in probe[0].report.events if probe else ():
        state = (
            "ok"
            if e.ok and not e.skipped
            else (f"skipped: {e.skipped}" if e.skipped else f"FAILED: {e.error_message}")
        )
        print(f"  {e.stage.value:11s} {state}")
    word = "DRIFT" if result.drift else "as expected"
    seen = _verdict(result.observed.to_json()) if result.observed else ""
    print(f"verdict: {result.status} {seen} ({word}; expected {_verdict(cell.expected.to_json())})")
    if result.observed and result.observed.decisive_line:
        print(f"decisive line: {result.observed.decisive_line}")
    print(f"journal: {json.dumps(result.to_json(), sort_keys=True)}")
    if probe and args.backend == "docker":  # the very run that was journaled, as one command
        print(f"run it yourself:\n  {docker_run_command(probe[0].spec, probe[0].mounts)}")
    return 1 if result.drift else 0


def cmd_diagnose(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """A user's log -> signature, cause, fix, reproducing cells. Exit 0 known, 1 unknown."""
    loaded = load(args, argv, DriverTarget(version=None, origin="none"))
    name = "standard input" if args.log == "-" else args.log
    try:
        stream = sys.stdin.buffer if args.log == "-" else open(args.log, "rb")  # noqa: SIM115
    except OSError as exc:
        raise ConfigError(
            f"cannot read {name}: {exc.strerror}",
            where=argv_where(argv, "diagnose"),
            help="give the path of a log file, or - to read standard input",
        ) from None
    with stream:
        try:
            verdict = classify_chunks(checked_chunks(stream, name), loaded.catalog)
        except OSError as exc:
            raise ConfigError(f"cannot read {name}: {exc.strerror}") from None
    flag = f" --profile {args.profile}" if args.profile else ""
    found = reproducers(verdict.signature, loaded.plan, loaded.scenarios, profile_flag=flag)
    result = diagnosis(verdict, loaded.catalog, found)
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=1) + "\n")
    else:
        sys.stdout.write(render_text(result))
    return 1 if result.signature == UNKNOWN else 0


def catalog_of(matrix_path: str) -> Catalog:
    """The signature catalog beside the scenarios that matrix.yaml names."""
    matrix = parse_matrix(read_yaml(Path(matrix_path), display=matrix_path))
    folder = Path(matrix_path).parent / matrix.scenarios_dir
    return read_catalog(folder / CATALOG, display=f"{folder}/{CATALOG}".removeprefix("./"))


def cmd_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Journals (shards merge) -> reports/. Exit 1 on drift unless --allow-drift."""
    from harness.report import write_all  # pandas and matplotlib: only for this command

    catalog = catalog_of(args.matrix)
    results = [Path(r) for r in (args.results or ["reports/results"])]
    for r in results:
        if not (r / JOURNAL).is_file():
            raise ConfigError(
                f"no results journal in {r} (looked for {r / JOURNAL})",
                where=argv_where(argv, "--results"),
                help="run `harness run` first, or pass the folder it wrote with --results",
            )
    summary = write_all(results, Path(args.out), catalog=catalog.signatures, env=os.environ)
    sys.stdout.write(summary.text())
    return 1 if summary.drift and not args.allow_drift else 0


def cmd_doctor(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """This machine: driver, GPUs, CUDA/cuDNN libraries on the loader path, what each framework
    loads, and what will fail before it does. Exit 1 when something will."""
    from harness import doctor

    catalog = catalog_of(args.matrix)
    python = args.python or sys.executable
    if not os.access(python, os.X_OK):
        raise ConfigError(
            f"--python {python} is not an executable interpreter",
            where=argv_where(argv, "--python"),
            help="give the path of a python, e.g. /opt/venv/bin/python",
        )
    kb = parse_knowledge(read_knowledge_docs())
    report = doctor.run(python=python, env=os.environ, kb=kb, catalog=catalog)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=1) + "\n")
    else:
        sys.stdout.write(report.text())
    return report.exit_code


def _verdict(d: Mapping[str, object]) -> str:
    """pass | fail: signature @ stage, from an expectation's or observation's JSON."""
    if d.get("outcome") != "fail":
        return str(d.get("outcome", ""))
    return f"fail: {d.get('signature')} @ {d.get('stage')}"


def write_plan(results: Path, plan: Plan) -> None:
    """The plan next to its journal, so a report can tell a partial run from a complete one."""
    atomic_write(results / "plan.json", render(plan, "json"))


def cmd_render(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Print a stack's Dockerfile and files, to build elsewhere (e.g. FROM nvidia/cuda)."""
    plan, kb, root = load_plan(args, argv, DriverTarget(version=None, origin="none"))
    wanted = args.stack.split("/")[0]
    stacks = {c.stack.slug: c.stack for c in plan.cells}
    if wanted not in stacks:
        raise ConfigError(
            f"no stack '{wanted}' in profile '{plan.profile}'",
            where=argv_where(argv, "render"),
            help=choice_help(wanted, stacks, "stacks"),
        )
    stack = stacks[wanted]
    templates = read_templates(root / "images")
    lock = read_lock(root / "images" / "locks" / f"{stack.slug}.json")
    if stack.base == "cuda":
        base_ref = cuda_base_ref(stack, kb)
    else:
        row = kb.offline_base(stack.python)
        assert row is not None  # the plan checked it
        base_ref = read_recipe(root / "images" / "offline-base", row.os).ref
    spec = image_spec(
        stack, kb=kb, lock=lock, base_ref=base_ref, base_id=base_ref, templates=templates
    )
    files = {"Dockerfile": spec.dockerfile, **dict(spec.files)}
    if args.out:
        for name, text in files.items():
            atomic_write(Path(args.out) / name, text)
        print(f"wrote {', '.join(files)} to {args.out}", file=sys.stderr)
    else:
        for name, text in files.items():
            sys.stdout.write(f"==> {name} <==\n{text}")
            if not text.endswith("\n"):
                sys.stdout.write("\n")
    return 0


def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 (one block per command)
    parser = argparse.ArgumentParser(
        prog="harness",
        description="stackmatrix: a reproducible test matrix for GPU deep-learning stacks",
    )
    parser.add_argument("--version", action="version", version=f"stackmatrix {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="show Python tracebacks for errors (for bug reports)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("plan", help="expand matrix.yaml into cells with expected outcomes")
    _matrix_args(p)
    _driver_arg(p)
    p.add_argument("--format", default="table", choices=FORMATS)
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="only shard I of N (1-based); the N shards partition the plan",
    )
    p.set_defaults(func=cmd_plan)

    b = sub.add_parser("build", help="build (or find cached) the image of every stack in a profile")
    _matrix_args(b)
    b.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="SLUG",
        help="only this stack (repeatable); `harness plan` lists them",
    )
    b.add_argument(
        "--relock",
        action="store_true",
        help="resolve the locks again instead of reading images/locks/",
    )
    b.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    b.set_defaults(func=cmd_build)

    u = sub.add_parser("run", help="run a profile's cells (builds images as needed)")
    _matrix_args(u)
    _driver_arg(u)
    _results_arg(u)
    _backend_args(u)
    u.add_argument(
        "--require-gpu",
        action="store_true",
        help="exit 2 unless this host has an NVIDIA GPU (for GPU evidence: `nox -s gpu`)",
    )
    _allow_drift_arg(u)
    u.set_defaults(func=cmd_run)

    x = sub.add_parser("reproduce", help="run one cell again and print how to run it by hand")
    _matrix_args(x)
    _driver_arg(x)
    x.add_argument("cell", metavar="CELL", help="a cell id from `harness plan`")
    _results_arg(x)
    _backend_args(x)
    x.set_defaults(func=cmd_reproduce)

    d = sub.add_parser("diagnose", help="name the failure signature in a log, its fix, its cell")
    _matrix_args(d)
    d.add_argument("log", nargs="?", default="-", metavar="LOG", help="a log file, or - (stdin)")
    d.add_argument("--format", default="text", choices=["text", "json"])
    d.set_defaults(func=cmd_diagnose)

    p = sub.add_parser(
        "report", help="journals -> COMPATIBILITY.md, SIGNATURES.md, HTML, CSV, JUnit"
    )
    p.add_argument("--matrix", default="matrix.yaml", metavar="PATH", help=argparse.SUPPRESS)
    p.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="a results folder (repeatable: shards merge; default: reports/results)",
    )
    p.add_argument("--out", default="reports", metavar="DIR", help="where (default: reports)")
    _allow_drift_arg(p)
    p.set_defaults(func=cmd_report)

    o = sub.add_parser("doctor", help="what on this machine will fail, before it does")
    o.add_argument("--matrix", default="matrix.yaml", metavar="PATH", help=argparse.SUPPRESS)
    o.add_argument(
        "--python", metavar="PATH", help="the interpreter to examine (default: this one)"
    )
    o.add_argument("--format", default="text", choices=["text", "json"])
    o.set_defaults(func=cmd_doctor)

    r = sub.add_parser("render", help="print a stack's Dockerfile and files (--dry-run of build)")
    _matrix_args(r)
    r.add_argument("stack", metavar="STACK", help="a stack slug or cell id from `harness plan`")
    r.add_argument("--out", metavar="DIR", help="write the files there instead of printing them")
    r.set_defaults(func=cmd_render)
    return parser


def _results_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--results",
        default="reports/results",
        metavar="DIR",
        help="the results journal folder (default: reports/results)",
    )


def _backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        default="docker",
        choices=["docker", "local"],
        help="docker (default), or local: no Docker, each stack in a venv from its lock",
    )
    p.add_argument(
        "--python",
        metavar="PATH",
        help="with --backend local: run the profile's scenarios on this interpreter's stack",
    )


def _allow_drift_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-drift",
        action="store_true",
        help="exit 0 even when an observed outcome differs from the expected one",
    )


def _driver_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--driver",
        default=None,
        metavar="VERSION",
        help="target driver, e.g. 535.104.05, or 'none' for no GPU (default: the host's)",
    )


def _matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--matrix",
        default="matrix.yaml",
        metavar="PATH",
        help="the matrix file (default: matrix.yaml)",
    )
    p.add_argument(
        "--profile",
        default=None,
        metavar="NAME",
        help="profile (default: the file's default_profile, smoke)",
    )


def _terminate(signum: int, frame: object) -> None:
    # `kill` (SIGTERM) unwinds like Ctrl-C, so every `finally` removes what it made.
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        signal.signal(signal.SIGTERM, _terminate)
    args = build_parser().parse_args(args_list)
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
