"""argv -> one call -> exit code. The only place that exits; HarnessError -> one message, exit 2."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from harness import __version__, host
from harness.compat import parse_knowledge, read_knowledge_docs
from harness.errors import ConfigError, HarnessError
from harness.loader import read_yaml
from harness.matrix import expand, parse_matrix, shard
from harness.model import DriverTarget, Where
from harness.plan import FORMATS, render
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


def cmd_plan(args: argparse.Namespace, argv: Sequence[str]) -> int:
    shard_spec = parse_shard(args.shard, argv_where(argv, "--shard"))
    path = Path(args.matrix)
    matrix = parse_matrix(read_yaml(path, display=args.matrix))
    kb = parse_knowledge(read_knowledge_docs())
    scen_dir = path.parent / matrix.scenarios_dir
    scen_display = str(Path(args.matrix).parent / matrix.scenarios_dir)
    if scen_display.startswith("./"):
        scen_display = scen_display[2:]
    scenarios = read_scenarios(scen_dir, display=scen_display)
    profile = matrix.profile(args.profile)
    driver = resolve_driver(args.driver, profile.driver, argv_where(argv, "--driver"))
    plan = expand(matrix, profile.name, kb, scenarios, driver)
    if shard_spec is not None:
        plan = shard(plan, *shard_spec)
    sys.stdout.write(render(plan, args.format))
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
        help="profile to expand (default: the file's default_profile, smoke)",
    )
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
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
