"""`harness run --jobs N` against a fake backend (pure scheduling, real threads): at most one
prepare at a time, in plan order; the next stack's prepare overlaps the cells of the stack before
it; at most N things in flight, and N used; a stack that cannot be prepared errors only its
cells; a machine fault, or Ctrl-C, kills what runs (each such cell `interrupted`) and runs
nothing after; every cell journaled once, counted `[run i/N]` in landing order; --jobs 1 starts
no thread. And `--jobs` on the command line."""

from __future__ import annotations

import collections
import dataclasses
import io
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from harness.backends import Target
from harness.cli import main
from harness.errors import MachineFault
from harness.journal import records
from harness.lock import WheelCache
from harness.model import Cell, Finished, RunSpec, SetEnv, Stack, Status
from harness.runner import Count, Loop, run_plan
from tests.conftest import ROOT, TORCH_STACK
from tests.unit.test_bad_input import assert_one_error
from tests.unit.test_runner import OK, TF_STACK, FakeBackend, cell, loop, plan

PY312_STACK = dataclasses.replace(TORCH_STACK, python="3.12")
STACKS = (TORCH_STACK, TF_STACK, PY312_STACK)
KILLED = Finished(exit_code=137, output="", oom_killed=False)  # what a killed container gives
WAIT = 10.0  # seconds a test waits for something that must happen


class Watched(FakeBackend):
    """A fake backend that counts what is in flight (prepares and runs), each taking `seconds`;
    `on_run(stack, scenario)` may replace a run's output (it may block); `halt` kills runs."""

    def __init__(
        self,
        outputs: Mapping[str, Finished | BaseException],
        *,
        seconds: float = 0.05,
        on_run: Callable[[Stack, str], Finished | None] | None = None,
        on_prepare: Callable[[Stack], None] | None = None,
        **kw: object,
    ):
        super().__init__(outputs, **kw)  # type: ignore[arg-type]
        self.seconds, self.on_run, self.on_prepare = seconds, on_run, on_prepare
        self.lock = threading.Lock()
        self.now = collections.Counter[str]()  # in flight now: 'prepare', 'run'
        self.most = collections.Counter[str]()  # the most in flight at once: 'prepare', 'all'
        self.halted = threading.Event()
        self.threads: set[str] = set()  # the threads runs ran on

    def _enter(self, what: str) -> None:
        with self.lock:
            self.now[what] += 1
            self.most[what] = max(self.most[what], self.now[what])
            self.most["all"] = max(self.most["all"], self.now["prepare"] + self.now["run"])

    def _leave(self, what: str) -> None:
        with self.lock:
            self.now[what] -= 1

    def prepare(self, stack: Stack) -> Target:
        self._enter("prepare")
        try:
            if self.on_prepare is not None:
                self.on_prepare(stack)
            time.sleep(self.seconds)
            return super().prepare(stack)
        finally:
            self._leave("prepare")

    def run(self, spec: RunSpec, target: Target) -> Finished:
        self._enter("run")
        try:
            self.threads.add(threading.current_thread().name)
            time.sleep(self.seconds)
            scenario = next(op.value for op in spec.ops if isinstance(op, SetEnv))
            if self.on_run is not None:
                got = self.on_run(target.stack, scenario)
                if got is not None:
                    with self.lock:
                        self.ran.append(f"{target.stack.framework}/{scenario}")
                    return got
            with self.lock:
                return super().run(spec, target)
        finally:
            self._leave("run")

    def halt(self) -> None:
        self.halted.set()


def make_loop(backend: Watched, folder: Path, tmp: Path, jobs: int) -> tuple[Loop, io.StringIO]:
    return loop(backend, folder, WheelCache(tmp / "cache"), jobs=jobs)


def cells_of(*stacks: Stack, names: str = "abc") -> tuple[Cell, ...]:
    return tuple(cell(n, stack=s) for s in stacks for n in names)


def once_each(folder: Path) -> collections.Counter[str]:
    return collections.Counter(str(r["cell"]) for r in records(folder))


