"""The local backend for real, on a tiny venv stack (MarkupSafe) and on an interpreter it must
not copy: faults take effect for the probe process, the installation stays byte-for-byte the
same, and no run leaves a folder behind (also when interrupted or timed out)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.backends import Target, local, local_script
from harness.backends.local import LocalBackend
from harness.backends.local_script import LocalError
from harness.faults import resolve
from harness.lock import WheelCache
from harness.model import Fault, Hide, Mount, RunSpec
from harness.runner import mount_points
from tests.conftest import ROOT
from tests.local.conftest import TINY_LOCK, TINY_STACK, leftovers, tree_digest

SITE = "{site}/markupsafe"
# What the probe process sees: the package's files, its environment, its limits and libraries.
CHECK = """
import json, os, resource, sys
pkg = os.path.join([p for p in sys.path if p.endswith("site-packages")][0], "markupsafe")
def read(name):
    with open(os.path.join(pkg, name), "rb") as f:
        return f.read().decode("latin-1")
print(json.dumps({
    "python": sys.executable,
    "files": sorted(os.listdir(pkg)),
    "init_size": os.path.getsize(os.path.join(pkg, "__init__.py")),
    "native": read("_native.py")[:40],
    "typed": read("py.typed"),
    "env": {k: os.environ.get(k) for k in ("MS_SET", "STACKMATRIX_TEST_UNSET",
            "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "HOME")},
    "rlimit_data": resource.getrlimit(resource.RLIMIT_DATA)[0],
    "preloaded": [ln.split()[-1] for ln in open("/proc/self/maps") if "preload-me" in ln][:1],
}))
"""


def fault(primitive: str, **args: str) -> Fault:
    return Fault(primitive=primitive, args=tuple(sorted(args.items())))


EVERY_PRIMITIVE = (
    fault("hide", path=f"{SITE}/_speedups.*.so"),
    fault("hide", path=f"{SITE}/__pycache__"),  # a folder: overlayfs needs more for that
    fault("truncate", path=f"{SITE}/__init__.py", bytes="100"),
    fault("overwrite", path=f"{SITE}/py.typed", text="not a library\n"),
    fault("replace", path=f"{SITE}/_native.py", wheel="other==1", member="_native.py"),
    fault("path_prepend", wheel="other==1", member="lib/"),
    fault("preload", wheel="other==1", member="preload-me.so"),
    fault("env_set", name="MS_SET", value="{venv}/set"),
    fault("env_unset", name="STACKMATRIX_TEST_UNSET"),
    fault("no_gpu"),
    fault("memory_limit", bytes=str(8 << 30)),
)


@pytest.fixture
def material(tmp_path: Path) -> tuple[Mount, ...]:
    """The probe and the files other wheels would give: the mounts a spec's faults name."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "check.py").write_text(CHECK)
    native = tmp_path / "_native.py"
    native.write_text("# another version's _native.py\n")
    libdir = tmp_path / "lib"
    libdir.mkdir()
    lib = tmp_path / "preload-me.so"  # a harmless library under a name no process maps
    zlib = next(Path("/").glob("*lib*/x86_64-linux-gnu/libz.so.1"), None)
    if zlib is None:
        pytest.skip("no libz.so.1 to preload")
    shutil.copy(zlib, lib)
    return (
        Mount(probe, "/probe"),
        Mount(native, "/faults/3"),
        Mount(libdir, "/faults/4"),
        Mount(lib, "/faults/5"),
    )


def spec_of(argv: tuple[str, ...], faults: tuple[Fault, ...], mounts: tuple[Mount, ...]) -> RunSpec:
    """As the runner makes it: each other wheel's member, in order, at the mounts after the
    probe's."""
    ops = resolve(faults, TINY_STACK)
    sources = mount_points(ops, first=3)  # the material's /faults/3, /4, /5
    assert [t for _, t in sources] == [m.target for m in mounts[1 : len(sources) + 1]]
    return RunSpec(argv=argv, ops=ops, mounts=mounts, sources=sources)


def target(ref: str) -> Target:
    return Target(stack=TINY_STACK, ref=ref, identity=ref, lock=TINY_LOCK)


def run(backend: LocalBackend, ref: str, spec: RunSpec) -> Any:
    return backend.run(spec, target(ref))


def check(backend: LocalBackend, image: str, mounts: tuple[Mount, ...], *faults: Fault) -> Any:
    done = run(backend, image, spec_of(("python", "/probe/check.py"), faults, mounts))
    assert done.exit_code == 0, done.output
    return json.loads(done.output.splitlines()[-1])


def assert_every_fault_took_effect(seen: Any, mounts: tuple[Mount, ...], venv: str) -> None:
    assert not [f for f in seen["files"] if f.startswith("_speedups") and f.endswith(".so")]
    assert "__pycache__" not in seen["files"]
    assert seen["init_size"] == 100
    assert seen["native"] == "# another version's _native.py\n"
    assert seen["typed"] == "not a library\n"
    assert seen["env"]["LD_LIBRARY_PATH"] == str(mounts[2].source)
    assert seen["preloaded"] == [str(mounts[3].source)]
    assert seen["env"]["MS_SET"] == f"{venv}/set"
    assert seen["env"]["STACKMATRIX_TEST_UNSET"] is None
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == ""
    assert seen["rlimit_data"] == 8 << 30


# ---------------------------------------------------------------- a venv built from a lock


def test_the_venv_is_built_once_and_reused(tiny_venv: str, backend: LocalBackend) -> None:
    venv = Path(tiny_venv)
    assert venv.is_symlink() and (venv / local.MARK).is_file()
    init = venv / "lib/python3.11/site-packages/markupsafe/__init__.py"
    assert not os.stat(init).st_mode & 0o222  # read-only: no write in place through a link
    start = time.monotonic()
    assert backend.ensure_venv(TINY_LOCK, WheelCache(backend.root)) == tiny_venv
    assert time.monotonic() - start < 5


def test_file_faults_apply_to_a_copy_and_the_venv_stays_the_same(
    tiny_venv: str, backend: LocalBackend, material: tuple[Mount, ...]
) -> None:
    before = tree_digest(Path(tiny_venv).resolve())
    seen = check(backend, tiny_venv, material, *EVERY_PRIMITIVE)
    run_venv = str(Path(seen["python"]).parent.parent)
    assert run_venv.startswith(f"{backend.root}/runs/run-")  # the copy, not the venv
    assert_every_fault_took_effect(seen, material, run_venv)
    assert tree_digest(Path(tiny_venv).resolve()) == before
    assert leftovers(backend.root / "runs", backend.scratch) == []


def test_without_file_faults_the_venv_runs_as_it_is(
    tiny_venv: str, backend: LocalBackend, material: tuple[Mount, ...]
) -> None:
    seen = check(backend, tiny_venv, material, fault("env_set", name="MS_SET", value="x"))
    assert seen["python"] == f"{tiny_venv}/bin/python"
    assert seen["init_size"] > 100 and seen["env"]["MS_SET"] == "x"
    assert seen["env"]["STACKMATRIX_TEST_UNSET"] == "1"
    assert seen["rlimit_data"] == -1  # RLIM_INFINITY
    assert seen["env"]["HOME"].startswith(f"{backend.root}/runs/run-")


def test_every_file_primitive_recreates_and_never_writes_through_a_link(tmp_path: Path) -> None:
    """The premise of the hard-link copy, for real: each file operation, as fileops.py applies
    it, run in a linked copy leaves the original's files as they were."""
    src, copy = tmp_path / "src", tmp_path / "copy"
    site = src / "lib/python3.11/site-packages"
    (site / "d").mkdir(parents=True)
    for name in ("a.so", "b.so", "c.so", "d/e.so", "g.so"):
        (site / name).write_bytes(name.encode() * 1000)
    (tmp_path / "other.so").write_bytes(b"other")
    (tmp_path / "other-d").mkdir()
    (tmp_path / "other-d" / "f.so").write_bytes(b"other f")
    before = tree_digest(src)
    faults = (
        fault("hide", path="{site}/a.*"),
        fault("truncate", path="{site}/b.so", bytes="10"),
        fault("replace", path="{site}/c.so", wheel="o==1", member="c.so"),
        fault("replace", path="{site}/d/", wheel="o==1", member="d/"),
        fault("overwrite", path="{site}/g.so", text="text"),
    )
    subprocess.run(["cp", "-al", str(src), str(copy)], check=True)
    table = local_script.path_table(copy, copy / site.relative_to(src), "3.11", ())
    table |= {"/faults/2": str(tmp_path / "other.so"), "/faults/3": str(tmp_path / "other-d")}
    ops = resolve(faults, TINY_STACK)
    spec = RunSpec(argv=(), ops=ops, sources=mount_points(ops, first=2))
    assert [t for _, t in spec.sources] == ["/faults/2", "/faults/3"]
    placed = local_script.place(spec, table, [copy])
    assert len(placed.steps) == len(faults)
    ops_file = tmp_path / "ops.json"
    ops_file.write_text(local_script.ops_json(placed.steps, [copy]))
    helper = [sys.executable, "-I", "-S", str(local_script.FILEOPS), str(ops_file)]
    subprocess.run(helper, check=True)
    got = copy / site.relative_to(src)
    assert not (got / "a.so").exists() and (got / "b.so").stat().st_size == 10
    assert (got / "c.so").read_bytes() == b"other"
    assert sorted(p.name for p in (got / "d").iterdir()) == ["f.so"]
    assert (got / "g.so").read_text() == "text"
    assert tree_digest(src) == before


def test_a_lock_for_another_python_is_refused(tiny_cache: WheelCache, tmp_path: Path) -> None:
    backend = LocalBackend(root=tmp_path, env={"PATH": "/nonexistent"})
    lock = TINY_LOCK.__class__.from_json({**TINY_LOCK.to_json(), "python": "3.99"})
    with pytest.raises(LocalError, match=r"the lock needs Python 3\.99; .* is 3\.11\.\d+"):
        backend.ensure_venv(lock, tiny_cache)
    assert leftovers(tmp_path / "venvs") == []


def test_an_interrupted_build_leaves_no_venv(
    tiny_cache: WheelCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(root: Path) -> None:  # pip has installed everything; the mark is not written
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "_read_only", interrupt)
    backend = LocalBackend(root=tmp_path, env=os.environ)
    with pytest.raises(KeyboardInterrupt):
        backend.ensure_venv(TINY_LOCK, tiny_cache)
    assert leftovers(tmp_path / "venvs") == []


def test_a_build_left_by_a_killed_process_is_swept(tiny_cache: WheelCache) -> None:
    backend = LocalBackend(root=tiny_cache.dir.parent, env=os.environ)
    dead = 2**22 + 12345  # above any pid_max: no such process
    host = os.uname().nodename
    stale = [
        backend.root / "venvs" / f"abc.build-{host}-{dead}-1a2b3c4d",
        backend.root / "runs" / f"run-{host}-{dead}-x1y2z3w4",
        backend.root / "runs" / f"run-otherhost-{dead}-x1y2z3w4",  # not ours to judge
    ]
    for p in stale:
        p.mkdir(parents=True)
    assert sorted(backend.sweep()) == sorted(map(str, stale[:2]))
    assert stale[2].is_dir()
    stale[2].rmdir()


# ---------------------------------------------------------------- an interpreter (--python)


@pytest.fixture(scope="module")
def user_venv(tiny_cache: WheelCache, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Someone's own environment with the package installed: never to be copied or changed."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib/python3.11/site-packages"
    wheel = tiny_cache.dir / TINY_LOCK.wheels[0].filename
    subprocess.run([sys.executable, "-m", "zipfile", "-e", str(wheel), str(site)], check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(site)], check=True)
    return venv


@pytest.mark.parametrize("userns", [False, True], ids=["root", "user-namespace"])
def test_file_faults_on_an_interpreter_go_to_an_overlay(
    user_venv: Path, backend: LocalBackend, material: tuple[Mount, ...], userns: bool
) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare (util-linux)")
    if not userns and os.geteuid() != 0:
        pytest.skip("a private mount namespace without a user namespace needs root")
    backend.userns = userns
    before = tree_digest(user_venv)
    image = str(user_venv / "bin" / "python")
    seen = check(backend, image, material, *EVERY_PRIMITIVE)
    assert seen["python"] == image
    assert_every_fault_took_effect(seen, material, str(user_venv))
    assert tree_digest(user_venv) == before
    assert leftovers(backend.root / "runs", backend.scratch) == []


def test_a_host_file_outside_the_environment_is_hidden_by_an_overlay(
    tiny_venv: str, backend: LocalBackend, tmp_path: Path
) -> None:
    """As no-driver hides the driver's libcuda: the probe does not see it, the host keeps it."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare (util-linux)")
    host = tmp_path / "host-lib"
    host.mkdir()
    (host / "libcuda.so.1").write_text("driver")
    (host / "libother.so").write_text("other")
    code = f"import os; print(sorted(os.listdir({str(host)!r})))"
    ops = (
        Hide(path=f"{host}/libcuda.so*"),
        Hide(path="/opt/stack/lib/python3.11/site-packages/markupsafe/_native.py"),
    )
    done = run(backend, tiny_venv, RunSpec(argv=("python", "-c", code), ops=ops))
    assert done.exit_code == 0 and done.output.splitlines()[-1] == "['libother.so']", done.output
    assert (host / "libcuda.so.1").read_text() == "driver"
    assert leftovers(backend.root / "runs", backend.scratch) == []


def test_a_fault_outside_the_environment_is_refused_before_anything_runs(
    tiny_venv: str, backend: LocalBackend
) -> None:
    spec = RunSpec(argv=("python", "-c", "pass"), ops=(Hide(path="/etc"),))
    with pytest.raises(LocalError, match="no folder / to overlay"):
        run(backend, tiny_venv, spec)
    assert Path("/etc/passwd").exists()


# ---------------------------------------------------------------- ending a run


def test_a_timeout_kills_the_probe_and_what_it_started(
    tiny_venv: str, backend: LocalBackend, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    code = f"import os,time; os.system('sleep 300 & echo $! > {pidfile}'); time.sleep(300)"
    spec = RunSpec(argv=("python", "-c", code), timeout=2)
    start = time.monotonic()
    done = run(backend, tiny_venv, spec)
    assert done.exit_code is None and time.monotonic() - start < 15
    assert not _running(int(pidfile.read_text()))


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


DRIVER = """
import os, signal, sys
from pathlib import Path
from harness.backends import Target
from harness.backends.local import LocalBackend
from harness.model import Hide, RunSpec
from tests.local.conftest import TINY_LOCK, TINY_STACK

def stop(signum, frame):  # as harness.cli does: SIGTERM unwinds like Ctrl-C
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, stop)
# Ctrl-C as a terminal delivers it, whatever disposition this process inherited (a job started
# in the background by a non-interactive shell inherits SIGINT ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
root, venv, ready = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
backend = LocalBackend(root=root, env=os.environ)
code = f"import os,time; open({ready!r}, 'w').write(str(os.getpid())); time.sleep(300)"
ops = (Hide(path="/opt/stack/lib/python3.11/site-packages/markupsafe/_native.py"),)
target = Target(stack=TINY_STACK, ref=venv, identity=venv, lock=TINY_LOCK)
try:
    backend.run(RunSpec(argv=("python", "-c", code), ops=ops), target)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_leaves_no_folder(
    tiny_venv: str, tiny_cache: WheelCache, tmp_path: Path, sig: signal.Signals
) -> None:
    ready = tmp_path / "ready"
    root = tiny_cache.dir.parent
    child = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(root), tiny_venv, str(ready)],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() or not ready.read_text():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert leftovers(root / "runs")  # the run's copy exists while it runs
        child.send_signal(sig)
        assert child.wait(timeout=30) == 130
    finally:
        child.kill()
        child.wait()
    assert not _running(int(ready.read_text()))
    assert leftovers(root / "runs") == []
