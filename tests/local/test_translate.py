"""The local backend's pure parts: container paths -> host paths, where each file operation
acts, the script and environment of a run, what it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends.local import finished
from harness.backends.local_script import (
    Environment,
    LocalError,
    Placement,
    Step,
    host_path,
    path_table,
    place,
    probe_env,
    run_script,
    translate,
)
from harness.backends.venv import parse_inspection, venv_key
from harness.faults import resolve
from harness.model import Fault, Hide, Mount, ProcResult, Replace, RunSpec, WheelMember
from harness.runner import mount_points
from tests.local.conftest import TINY_LOCK, TINY_STACK

ENV = Environment(
    python=Path("/c/run/venv/bin/python"),
    prefix=Path("/c/run/venv"),
    site=Path("/c/run/venv/lib/python3.11/site-packages"),
    version="3.11",
    owned=True,
)
MOUNTS = (
    Mount(Path("/h/probes"), "/probe"),
    Mount(Path("/h/x/libone.so"), "/faults/1"),
    Mount(Path("/h/x/lib-ten"), "/faults/10"),
)
TABLE = path_table(ENV.prefix, ENV.site, "3.11", MOUNTS)
SITE = "/opt/stack/lib/python3.11/site-packages"


def fault(primitive: str, **args: str) -> Fault:
    return Fault(primitive=primitive, args=tuple(sorted(args.items())))


EVERY_PRIMITIVE = (
    fault("hide", path="{site}/nvidia/*/lib/libcublas.so.*"),
    fault("truncate", path="{site}/nvidia/cudnn/lib/libcudnn_graph.so.9", bytes="1000"),
    fault("replace", path="{site}/a.so", wheel="w==1", member="a.so"),
    fault("path_prepend", wheel="w==1", member="lib/"),
    fault("preload", wheel="w==1", member="b.so"),
    fault("env_set", name="A", value="{venv}/x"),
    fault("env_unset", name="B"),
    fault("no_gpu"),
    fault("memory_limit", bytes="1073741824"),
)


def spec_of(*faults: Fault, gpu: bool = False, mounts: tuple[Mount, ...] = MOUNTS) -> RunSpec:
    """As the runner makes it: each other wheel's member mounted at /faults/N (N from 1)."""
    ops = resolve(faults, TINY_STACK)
    sources = mount_points(ops, first=1)
    argv = ("python", "/probe/stageprobe.py", "torch")
    return RunSpec(argv=argv, ops=ops, mounts=mounts, sources=sources, gpu=gpu, timeout=60)


def test_whole_paths_are_translated_longest_first() -> None:
    text = (
        "cp /faults/10 /opt/stack/lib/python3.11/site-packages/a && "
        "cat /faults/1 '/opt/stack/bin/x' /opt/stackx /faults/1x /probe/p.py"
    )
    assert translate(text, TABLE) == (
        "cp /h/x/lib-ten /c/run/venv/lib/python3.11/site-packages/a && "
        "cat /h/x/libone.so '/c/run/venv/bin/x' /opt/stackx /faults/1x /h/probes/p.py"
    )


def test_search_path_values_are_translated_per_entry() -> None:
    assert (
        translate("/faults/10:/faults/1:/usr/lib", TABLE) == "/h/x/lib-ten:/h/x/libone.so:/usr/lib"
    )


def test_a_typed_path_maps_by_its_longest_folder() -> None:
    assert host_path(f"{SITE}/nvidia/x.so", TABLE) == f"{ENV.site}/nvidia/x.so"
    assert host_path("/opt/stack/bin/python", TABLE) == "/c/run/venv/bin/python"
    assert host_path("/faults/10/lib.so", TABLE) == "/h/x/lib-ten/lib.so"
    assert host_path("/opt/stackx/a", TABLE) is None
    assert host_path("/usr/lib/x86_64-linux-gnu/libcuda.so.1", TABLE) is None


