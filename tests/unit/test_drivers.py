"""The driver axis without a run: the one driver rule, the driver lock, how a Driver operation is
rendered, the container toolkit's NVIDIA_REQUIRE_CUDA rule, rules from what a lock installs, and
the cuda stand-in's environment."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from harness import ids
from harness.backends import standin
from harness.backends.docker import run_script
from harness.backends.driverstore import DriverFetchError, read_driver_locks, unpack
from harness.cli import main
from harness.compat import (
    installed_toolkit,
    parse_knowledge,
    read_knowledge_docs,
    require_cuda,
)
from harness.drivers import (
    DRIVER_LOCK,
    DRIVER_LOCKS,
    driver_op,
    merge_locks,
    parse_driver_lock,
    render_driver_lock,
)
from harness.errors import ConfigError
from harness.model import NoGpu, RunSpec
from tests.conftest import ROOT

KB = parse_knowledge(read_knowledge_docs())
LOCK = json.loads((ROOT / DRIVER_LOCK).read_text(encoding="utf-8"))
REQUIRE_125 = (
    "cuda>=12.5 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=535,driver<536 "
    "brand=unknown,driver>=550,driver<551"
)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("535.104.05", True),
        ("570.26", True),
        ("580", True),  # a bare branch: the oldest driver of that branch
        ("abc", False),
        ("535.104.05\n", False),
        (" 535.104.05", False),
        ("\u0665\u0663\u0665", False),
        ("535.104.05.1", False),
    ],
)
def test_one_driver_rule(text: str, ok: bool) -> None:
    assert ids.is_driver(text) is ok


@pytest.mark.parametrize("bad", ["abc", "535.104.05\\n", "58O"])
def test_a_bad_profile_driver_exits_2_at_its_place(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
    text = text.replace("scenarios: scenarios ", f"scenarios: {ROOT / 'scenarios'} ")
    text = text.replace(
        "  full:\n    description:", f'  full:\n    driver: "{bad}"\n    description:'
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    code = main(["plan", "--matrix", str(path), "--profile", "full"])
    err = capsys.readouterr().err
    assert code == 2
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("    driver: "))
    assert f"matrix.yaml:{line}:" in err and "error: bad profile driver" in err
    assert "help: " in err and "Traceback" not in err


MEASURED = {  # cuDriverGetVersion of each unpacked libcuda, through ctypes (no GPU)
    "450.248.02": 11000, "470.256.02": 11040, "510.60.02": 11060, "525.147.05": 12000,
    "535.261.03": 12020, "545.29.06": 12030, "550.163.01": 12040, "565.57.01": 12070,
    "570.133.07": 12080, "580.178.04": 13000, "595.99.02": 13020, "stub": None,
}  # fmt: skip


def test_the_committed_locks_pin_each_driver_and_its_links() -> None:
    lock = read_driver_locks(ROOT)
    assert lock is not None
    assert {d.driver: d.cuda_api for d in lock.drivers} == MEASURED
    for d in lock.drivers:
        assert d.links == driver_op(d.driver).links
        assert all(len(p.sha256) == 64 and p.filename.startswith("pool/") for p in d.packages)
        # the sha256 were read from the archive's own Packages index, which the row cites
        assert d.source.startswith(d.archive.replace("http://", "https://", 1) + "/dists/")
        assert f"/dists/{d.packages[0].suite}/{d.component}/binary-amd64/Packages." in d.source


def test_every_production_branch_is_placeable() -> None:
    lock = read_driver_locks(ROOT)
    assert lock is not None
    branches = {d.branch for d in lock.drivers}
    want = {"R450", "R470", "R525", "R535", "R545", "R550", "R565", "R570", "R580", "R595"}
    assert want <= branches and "stub" in branches
    cuda = {d.branch: d.cuda for d in lock.drivers}
    assert (cuda["R450"], cuda["R525"], cuda["R580"]) == ("11.0", "12.0", "13.0")


@pytest.mark.parametrize("name", DRIVER_LOCKS)
def test_each_lock_file_is_what_harness_drivers_lock_writes_byte_for_byte(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert render_driver_lock(parse_driver_lock(json.loads(text), name)) == text


def test_a_driver_in_two_lock_files_is_refused() -> None:
    one = parse_driver_lock(LOCK)
    with pytest.raises(ConfigError, match="also in"):
        merge_locks([one, one], ["a.json", "b.json"])


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("drivers", 0, "packages", 0, "sha256"), "0" * 63),
        (("drivers", 0, "packages", 0, "package"), "libcuda1\n--extra-index-url"),
        (("drivers", 0, "packages", 0, "filename"), "pool/../../etc/passwd.deb"),
        (("drivers", 0, "driver"), "550.163.01\n"),
        (("drivers", 0, "source"), "http://example.com"),
        (("archive",), "file:///etc"),
    ],
)
def test_a_tampered_lock_is_refused(path: tuple[Any, ...], value: str) -> None:
    data = json.loads(json.dumps(LOCK))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError):
        parse_driver_lock(data)


def test_a_member_that_climbs_is_refused() -> None:
    data = json.loads(json.dumps(LOCK))
    data["drivers"][0]["packages"][0]["members"] = {
        "usr/lib/x86_64-linux-gnu/../../../etc/shadow": "libcuda.so.470.256.02"
    }
    with pytest.raises(ConfigError):
        parse_driver_lock(data)


def test_a_driver_is_placed_as_the_container_toolkit_places_it() -> None:
    spec = RunSpec(argv=("python", "p.py"), ops=(NoGpu(), driver_op("550.163.01")))
    script = run_script(spec)
    setup, probe = script.splitlines()[1], script.splitlines()[2]
    d = "/usr/lib/x86_64-linux-gnu"
    assert f"cp -- /faults/driver/libcuda.so.550.163.01 {d}/libcuda.so.550.163.01" in setup
    assert f"ln -sf -- libcuda.so.550.163.01 {d}/libcuda.so.1" in setup
    assert f"ln -sf -- libnvidia-ml.so.550.163.01 {d}/libnvidia-ml.so.1" in setup
    assert setup.endswith("&& /sbin/ldconfig")
    assert probe.startswith("exec setpriv")  # placed as root, run as uid 1000
    stub = run_script(RunSpec(argv=("python",), ops=(driver_op("stub"),)))
    assert f"cp -- /faults/driver/libcuda.so {d}/libcuda.so && " in stub
    assert f"ln -sf -- libcuda.so {d}/libcuda.so.1" in stub


@pytest.mark.parametrize(
    ("driver", "cuda", "admitted", "why"),
    [
        ("555.42.06", "12.5", True, "cuda>=12.5"),
        ("535.104.05", "12.2", True, "brand=tesla,driver>=535,driver<536"),
        ("525.60.13", "12.0", False, "driver >= 550"),  # the last clause's unmet condition
        ("470.82.01", "11.4", True, "brand=tesla,driver>=470,driver<471"),
        ("580", "13.0", True, "cuda>=12.5"),
    ],
)
def test_nvidia_require_cuda(driver: str, cuda: str, admitted: bool, why: str) -> None:
    assert require_cuda(REQUIRE_125, driver, cuda) == (admitted, why)


def test_the_installed_runtime_decides_the_release_and_its_update_row() -> None:
    tk, release, minimum = installed_toolkit("12.5", "12.9.79", KB)  # TF 2.21's lock
    assert tk is not None and tk.cuda == "12.9"
    assert release.startswith("12.9.1") and minimum == "575.57.08"
    tk, release, minimum = installed_toolkit("12.8", "12.8.90", KB)  # torch cu128's
    assert tk is not None and release.startswith("12.8.1") and minimum == "570.124.06"
    tk, release, minimum = installed_toolkit("12.5", None, KB)  # no lock: the label's GA row
    assert tk is not None and release == "12.5.0" and minimum == "555.42.02"


def test_the_standin_sets_the_tags_cited_environment() -> None:
    image = next(i for i in KB.images if i.tag == "12.5.1-cudnn-runtime-ubuntu22.04")
    env = dict(standin.environment(image))
    assert env["NVIDIA_REQUIRE_CUDA"].startswith("cuda>=12.5 ")
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib:/usr/local/nvidia/lib64"
    assert env["PATH"].startswith("/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin")
    assert "${" not in "".join(env.values())
    assert standin.requirements(image)[-1] == "nvidia-cudnn-cu12==9.2.1.18"


def _deb(members: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for name, blob in (("debian-binary", b"2.0\n"), ("data.tar.xz", data.getvalue())):
        out.write(f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(blob):<10}`\n".encode())
        out.write(blob + (b"\n" if len(blob) % 2 else b""))
    return out.getvalue()


def test_unpack_takes_only_the_locked_members(tmp_path: Path) -> None:
    deb = tmp_path / "x.deb"
    deb.write_bytes(_deb({"./usr/lib/x86_64-linux-gnu/a.so.1": b"A", "./etc/evil": b"E"}))
    unpack(deb, [("usr/lib/x86_64-linux-gnu/a.so.1", "liba.so.1")], tmp_path)
    assert (tmp_path / "liba.so.1").read_bytes() == b"A"
    assert not (tmp_path / "etc").exists() and not (tmp_path / "evil").exists()
    with pytest.raises(DriverFetchError, match="missing"):
        unpack(deb, [("usr/lib/x86_64-linux-gnu/b.so.1", "libb.so.1")], tmp_path)
