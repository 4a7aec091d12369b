"""Thin sessions over the harness CLI and the test suite."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite. HARNESS_REQUIRE_DOCKER=1 turns a skipped Docker test into a failure."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (style, imports, bugs) and mypy --strict."""
    session.install("-e", ".[lint]")
    session.run("ruff", "check", "harness", "tests", "ci", "noxfile.py")
    session.run("ruff", "format", "--check", "harness", "tests", "ci", "noxfile.py")
    session.run("mypy")


# Options `harness report` takes from a matrix job's arguments (the rest are `harness run`'s).
REPORT_OPTIONS = ("--results", "--shard", "--stack", "--cell")


def _options(args: list[str], names: tuple[str, ...]) -> list[str]:
    """The given options (and their values) out of an argument list, in order."""
    out: list[str] = []
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in names:
            out += [arg] if "=" in arg else args[i : i + 2]
    return out


@nox.session
def matrix(session: nox.Session) -> None:
    """The matrix job: plan, build and run a profile's cells (default smoke), then report.

    The plan (what each cell will do), each stack prepared (an image built or a cache hit; a
    venv with --backend local) and its cells run into reports/results/, then the report in
    reports/. Exit 1 on drift (an observed outcome that differs from the expected one) unless
    --allow-drift.

    Every `stackmatrix run` option passes through: `nox -s matrix -- --profile full --driver
    535.104.05 --shard 2/4`, `-- --backend local`; --results, --shard, --stack and --cell reach
    the report as well. A profile other than smoke, without --results, journals into
    reports/<profile>/results/ and reports into reports/<profile>/ (`-- --profile releases`).
    """
    # pip's own lines show, and a line of ours after 8 s without one: pip says nothing while
    # it unpacks (13 s for pandas and the rest on a fresh 2-core machine).
    session.run(
        "python", "ci/quiet_guard.py", "installing the harness", "--",
        "python", "-m", "pip", "install", "-e", ".[report]", silent=False,
    )  # fmt: skip
    allow = "--allow-drift" in session.posargs
    args = [a for a in session.posargs if a != "--allow-drift"]
    out = []
    profile = _options(args, ("--profile",))[-1:]
    if profile and profile[0].split("=", 1)[-1] != "smoke" and not _options(args, ("--results",)):
        # Another profile's journal and report live in reports/<profile>/, beside smoke's.
        folder = f"reports/{profile[0].split('=', 1)[-1]}"
        args += ["--results", f"{folder}/results"]
        out = ["--out", folder]
    session.run("stackmatrix", "run", "--dry-run", *args)
    session.run("stackmatrix", "run", *args, "--allow-drift")  # the report judges drift
    report = [*_options(args, REPORT_OPTIONS), *out]
    # A job that runs one shard (or a --stack/--cell part) reports only its part: partial by
    # design; the job that merges every shard's results judges completeness.
    part = any(a.split("=", 1)[0] in ("--shard", "--stack", "--cell") for a in args)
    flags = [*(["--allow-drift"] if allow else []), *(["--allow-partial"] if part else [])]
    session.run("stackmatrix", "report", *report, *flags)


EVIDENCE = "reports/evidence"


@nox.session
def gpu(session: nox.Session) -> None:
    """GPU evidence on a host with an NVIDIA GPU and no Docker (--backend local).

    `harness doctor` into reports/evidence/doctor.txt, the gpu profile's cells into
    reports/evidence/results/ (exit 2 where no GPU is found), then their report in
    reports/evidence/. Exit 1 on drift unless --allow-drift.

    `nox -s gpu -- --python /opt/venv/bin/python` runs the scenarios on that interpreter's own
    PyTorch instead of a venv built from the lock. On a host with no network, where the
    harness's dependencies are installed already: `nox --no-venv -s gpu -- ...`.
    """
    if session.venv_backend != "none":
        session.install("-e", ".[report]")
    allow = "--allow-drift" in session.posargs
    args = [a for a in session.posargs if a != "--allow-drift"]
    python = args[args.index("--python") : args.index("--python") + 2] if "--python" in args else []
    harness = ("python", "-m", "harness")
    doctor = Path(session.create_tmp()) / "doctor.txt"
    with doctor.open("w", encoding="utf-8") as out:
        session.run(*harness, "doctor", *python, stdout=out, success_codes=[0, 1])
    session.log(doctor.read_text(encoding="utf-8"))
    results = ("--results", f"{EVIDENCE}/results")
    session.run(
        *harness, "run", "--backend", "local", "--profile", "gpu", "--require-gpu",
        *results, *args, "--allow-drift",
    )  # fmt: skip
    Path(f"{EVIDENCE}/doctor.txt").write_text(doctor.read_text(encoding="utf-8"), encoding="utf-8")
    session.run(
        *harness, "report", *results, "--out", EVIDENCE, *(["--allow-drift"] if allow else [])
    )


@nox.session
def report(session: nox.Session) -> None:
    """The report from the journals: `nox -s report -- --results a/ --results b/` merges shards."""
    session.install("-e", ".[report]")
    session.run("stackmatrix", "report", *session.posargs)


@nox.session
def diagnose(session: nox.Session) -> None:
    """Name the failure in a log: `nox -s diagnose -- path/to/log [--format json]`."""
    session.install("-e", ".[report]")
    session.run("stackmatrix", "diagnose", *session.posargs)


@nox.session
def reproduce(session: nox.Session) -> None:
    """Replay one cell: `nox -s reproduce -- CELL [--profile full]`."""
    session.install("-e", ".[report]")
    session.run("stackmatrix", "reproduce", *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Build (or find cached) the images of a profile: `nox -s build -- --profile smoke`."""
    session.install("-e", ".[report]")
    session.run("stackmatrix", "build", *session.posargs)


@nox.session
def plan(session: nox.Session) -> None:
    """Print the plan of a profile: `nox -s plan -- --profile full --driver 535.104.05`."""
    session.install("-e", ".[report]")
    session.run("stackmatrix", "plan", *session.posargs)


@nox.session
def picture(session: nox.Session) -> None:
    """README's picture: docs/grid.png from reports/index.html (needs Debian's chromium)."""
    session.install("-e", ".[test]")
    session.run("python", "tools/screenshot.py")
