"""The driver store's background fetch, against a fake apt-get on PATH (a real child process):
a prefetch and a cell that needs the same driver make one download; a failed prefetch is raised
by the cell's own call, once per call and never retried; `close` stops a fetch in flight (its
apt-get killed) and leaves no folder. And `proc.run`'s cancel event, on its own."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import proc
from harness.backends.driverstore import DriverFetchError, DriverStore
from harness.drivers import parse_driver_lock
from tests.unit.test_drivers import _deb

PACKAGE, VERSION = "nvidia-cuda-dev", "11.8.89~11.8.0-5~deb12u1"
MEMBER = "usr/lib/x86_64-linux-gnu/stubs/libcuda.so"
FAKE_APT = f"""#!{sys.executable}
import os, shutil, sys, time
words = [a for a in sys.argv[1:] if not a.startswith("-")]
with open(os.environ["FAKE_APT_LOG"], "a") as log:
    log.write(f"{{words[0]}} {{os.getpid()}}\\n")
if words[0] == "download":
    time.sleep(float(os.environ["FAKE_APT_SLEEP"]))
    if os.environ.get("FAKE_APT_FAIL"):
        sys.exit("E: Failed to fetch (the fake archive refuses)")
    package, version = words[1].split("=")
    shutil.copy(os.environ["FAKE_DEB"], f"{{package}}_{{version}}_amd64.deb")
"""


class FakeApt:
    """apt-get on PATH that logs each call, sleeps `sleep` s, then 'downloads' the fake .deb."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch, sleep: float = 0.0):
        self.log = tmp / "apt.log"
        deb = tmp / "fake.deb"
        deb.write_bytes(_deb({f"./{MEMBER}": b"\x7fELF stub"}))
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "apt-get").write_text(FAKE_APT)
        (bin_dir / "apt-get").chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_APT_LOG", str(self.log))
        monkeypatch.setenv("FAKE_APT_SLEEP", str(sleep))
        monkeypatch.setenv("FAKE_DEB", str(deb))
        self.sha256, self.size = hashlib.sha256(deb.read_bytes()).hexdigest(), deb.stat().st_size

    def calls(self, word: str) -> list[int]:
        """The pids of the calls of `apt-get WORD` so far."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [int(pid) for w, pid in (ln.split() for ln in lines) if w == word]

    def store(self, cache: Path) -> DriverStore:
        doc = {
            "schema": 1,
            "archive": "http://deb.debian.org/debian",
            "component": "non-free",
            "drivers": [
                {
                    "driver": "stub",
                    "cuda_api": None,
                    "source": "https://packages.debian.org/bookworm/nvidia-cuda-dev",
                    "packages": [
                        {
                            "package": PACKAGE,
                            "version": VERSION,
                            "suite": "bookworm",
                            "filename": f"pool/non-free/n/nvidia-cuda-toolkit/{PACKAGE}_x.deb",
                            "sha256": self.sha256,
                            "size": self.size,
                            "members": {MEMBER: "libcuda.so"},
                        }
                    ],
                }
            ],
        }
        return DriverStore(parse_driver_lock(doc, "test-lock.json"), cache)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def _wait_for(what: str, ok: Callable[[], object], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.02)


def test_a_prefetch_and_the_cell_that_needs_it_make_one_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apt = FakeApt(tmp_path, monkeypatch, sleep=1.0)
    store = apt.store(tmp_path / "cache")
    store.prefetch(["stub", "stub"])
    _wait_for("the prefetch's download", lambda: apt.calls("download"))
    got: list[Path] = []
    cells = [threading.Thread(target=lambda: got.append(store.folder("stub"))) for _ in range(2)]
    for t in cells:
        t.start()
    for t in cells:
        t.join(30)
    store.close()
    assert len(got) == 2 and got[0] == got[1]
    assert (got[0] / "libcuda.so").read_bytes() == b"\x7fELF stub"
    assert (got[0] / "libcuda.so.1").is_symlink()
    assert len(apt.calls("download")) == 1, "the cells waited for the prefetch"
    assert [p.name for p in (tmp_path / "cache" / "drivers").iterdir()] == [got[0].name]
    store.prefetch(["stub"])  # already there (and closed): nothing starts
    assert len(apt.calls("download")) == 1


def test_a_failed_prefetch_is_raised_by_the_cells_call_and_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apt = FakeApt(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_APT_FAIL", "1")
    store = apt.store(tmp_path / "cache")
    store.prefetch(["stub"])
    for _ in range(2):
        with pytest.raises(DriverFetchError, match="the fake archive refuses") as err:
            store.folder("stub")
        frames = [f.name for f in traceback.extract_tb(err.value.__traceback__)]
        assert "folder" in frames and "fetch_debs" in frames, (
            "the cell's call, then where it failed"
        )
    store.close()
    assert len(apt.calls("download")) == 1, "the failure is not fetched again"
    assert list((tmp_path / "cache" / "drivers").iterdir()) == [], "no temp folder left"


def test_close_stops_a_fetch_in_flight_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apt = FakeApt(tmp_path, monkeypatch, sleep=300)
    store = apt.store(tmp_path / "cache")
    store.prefetch(["stub"])
    _wait_for("the prefetch's download", lambda: apt.calls("download"))
    [pid] = apt.calls("download")
    assert [p.name[:6] for p in (tmp_path / "cache" / "drivers").iterdir()] == [".stub."]
    start = time.monotonic()
    store.close()
    assert time.monotonic() - start < proc.GRACE_SECONDS + 5
    assert _gone(pid), "apt-get was stopped"
    assert list((tmp_path / "cache" / "drivers").iterdir()) == [], "no partial folder"
    with pytest.raises(DriverFetchError, match="stopped"):  # a closed store fetches nothing
        store.folder("stub")


def test_a_cancelled_child_is_stopped_and_cancelled_is_raised(tmp_path: Path) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(proc.Cancelled):
        proc.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=60, cancel=cancel)
    assert time.monotonic() - start < proc.GRACE_SECONDS
    with pytest.raises(proc.Cancelled, match="not started"):
        proc.run(["true"], timeout=5, cancel=cancel)
    done = proc.run(["true"], timeout=5, cancel=threading.Event())
    assert done.returncode == 0 and not done.timed_out
