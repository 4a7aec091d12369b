"""Real engine: a stack's environment made by uv in a container FROM its base, found again, shared
on disk with a sibling through hard links; a run on it that writes outside its tmpfs fails; a
harness killed while making one leaves nothing a later run trusts; runs leave no volume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.backends import Target
from harness.backends.docker import DockerBackend
from harness.backends.engine import Engine
from harness.backends.envs import EnvStore, env_ref, tree_bytes
from harness.backends.images import Builder, Paths
from harness.backends.offline import Base
from harness.compat import parse_knowledge, read_knowledge_docs
from harness.console import Console
from harness.lock import WheelCache, cache_root
from harness.model import Lock, RunSpec, Stack
from harness.render import read_templates
from tests.conftest import ROOT

ENV = dict(os.environ)
NUMPY_STACK = Stack(
    framework="numpy", framework_version="2.4.6", cuda="none", cudnn="none", python="3.11",
    base="offline",
)  # fmt: skip


@pytest.fixture(scope="module")
def engine(backend: Engine) -> Engine:
    return backend


def make(store: EnvStore, ref: str, lock: Lock, base: Base, engine: Engine) -> Path:
    made = store.ensure(
        ref, lock, base, engine=engine, wheels=WheelCache(cache_root(ENV)).dir,
        console=Console(), log_path=store.root / "env.log", who="numpy",
    )  # fmt: skip
    return made.path


def backend_on(engine: Engine, store: EnvStore, tmp_path: Path) -> DockerBackend:
    paths = Paths(images=ROOT / "images", cache=cache_root(ENV), logs=tmp_path / "logs")
    builder = Builder(
        kb=parse_knowledge(read_knowledge_docs()), engine=lambda: engine, paths=paths,
        templates=read_templates(paths.images), console=Console(),
    )  # fmt: skip
    return DockerBackend(builder, lambda: engine, envs=store)


def test_an_environment_is_made_once_found_again_and_shared_on_disk(
    engine: Engine, base: Base, numpy_lock: Lock, tmp_path: Path
) -> None:
    store = EnvStore(tmp_path)
    ref = env_ref(NUMPY_STACK, numpy_lock, base.ref, "script", "test")
    first = store.ensure(
        ref, numpy_lock, base, engine=engine, wheels=WheelCache(cache_root(ENV)).dir,
        console=Console(), log_path=tmp_path / "env.log", who="numpy",
    )  # fmt: skip
    assert first.status == "built" and store.ready(ref)
    assert (first.path / "pip-check.txt").read_text().strip().endswith("compatible")
    assert (first.path / "bin" / "f2py").read_text().startswith("#!/opt/stack/bin/python\n")
    again = store.ensure(
        ref, numpy_lock, base, engine=engine, wheels=WheelCache(cache_root(ENV)).dir,
        console=Console(), log_path=tmp_path / "env.log", who="numpy",
    )  # fmt: skip
    assert again.status == "cache-hit" and again.seconds < 1
    # A sibling with the same wheels: its files are the first one's, linked from uv's cache.
    sibling = make(store, ref + "-sibling", numpy_lock, base, engine)
    seen: set[tuple[int, int]] = set()
    whole = tree_bytes(first.path, seen)
    added = tree_bytes(sibling, seen)
    numpy_init = "lib/python3.11/site-packages/numpy/__init__.py"
    assert os.stat(first.path / numpy_init).st_ino == os.stat(sibling / numpy_init).st_ino
    assert added < whole / 4, (added, whole)  # its own bytecode and metadata only
    # Nothing half-made is left.
    assert [p.name for p in store.envs.iterdir() if p.name.startswith(".tmp-")] == []


def test_a_run_on_an_environment_writes_only_to_its_tmpfs(
    engine: Engine, base: Base, numpy_lock: Lock, tmp_path: Path
) -> None:
    store = EnvStore(tmp_path)
    ref = env_ref(NUMPY_STACK, numpy_lock, base.ref, "script", "test")
    env = make(store, ref, numpy_lock, base, engine)
    backend = backend_on(engine, store, tmp_path)
    target = Target(
        stack=NUMPY_STACK, ref=ref, identity=ref, lock=numpy_lock, image=base.ref, env=str(env)
    )
    code = (
        "import os, numpy\n"
        "for p in ('/tmp/x', os.environ['HOME'] + '/x', '/opt/stack/x', '/etc/x', '/x'):\n"
        "    try:\n"
        "        open(p, 'w').write('1'); print(p, 'written')\n"
        "    except OSError as e:\n"
        "        print(p, e.strerror)\n"
        "print(os.getuid(), numpy.__version__)\n"
    )
    done = backend.run(RunSpec(argv=("python", "-c", code)), target)
    assert done.exit_code == 0, done.output
    lines = done.output.strip().splitlines()
    assert lines == [
        "/tmp/x written",
        "/home/stack/x written",
        "/opt/stack/x Read-only file system",
        "/etc/x Read-only file system",
        "/x Read-only file system",
        "1000 2.4.6",
    ]
    assert not (env / "x").exists()


def test_runs_leave_no_volume(
    engine: Engine, base: Base, numpy_lock: Lock, tmp_path: Path, docker_client: object
) -> None:
    store = EnvStore(tmp_path)
    ref = env_ref(NUMPY_STACK, numpy_lock, base.ref, "script", "test")
    env = make(store, ref, numpy_lock, base, engine)
    target = Target(
        stack=NUMPY_STACK, ref=ref, identity=ref, lock=numpy_lock, image=base.ref, env=str(env)
    )
    backend = backend_on(engine, store, tmp_path)
    before = {v.id for v in docker_client.volumes.list()}  # type: ignore[attr-defined]
    for _ in range(3):
        assert backend.run(RunSpec(argv=("python", "-c", "import numpy")), target).exit_code == 0
    assert {v.id for v in docker_client.volumes.list()} == before  # type: ignore[attr-defined]


def test_killed_while_making_an_environment_the_next_run_trusts_nothing_half_made(
    engine: Engine, base: Base, numpy_lock: Lock, tmp_path: Path
) -> None:
    store = EnvStore(tmp_path)
    ref = env_ref(NUMPY_STACK, numpy_lock, base.ref, "a slow script", "test")
    # The environment's container is made to wait (a slow uv), so the kill lands mid-install.
    slow = tmp_path / "uv"
    slow.write_text("#!/bin/sh\nsleep 300\n")
    slow.chmod(0o755)
    script = f"""
