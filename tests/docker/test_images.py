"""Real engine: the offline base, a small stack built, run and found again by its tag, builds with
no network, failing and interrupted builds that leave nothing behind, a version with no wheel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from docker.errors import NotFound

from harness.backends.engine import BuildFailed, Engine
from harness.backends.images import Builder, Paths
from harness.backends.offline import Base
from harness.compat import parse_knowledge, read_knowledge_docs
from harness.console import Console
from harness.lock import LockError, WheelCache, cache_root, resolve
from harness.model import DockerfilePlan, ImageJob, Lock, Mount, Stack
from harness.render import offline_spec, read_templates, step_refs
from tests.conftest import ROOT, harness_cli, in_stack

ENV = dict(os.environ)
NUMPY_STACK = Stack(
    framework="numpy",
    framework_version="2.4.6",
    cuda="none",
    cudnn="none",
    python="3.11",
    base="offline",
)


@pytest.fixture
def builder(backend: Engine, tmp_path: Path) -> Builder:
    paths = Paths(images=ROOT / "images", cache=cache_root(ENV), logs=tmp_path / "logs")
    return Builder(
        kb=parse_knowledge(read_knowledge_docs()),
        engine=lambda: backend,
        paths=paths,
        templates=read_templates(ROOT / "images"),
        console=Console(),
    )


@pytest.fixture
def fresh_ref(backend: Engine) -> Iterator[list[str]]:
    """Image refs a test makes; removed afterwards, and no stackmatrix container may remain."""
    refs: list[str] = []
    yield refs
    for ref in refs:
        backend.remove_image(ref)
    assert backend.leftovers(os.getpid()) == []


def test_the_offline_base_is_debian_with_its_python(backend: Engine, base: Base) -> None:
    assert base.python.startswith("3.11.") and base.glibc == "2.36"
    done = backend.run(base.ref, ["python3", "-c", "import ssl, venv; print('ok')"])
    assert (done.exit_code, done.output.strip()) == (0, "ok")
    labels = backend.image_labels(base.ref)
    assert labels["stackmatrix.base.glibc"] == "2.36"


def test_small_stack_builds_runs_and_is_a_cache_hit(
    builder: Builder, backend: Engine, base: Base, numpy_lock: Lock, fresh_ref: list[str]
) -> None:
    spec = offline_spec(
        NUMPY_STACK,
        lock=numpy_lock,
        base_ref=base.ref,
        base_id=base.image_id,
        templates=builder.templates,
    )
    fresh_ref.append(spec.ref)
    backend.remove_image(spec.ref)
    job = ImageJob(spec=spec, cells=())
    first = builder.build(job)
    assert first.status == "built" and first.size > 0
    done = backend.run(
        spec.ref, ["python", "-c", "import numpy, os; print(numpy.__version__, os.getuid())"]
    )
    assert (done.exit_code, done.output.strip()) == (0, "2.4.6 1000")
    labels = backend.image_labels(spec.ref)
    assert json.loads(labels["stackmatrix.stack"])["framework"] == "numpy"
    assert labels["org.opencontainers.image.base.name"] == base.ref
    again = builder.build(job)
    assert again.status == "cache-hit"
    assert again.downloaded == 0
    assert again.seconds < 5
    # The first install step is its own image, found by its tag by the next stack that renders it.
    [step] = step_refs(spec.plan, dict(spec.files), base.image_id)
    fresh_ref.append(step)
    assert backend.image_id(step) is not None
    assert backend.image_labels(step)["stackmatrix.step"] == spec.plan.runs[0]
    backend.remove_image(spec.ref)
    rebuilt = builder.build(job)
    assert rebuilt.status == "built" and set(rebuilt.phases) == {"download", "install", "commit"}


def test_a_failed_step_names_its_log_and_leaves_no_step_image(
    builder: Builder, backend: Engine, base: Base, numpy_lock: Lock, fresh_ref: list[str]
) -> None:
    """A first step that fails stops the build there: no step image, no stack image, its own
    log named."""
    spec = offline_spec(
        NUMPY_STACK, lock=numpy_lock, base_ref=base.ref, base_id=base.image_id,
        templates={**builder.templates, "install.sh.j2": "echo broken-step; exit 3\n"},
    )  # fmt: skip
    [step] = step_refs(spec.plan, dict(spec.files), base.image_id)
    fresh_ref += [spec.ref, step]
    with pytest.raises(BuildFailed) as err:
        builder.build(ImageJob(spec=spec, cells=()))
    text = err.value.render()
    assert "failed with exit status 3 at step: sh /wheelhouse/meta/install.sh shared.txt" in text
    assert f"build-{NUMPY_STACK.slug}.step-1.log" in text
    assert backend.image_id(step) is None and backend.image_id(spec.ref) is None


def test_a_part_of_a_parallel_install_that_fails_fails_the_step(
    builder: Builder, backend: Engine, base: Base, numpy_lock: Lock, tmp_path: Path
) -> None:
    """The locked set is dealt into one pip per core: a part whose wheel is not in the wheel
    cache fails the step (whichever part it lands in), and pip's own words reach the log."""
    spec = offline_spec(
        NUMPY_STACK, lock=numpy_lock, base_ref=base.ref, base_id=base.image_id,
        templates=builder.templates,
    )  # fmt: skip
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "install.sh").write_text(dict(spec.files)["install.sh"], encoding="utf-8")
    good = dict(spec.files)["shared.txt"]
    bad = "nosuchwheel-stackmatrix==1.0 --hash=sha256:" + "0" * 64 + "\n"
    (meta / "shared.txt").write_text(good + bad, encoding="utf-8")
    meta.chmod(0o755)
    mounts = [Mount(builder.wheels.dir, "/wheelhouse/wheels"), Mount(meta, "/wheelhouse/meta")]
    done = backend.run(
        base.ref, ["sh", "/wheelhouse/meta/install.sh", "shared.txt"], mounts=mounts, user="0"
    )
    assert done.exit_code not in (0, None)
    assert "nosuchwheel-stackmatrix" in done.output
    (meta / "shared.txt").write_text(good, encoding="utf-8")
    done = backend.run(
        base.ref,
        ["sh", "-c", "sh /wheelhouse/meta/install.sh shared.txt && /opt/stack/bin/python -c "
         "'import numpy, pathlib; print(numpy.__version__, len(list(pathlib.Path(numpy.__file__)"
         ".parent.rglob(\"*.pyc\"))) > 0)'"],
        mounts=mounts, user="0",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert done.output.strip().splitlines()[-1] == "2.4.6 True"  # installed, and compiled


def test_the_image_build_has_no_network(
    backend: Engine, base: Base, tmp_path: Path, fresh_ref: list[str]
) -> None:
    """A build step that tries the network fails, names its step and keeps the full log."""
    ref = "stackmatrix/test:no-network"
    fresh_ref.append(ref)
    probe = "python3 -c \"import socket; socket.create_connection(('pypi.org', 443), timeout=5)\""
    plan = DockerfilePlan(base=base.ref, runs=("echo step-one", probe), changes=())
    log = tmp_path / "build.log"
    with pytest.raises(BuildFailed) as err:
        backend.commit_build(plan, ref, mounts=[Mount(tmp_path, "/m")], log_path=log, timeout=120)
    text = err.value.render()
    assert "failed with exit status 1 at step: python3 -c" in text
    assert "--- last 30 lines ---" in text
    assert "step-one" in log.read_text()
    assert any(
        s in log.read_text()
        for s in (
            "Name or service not known",
            "Temporary failure in name resolution",
            "Network is unreachable",
        )
    )
    assert backend.image_id(ref) is None


def test_an_interrupted_build_leaves_no_container_and_no_tag(
    backend: Engine, base: Base, tmp_path: Path, fresh_ref: list[str]
) -> None:
    ref = "stackmatrix/test:interrupted"
    fresh_ref.append(ref)
    script = f"""
import os, signal, sys
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r})
from harness.backends.engine import Engine, connect
from harness.model import DockerfilePlan
def stop(*_): raise KeyboardInterrupt
signal.signal(signal.SIGTERM, stop)
b = Engine(connect(os.environ))
plan = DockerfilePlan(base={base.ref!r}, runs=("sleep 120",), changes=())
b.commit_build(plan, {ref!r}, mounts=[], log_path=Path({str(tmp_path / "log")!r}), timeout=300)
"""
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        # interrupted while the build runs (`sleep 120`); an interrupt inside a docker-py call
        # (urllib3's locks left taken) is the next test's
        while not running(backend, backend.leftovers(child.pid)):
            assert time.monotonic() < deadline, "the build container never ran"
            assert child.poll() is None, "the build ended early"
            time.sleep(0.2)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) != 0
    finally:
        child.kill()
        child.wait(timeout=60)
    assert backend.leftovers(child.pid) == []
    assert backend.image_id(ref) is None


