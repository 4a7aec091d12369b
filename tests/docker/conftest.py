"""Fixtures the Docker tests share: the engine, the offline base, a small numpy lock."""

from __future__ import annotations

import os

import pytest

from harness.backends.engine import Engine
from harness.backends.offline import Base, ensure_base, read_recipe
from harness.lock import WheelCache, cache_root, resolve
from harness.model import Lock
from tests.conftest import ROOT

NUMPY = "numpy==2.4.6"


@pytest.fixture(scope="session")
def backend(docker_client: object) -> Engine:
    return Engine(docker_client)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def base(backend: Engine) -> Base:
    """The debian12 offline base. Built once per machine and kept: it is a cache, like wheels."""
    recipe = read_recipe(ROOT / "images" / "offline-base", "debian12")
    built, _ = ensure_base(recipe, backend, cache_root(dict(os.environ)) / "tmp")
    return built


@pytest.fixture(scope="session")
def numpy_lock(base: Base) -> Lock:
    lock, _ = resolve(
        "test-numpy", [NUMPY], [], index="https://pypi.org/simple", python="3.11",
        glibc=base.glibc, cache=WheelCache(cache_root(dict(os.environ))),
    )  # fmt: skip
    return lock
