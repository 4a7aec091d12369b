"""argv -> one call -> exit code. The only place that exits; HarnessError -> one message, exit 2."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from harness import __version__, host
from harness.backends.docker import DockerBackend, connect
from harness.base import read_recipe
from harness.build import Builder, Paths, build_plan
from harness.compat import Knowledge, parse_knowledge, read_knowledge_docs
from harness.console import Console, human_bytes
from harness.errors import ConfigError, HarnessError, choice_help
from harness.journal import atomic_write
from harness.loader import read_yaml
from harness.lock import cache_root, read_lock
from harness.matrix import expand, parse_matrix, shard
from harness.model import DriverTarget, Plan, Where
from harness.plan import FORMATS, render
from harness.render import cuda_base_ref, image_spec, read_templates
from harness.scenarios import read_scenarios

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


def load_plan(
    args: argparse.Namespace, argv: Sequence[str], driver: DriverTarget | None = None
) -> tuple[Plan, Knowledge, Path]:
    """matrix.yaml + knowledge + scenarios -> the plan of --profile (and the repo folder)."""
    path = Path(args.matrix)
    matrix = parse_matrix(read_yaml(path, display=args.matrix))
    kb = parse_knowledge(read_knowledge_docs())
    scen_display = str(path.parent / matrix.scenarios_dir).removeprefix("./")
    scenarios = read_scenarios(path.parent / matrix.scenarios_dir, display=scen_display)
    profile = matrix.profile(args.profile)
    if driver is None:
        driver = resolve_driver(args.driver, profile.driver, argv_where(argv, "--driver"))
    return expand(matrix, profile.name, kb, scenarios, driver), kb, path.parent


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


def build_parser() -> argparse.ArgumentParser:
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
    p.add_argument(
        "--driver",
        default=None,
        metavar="VERSION",
        help="target driver, e.g. 535.104.05, or 'none' (default: the host's)",
    )
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

    r = sub.add_parser("render", help="print a stack's Dockerfile and files (--dry-run of build)")
    _matrix_args(r)
    r.add_argument("stack", metavar="STACK", help="a stack slug or cell id from `harness plan`")
    r.add_argument("--out", metavar="DIR", help="write the files there instead of printing them")
    r.set_defaults(func=cmd_render)
    return parser


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