def test_every_file_primitive_becomes_a_step_on_host_paths(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    table = path_table(venv, site, "3.11", (Mount(Path("/h/a.so"), "/faults/1"),))
    placed = place(spec_of(*EVERY_PRIMITIVE), table, [site, venv])
    assert placed.steps == (
        Step(kind="hide", path=f"{site}/nvidia/*/lib/libcublas.so.*"),
        Step(kind="truncate", path=f"{site}/nvidia/cudnn/lib/libcudnn_graph.so.9", size=1000),
        Step(kind="replace", path=f"{site}/a.so", source="/h/a.so"),
    )
    assert placed.roots == (site,) and placed.host_dirs == ()


def test_steps_act_inside_the_environment_or_on_overlaid_host_folders(tmp_path: Path) -> None:
    venv, host = tmp_path / "venv", tmp_path / "host"
    (venv / "lib").mkdir(parents=True)
    (host / "lib").mkdir(parents=True)
    (host / "lib" / "libcuda.so.1").touch()
    table = path_table(venv, venv / "lib", "3.11", ())
    member = WheelMember(pin="w==1", member="a.so")
    ops = (
        Hide(path="/opt/stack/lib/x/*.so"),
        Hide(path=f"{host}/lib/libcuda.so*"),  # the host's driver: an overlay over its folder
        Hide(path=f"{host}/compat/libcuda.so*"),  # nothing to hide here: dropped
        Replace(path="/opt/stack/lib/a.so", source=member),
    )
    spec = RunSpec(argv=(), ops=ops, sources=((member, "/h/a.so"),))
    assert place(spec, table, [venv]) == Placement(
        steps=(
            Step(kind="hide", path=f"{venv}/lib/x/*.so"),
            Step(kind="hide", path=f"{host}/lib/libcuda.so*"),
            Step(kind="replace", path=f"{venv}/lib/a.so", source="/h/a.so"),
        ),
        roots=(venv,),
        host_dirs=(host / "lib",),
    )


def test_a_path_that_leads_out_through_a_symlink_is_refused(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "out").symlink_to(tmp_path)
    table = path_table(venv, venv / "lib", "3.11", ())
    spec = RunSpec(argv=(), ops=(Hide(path="/opt/stack/out/x"),))
    with pytest.raises(LocalError, match="leads out"):
        place(spec, table, [venv])


def test_the_script_applies_the_steps_then_runs_the_probe_with_host_paths() -> None:
    spec = spec_of(
        fault("hide", path="{site}/nvidia/cudnn/lib"),
        fault("preload", wheel="w==1", member="b.so"),
        fault("env_unset", name="B"),
        fault("memory_limit", bytes="1073741824"),
        gpu=True,
        mounts=(Mount(Path("/h/probes"), "/probe"), Mount(Path("/h/b.so"), "/faults/1")),
    )
    table = path_table(ENV.prefix, ENV.site, "3.11", spec.mounts)
    script = run_script(
        spec, table, ENV, home=Path("/c/run/home"), base={},
        ops_file=Path("/c/run/ops.json"), helper="/usr/bin/python3",
    )  # fmt: skip
    lines = script.splitlines()
    assert lines[:2] == ["exec 2>&1", "set -e"]
    assert lines[2].startswith("/usr/bin/python3 -I -S ") and "/c/run/ops.json" in lines[2]
    assert lines[3:] == [
        "cd /c/run/home",
        "ulimit -d 1048576",
        "exec env -u B LD_PRELOAD=/h/b.so PYTHONDONTWRITEBYTECODE=1 PYTHONNOUSERSITE=1"
        " VIRTUAL_ENV=/c/run/venv /c/run/venv/bin/python /h/probes/stageprobe.py torch",
    ]


def test_a_cpu_run_hides_the_hosts_gpus_even_from_an_unset() -> None:
    unset, values = probe_env(
        spec_of(fault("env_unset", name="CUDA_VISIBLE_DEVICES")), TABLE, ENV, {}
    )
    assert unset == ["CUDA_VISIBLE_DEVICES"] and values["CUDA_VISIBLE_DEVICES"] == ""
    assert "CUDA_VISIBLE_DEVICES" not in probe_env(spec_of(gpu=True), TABLE, ENV, {})[1]
    no_gpu = spec_of(fault("no_gpu"), gpu=True)
    assert probe_env(no_gpu, TABLE, ENV, {})[1]["CUDA_VISIBLE_DEVICES"] == ""


def test_a_search_path_is_prepended_to_what_the_host_has() -> None:
    spec = spec_of(fault("path_prepend", var="PATH", wheel="w==1", member="lib/"))
    _, values = probe_env(spec, TABLE, ENV, {"PATH": "/usr/bin"})
    assert values["PATH"] == "/h/x/libone.so:/usr/bin"


def result(code: int | None, *, timed_out: bool = False, out: str = "o\n") -> ProcResult:
    return ProcResult(
        argv=("sh",), returncode=code, stdout=out, stderr="e\n", seconds=1, timed_out=timed_out
    )


def test_results_read_like_a_containers() -> None:
    assert finished(result(0), (0, 0)) == finished(result(0), (None, None))
    assert finished(result(1), (0, 0)).output == "o\ne\n"
    assert finished(result(-11), (0, 0)).exit_code == 139  # SIGSEGV, as Docker reports it
    assert finished(result(-9, timed_out=True), (0, 0)).exit_code is None
    assert finished(result(-9), (0, 1)).oom_killed
    assert not finished(result(-9), (1, 1)).oom_killed  # killed, but not by the OOM killer
    long = finished(result(0, out="x" * (5 << 20)), (0, 0)).output
    assert long.startswith("[... ") and long.endswith("xe\n") and len(long) < 5 << 20
    with pytest.raises(LocalError, match="could not start"):
        finished(result(None), (0, 0))


TORCH_INSPECTION = {
    "python": "3.11",
    "prefix": "/opt/conda",
    "purelib": "/opt/conda/lib/python3.11/site-packages",
    "nvidia": {"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cuda-runtime-cu12": "12.4.127"},
    "frameworks": {
        "torch": {
            "site": "/opt/conda/lib/python3.11/site-packages",
            "version": "2.5.1+cu124",
            "cuda": "12.4",
            "cudnn": 90100,
        }
    },
}


def test_an_interpreters_stack_is_read_from_its_packages() -> None:
    stack, env = parse_inspection(TORCH_INSPECTION, Path("/opt/conda/bin/python"), None)
    assert stack.slug == "torch-2.5.1_cu12.4_cudnn9.1_py3.11_local"
    assert stack.cudnn == "9.1.0.70"  # the installed wheel's, more exact than the build's
    assert env.site == Path("/opt/conda/lib/python3.11/site-packages") and not env.owned


def test_without_cudnn_wheels_the_build_info_says() -> None:
    data = {**TORCH_INSPECTION, "nvidia": {}}
    tf = {"site": "/s", "version": "2.17.0", "cuda": "12.3.2", "cudnn": "8"}
    stack, _ = parse_inspection(data, Path("/p"), None)
    assert (stack.cuda, stack.cudnn) == ("12.4", "9.1.0")
    data = {**data, "frameworks": {"tensorflow": tf}}
    stack, _ = parse_inspection(data, Path("/p"), "tensorflow")
    assert (stack.cuda, stack.cudnn) == ("12.3", "8")


def test_an_interpreter_with_both_frameworks_needs_one_named() -> None:
    frameworks = {**TORCH_INSPECTION["frameworks"], "tensorflow": {"site": "/s"}}
    data = {**TORCH_INSPECTION, "frameworks": frameworks}
    with pytest.raises(LocalError, match="has torch and tensorflow"):
        parse_inspection(data, Path("/p"), None)
    with pytest.raises(LocalError, match="cannot read the tensorflow stack"):
        parse_inspection(data, Path("/p"), "tensorflow")


def test_a_venv_is_addressed_by_its_wheels_and_base_interpreter() -> None:
    key = venv_key(TINY_LOCK, "/usr/bin/python3.11", "3.11.2")
    assert key == venv_key(TINY_LOCK, "/usr/bin/python3.11", "3.11.2")
    assert key != venv_key(TINY_LOCK, "/usr/bin/python3.11", "3.11.9")
    assert key != venv_key(TINY_LOCK, "/opt/py/bin/python3.11", "3.11.2")