@pytest.mark.parametrize("jobs", [2, 3])
def test_one_prepare_at_a_time_in_plan_order_and_at_most_n_in_flight(
    tmp_path: Path, jobs: int
) -> None:
    cells = cells_of(*STACKS)
    backend = Watched({"a": OK, "b": OK, "c": OK})
    loop, said = make_loop(backend, tmp_path / "results", tmp_path, jobs)
    out, hits = run_plan(plan(*cells), loop)
    assert hits == 0 and sorted(r.cell for r in out) == sorted(c.id for c in cells)
    assert all(r.status is Status.PASSED for r in out)
    assert backend.prepared == list(STACKS), "in plan order"
    assert backend.most["prepare"] == 1, "one prepare at a time"
    assert backend.most["all"] == jobs, "never more than N at once, and N used"
    assert once_each(tmp_path / "results") == dict.fromkeys((c.id for c in cells), 1)
    numbers = re.findall(r"^\[run (\d+)/9\] .*: passed", said.getvalue(), flags=re.M)
    assert numbers == [str(i) for i in range(1, 10)], "counted in the order results land"
    assert "::group::" not in said.getvalue()
    assert "cell-1" in backend.threads and threading.main_thread().name not in backend.threads


def test_the_next_prepare_overlaps_the_cells_of_the_stack_before(tmp_path: Path) -> None:
    """Stack 2's prepare waits for a cell of stack 1 to be running, and that cell waits for
    stack 2's prepare to start: both wait in vain unless they overlap."""
    preparing, running = threading.Event(), threading.Event()
    met: list[bool] = []

    def on_prepare(stack: Stack) -> None:
        if stack == TF_STACK:
            preparing.set()
            met.append(running.wait(WAIT))

    def on_run(stack: Stack, scenario: str) -> Finished | None:
        if stack == TORCH_STACK and scenario == "a":
            running.set()
            met.append(preparing.wait(WAIT))
        return None

    backend = Watched({"a": OK, "b": OK}, on_prepare=on_prepare, on_run=on_run, seconds=0)
    loop, _ = make_loop(backend, tmp_path / "results", tmp_path, jobs=2)
    out, _ = run_plan(plan(*cells_of(TORCH_STACK, TF_STACK, names="ab")), loop)
    assert met == [True, True]
    assert [r.status for r in out] == [Status.PASSED] * 4


class Bounded(Watched):
    """A backend that keeps each prepared stack until its cells are done (as Docker's
    environments under a disk budget): the runner prepares the next only when fewer than
    `ahead` prepared stacks have cells still to land."""

    def __init__(self, ahead: int, **kw: object):
        super().__init__({"a": OK, "b": OK, "c": OK}, on_prepare=self._pending, **kw)  # type: ignore[arg-type]
        self.ahead = ahead
        self.finished: list[Stack] = []
        self.pending: list[int] = []  # at each prepare: stacks prepared, their cells not done
        self.trimming = threading.Event()  # set while `done` runs (Docker's trims the cache)
        self.beside_a_trim = 0  # prepares that began while a `done` ran

    def _pending(self, stack: Stack) -> None:
        with self.lock:
            self.pending.append(len(self.prepared) - len(self.finished))
            self.beside_a_trim += self.trimming.is_set()

    def done(self, target: Target) -> None:
        self.trimming.set()
        time.sleep(0.3)  # longer than the runner's look (WAKE)
        with self.lock:
            self.finished.append(target.stack)
        self.trimming.clear()


@pytest.mark.parametrize("ahead", [1, 2])
def test_a_backend_that_keeps_prepared_stacks_bounds_how_far_prepares_run_ahead(
    tmp_path: Path, ahead: int
) -> None:
    """Each stack's three cells take three times its prepare: unbounded, the third prepare
    would find two stacks waiting on their cells. And a prepare waits for the `done` (the
    trim) of the stack that made room, so that the trim's prune is not skipped beside a make."""
    backend = Bounded(ahead)
    loop, _ = make_loop(backend, tmp_path / "results", tmp_path, jobs=2)
    out, _ = run_plan(plan(*cells_of(*STACKS)), loop)
    assert [r.status for r in out] == [Status.PASSED] * 9
    assert backend.prepared == list(STACKS) and backend.finished == list(STACKS)
    assert max(backend.pending) == ahead - 1
    assert backend.beside_a_trim == 0, "the stack whose cells landed is trimmed first"


