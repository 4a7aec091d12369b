"""`harness doctor`: the findings from hand-made facts (pure), the parsing of what its probe
prints, and the probe and gathering for real on this machine (a fake framework package stands in
where a real one would take gigabytes)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from harness import doctor, host
from harness.compat import parse_knowledge, read_knowledge_docs
from harness.doctor import gather
from harness.doctor.facts import (
    DriverFacts,
    Facts,
    Finding,
    FrameworkFacts,
    Interpreter,
    LibCopy,
    Origin,
    Severity,
    cudnn_version,
    name_version,
    parse_framework,
    parse_ldconfig,
    probe_lines,
)
from harness.doctor.rules import arch_supported, findings
from harness.model import Gpu
from harness.signatures import read_catalog
from tests.conftest import ROOT

KB = parse_knowledge(read_knowledge_docs())
CATALOG = read_catalog(ROOT / "scenarios" / "signatures.yaml")
SP = "/venv/lib/python3.11/site-packages"
H100 = Gpu(index=0, name="NVIDIA H100 80GB HBM3", capability="9.0")
TORCH = FrameworkFacts(
    name="torch",
    version="2.15.0+cu132",
    built_cuda="13.2",
    built_cudnn="9.26.0",
    runtime_cudnn="9.26.0",
    arch_list=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
    device_count=0,
    loaded=(("libcudnn.so.9", f"{SP}/nvidia/cudnn/lib/libcudnn.so.9"),),
)
WHEELS = (("nvidia-cudnn-cu13", "9.26.0.51"), ("torch", "2.15.0"))


def lib(path: str, origin: Origin, version: str | None = None, **kw: object) -> LibCopy:
    fields: dict[str, object] = {"real": path, "rank": 0, "version_from": "cudnnGetVersion"}
    fields.update(kw)
    return LibCopy(
        name=path.rsplit("/", 1)[-1],
        path=path,
        origin=origin,
        version=version,
        **fields,  # type: ignore[arg-type]
    )


def facts(
    *,
    driver: str | None = None,
    gpus: tuple[Gpu, ...] = (),
    libs: tuple[LibCopy, ...] = (),
    frameworks: tuple[FrameworkFacts, ...] = (),
    **interp: object,
) -> Facts:
    fields: dict[str, object] = {"version": "3.11.7", "wheels": WHEELS}
    fields.update(interp)
    return Facts(
        driver=DriverFacts(version=driver, origin="nvml" if driver else "none", gpus=gpus),
        interpreter=Interpreter(path="/venv/bin/python", **fields),  # type: ignore[arg-type]
        libraries=libs,
        frameworks=frameworks,
    )


def by_sig(found: tuple[Finding, ...], sig: str | None) -> list[Finding]:
    return [f for f in found if f.signature == sig]


def one(found: tuple[Finding, ...], sig: str) -> Finding:
    hits = by_sig(found, sig)
    assert len(hits) == 1, [(f.severity, f.signature, f.message) for f in found]
    return hits[0]


# ---------------------------------------------------------------- driver and GPU


def test_no_driver_is_info_on_a_cpu_machine() -> None:
    found = findings(facts(), KB, CATALOG)
    f = one(found, "no_gpu_or_driver")
    assert f.severity is Severity.INFO
    assert f.fix == CATALOG.get("no_gpu_or_driver").fix  # the fix comes from the catalog
    assert doctor.DoctorReport(facts=facts(), findings=found).exit_code == 0


def test_device_nodes_without_a_driver_warn() -> None:
    f0 = facts()
    f = replace(f0, driver=replace(f0.driver, device_nodes=("/dev/nvidia0",)))
    assert one(findings(f, KB, CATALOG), "no_gpu_or_driver").severity is Severity.WARN


def test_driver_too_old_for_the_framework_cuda_cites_the_driver_table() -> None:
    found = findings(facts(driver="550.54.15", gpus=(H100,), frameworks=(TORCH,)), KB, CATALOG)
    f = one(found, "driver_too_old")
    assert f.severity is Severity.FAIL
    mc = KB.compat_for("13.2")
    assert mc is not None
    assert ("source", mc.source) in f.evidence
    assert "550.54.15 < 580" in f.message
    assert f.fix == CATALOG.get("driver_too_old").fix


def test_a_new_enough_driver_is_ok_with_its_row() -> None:
    found = findings(facts(driver="595.71.05", gpus=(H100,), frameworks=(TORCH,)), KB, CATALOG)
    assert not by_sig(found, "driver_too_old")
    tk = KB.toolkit("13.2")
    assert tk is not None
    ok = [f for f in found if ("source", tk.source) in f.evidence]
    assert ok and ok[0].severity is Severity.OK


def test_without_a_driver_it_says_which_driver_the_framework_needs() -> None:
    found = findings(facts(frameworks=(TORCH,)), KB, CATALOG)
    need = [f for f in found if "needs an NVIDIA driver >=" in f.message]
    assert len(need) == 1 and need[0].severity is Severity.INFO
    assert ">= 595.45.04" in need[0].message and ">= 580" in need[0].message


@pytest.mark.parametrize(
    ("cap", "archs", "ok"),
    [
        ("9.0", ("sm_80", "sm_90"), True),
        ("8.9", ("sm_80", "sm_86"), True),  # a cubin runs on a newer minor of its major
        ("6.1", ("sm_75", "sm_80"), False),  # older than anything built
        ("10.0", ("sm_80", "sm_90"), False),  # a newer major needs PTX
        ("10.0", ("sm_80", "compute_90"), True),  # PTX is JIT-compiled for newer GPUs
        ("8.0", ("sm_90", "compute_90"), False),  # PTX does not run on older GPUs
        ("9.0", ("sm_90a",), True),  # arch-specific: exactly that capability
        ("9.1", ("sm_90a",), False),
        ("10.3", ("sm_100f",), True),
        ("12.0", ("sm_100f",), False),
    ],
)
def test_arch_support_follows_binary_compatibility(cap: str, archs: tuple[str], ok: bool) -> None:
    assert arch_supported(cap, archs) is ok


def test_a_gpu_the_build_has_no_kernels_for_is_arch_unsupported() -> None:
    old = Gpu(index=0, name="Tesla P100", capability="6.0")
    f = one(
        findings(facts(driver="600.10", gpus=(old,), frameworks=(TORCH,)), KB, CATALOG),
        "arch_unsupported",
    )
    assert f.severity is Severity.FAIL
    assert "6.0" in f.message and "sm_75" in f.message


# ---------------------------------------------------------------- cuDNN


def test_loaded_cudnn_older_than_built_is_a_mismatch() -> None:
    fw = replace(TORCH, runtime_cudnn="9.13.0")
    f = one(findings(facts(frameworks=(fw,)), KB, CATALOG), "cudnn_version_mismatch")
    assert f.severity is Severity.FAIL
    check = KB.cudnn_check("torch")
    assert check is not None and ("source", check.source) in f.evidence


def test_loaded_cudnn_newer_minor_is_accepted_but_said() -> None:
    fw = replace(TORCH, runtime_cudnn="9.28.0")
    f = one(findings(facts(frameworks=(fw,)), KB, CATALOG), "cudnn_version_mismatch")
    assert f.severity is Severity.INFO and "accepted" in f.message


def test_older_cudnn_on_ld_library_path_is_a_risk_when_not_loaded() -> None:
    old = lib("/opt/cudnn-9.13/lib/libcudnn_graph.so.9", Origin.LD_LIBRARY_PATH, "9.13.0")
    f = one(
        findings(facts(libs=(old,), frameworks=(TORCH,)), KB, CATALOG), "cudnn_version_mismatch"
    )
    assert f.severity is Severity.WARN
    assert "LD_LIBRARY_PATH[0]" in f.message and "did not load it" in f.message
    assert ("folder", "/opt/cudnn-9.13/lib") in f.evidence


def test_older_cudnn_on_ld_library_path_that_was_loaded_fails() -> None:
    path = "/opt/cudnn-9.13/lib/libcudnn_graph.so.9"
    old = lib(path, Origin.LD_LIBRARY_PATH, "9.13.0")
    fw = replace(TORCH, runtime_cudnn=None, loaded=(*TORCH.loaded, ("libcudnn_graph.so.9", path)))
    f = one(findings(facts(libs=(old,), frameworks=(fw,)), KB, CATALOG), "cudnn_version_mismatch")
    assert f.severity is Severity.FAIL and "loaded libcudnn_graph.so.9" in f.message


def test_the_same_cudnn_on_ld_library_path_is_no_finding() -> None:
    same = lib("/opt/cudnn/lib/libcudnn_graph.so.9", Origin.LD_LIBRARY_PATH, "9.26.0")
    assert not by_sig(
        findings(facts(libs=(same,), frameworks=(TORCH,)), KB, CATALOG), "cudnn_version_mismatch"
    )


def test_installed_cudnn_wheel_against_the_compat_pin() -> None:
    old = (("nvidia-cudnn-cu13", "9.13.0.50"),)
    f = one(findings(facts(frameworks=(TORCH,), wheels=old), KB, CATALOG), "cudnn_version_mismatch")
    release = KB.release("torch", "2.15.0")
    assert release is not None and release.variant("13.2") is not None
    assert ("source", release.variants[0].source) in f.evidence
    assert "wants cuDNN 9.26.0.51" in f.message


def test_wheel_folder_files_of_another_release_fail() -> None:
    graph = lib(f"{SP}/nvidia/cudnn/lib/libcudnn_graph.so.9", Origin.WHEEL, "9.13.0")
    found = findings(facts(libs=(graph,)), KB, CATALOG)
    f = one(found, "cudnn_version_mismatch")
    assert f.severity is Severity.FAIL and "another install replaced" in f.message


def test_two_cudnn_wheels_in_one_folder_warn() -> None:
    both = (("nvidia-cudnn-cu12", "9.13.0.50"), ("nvidia-cudnn-cu13", "9.26.0.51"))
    f = one(findings(facts(wheels=both), KB, CATALOG), "cudnn_version_mismatch")
    assert f.severity is Severity.WARN and "share one" in f.message


def test_a_file_gone_from_a_wheel_is_named_by_the_catalog() -> None:
    gone = (("nvidia-cudnn-cu13", f"{SP}/nvidia/cudnn/lib/libcudnn_graph.so.9"),)
    f = one(findings(facts(missing=gone), KB, CATALOG), "cudnn_missing")
    assert f.severity is Severity.FAIL and "libcudnn_graph.so.9" in f.message
    gone = (("nvidia-cuda-runtime", f"{SP}/nvidia/cu13/lib/libcudart.so.13"),)
    assert one(findings(facts(missing=gone), KB, CATALOG), "cuda_runtime_missing")


def test_a_file_of_another_size_than_the_record_is_corrupt() -> None:
    changed = (("nvidia-cudnn-cu13", f"{SP}/nvidia/cudnn/lib/libcudnn_graph.so.9", 100, 10),)
    f = one(findings(facts(changed=changed), KB, CATALOG), "corrupt_library")
    assert f.severity is Severity.FAIL and "RECORD 100" in f.evidence[0][1]


# ---------------------------------------------------------------- the loader path


def test_a_stub_libcuda_first_on_the_loader_path_fails() -> None:
    stub = lib("/usr/local/cuda/lib64/stubs/libcuda.so.1", Origin.LD_LIBRARY_PATH, stub=True)
    real = lib("/usr/lib/x86_64-linux-gnu/libcuda.so.1", Origin.CACHE, "13.0")
    f = one(findings(facts(libs=(stub, real)), KB, CATALOG), "stub_driver")
    assert f.severity is Severity.FAIL and f.fix == CATALOG.get("stub_driver").fix


def test_a_stub_behind_the_real_driver_warns() -> None:
    real = lib("/usr/lib/x86_64-linux-gnu/libcuda.so.1", Origin.CACHE, "13.0")
    stub = lib("/usr/local/cuda/lib64/stubs/libcuda.so.1", Origin.SYSTEM, stub=True)
    assert (
        one(findings(facts(libs=(real, stub)), KB, CATALOG), "stub_driver").severity
        is Severity.WARN
    )


def test_a_stub_in_a_toolkit_folder_off_the_path_is_fine() -> None:
    stub = lib("/usr/local/cuda/lib64/stubs/libcuda.so", Origin.TOOLKIT, stub=True)
    assert not by_sig(findings(facts(libs=(stub,)), KB, CATALOG), "stub_driver")


def test_shadowing_names_the_copy_that_wins() -> None:
    first = lib("/opt/cuda/lib/libcudart.so.12", Origin.LD_LIBRARY_PATH, "12.4")
    second = lib("/usr/lib/x86_64-linux-gnu/libcudart.so.12", Origin.CACHE, "12.8")
    found = findings(facts(libs=(second, first)), KB, CATALOG)  # order given does not matter
    f = next(f for f in found if "copies of libcudart.so.12" in f.message)
    assert f.severity is Severity.WARN
    assert "takes /opt/cuda/lib/libcudart.so.12 (LD_LIBRARY_PATH[0], 12.4)" in f.message


def test_one_file_under_two_names_is_no_duplicate() -> None:
    a = lib("/lib/x86_64-linux-gnu/libnccl.so.2", Origin.CACHE, "2.21.5")
    b = replace(a, path="/usr/lib/x86_64-linux-gnu/libnccl.so.2", origin=Origin.SYSTEM)
    assert not [f for f in findings(facts(libs=(a, b)), KB, CATALOG) if "copies" in f.message]


def test_a_library_that_kills_its_loader_is_classified() -> None:
    err = "loading it ended the process (-6): Invalid handle. Cannot load symbol cudnnGetVersion"
    shim = lib(f"{SP}/nvidia/cudnn/lib/libcudnn.so.9", Origin.WHEEL, "9", error=err)
    f = one(findings(facts(libs=(shim,)), KB, CATALOG), "cudnn_missing")
    assert f.severity is Severity.FAIL


# ---------------------------------------------------------------- frameworks that fail


def test_an_import_error_is_classified() -> None:
    fw = FrameworkFacts(
        name="torch",
        failed_step="import",
        returncode=1,
        error="Traceback (most recent call last):\n  ...\nImportError: libcublas.so.13: "
        "cannot open shared object file: No such file or directory\n",
    )
    f = one(findings(facts(frameworks=(fw,)), KB, CATALOG), "cuda_runtime_missing")
    assert f.severity is Severity.FAIL and "import step" in f.message


def test_a_framework_killed_by_a_signal_is_classified_from_its_output() -> None:
    fw = replace(
        TORCH,
        runtime_cudnn=None,
        failed_step="cudnn",
        returncode=-6,
        output="Invalid handle. Cannot load symbol cudnnGetVersion",
    )
    f = one(findings(facts(frameworks=(fw,)), KB, CATALOG), "cudnn_missing")
    assert f.severity is Severity.FAIL and "died (exit -6)" in f.message


TF_LOG = (
    "I0000 00:00:1712 12 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU "
    "will not be used.\n"
    "E0000 00:00:1712 12 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: "
    "Failed call to cuInit: UNKNOWN ERROR (303)\n"
)
TF = FrameworkFacts(
    name="tensorflow",
    version="2.21.0",
    built_cuda="12.5.1",
    built_cudnn="9",
    arch_list=("sm_60", "sm_70", "sm_80", "sm_89", "compute_90"),
    device_count=0,
    output=TF_LOG,
)


def test_a_framework_that_works_still_says_what_its_log_names() -> None:
    # A warning the classifier would let the later cuInit error outrank: here it counts.
    f = one(findings(facts(frameworks=(TF,), wheels=()), KB, CATALOG), "cuda_runtime_missing")
    assert f.severity is Severity.INFO and "Could not find cuda drivers" in f.message


def test_a_framework_that_sees_none_of_the_drivers_gpus_fails() -> None:
    f = facts(driver="580.95.05", gpus=(H100,), frameworks=(TF,), wheels=())
    found = findings(f, KB, CATALOG)
    blind = [x for x in found if "sees no GPU" in x.message]
    assert len(blind) == 1 and blind[0].severity is Severity.FAIL
    assert blind[0].signature == "cuda_runtime_missing"  # what its own log said
    assert one(found, "cudnn_missing").severity is Severity.WARN  # no cuDNN anywhere
    assert not by_sig(found, "arch_unsupported")  # 9.0 runs compute_90 PTX


def test_an_unreadable_interpreter_fails() -> None:
    f = findings(facts(error="cannot start it"), KB, CATALOG)
    assert any(x.severity is Severity.FAIL and x.topic == "python" for x in f)


# ---------------------------------------------------------------- parsing


def test_ldconfig_lines_of_this_machine_only() -> None:
    text = textwrap.dedent(
        """\
        3 libs found in cache `/etc/ld.so.cache'
        \tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/lib64/libcudart.so.13
        \tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1
        \tlibcuda.so.1 (libc6,x86-64, OS ABI: Linux 3.2.0) => /usr/lib/x86_64-linux-gnu/libcuda.so.1
        """
    )
    assert parse_ldconfig(text) == (
        ("libcudart.so.13", "/usr/local/cuda-13.0/lib64/libcudart.so.13"),
        ("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
    )


def test_versions_from_names_and_from_cudnn() -> None:
    assert name_version("libcudart.so.12.4.127") == "12.4.127"
    assert name_version("libcudnn.so") is None
    assert (cudnn_version(92600), cudnn_version(8907), cudnn_version(91300)) == (
        "9.26.0",
        "8.9.7",
        "9.13.0",
    )


def test_a_framework_that_died_mid_step_keeps_the_steps_before() -> None:
    out = "\n".join(
        [
            '{"doctor": 1, "step": "import", "ok": true, "version": "2.15.0", "loaded": {}}',
            "noise a library printed",
            '{"doctor": 1, "step": "build", "ok": true, "built_cuda": "13.2", "built_cudnn": '
            '"9.26.0", "arch_list": ["sm_90"], "loaded": {"libcudnn.so.9": "/x/libcudnn.so.9"}}',
        ]
    )
    events, noise = probe_lines(out)
    fw = parse_framework("torch", events, returncode=-6, output=noise)
    assert (fw.version, fw.built_cuda, fw.arch_list) == ("2.15.0", "13.2", ("sm_90",))
    assert fw.failed_step == "cudnn" and fw.loaded == (("libcudnn.so.9", "/x/libcudnn.so.9"),)
    assert fw.output == "noise a library printed"


def test_nvidia_smi_gpus() -> None:
    gpus = host.parse_smi_gpus("0, NVIDIA H100 80GB HBM3, 9.0\n1, Tesla T4, [N/A]\n")
    assert gpus == (H100, Gpu(index=1, name="Tesla T4", capability=None))


def test_report_text_groups_and_json_round_trips() -> None:
    f = facts(frameworks=(TORCH,))
    report = doctor.DoctorReport(facts=f, findings=findings(f, KB, CATALOG))
    text = report.text()
    heads = ["Driver and GPU", "Libraries", "Frameworks", "Findings"]
    assert [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)
    data = json.loads(json.dumps(report.to_json()))
    assert data["exit_code"] == report.exit_code == 0
    assert {"driver", "interpreter", "libraries", "frameworks", "findings"} <= data.keys()


# ---------------------------------------------------------------- for real


PROBE = ROOT / "harness" / "probes" / "doctorprobe.py"


FAKE_TORCH = """
import os
__version__ = "2.15.0+cu132"
__file__ = __file__
class version:
    cuda = "13.2"
class _C:
    class _cudnn:
        getCompileVersion = staticmethod(lambda: (9, 26, 0))
class cuda:
    get_arch_list = staticmethod(lambda: ["sm_80", "sm_90"])
    is_available = staticmethod(lambda: False)
class backends:
    class cudnn:
        version = staticmethod(lambda: {cudnn})
"""


def fake_torch(tmp_path: Path, cudnn: str) -> dict[str, str]:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH.replace("{cudnn}", cudnn))
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def test_real_run_with_a_fake_torch_that_aborts_in_cudnn(tmp_path: Path) -> None:
    env = fake_torch(tmp_path, "os.abort()")
    report = doctor.run(python=sys.executable, env=env, kb=KB, catalog=CATALOG)
    (fw,) = report.facts.frameworks
    assert (fw.name, fw.built_cuda, fw.failed_step, fw.returncode) == ("torch", "13.2", "cudnn", -6)
    failed = [f for f in report.findings if f.severity is Severity.FAIL and f.topic == "torch"]
    assert failed and "died (exit -6)" in failed[0].message
    assert report.exit_code == 1


def test_real_run_with_a_fake_torch_loading_an_old_cudnn(tmp_path: Path) -> None:
    env = fake_torch(tmp_path, "91300")
    report = doctor.run(python=sys.executable, env=env, kb=KB, catalog=CATALOG)
    assert report.facts.frameworks[0].runtime_cudnn == "9.13.0"
    assert one(report.findings, "cudnn_version_mismatch").severity is Severity.FAIL
    assert "torch" in report.text()


def test_real_library_version_of_a_file_that_is_not_a_library(tmp_path: Path) -> None:
    bad = tmp_path / "libcudnn_graph.so.9"
    bad.write_bytes(b"<html>not an ELF file</html>" * 100)  # an error page saved as a .so
    answer = gather.ask_version(str(bad), os.environ)
    assert answer["ok"] is False and "invalid ELF header" in answer["error"]
    copy = lib(str(bad), Origin.WHEEL, error=answer["error"], version_from=None)
    assert one(findings(facts(libs=(copy,)), KB, CATALOG), "corrupt_library")


def test_real_run_on_this_interpreter_is_well_formed() -> None:
    report = doctor.run(python=sys.executable, env=os.environ, kb=KB, catalog=CATALOG)
    assert report.facts.interpreter.error is None
    assert report.facts.interpreter.version == sys.version.split()[0]
    json.dumps(report.to_json())
    if report.facts.driver.version is None:
        assert one(report.findings, "no_gpu_or_driver").severity in (Severity.INFO, Severity.WARN)


def test_sub_libraries_take_their_folders_graph_version(monkeypatch: pytest.MonkeyPatch) -> None:
    # The shim answers with whatever graph library it resolved (here an older one through
    # LD_LIBRARY_PATH); the folder's own graph library is what its sub-libraries belong to.
    answers = {
        "/w/libcudnn.so.9": {"ok": True, "version": "9.13.0", "call": "cudnnGetVersion"},
        "/w/libcudnn_graph.so.9": {"ok": True, "version": "9.26.0", "call": "cudnnGetVersion"},
    }
    monkeypatch.setattr(gather, "ask_version", lambda real, env: answers[real])
    names = ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9")
    copies = [gather._copy(f"/w/{n}", Origin.WHEEL) for n in names]
    got = {c.name: (c.version, c.version_from) for c in gather.with_versions(copies, {})}
    assert got == {
        "libcudnn.so.9": ("9.13.0", "cudnnGetVersion"),
        "libcudnn_graph.so.9": ("9.26.0", "cudnnGetVersion"),
        "libcudnn_ops.so.9": ("9.26.0", "as its folder's libcudnn_graph.so.9"),
    }


# ---------------------------------------------------------------- fallbacks behind the wheel


def test_an_older_system_cudnn_behind_the_wheels_turns_a_missing_cudnn_into_a_mismatch() -> None:
    """As on the H200 host of reports/evidence: the wheel's cuDNN 9.19 loaded, the system's
    9.14 in /usr/lib/x86_64-linux-gnu (the loader cache): without the wheel's copy torch loads
    that one and refuses it."""
    wheel = f"{SP}/nvidia/cudnn/lib/libcudnn.so.9"
    system = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    libs = (lib(wheel, Origin.WHEEL, "9.26.0"), lib(system, Origin.CACHE, "9.14.0"))
    f = one(findings(facts(libs=libs, frameworks=(TORCH,)), KB, CATALOG), "cudnn_version_mismatch")
    assert f.severity is Severity.WARN and f.topic == "torch"
    assert f"the loader takes {system} (ld.so.cache, 9.14.0)" in f.message
    assert "built with cuDNN 9.26.0" in f.message
    assert ("fallback", f"ld.so.cache: {system}") in f.evidence


def test_a_system_copy_the_framework_accepts_hides_a_missing_wheel_file() -> None:
    wheel = f"{SP}/nvidia/cu13/lib/libcublas.so.13"
    system = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13"
    fw = replace(TORCH, loaded=(("libcublas.so.13", wheel),))
    libs = (lib(wheel, Origin.WHEEL, "13.1.0"), lib(system, Origin.CACHE, "13.1.0"))
    found = findings(facts(libs=libs, frameworks=(fw,)), KB, CATALOG)
    [f] = [f for f in found if "loads libcublas.so.13 from its wheel" in f.message]
    assert f.severity is Severity.INFO and f.signature is None
    assert "does not show" in f.message


def test_no_fallback_finding_without_another_copy_or_for_one_on_ld_library_path() -> None:
    wheel = f"{SP}/nvidia/cudnn/lib/libcudnn.so.9"
    alone = findings(
        facts(libs=(lib(wheel, Origin.WHEEL, "9.26.0"),), frameworks=(TORCH,)), KB, CATALOG
    )
    assert not [f for f in alone if "from its wheel" in f.message]
    ahead = lib("/opt/cudnn/lib/libcudnn.so.9", Origin.LD_LIBRARY_PATH, "9.14.0")
    found = findings(
        facts(libs=(lib(wheel, Origin.WHEEL, "9.26.0"), ahead), frameworks=(TORCH,)), KB, CATALOG
    )
    assert not [f for f in found if "from its wheel" in f.message]
