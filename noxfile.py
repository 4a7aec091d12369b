"""Thin sessions over the harness CLI and the test suite (DESIGN.md: noxfile.py)."""

from __future__ import annotations

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
    session.run("ruff", "check", "harness", "tests", "noxfile.py")
    session.run("ruff", "format", "--check", "harness", "tests", "noxfile.py")
    session.run("mypy")


@nox.session
def matrix(session: nox.Session) -> None:
    """The matrix job on a profile (default smoke): plan, build every stack's image, run every
    cell into reports/results/ (exit 1 on drift). The report is the next stage.

    `nox -s matrix -- --profile full` picks a profile.
    """
    session.install("-e", ".")
    session.run("harness", "plan", *session.posargs)
    session.run("harness", "build", *session.posargs)
    session.run("harness", "run", *session.posargs)


@nox.session
def reproduce(session: nox.Session) -> None:
    """Replay one cell: `nox -s reproduce -- CELL [--profile full]`."""
    session.install("-e", ".")
    session.run("harness", "reproduce", *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Build (or find cached) the images of a profile: `nox -s build -- --profile smoke`."""
    session.install("-e", ".")
    session.run("harness", "build", *session.posargs)


@nox.session
def plan(session: nox.Session) -> None:
    """Print the plan of a profile: `nox -s plan -- --profile full --driver 535.104.05`."""
    session.install("-e", ".")
    session.run("harness", "plan", *session.posargs)