import os, sys
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r})
import harness.backends.envs as envs
from harness.backends.engine import Engine, connect
from harness.backends.offline import Base
from harness.console import Console
from harness.model import Lock
import json
envs.uv_tool = lambda: (Path({str(slow)!r}), "test")
lock = Lock.from_json(json.loads(Path({str(tmp_path / "lock.json")!r}).read_text()))
base = Base(ref={base.ref!r}, image_id={base.image_id!r}, python={base.python!r}, glibc="")
store = envs.EnvStore(Path({str(tmp_path)!r}))
store.ensure({ref!r}, lock, base, engine=Engine(connect(os.environ)),
             wheels=Path({str(WheelCache(cache_root(ENV)).dir)!r}), console=Console(),
             log_path=Path({str(tmp_path / "env.log")!r}), who="numpy")
"""
    (tmp_path / "lock.json").write_text(json.dumps(numpy_lock.to_json()))
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not engine.leftovers(child.pid):
            assert time.monotonic() < deadline, "the environment's container never appeared"
            assert child.poll() is None, "it ended early"
            time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
    half = [p for p in store.envs.iterdir() if p.name.startswith(".tmp-")]
    assert half and not store.ready(ref)
    # The next run's sweep removes its container and its half-made folder...
    assert engine.sweep() and engine.leftovers(child.pid) == []
    assert {str(p) for p in half} <= set(store.sweep())
    assert [p for p in store.envs.iterdir() if p.name.startswith(".tmp-")] == []
    # ...and makes it whole.
    made = make(store, ref, numpy_lock, base, engine)
    assert store.ready(ref) and (made / "pip-check.txt").is_file()