def test_a_stack_that_cannot_be_prepared_errors_only_its_cells(tmp_path: Path) -> None:
    cells = cells_of(*STACKS)
    backend = Watched({"a": OK, "b": OK, "c": OK}, broken=frozenset({TF_STACK}))
    loop, _ = make_loop(backend, tmp_path / "results", tmp_path, jobs=2)
    out, _ = run_plan(plan(*cells), loop)
    status = {r.cell: r.status for r in out}
    assert status == {c.id: Status.ERRORED if c.stack == TF_STACK else Status.PASSED for c in cells}
    assert backend.prepared == list(STACKS) and "tensorflow/a" not in backend.ran
    assert once_each(tmp_path / "results") == dict.fromkeys((c.id for c in cells), 1)


def test_a_machine_fault_kills_what_runs_and_runs_nothing_after(tmp_path: Path) -> None:
    """Cell a raises the fault while cell b runs (until it is killed): b is `interrupted`, not
    failed, c and the next stack never run, and the fault says how far the run got."""
    b_running = threading.Event()
    fault = MachineFault("the Docker engine stopped answering", detail="unix:///x.sock")

    def on_run(stack: Stack, scenario: str) -> Finished | None:
        if scenario == "a":
            assert b_running.wait(WAIT)
            raise fault
        if scenario == "b":
            b_running.set()
            assert backend.halted.wait(WAIT), "the fault halted the backend"
            return KILLED
        return None

    backend = Watched({"c": OK}, on_run=on_run, seconds=0)
    loop, said = make_loop(backend, tmp_path / "results", tmp_path, jobs=2)
    cells = (*cells_of(TORCH_STACK), cell("a", stack=TF_STACK))
    with pytest.raises(MachineFault) as err:
        run_plan(plan(*cells), loop)
    assert err.value.exit_code == 3 and " after 0 of 4 results" in err.value.message
    got = {str(r["cell"]): r["status"] for r in records(tmp_path / "results")}
    assert got[cells[0].id] == "interrupted" and got[cells[1].id] == "interrupted"
    assert cells[3].id not in got and "tensorflow/a" not in backend.ran
    assert once_each(tmp_path / "results").most_common(1)[0][1] == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("cell-")], "joined"
    assert "DRIFT" not in said.getvalue()


def test_ctrl_c_kills_the_cells_in_flight_and_abandons_the_prepare(tmp_path: Path) -> None:
    """Ctrl-C while stack 2 is being prepared and two cells of stack 1 run: both are killed
    and journaled `interrupted`, stack 2's cells get no result, and the interrupt propagates."""
    both = threading.Barrier(3)

    def on_prepare(stack: Stack) -> None:
        if stack == TF_STACK:
            both.wait(WAIT)  # the two cells are running
            raise KeyboardInterrupt

    def on_run(stack: Stack, scenario: str) -> Finished | None:
        both.wait(WAIT)
        assert backend.halted.wait(WAIT)
        return KILLED

    backend = Watched({}, on_prepare=on_prepare, on_run=on_run, seconds=0)
    loop, _ = make_loop(backend, tmp_path / "results", tmp_path, jobs=3)
    cells = (*cells_of(TORCH_STACK, names="ab"), cell("a", stack=TF_STACK))
    with pytest.raises(KeyboardInterrupt):
        run_plan(plan(*cells), loop)
    got = {str(r["cell"]): r["status"] for r in records(tmp_path / "results")}
    assert got == {cells[0].id: "interrupted", cells[1].id: "interrupted"}
    assert not [t for t in threading.enumerate() if t.name.startswith("cell-")], "joined"


