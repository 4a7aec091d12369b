"""The command line's shape: every command and its options (harness.cli runs them).

`build_parser(commands)` takes the functions that run each command, so this module imports
nothing that acts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence

from harness import __version__
from harness.model import Where
from harness.plan import FORMATS

Command = Callable[[argparse.Namespace, Sequence[str]], int]
MAX_JOBS = 8  # `run --jobs`: a cell in flight holds one of the engine client's 10 sockets


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


def build_parser(run: Mapping[str, Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stackmatrix",
        description="stackmatrix: a reproducible test matrix for GPU deep-learning stacks",
    )
    parser.add_argument("--version", action="version", version=f"stackmatrix {__version__}")
    parser.add_argument(
        "--traceback", action="store_true", help="show Python tracebacks (for bug reports)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, text: str, *parts: Callable[[argparse.ArgumentParser], None]
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text)
        for part in parts:
            part(p)
        p.set_defaults(func=run[name])
        return p

    p = command(
        "plan", "expand matrix.yaml into cells with expected outcomes", _matrix, _driver, _select
    )
    p.add_argument("--format", default="table", choices=FORMATS)
    p.add_argument(
        "--max-jobs",
        type=int,
        default=256,
        metavar="N",
        help="--format github: at most N jobs, each whole stacks (default 256)",
    )
    b = command(
        "build",
        "prepare (or find cached) every stack of a profile: its environment, or with --image "
        "a self-contained image",
        _matrix,
        _select,
        _backend,
    )
    b.add_argument(
        "--image",
        action="store_true",
        help="build each stack as one self-contained image (stackmatrix/stack:<slug>-<hash>, "
        "for a runner that pushes to a registry) instead of an environment on this host",
    )
    b.add_argument(
        "--relock",
        action="store_true",
        help="resolve the locks again instead of reading images/locks/",
    )
    b.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    u = command(
        "run",
        "run a profile's cells (builds images as needed)",
        _matrix,
        _driver,
        _select,
        _results,
        _backend,
        _allow_drift,
    )
    u.add_argument(
        "--require-gpu",
        action="store_true",
        help="exit 2 unless this host has an NVIDIA GPU (GPU evidence: `nox -s gpu`)",
    )
    u.add_argument(
        "--rerun",
        action="store_true",
        help="run every selected cell again on this machine, even where the journal has its "
        "result (the new result is appended; the report reads the latest)",
    )
    u.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="run up to N things at once: one image build at a time, and the cells of the stacks "
        "already built (default: 2 with Docker when no cell needs a GPU, else 1; at most "
        f"{MAX_JOBS})",
    )
    u.add_argument(
        "--dry-run",
        action="store_true",
        help="print what each cell would do (run, cached, not here); start nothing",
    )
    u.add_argument(
        "--disk-budget",
        metavar="SIZE",
        help="keep the cache (wheels, environments, uv's cache) within SIZE (e.g. 40GB): once a "
        "stack's cells are journaled, what no stack still to run needs is evicted, each "
        "removal said in one line (default: the profile's disk_budget in matrix.yaml, if any)",
    )
    x = command(
        "reproduce",
        "run one cell again and print how to run it by hand",
        _matrix,
        _driver,
        _results,
        _backend,
    )
    x.add_argument("cell", metavar="CELL", help="a cell id from `stackmatrix plan`")
    d = command(
        "diagnose", "name the failure signature in a log, its fix, its cell", _shipped_matrix
    )
    d.add_argument("log", nargs="?", default="-", metavar="LOG", help="a log file, or - (stdin)")
    d.add_argument("--format", default="text", choices=["text", "json"])
    r = command(
        "report",
        "journals -> COMPATIBILITY.md, FAULTS.md, SIGNATURES.md, HTML, CSV, JUnit",
        _matrix,
        _select,
        _allow_drift,
    )
    r.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="a results folder (repeatable: shards merge; default: reports/results)",
    )
    r.add_argument(
        "--out",
        default="reports",
        metavar="DIR",
        help="a folder to write into, made if missing (default: reports)",
    )
    r.add_argument(
        "--allow-partial",
        action="store_true",
        help="exit 0, not 3, when the results do not cover the plan (a shard's own report)",
    )
    o = command("doctor", "what on this machine will fail, before it does")
    o.add_argument("--matrix", default=None, metavar="PATH", help=argparse.SUPPRESS)
    o.add_argument(
        "--python", metavar="PATH", help="the interpreter to examine (default: this one)"
    )
    o.add_argument("--format", default="text", choices=["text", "json"])
    n = command("render", "print a stack's Dockerfile and files (--dry-run of build)", _matrix)
    n.add_argument("stack", metavar="STACK", help="a stack slug or cell id from `stackmatrix plan`")
    n.add_argument("--out", metavar="DIR", help="write the files there instead of printing them")
    g = command(
        "gc",
        "remove what the harness keeps (environments, images, wheels) that no stack needs",
        _matrix,
    )
    g.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="GLOB",
        help="remove what these stacks have prepared (environment, image), kept or not "
        "(repeatable); wheels and uv's cache stay for the next build",
    )
    g.add_argument(
        "--budget",
        metavar="SIZE",
        help="then evict until the cache is within SIZE (e.g. 40GB): wheels, then the least "
        "recently used environments with what only they use",
    )
    d = command(
        "drivers",
        "the NVIDIA user-space drivers runs can place (Debian non-free), fetched or not",
        _matrix,
    )
    d.add_argument(
        "--fetch", action="store_true", help="fetch each into the cache now (apt-get download)"
    )
    d.add_argument(
        "--lock",
        action="store_true",
        help="resolve the pinned Debian packages again and rewrite the driver lock",
    )
    return parser


def _matrix(
    p: argparse.ArgumentParser,
    *,
    default: str | None = "matrix.yaml",
    text: str = "the matrix file (default: matrix.yaml)",
) -> None:
    p.add_argument("--matrix", default=default, metavar="PATH", help=text)
    p.add_argument(
        "--profile",
        default=None,
        metavar="NAME",
        help="profile (default: the file's default_profile, smoke)",
    )


def _shipped_matrix(p: argparse.ArgumentParser) -> None:
    """--matrix of the commands that run outside a checkout too: without it, ./matrix.yaml where
    there is one, else the matrix shipped in the package (harness.cli.matrix_of)."""
    _matrix(p, default=None, text="the matrix file (default: ./matrix.yaml, else the shipped one)")


def _driver(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--driver",
        default=None,
        metavar="VERSION",
        help="target driver, e.g. 535.104.05, or 'none' for no GPU (default: the host's)",
    )


def _select(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="only shard I of N (1-based): stacks stay whole, the N shards partition the plan",
    )
    p.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="GLOB",
        help="only stacks whose slug matches (repeatable)",
    )
    p.add_argument(
        "--cell",
        action="append",
        default=[],
        metavar="GLOB",
        help="only cells whose id matches, e.g. '*/baseline' (repeatable)",
    )


def _results(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--results",
        default=None,
        metavar="DIR",
        help="the results journal folder (default: reports/results for the smoke profile, "
        "reports/<profile>/results for another, as `nox -s matrix` has it)",
    )


def _backend(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        default="docker",
        choices=["docker", "local"],
        help="docker (default), or local: no Docker, each stack in a venv from its lock",
    )
    p.add_argument(
        "--python",
        metavar="PATH",
        help="with --backend local: the profile's scenarios on this interpreter's stack",
    )


def _allow_drift(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-drift",
        action="store_true",
        help="exit 0 even when an observed outcome differs from the expected one",
    )
