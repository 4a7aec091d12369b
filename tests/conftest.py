"""Shared fixtures. Docker tests skip where no engine is reachable, unless HARNESS_REQUIRE_DOCKER=1
(CI sets it): then an engine that cannot be reached fails the run instead of passing it silently."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from harness.model import Finished, Mount, Stack

if TYPE_CHECKING:
    from harness.backends.engine import Engine

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# The smoke profile's torch stack, for tests that need a real one.
TORCH_STACK = Stack(
    framework="torch",
    framework_version="2.15.0",
    cuda="13.2",
    cudnn="9.26.0.51",
    python="3.11",
    base="offline",
)


def load_tool(name: str) -> ModuleType:
    """tools/<name>.py as a module (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def harness_cli(*args: str, timeout: float = 5000) -> subprocess.CompletedProcess[str]:
    """`python -m harness ARGS` in the repository, for real, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def harness_build(*args: str) -> dict[str, dict[str, str]]:
    """`harness build --json` for real (a cache hit where the stacks are prepared): slug -> its
    entry (ref; image, the image a run starts; env, the environment's folder or "")."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "build.json"
        res = harness_cli("build", "--json", str(out), *args)
        assert res.returncode == 0, res.stderr[-3000:]
        return {r["slug"]: r for r in json.loads(out.read_text())}


def in_stack(
    engine: Engine, built: dict[str, str], argv: list[str], *, mounts: tuple[Mount, ...] = ()
) -> Finished:
    """argv in a prepared stack (an entry of `harness_build`) as its cells run: on an
    environment, uid 1000 with it mounted read-only on its base image; else in its image."""
    if not built.get("env"):
        return engine.run(built["ref"], argv, timeout=600, mounts=mounts)
    from harness.backends.docker import ENV_CONFIG, HOME, TMPFS, WORKLOAD_USER

    mounts = (*mounts, Mount(Path(built["env"]), "/opt/stack"))
    with engine.container(
        built["image"], argv, kind="run", mounts=mounts, user=WORKLOAD_USER,
        env={**dict(ENV_CONFIG), "HOME": HOME}, read_only=True, tmpfs=dict(TMPFS),
    ) as c:  # fmt: skip
        return engine.finish(c, 600)


def require_docker() -> bool:
    return os.environ.get("HARNESS_REQUIRE_DOCKER", "") not in ("", "0")


@pytest.fixture(scope="session")
def docker_client() -> Iterator[object]:
    from harness.backends.engine import connect
    from harness.errors import HarnessError

    try:
        client = connect(os.environ)
    except HarnessError as exc:
        if require_docker():
            pytest.fail(f"HARNESS_REQUIRE_DOCKER=1 but: {exc.render()}")
        pytest.skip(f"no Docker engine: {exc.message}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One results folder for the smoke profile's Docker run, shared by the tests that need it
    (the first to run fills it; `harness run` into it again is then a cache hit)."""
    return tmp_path_factory.mktemp("smoke") / "results"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/docker/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.docker)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and require_docker() and item.get_closest_marker("docker"):
        report.outcome = "failed"
        report.longrepr = f"Docker test skipped while HARNESS_REQUIRE_DOCKER=1: {report.longrepr}"
