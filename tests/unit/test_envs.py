"""A stack's environment on the host and a cell's faults as mounts over it (no engine: the
mounts' material is made on real folders here; tests/docker/test_envs.py runs them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.backends import faultmounts
from harness.backends.docker import (
    DRIVER_DIR,
    TMPFS,
    WORKLOAD_USER,
    docker_run_command,
    hardening,
    layout,
)
from harness.backends.envs import EnvStore, env_ref, temp_dir, tree_bytes
from harness.model import (
    DRIVER_MOUNT,
    Driver,
    Hide,
    Lock,
    LockedWheel,
    Mount,
    Overwrite,
    Replace,
    RunSpec,
    SetEnv,
    Stack,
    Truncate,
    WheelMember,
)

SITE = "/opt/stack/lib/python3.11/site-packages"
ARGV = ("python", "/probe/stageprobe.py", "torch")
STACK = Stack(
    framework="torch", framework_version="2.15.0", cuda="13.2", cudnn="9.26", python="3.11",
    base="offline",
)  # fmt: skip


def lock(*wheels: tuple[str, str]) -> Lock:
    return Lock(
        slug=STACK.slug, requirements=("torch==2.15.0",), overrides=(), index="https://pypi.org/simple",
        python="3.11", platforms=("manylinux_2_17_x86_64",),
        wheels=tuple(
            LockedWheel(name=n, version=v, filename=f"{n}-{v}.whl", sha256="0" * 64, size=1)
            for n, v in wheels
        ),
    )  # fmt: skip


def make_env(root: Path) -> Path:
    env = root / "stacks" / "envs" / "torch-abc"
    lib = env / "lib/python3.11/site-packages/nvidia/cudnn/lib"
    lib.mkdir(parents=True)
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_cnn.so.9"):
        (lib / name).write_bytes(name.encode() * 1000)
    (lib.parent / "include").mkdir()
    (lib.parent / "include" / "cudnn.h").write_text("//")
    return env


def test_an_environments_name_changes_with_every_input() -> None:
    one = lock(("torch", "2.15.0"), ("nvidia-cudnn-cu13", "9.26.0.51"))
    ref = env_ref(STACK, one, "stackmatrix/base:x", "script", "0.13.9")
    assert ref.startswith(f"stackmatrix/env:{STACK.slug}-")
    others = [
        env_ref(STACK, lock(("torch", "2.15.0")), "stackmatrix/base:x", "script", "0.13.9"),
        env_ref(STACK, one, "stackmatrix/base:y", "script", "0.13.9"),
        env_ref(STACK, one, "stackmatrix/base:x", "script 2", "0.13.9"),
        env_ref(STACK, one, "stackmatrix/base:x", "script", "0.14.0"),
    ]
    assert len({ref, *others}) == 5
    assert env_ref(STACK, one, "stackmatrix/base:x", "script", "0.13.9") == ref


def test_hide_is_a_copy_of_the_folder_without_it_made_of_hard_links(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    store = tmp_path / "stacks" / "faults"
    spec = RunSpec(argv=ARGV, ops=(Hide(path=f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn.so.*"),))
    [mount] = faultmounts.mounts(spec, env, store, "stackmatrix/env:torch-abc")
    assert mount.target == f"{SITE}/nvidia/cudnn/lib" and mount.read_only
    shown = sorted(p.name for p in Path(mount.source).iterdir())
    assert shown == ["libcudnn.so.9", "libcudnn_graph.so.9"]
    lib = env / "lib/python3.11/site-packages/nvidia/cudnn/lib"
    assert (lib / "libcudnn_cnn.so.9").exists()  # the environment is untouched
    assert (
        os.stat(Path(mount.source) / "libcudnn.so.9").st_ino
        == os.stat(lib / "libcudnn.so.9").st_ino
    )
    # the same faults on the same environment: the same material, not made again
    again = faultmounts.mounts(spec, env, store, "stackmatrix/env:torch-abc")
    assert again == [mount]
    assert [p.name for p in store.iterdir() if p.name.startswith(".tmp-")] == []


def test_hiding_a_folder_shows_its_parent_without_it(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    spec = RunSpec(argv=ARGV, ops=(Hide(path=f"{SITE}/nvidia/cudnn/lib"),))
    [mount] = faultmounts.mounts(spec, env, tmp_path / "f", "r")
    assert mount.target == f"{SITE}/nvidia/cudnn"
    assert sorted(p.name for p in Path(mount.source).iterdir()) == ["include"]


def test_a_hide_that_matches_nothing_mounts_nothing(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    spec = RunSpec(argv=ARGV, ops=(Hide(path=f"{SITE}/nvidia/*/lib/libcublas.so.*"),))
    assert faultmounts.mounts(spec, env, tmp_path / "f", "r") == []


def test_truncate_overwrite_and_replace_bind_a_file_over_the_file(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    graph = f"{SITE}/nvidia/cudnn/lib/libcudnn_graph.so.9"
    other = tmp_path / "extracted" / "libcudnn_graph.so.9"
    other.parent.mkdir()
    other.write_bytes(b"older")
    member = WheelMember(pin="nvidia-cudnn-cu13==9.13.0.50", member="nvidia/cudnn/lib/x")
    ops = (
        Truncate(path=graph, size=10),
        Overwrite(path=f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9", text="version https://git-lfs"),
        Replace(path=f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn.so.9", source=member),
    )
    spec = RunSpec(
        argv=ARGV, ops=ops, mounts=(Mount(other, "/faults/0"),), sources=((member, "/faults/0"),)
    )
    cut, text, replaced = faultmounts.mounts(spec, env, tmp_path / "f", "r")
    assert cut.target == graph and Path(cut.source).read_bytes() == b"libcudnn_g"
    assert Path(text.source).read_text() == "version https://git-lfs"
    assert replaced == Mount(other, f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn.so.9")
    lib = env / "lib/python3.11/site-packages/nvidia/cudnn/lib"
    assert (lib / "libcudnn_graph.so.9").stat().st_size == len(b"libcudnn_graph.so.9") * 1000


def test_on_an_environment_a_run_is_uid_1000_read_only_with_no_root_step(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    driver = tmp_path / "driver"
    driver.mkdir()
    ops = (
        Hide(path=f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn.so.9"),
        SetEnv(name="A", value="1"),
        Driver(version="550.163.01", links=(("libcuda.so.550.163.01", "libcuda.so.1"),)),
    )
    spec = RunSpec(argv=ARGV, ops=ops, mounts=(Mount(driver, DRIVER_MOUNT),))
    lay = layout(spec, "stackmatrix/base:x", env, tmp_path / "f", "r")
    assert not lay.root and lay.user == WORKLOAD_USER and lay.on_env
    assert lay.script.startswith("cd /home/stack\nexec env HOME=/home/stack A=1 python")
    targets = [m.target for m in lay.spec.mounts]
    assert "/opt/stack" in targets and f"{SITE}/nvidia/cudnn/lib" in targets
    assert (
        f"{DRIVER_DIR}/libcuda.so.550.163.01" in targets and f"{DRIVER_DIR}/libcuda.so.1" in targets
    )
    assert all(m.read_only for m in lay.spec.mounts)
    hard = hardening(lay)
    assert hard["read_only"] is True and hard["tmpfs"] == TMPFS and "cap_add" not in hard
    assert lay.env["PATH"].startswith("/opt/stack/bin:")
    command = docker_run_command(lay)
    assert "--read-only" in command and "--user 1000:1000" in command and "--cap-add" not in command


def test_a_hide_outside_the_environment_keeps_the_root_step(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    spec = RunSpec(argv=ARGV, ops=(Hide(path="/usr/lib/x86_64-linux-gnu/libcuda.so*"),))
    lay = layout(spec, "img", env, tmp_path / "f", "r")
    assert lay.root and lay.user == "0"
    assert "rm -rf -- /usr/lib/x86_64-linux-gnu/libcuda.so*" in lay.script
    assert hardening(lay)["read_only"] is False and "cap_add" in hardening(lay)


def test_tree_bytes_counts_a_hard_linked_file_once(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 100_000)
    os.link(tmp_path / "a", tmp_path / "b")
    one = tree_bytes(tmp_path)
    (tmp_path / "c").write_bytes(b"x" * 100_000)
    assert 100_000 <= one < 150_000 and tree_bytes(tmp_path) >= 200_000


def test_sweep_removes_temp_folders_of_a_dead_process_only(tmp_path: Path) -> None:
    store = EnvStore(tmp_path)
    mine = temp_dir(store.envs)
    child = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from harness.backends.envs import temp_dir; print(temp_dir(Path(sys.argv[1])))",
         str(store.envs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    dead = Path(child.stdout.strip())
    assert dead.is_dir() and mine.is_dir()
    assert store.sweep() == [str(dead)]
    assert mine.is_dir() and not dead.exists()


def test_gc_never_removes_an_environment_a_harness_holds(tmp_path: Path) -> None:
    store = EnvStore(tmp_path)
    (store.envs / "torch-abc").mkdir(parents=True)
    (store.envs / "torch-abc" / "stackmatrix-env.json").write_text("{}")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from harness.backends.envs import EnvStore; s = EnvStore(Path(sys.argv[1])); "
         "s.hold('stackmatrix/env:torch-abc'); print('held', flush=True); time.sleep(60)",
         str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert store.remove("torch-abc") is False
        assert [n for n, _ in store.listed()] == ["torch-abc"]
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert store.remove("torch-abc") is True
    assert list(store.listed()) == []


@pytest.mark.parametrize("name", ["libcuda.so.1"])
def test_a_placed_driver_library_is_mounted_at_its_name_and_soname(
    tmp_path: Path, name: str
) -> None:
    env = make_env(tmp_path)
    op = Driver(version="stub", links=(("libcuda.so", name),))
    spec = RunSpec(argv=ARGV, ops=(op,), mounts=(Mount(tmp_path, DRIVER_MOUNT),))
    lay = layout(spec, "img", env, tmp_path / "f", "r")
    placed = {m.target: m.source for m in lay.spec.mounts if m.target.startswith(DRIVER_DIR)}
    assert placed == {
        f"{DRIVER_DIR}/libcuda.so": tmp_path / "libcuda.so",
        f"{DRIVER_DIR}/{name}": tmp_path / "libcuda.so",
    }