def running(backend: Engine, names: list[str]) -> bool:
    """Whether one of these containers has started (its state, as the engine says)."""
    for name in names:
        with suppress(NotFound):
            if backend.client.containers.get(name).status == "running":
                return True
    return False


def test_a_version_with_no_wheel_names_package_version_and_index(base: Base) -> None:
    with pytest.raises(LockError) as err:
        resolve(
            "t",
            ["numpy==0.0.1"],
            [],
            index="https://pypi.org/simple",
            python="3.11",
            glibc=base.glibc,
            cache=WheelCache(cache_root(ENV)),
        )
    text = err.value.render()
    assert "no wheel for numpy==0.0.1 on https://pypi.org/simple" in text
    assert err.value.exit_code == 2


SMOKE_TORCH = "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline"


@pytest.mark.slow
def test_the_smoke_torch_stack(backend: Engine, tmp_path: Path) -> None:
    """`harness build` on the smoke profile's torch stack (its environment), then torch in it
    with no network, as uid 1000 on a read-only root."""
    out = tmp_path / "build.json"
    res = harness_cli("build", "--stack", SMOKE_TORCH, "--json", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    [result] = json.loads(out.read_text())
    assert result["status"] in ("built", "cache-hit")
    code = (
        "import torch, os; print(torch.__version__, torch.version.cuda, "
        "torch.backends.cudnn.version(), os.getuid())"
    )
    done = in_stack(backend, result, ["python", "-c", code])
    assert done.exit_code == 0, done.output
    assert done.output.strip().splitlines()[-1] == "2.15.0+cu132 13.2 92600 1000"
    mark = json.loads((Path(result["env"]) / "stackmatrix-env.json").read_text())
    assert mark["lock"] == SMOKE_TORCH and mark["ref"] == result["ref"]


def test_interrupted_while_the_shared_client_is_wedged_the_container_is_still_removed(
    backend: Engine, base: Base
) -> None:
    """A Ctrl-C that lands inside a docker-py call can leave urllib3's locks taken (between the
    lock's acquire and the code that frees it); every later call through that client waits on
    them for ever. Here another thread holds every lock of the shared client's transport, as
    such an interrupt leaves them, and the cleanup must still remove the container, in time."""
    script = f"""
import os, sys, threading
sys.path.insert(0, {str(ROOT)!r})
from harness.backends.engine import Engine, connect
e = Engine(connect(os.environ))
adapter = e.client.api.get_adapter(e.client.api.base_url)
wedged, done = threading.Event(), threading.Event()
def wedge():
    with adapter.pools.lock:
        held = [adapter.pools[key].pool.mutex for key in list(adapter.pools.keys())]
        for lock in held:
            lock.acquire()
        wedged.set()
        done.wait()
        for lock in held:  # let the interpreter's exit close the pools (urllib3's finalizers)
            lock.release()
try:
    with e.container({base.ref!r}, ["sleep", "120"], kind="run") as c:
        print(c.name, flush=True)
        threading.Thread(target=wedge).start()
        wedged.wait()
        raise KeyboardInterrupt
except KeyboardInterrupt:
    print("unwound", flush=True)
finally:
    done.set()
"""
    child = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=90
    )
    name, unwound = child.stdout.split()
    assert unwound == "unwound", child.stderr
    with pytest.raises(NotFound):
        backend.client.containers.get(name)
