"""index.html and results.csv rendered by a forked child beside the rest (write_parts), from
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


def isolated(case: str, tmp: Path) -> None:
    """`case` (a function of this module) run in a fresh interpreter: a fork needs a process of
    one thread (the harness forks no other: proc.fork), and pytest's may hold more by now. The
    case asserts; its exit status says how that went."""
    code = "from pathlib import Path; from tests.unit import test_report_fork as t; "
    code += f"t.{case}(Path({str(tmp)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]


def forks_counted() -> list[int]:
    """The pids os.fork gives this process from now on."""
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    os.fork = fork
    return pids


def make(out: Path, fork_at: int) -> dict[str, bytes]:
    write.FORK_AT = fork_at
    write_all([RESULTS], out, catalog=CATALOG, env={})
    return files(out)


def case_same(tmp: Path) -> None:
    alone = make(tmp / "alone", 10**9)
    pids = forks_counted()
    forked = make(tmp / "forked", 0)
    assert len(pids) == 1, "the report forked its writer"
    assert forked == alone
    assert not [p for p in (tmp / "forked").iterdir() if p.name.startswith(".")]


def test_the_forked_report_is_the_one_process_report(tmp_path: Path) -> None:
    isolated("case_same", tmp_path)


def case_child_fails(tmp: Path) -> None:
    alone = make(tmp / "alone", 10**9)
    parent, page = os.getpid(), write.render_page

    def broken_in_the_child(*args: object, **kw: object) -> str:
        if os.getpid() != parent:
            raise MemoryError("the child ran out")
        return page(*args, **kw)  # type: ignore[arg-type]

    write.render_page = broken_in_the_child  # type: ignore[assignment]
    pids = forks_counted()
    assert make(tmp / "forked", 0) == alone
    assert len(pids) == 1


def test_what_the_child_failed_to_write_is_written_here(tmp_path: Path) -> None:
    isolated("case_child_fails", tmp_path)


def case_error(tmp: Path) -> None:
    errors = []
    pids = forks_counted()
    for fork_at in (10**9, 0):
        out = tmp / str(fork_at)
        (out / "index.html").mkdir(parents=True)
        write.FORK_AT = fork_at
        try:
            write_all([RESULTS], out, catalog=CATALOG, env={})
        except ConfigError as exc:
            errors.append(exc.render().replace(str(out), "OUT"))
    assert len(pids) == 1 and len(errors) == 2
    assert errors[0] == errors[1] and "index.html" in errors[0]


def test_an_error_of_the_childs_file_is_raised_here(tmp_path: Path) -> None:
    """index.html is a folder: the child cannot replace it, and this process says so (exit 2),
    as a report without a child does."""
    isolated("case_error", tmp_path)


# `python -m harness` with Ctrl-C heard: a shell that ran this suite in the background left
# SIGINT ignored, and Python keeps an ignored SIGINT ignored.
CTRL_C_ON = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'harness'; runpy.run_module('harness', run_name='__main__')"
)


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
    argv = [sys.executable, "-c", CTRL_C_ON, "report", "--results", str(results), "--out", str(out)]
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


def case_interrupted_waiting(tmp: Path) -> None:
    parent, page = os.getpid(), write.render_page

    def slow_in_the_child(*args: object, **kw: object) -> str:
        if os.getpid() != parent:
            time.sleep(30)
        return page(*args, **kw)  # type: ignore[arg-type]

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    write.render_page = slow_in_the_child  # type: ignore[assignment]
    write.FORK_AT = 0
    pids = forks_counted()
    signal.signal(signal.SIGALRM, interrupt)
    start = time.monotonic()
    signal.alarm(2)
    try:
        write_all([RESULTS], tmp, catalog=CATALOG, env={})
        raise AssertionError("not interrupted")
    except KeyboardInterrupt:
        pass
    assert time.monotonic() - start < 20, "the child was stopped, not waited for"
    [pid] = pids
    try:
        os.waitpid(pid, os.WNOHANG)
        raise AssertionError("the child was not reaped")
    except ChildProcessError:
        pass
    assert (tmp / "junit.xml").exists(), "the parent's own files were written"
    assert not [p.name for p in tmp.iterdir() if p.name.startswith(".")]


def test_interrupted_while_it_waits_for_its_child(tmp_path: Path) -> None:
    """Its own files written, the report waits for the child's; Ctrl-C then stops the child
    (it removes its temp file) and is reaped, not left to the kernel's SIGKILL."""
    isolated("case_interrupted_waiting", tmp_path)