def test_a_real_ctrl_c_while_waiting_for_the_cells_waits_for_their_records(
    tmp_path: Path,
) -> None:
    """SIGINT while this thread waits for two running cells: both are killed and journaled
    before the interrupt propagates (a bare Thread.join, interrupted, would let it go first)."""
    both = threading.Barrier(2)

    def on_run(stack: Stack, scenario: str) -> Finished | None:
        if both.wait(WAIT) == 0:
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        assert backend.halted.wait(WAIT)
        # A killed container takes a moment to be waited for and removed; the first thread's
        # (the one waited for first) longest.
        time.sleep(1.0 if threading.current_thread().name == "cell-1" else 0.1)
        return KILLED

    backend = Watched({}, on_run=on_run, seconds=0)
    loop, _ = make_loop(backend, tmp_path / "results", tmp_path, jobs=2)
    # Ctrl-C as a terminal delivers it, whatever this process inherited: a shell that starts a
    # job in the background (`cmd &`, no job control) has it ignore SIGINT, and Python then
    # never installs its handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_plan(plan(*cells_of(TORCH_STACK, names="abc")), loop)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert backend.now["run"] == 0, "no run outlives the interrupt"
    assert [r["status"] for r in records(tmp_path / "results")] == ["interrupted"] * 2


def test_cache_hits_are_skipped_and_rerun_runs_them_again(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    cells = cells_of(TORCH_STACK, TF_STACK, names="ab")
    first = Watched({"a": OK, "b": OK})
    run_plan(plan(*cells[:2]), make_loop(first, folder, tmp_path, jobs=2)[0])
    again = Watched({"a": OK, "b": OK})
    out, hits = run_plan(plan(*cells), make_loop(again, folder, tmp_path, jobs=2)[0])
    assert hits == 2 and sorted(r.cell for r in out) == sorted(c.id for c in cells[2:])
    assert again.prepared == [TF_STACK], "a stack whose cells are all cached is not prepared"
    loop, _ = make_loop(Watched({"a": OK, "b": OK}), folder, tmp_path, jobs=2)
    forced = dataclasses.replace(loop, force=True)
    out, hits = run_plan(plan(*cells), forced)
    assert hits == 0 and len(out) == 4
    assert once_each(folder) == {c.id: 2 for c in cells}


def test_jobs_1_runs_on_this_thread_with_a_group_per_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = Watched({"a": OK, "b": OK})
    loop, said = make_loop(backend, tmp_path / "results", tmp_path, jobs=1)
    monkeypatch.setattr(loop.console, "ci", True)
    run_plan(plan(*cells_of(TORCH_STACK, TF_STACK, names="ab")), loop)
    assert backend.threads == {threading.current_thread().name}
    assert backend.most["all"] == 1
    assert said.getvalue().count("::group::") == 2


def test_the_eta_shares_the_cells_among_the_slots() -> None:
    c = Count(total=6, to_run=5, slots=2)
    assert c.next() == "run", "which cell lands next is not known"
    c.tick(10.0)
    assert c.eta() == ", ETA 20 s"  # 4 left at 10 s each, 2 at a time


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--jobs", "0"], "--jobs 0: give a number from 1 to 8"),
        (["--jobs", "9"], "--jobs 9: give a number from 1 to 8"),
        (["--jobs", "2", "--backend", "local"], "--jobs 2: the local backend runs one thing"),
    ],
)
def test_a_bad_jobs_is_refused_before_anything_runs(
    argv: list[str],
    error: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    results = tmp_path / "results"
    code = main(["run", "--driver", "none", "--results", str(results), "--dry-run", *argv])
    out = capsys.readouterr()
    assert_one_error(code, out.out, out.err)
    assert f"error: {error}" in out.err and "<command line>:1:" in out.err
    assert not results.exists()


def test_jobs_defaults_to_2_for_docker_without_a_gpu_else_1() -> None:
    import argparse

    from harness.cli import jobs_of
    from harness.model import DriverTarget

    def jobs(backend: str, driver: str | None, given: int | None = None) -> int:
        args = argparse.Namespace(jobs=given, backend=backend)
        target = DriverTarget(version=driver, origin="flag" if driver else "none")
        return jobs_of(args, [], dataclasses.replace(plan(), driver=target))

    assert jobs("docker", None) == 2
    assert jobs("docker", "535.104.05") == 1, "cells that need the GPU share it one at a time"
    assert jobs("local", None) == 1
    assert jobs("docker", "535.104.05", 3) == 3 and jobs("local", None, 1) == 1
