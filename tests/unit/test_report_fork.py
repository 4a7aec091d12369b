"""index.html and FAULTS.md rendered by a forked child beside the rest (write_parts), from
FORK_AT cells on: the same files as one process writes, whatever happens to the child. Real
forks, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.report import write, write_all
from harness.signatures import read_catalog
from tests.conftest import ROOT
from tests.unit.test_report_sigkill import journal as big_journal

CATALOG = read_catalog(ROOT / "scenarios" / "signatures.yaml").signatures
RESULTS = ROOT / "reports" / "results"


def files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def make(out: Path, fork_at: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    monkeypatch.setattr(write, "FORK_AT", fork_at)
    write_all([RESULTS], out, catalog=CATALOG, env={})
    return files(out)


def test_the_forked_report_is_the_one_process_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = make(tmp_path / "alone", 10**9, monkeypatch)
    forked = make(tmp_path / "forked", 0, monkeypatch)
    assert forked == alone
    assert not [p for p in (tmp_path / "forked").iterdir() if p.name.startswith(".")]


def test_what_the_child_failed_to_write_is_written_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = make(tmp_path / "alone", 10**9, monkeypatch)
    parent, page = os.getpid(), write.render_page

    def broken_in_the_child(*args: object, **kw: object) -> str:
        if os.getpid() != parent:
            raise MemoryError("the child ran out")
        return page(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(write, "render_page", broken_in_the_child)
    assert make(tmp_path / "forked", 0, monkeypatch) == alone


def test_an_error_of_the_childs_file_is_raised_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index.html is a folder: the child cannot replace it, and this process says so (exit 2),
    as a report without a child does."""
    errors = []
    for fork_at in (10**9, 0):
        out = tmp_path / str(fork_at)
        (out / "index.html").mkdir(parents=True)
        monkeypatch.setattr(write, "FORK_AT", fork_at)
        with pytest.raises(ConfigError) as err:
            write_all([RESULTS], out, catalog=CATALOG, env={})
        errors.append(err.value.render().replace(str(out), "OUT"))
    assert errors[0] == errors[1] and "index.html" in errors[0]


def leftovers(marker: Path) -> list[str]:
    """Processes still running whose command line names this test's folder (a forked child
    has its parent's)."""
    ps = subprocess.run(
        ["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True
    )
    return [ln for ln in ps.stdout.splitlines() if str(marker) in ln and "ps -eo" not in ln]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_report_leaves_no_child_and_no_temp_file(tmp_path: Path, sig: int) -> None:
    """Stopped while it writes (the child at work): the child goes too, and where this process
    could still clean up (INT, TERM), no temp file is left either."""
    results, out = big_journal(tmp_path / "results", 30_000), tmp_path / "out"
    argv = [sys.executable, "-m", "harness", "report", "--results", str(results), "--out", str(out)]
    proc = subprocess.Popen(
        [*argv, "--allow-drift", "--allow-partial"], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    while proc.poll() is None and not (out.is_dir() and any(out.iterdir())):
        time.sleep(0.002)  # the first temp file: both processes are writing
    assert proc.poll() is None, "the report finished before it was stopped"
    os.kill(proc.pid, sig)
    code = proc.wait(timeout=120)
    assert code == (-signal.SIGKILL if sig == signal.SIGKILL else 130)
    # an interrupted parent waits for its child; a killed one's child is killed with it by the
    # kernel (alone, it would write for a second more)
    deadline = time.monotonic() + 0.5
    while leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not leftovers(tmp_path), "the child outlived its parent"
    if sig != signal.SIGKILL:
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "a temp file left"


def test_interrupted_while_it_waits_for_its_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own files written, the report waits for the child's; Ctrl-C then stops the child
    (it removes its temp file) and is reaped, not left to the kernel's SIGKILL."""
    parent, page = os.getpid(), write.render_page
    children: list[int] = []

    def slow_in_the_child(*args: object, **kw: object) -> str:
        if os.getpid() != parent:
            time.sleep(30)
        return page(*args, **kw)  # type: ignore[arg-type]

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            children.append(pid)
        return pid

    monkeypatch.setattr(write, "render_page", slow_in_the_child)
    monkeypatch.setattr(write, "FORK_AT", 0)
    monkeypatch.setattr(os, "fork", fork)
    old = signal.signal(signal.SIGALRM, interrupt)
    start = time.monotonic()
    try:
        signal.alarm(2)
        with pytest.raises(KeyboardInterrupt):
            write_all([RESULTS], tmp_path, catalog=CATALOG, env={})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - start < 20, "the child was stopped, not waited for"
    [pid] = children
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped already
    assert (tmp_path / "results.csv").exists(), "the parent's own files were written"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
