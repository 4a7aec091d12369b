"""Run cells: the runner owns the loop. For each stack of a plan: one `prepare` (an image, a
venv), then its cells, each a RunSpec of the scenario's typed fault operations run by the
backend, its probe's events judged by the catalog, journaled as it lands. Every outcome becomes
a RunResult; a stack that cannot be prepared makes its cells `errored` and the others go on;
only Ctrl-C propagates (after an `interrupted` record). It imports the backend protocol, never a
backend module.

With `jobs` > 1 (`harness run --jobs N`) up to N things run at once: the stacks are prepared one
at a time in plan order, each while the cells of those before it run on the other slots.
"""

from __future__ import annotations

import hashlib
import queue
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from threading import Event, Lock, Thread
from typing import Protocol

from harness.backends import Backend, NotRunnableHere, PrepareFailed, Target
from harness.console import Console, human_seconds
from harness.drivers import driver_op
from harness.errors import HarnessError, MachineFault
from harness.events import parse
from harness.faults import resolve
from harness.fs import fault_from
from harness.journal import append, finished
from harness.lock import LockError, WheelCache, extract
from harness.model import (
    DRIVER_MOUNT,
    NO_DRIVER,
    Cell,
    Driver,
    Expectation,
    FaultOp,
    Finished,
    Machine,
    Mount,
    NoGpu,
    Observed,
    Outcome,
    Plan,
    ProbeReport,
    RunResult,
    RunSpec,
    Scenario,
    Stack,
    Status,
    WheelMember,
    op_json,
    op_sources,
)
from harness.plan import group
from harness.signatures import Catalog, classify

PROBE_DIR = Path(__file__).resolve().parent / "probes"
PROBE_MOUNT = "/probe"
FAULT_MOUNTS = "/faults"
PROBE_DIGEST = hashlib.sha256((PROBE_DIR / "stageprobe.py").read_bytes()).hexdigest()
WAKE = 0.2  # seconds between the main thread's looks while it waits for the cells' threads


@dataclass(frozen=True, slots=True)
class ProbeRun:
    finished: Finished
    report: ProbeReport
    spec: RunSpec  # what ran, so it can be shown again (`harness reproduce`)
    target: Target

    @property
    def signal(self) -> int | None:
        code = self.finished.exit_code
        return code - 128 if code is not None and code > 128 else None


# ---------------------------------------------------------------- what a run will do (pure)


def cell_key(cell: Cell, identity: str, ops: Sequence[FaultOp], driver: str, catalog: str) -> str:
    """What a result depends on: the stack's identity (its image or venv as declared), the fault
    operations, the expectation, the probe, the driver and the catalog that judged it."""
    h = hashlib.sha256()
    parts = (identity, [op_json(op) for op in ops], cell.expected.to_json(), PROBE_DIGEST)
    for part in (*parts, driver, catalog):
        h.update(str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


@dataclass(frozen=True, slots=True, kw_only=True)
class Work:
    """One cell of a run: `action` is run, cached, or why it is left out here."""

    cell: Cell
    ops: tuple[FaultOp, ...]
    key: str | None  # None: not known before the stack is prepared (no lock yet)
    action: str


Identity = Callable[[Stack], "str | None"]
DriverFolder = Callable[[str], Path]  # a placed driver's folder (fetched on first use)


class Drivers(Protocol):
    """Where placed drivers' folders come from (harness.backends.driverstore.DriverStore)."""

    def folder(self, driver: str) -> Path:
        """The driver's folder, fetched now, or waited for while a prefetch fetches it."""
        ...

    def prefetch(self, drivers: Sequence[str]) -> None:
        """Start fetching these in the background, one after the other."""
        ...

    def close(self) -> None:
        """Stop a fetch in flight, leaving nothing half-written, and wait for it."""
        ...


def cell_ops(cell: Cell, scenarios: Mapping[str, Scenario]) -> tuple[FaultOp, ...]:
    """The scenario's operations on this stack, then, for a cell of the placed-driver axis, no
    GPU and NVIDIA's user-space driver placed as the container toolkit places a host's."""
    ops = resolve(scenarios[cell.scenario].faults, cell.stack)
    if cell.driver == NO_DRIVER:
        return ops
    return (*ops, NoGpu(), driver_op(cell.driver))


def work(
    plan: Plan,
    scenarios: Mapping[str, Scenario],
    identity: Identity,
    done: Mapping[str, str],
    *,
    catalog: str,
    force: bool = False,
) -> list[Work]:
    """What `harness run` will do with each cell, from files alone (`--dry-run`)."""
    out = []
    for stack, cells in group(plan):
        try:
            ident = identity(stack)
        except NotRunnableHere as exc:
            out += [
                Work(cell=c, ops=(), key=None, action=f"not run here: {exc.message}") for c in cells
            ]
            continue
        for cell in cells:
            ops = cell_ops(cell, scenarios)
            key = cell_key(cell, ident, ops, plan.driver.to_json(), catalog) if ident else None
            hit = key is not None and done.get(cell.id) == key and not force
            out.append(Work(cell=cell, ops=ops, key=key, action="cached" if hit else "run"))
    return out


# ---------------------------------------------------------------- one cell


def mount_points(ops: Sequence[FaultOp], first: int = 0) -> tuple[tuple[WheelMember, str], ...]:
    """Where each other wheel's member the operations need is mounted: /faults/N, in order."""
    members = dict.fromkeys(m for op in ops for m in op_sources(op))
    return tuple((m, f"{FAULT_MOUNTS}/{i}") for i, m in enumerate(members, first))


def spec_for(
    ops: tuple[FaultOp, ...],
    target: Target,
    wheels: WheelCache,
    *,
    gpu: bool,
    drivers: DriverFolder | None = None,
) -> RunSpec:
    """A run on a target: the probe, each other wheel's file the operations need, and a placed
    driver's folder, mounted read-only."""
    argv: tuple[str, ...] = ("python", f"{PROBE_MOUNT}/stageprobe.py", target.stack.framework)
    if gpu and not any(isinstance(op, Driver) for op in ops):
        # planned for the host's GPU: a run that finds none fails (the no-gpu-visible fault
        # hides it), not a pass whose GPU stages skipped
        argv += ("--gpu",)
    sources = mount_points(ops)
    mounts = [Mount(PROBE_DIR, PROBE_MOUNT)]
    mounts += [Mount(extract(wheels, target.lock, m.pin, m.member), t) for m, t in sources]
    for op in ops:
        if isinstance(op, Driver):
            if drivers is None:
                raise HarnessError(f"driver {op.version}: no driver lock to fetch it from")
            mounts.append(Mount(drivers(op.version), DRIVER_MOUNT))
    return RunSpec(argv=argv, ops=ops, mounts=tuple(mounts), sources=sources, gpu=gpu)


def probe_run(backend: Backend, spec: RunSpec, target: Target) -> ProbeRun:
    done = backend.run(spec, target)
    stdout = "\n".join(ln for ln in done.output.splitlines() if ln.startswith('{"probe"'))
    return ProbeRun(finished=done, report=parse(stdout), spec=spec, target=target)


def log_text(run: ProbeRun) -> str:
    """What the classifier reads: everything the run printed except the probe's event lines,
    then the failed stage's traceback (an exception the probe caught prints nothing else)."""
    lines = [ln for ln in run.finished.output.splitlines() if not ln.startswith('{"probe"')]
    report = run.report
    failed = next((e for e in report.events if e.stage == report.failed_stage), None)
    if failed is not None:
        lines.append(failed.traceback or f"{failed.error_type}: {failed.error_message}")
    return "\n".join(lines)


def fallback_line(run: ProbeRun) -> str | None:
    """When no line names the cause: the failed stage's error, else the last line printed."""
    report = run.report
    failed = next((e for e in report.events if e.stage == report.failed_stage), None)
    if failed is not None and failed.error_message:
        return failed.error_message.strip().splitlines()[0][:500]
    lines = [
        ln
        for ln in run.finished.output.splitlines()
        if ln.strip() and not ln.startswith('{"probe"')
    ]
    if report.crashed_stage is not None and lines:
        return lines[-1][:500]
    return None


def observe(run: ProbeRun, catalog: Catalog) -> tuple[Status, Observed]:
    report, done = run.report, run.finished
    if done.exit_code is None:
        status = Status.TIMEOUT
    elif report.passed and done.exit_code == 0:
        status = Status.PASSED
    else:
        status = Status.FAILED
    stage = report.failed_stage or report.crashed_stage
    if status is Status.FAILED and stage is None and report.events:
        stage = report.events[-1].stage
    if status is Status.PASSED:
        return status, Observed(
            outcome=Outcome.PASS,
            stage=None,
            decisive_line=None,
            exit_code=done.exit_code,
            signal=run.signal,
        )
    verdict = classify(
        log_text(run),
        catalog,
        signal=run.signal,
        timed_out=status is Status.TIMEOUT,
        oom_killed=done.oom_killed,
    )
    return status, Observed(
        outcome=Outcome.FAIL,
        stage=stage,
        decisive_line=verdict.decisive_line or fallback_line(run),
        exit_code=done.exit_code,
        signal=run.signal,
        signature=verdict.signature,
        secondary=verdict.secondary,
        fingerprint=verdict.fingerprint,
    )


def drifted(expected: Expectation, status: Status, observed: Observed | None) -> bool:
    """Observed differs from expected: outcome, stage and signature. `unobservable` means the
    run cannot tell the fault from no fault: it must pass. An interrupted run (Ctrl-C, or the
    machine failed under it) says nothing about the stack: never drift."""
    if status is Status.INTERRUPTED:
        return False
    if status not in (Status.PASSED, Status.FAILED):
        return True
    assert observed is not None
    if expected.outcome in (Outcome.PASS, Outcome.UNOBSERVABLE):
        return status is not Status.PASSED
    return (
        status is not Status.FAILED
        or observed.stage is not expected.stage
        or observed.signature != expected.signature
    )


# ---------------------------------------------------------------- the loop


@dataclass(slots=True)
class Count:
    """Where a run is, for its lines: `[i/N]` over the plan's cells, and an ETA from the cells
    run so far (image builds not counted), `slots` of them at a time."""

    total: int = 0
    to_run: int = 0  # cells still to run in this process
    seen: int = 0
    ran: int = 0
    seconds: float = 0.0
    slots: int = 1  # cells run at once (--jobs)

    def tick(self, seconds: float | None = None) -> str:
        """The prefix of the next cell's line; `seconds`: it ran (and took that long)."""
        self.seen += 1
        if seconds is not None:
            self.ran += 1
            self.to_run = max(0, self.to_run - 1)
            self.seconds += seconds
        return f"run {self.seen}/{self.total}" if self.total else "run"

    def next(self) -> str:
        """The prefix the cell running now will have (several at once: which one lands first
        is not known, so no number)."""
        if self.slots > 1:
            return "run"
        return f"run {self.seen + 1}/{self.total}" if self.total else "run"

    def eta(self) -> str:
        """The cells left times the mean cell's seconds, over the slots they share."""
        if not self.ran or not self.to_run:
            return ""
        return f", ETA {human_seconds(self.seconds / self.ran * self.to_run / self.slots)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Loop:
    """What every cell of one run shares."""

    backend: Backend
    scenarios: Mapping[str, Scenario]
    results: Path
    catalog: Catalog
    console: Console
    wheels: WheelCache
    drivers: Drivers | None = None  # where a placed driver's files come from
    machine: Machine = field(default_factory=Machine)
    force: bool = False
    keep: Callable[[ProbeRun], None] | None = None  # sees each probe run (reproduce prints it)
    count: Count = field(default_factory=Count)
    jobs: int = 1  # things at once: 1, one after the other; more, one prepare and the cells
    # One at a time: a journal append with its line and count, a cache hit said, a result kept.
    serial: Lock = field(default_factory=Lock)


@dataclass(slots=True)
class Tally:
    results: list[RunResult] = field(default_factory=list)
    hits: int = 0

    @property
    def done(self) -> int:
        """Cells with a final result: cache hits and final results of this run."""
        return self.hits + sum(r.status.final for r in self.results)


def run_plan(plan: Plan, loop: Loop) -> tuple[list[RunResult], int]:
    """Every cell of the plan, stack by stack: (results of the cells that ran, cache hits).
    A cell whose key has a final result in the journal is not run again, and a stack whose
    cells are all cached is not even prepared. A machine fault stops the run at once: the cell
    in flight is `interrupted`, and the fault says how far the run got."""
    tally = Tally()
    try:
        _run_stacks(plan, loop, tally)
    except MachineFault as fault:
        raise fault.after(tally.done, len(plan.cells)) from None
    finally:
        _close(loop.backend)
        if loop.drivers is not None:
            loop.drivers.close()
    return tally.results, tally.hits


def _prefetch(backend: Backend, stacks: Sequence[Stack]) -> None:
    """A backend that downloads (Docker's wheel fetcher) starts on every stack it will build,
    so the next stack's wheels arrive while this one builds."""
    prefetch = getattr(backend, "prefetch", None)
    if prefetch is not None:
        prefetch(stacks)


def _done(backend: Backend, target: Target) -> None:
    """Every cell of a prepared stack has landed: a backend that keeps prepared stacks on disk
    (Docker's environments) may release it, and trim its cache to a budget."""
    done = getattr(backend, "done", None)
    if done is not None:
        done(target)


def _close(backend: Backend) -> None:
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def _run_stacks(plan: Plan, loop: Loop, tally: Tally) -> None:
    done = {} if loop.force else finished(loop.results)
    out = tally.results
    driver, digest = plan.driver.to_json(), loop.catalog.digest
    stacks = group(plan)
    todos = [
        work(
            replace(plan, cells=cells), loop.scenarios, loop.backend.identity, done, catalog=digest
        )
        for _, cells in stacks
    ]
    count = loop.count
    count.total = len(plan.cells)
    count.slots = loop.jobs
    runs = [[w for w in t if w.action == "run"] for t in todos]
    count.to_run = sum(len(r) for r in runs)
    if loop.drivers is not None:  # the first cell that places a driver finds it fetched
        placed = (w.cell.driver for r in runs for w in r if w.cell.driver != NO_DRIVER)
        loop.drivers.prefetch(list(dict.fromkeys(placed)))
    _prefetch(loop.backend, [s for (s, _), r in zip(stacks, runs, strict=True) if r])
    keys = Keys(done=done, driver=driver, catalog=digest)
    gpu = plan.driver.version is not None
    if loop.jobs > 1:
        listed = [(s, e, t) for (s, _), e, t in zip(stacks, todos, runs, strict=True)]
        _run_together(loop, tally, keys, listed, gpu=gpu)
        return
    for (stack, _), every, todo in zip(stacks, todos, runs, strict=True):
        _say_left(loop, tally, every)
        if not todo:
            continue
        with loop.console.group(stack.slug):
            target = _prepared(loop, tally, stack, todo)
            if target is None:
                continue
            for w, key in _to_run(loop, tally, keys, todo, target):
                out.append(_run_cell(loop, w, key, target, gpu=gpu))
            _done(loop.backend, target)


@dataclass(frozen=True, slots=True, kw_only=True)
class Keys:
    """What a cell's key is made of besides its stack, and the journal's final keys."""

    done: Mapping[str, str]
    driver: str
    catalog: str


def _say_left(loop: Loop, tally: Tally, every: Sequence[Work]) -> None:
    """A stack's cells that will not run: cache hits, and those not run here."""
    with loop.serial:
        tally.hits += sum(w.action == "cached" for w in every)
        for w in every:
            if w.action == "cached":
                loop.console.step(loop.count.tick(), f"{w.cell.id}: cache hit")
            elif w.action != "run":
                loop.console.step(loop.count.tick(), f"{w.cell.id}: {w.action}")


def _prepared(
    loop: Loop, tally: Tally, stack: Stack, todo: Sequence[Work], stopping: Event | None = None
) -> Target | None:
    """The stack prepared, or None: it could not be, and its cells are errored."""
    try:
        target = loop.backend.prepare(stack)
    except (PrepareFailed, LockError) as exc:  # this stack's failure is data
        _all_errored(loop, tally, stack, todo, exc.render(), stopping=stopping)
        return None
    except HarnessError:  # the machine's (no engine, say): every stack would fail
        raise
    except Exception as exc:  # a harness bug: this stack's cells are errored, not lost
        fault = machine_fault(exc)
        if fault is not None:
            raise fault from None
        _all_errored(loop, tally, stack, todo, _trace(exc), stopping=stopping)
        return None
    loop.console.step(loop.backend.name, f"{stack.slug}: {target.status} {target.ref}")
    return target


def _all_errored(
    loop: Loop,
    tally: Tally,
    stack: Stack,
    todo: Sequence[Work],
    error: str,
    *,
    stopping: Event | None,
) -> None:
    """Each cell of a stack that could not be prepared, errored; none when the run is
    `stopping` (its containers killed, a build among them): that failure says nothing."""
    if stopping is not None and stopping.is_set():
        return
    errored = [_errored(loop, w, stack, error) for w in todo]
    with loop.serial:
        tally.results += errored


def _to_run(
    loop: Loop, tally: Tally, keys: Keys, todo: Sequence[Work], target: Target
) -> Iterator[tuple[Work, str]]:
    """Each cell of a prepared stack with its key, but those the journal has (known only now
    that the stack is prepared): said as cache hits."""
    for w in todo:
        key = cell_key(w.cell, target.identity, w.ops, keys.driver, keys.catalog)
        if keys.done.get(w.cell.id) != key:
            yield w, key
            continue
        with loop.serial:
            tally.hits += 1
            loop.count.to_run -= 1
            loop.console.step(loop.count.tick(), f"{w.cell.id}: cache hit")


# ---------------------------------------------------------------- several at once


Stacked = tuple[Stack, Sequence[Work], Sequence[Work]]  # a stack, all its cells, those to run


def _run_together(
    loop: Loop, tally: Tally, keys: Keys, stacks: Sequence[Stacked], *, gpu: bool
) -> None:
    """Up to `loop.jobs` things at once. This thread prepares the stacks, one at a time in plan
    order, each as soon as the one before it is done (so it holds one of the slots while any is
    left), and queues each prepared stack's cells; worker threads take them, in order, on the
    other slots (all of them once every stack is prepared). Whatever stops the run (Ctrl-C, a
    machine fault) kills every container in flight, each such cell journaled `interrupted`,
    and joins the threads before it propagates."""
    cells = _Cells(loop, tally, gpu=gpu)
    left = sum(1 for _, _, todo in stacks if todo)  # stacks still to prepare
    try:
        cells.grow(loop.jobs - 1 if left else loop.jobs)
        for stack, every, todo in stacks:
            _say_left(loop, tally, every)
            if not todo:
                continue
            cells.room(getattr(loop.backend, "ahead", None))
            target = _prepared(loop, tally, stack, todo, cells.stopping)
            left -= 1
            cells.check()  # a machine fault in a cell stops the run
            if target is not None:
                queued = list(_to_run(loop, tally, keys, todo, target))
                cells.expect(target, len(queued))
                for w, key in queued:
                    cells.put(w, key, target)
            if not left:  # the last prepare's slot goes to the cells
                cells.grow(loop.jobs)
        cells.finish()
    except BaseException as exc:
        cells.close()
        if not isinstance(exc, KeyboardInterrupt):
            cells.check()  # a cell's machine fault stopped the run: this is its consequence
        raise


class _Cells:
    """Worker threads running queued cells, each result journaled as it lands (under
    `loop.serial`). A cell that raises a machine fault halts the others; `close` halts and
    joins them."""

    def __init__(self, loop: Loop, tally: Tally, *, gpu: bool):
        self.loop, self.tally, self.gpu = loop, tally, gpu
        self.queue: queue.SimpleQueue[tuple[Work, str, Target] | None] = queue.SimpleQueue()
        self.stopping = Event()  # set: no cell starts, and one that ends is `interrupted`
        self.threads: list[tuple[Thread, Event]] = []  # each with its end, set as it returns
        self._failure: list[BaseException] = []
        self._left: dict[Stack, int] = {}  # a prepared stack -> its cells not landed yet
        self._freed = Event()  # set as a cell lands (`room` waits on it)

    def expect(self, target: Target, count: int) -> None:
        """`count` cells of this target are queued: once they have landed, the backend is told
        (`done`), at once when there are none."""
        if count == 0:
            _done(self.loop.backend, target)
            return
        with self.loop.serial:
            self._left[target.stack] = count

    def _landed(self, target: Target) -> None:
        with self.loop.serial:
            self._left[target.stack] -= 1
            last = self._left[target.stack] == 0
        if not last:
            return
        try:
            _done(self.loop.backend, target)  # the backend's trim ends before the next prepare
        finally:
            with self.loop.serial:
                del self._left[target.stack]
            self._freed.set()

    def room(self, ahead: int | None) -> None:
        """Wait until fewer than `ahead` prepared stacks have cells still to land (None: no
        bound), or the run stops. A backend that keeps each prepared stack on disk until its
        cells are done (Docker's environments under a disk budget) bounds it so: preparing
        every stack as fast as it can held five environments at once in the releases run."""
        if ahead is None:
            return
        while not self.stopping.is_set():
            with self.loop.serial:
                if len(self._left) < ahead:
                    return
                self._freed.clear()
            self._freed.wait(WAKE)

    def grow(self, workers: int) -> None:
        """Start threads until `workers` take cells."""
        while len(self.threads) < workers:
            ended = Event()
            name = f"cell-{len(self.threads) + 1}"
            t = Thread(target=self._work, args=(ended,), name=name, daemon=True)
            self.threads.append((t, ended))
            t.start()

    def put(self, w: Work, key: str, target: Target) -> None:
        self.queue.put((w, key, target))

    def _work(self, ended: Event) -> None:
        try:
            self._take()
        finally:
            ended.set()

    def _take(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.stopping.is_set():
                continue  # queued, never started: no result (as after Ctrl-C one at a time)
            w, key, target = item
            try:
                result = _run_cell(self.loop, w, key, target, gpu=self.gpu, stopping=self.stopping)
            except BaseException as exc:  # a machine fault (its cell journaled interrupted)
                self._fail(exc)
                continue
            with self.loop.serial:
                self.tally.results.append(result)
            self._landed(target)

    def _fail(self, exc: BaseException) -> None:
        with self.loop.serial:
            self._failure.append(exc)
        self.halt()

    def halt(self) -> None:
        """No cell starts from now on, and every container in flight is killed."""
        self.stopping.set()
        halt = getattr(self.loop.backend, "halt", None)
        if halt is not None:
            halt()

    def check(self) -> None:
        """Raise the first failure of a cell (a machine fault), if any."""
        with self.loop.serial:
            failure = self._failure[0] if self._failure else None
        if failure is not None:
            raise failure

    def finish(self) -> None:
        """Wait for every queued cell to land (Ctrl-C interrupts the wait)."""
        self._join()
        self.check()

    def close(self) -> None:
        """Stop: kill what runs, stop a driver fetch that a cell waits for, join the threads."""
        self.halt()
        if self.loop.drivers is not None:
            self.loop.drivers.close()
        self._join()

    def _join(self) -> None:
        """Every thread told to end once the queue is done, and waited for: in short timed waits,
        so that this (main) thread runs a signal handler soon even when the kernel delivered the
        signal to another thread, and never by a bare `Thread.join`, which Ctrl-C can interrupt
        after marking a live thread ended (CPython 3.11)."""
        for _ in self.threads:
            self.queue.put(None)
        for t, ended in self.threads:
            while not ended.wait(WAKE):
                pass
            t.join()


def machine_fault(exc: BaseException) -> MachineFault | None:
    """The machine fault an exception is (one raised as such, or a full or read-only disk met
    by a write that does not guard itself), or None: a harness bug."""
    if isinstance(exc, MachineFault):
        return exc
    if isinstance(exc, OSError):
        name = exc.filename if isinstance(exc.filename, str) else "a file"
        return fault_from(exc, Path(name))
    return None


def _run_cell(
    loop: Loop,
    w: Work,
    key: str,
    target: Target,
    *,
    gpu: bool,
    stopping: Event | None = None,
) -> RunResult:
    """Run one cell and journal its result. Once `stopping` is set (a run of several at once
    stops, its containers killed), whatever the run returns or raises is `interrupted`."""
    t, started = time.monotonic(), _now()
    status, observed, error = Status.ERRORED, None, None
    drivers = loop.drivers.folder if loop.drivers is not None else None
    try:
        # A first use fetches what the run mounts (a driver, another wheel): shown as it runs.
        with loop.console.activity(loop.count.next(), f"{w.cell.id}: running"):
            spec = spec_for(w.ops, target, loop.wheels, gpu=gpu, drivers=drivers)
            run = probe_run(loop.backend, spec, target)
        if stopping is not None and stopping.is_set():  # killed, or ended as the stop came
            status = Status.INTERRUPTED
        else:
            if loop.keep is not None:
                loop.keep(run)
            status, observed = observe(run, loop.catalog)
    except KeyboardInterrupt:
        status = Status.INTERRUPTED
        raise
    except Exception as exc:
        fault = machine_fault(exc)
        if stopping is not None and stopping.is_set():  # what a killed run raises says nothing
            status = Status.INTERRUPTED
        elif isinstance(exc, HarnessError) and fault is None:  # a clear error: its line
            error = exc.render()
        elif fault is None:  # a harness bug becomes an errored result, not a lost cell
            error = _trace(exc)
        else:  # the machine's: recorded as interrupted (it runs again), and the run stops
            status, error = Status.INTERRUPTED, fault.message
            raise fault from None
    finally:
        result = _record(
            loop,
            w.cell,
            key,
            target.ref,
            status=status,
            observed=observed,
            error=error,
            t=t,
            started=started,
            base=target.base,
        )
    return result


def _errored(loop: Loop, w: Work, stack: Stack, error: str) -> RunResult:
    return _record(loop, w.cell, w.key or "", stack.slug, error=error)


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _record(
    loop: Loop,
    cell: Cell,
    key: str,
    image: str,
    *,
    status: Status = Status.ERRORED,
    observed: Observed | None = None,
    error: str | None = None,
    t: float | None = None,
    started: str | None = None,
    base: str = "",
) -> RunResult:
    """Journal one result (fsynced before anything else happens) and say it."""
    now = time.monotonic()
    result = RunResult(
        cell=cell.id,
        stack=cell.stack,
        scenario=cell.scenario,
        key=key,
        backend=loop.backend.name,
        status=status,
        expected=cell.expected,
        observed=observed,
        drift=drifted(cell.expected, status, observed),
        evidence=cell.evidence,
        started=started or _now(),
        seconds=now - (t if t is not None else now),
        image=image,
        error=error,
        machine=loop.machine,
        placed=cell.driver,
        base_image=base,
    )
    word = "DRIFT" if result.drift else "ok" if status.final else "runs again next time"
    stage = f" @ {observed.stage.value}" if observed and observed.stage else ""
    count = loop.count
    with loop.serial:  # one result at a time: its line, then its number and the ETA said
        append(loop.results, result.to_json())
        loop.console.step(
            count.tick(result.seconds),
            f"{cell.id}: {status.value}{stage} ({result.seconds:.1f} s) {word}{count.eta()}",
        )
    return result


def prepare_stacks(plan: Plan, backend: Backend, console: Console) -> list[Target]:
    """`harness build`: each stack of the plan prepared (built or a cache hit); stacks this
    backend cannot run here are said and left out."""
    targets = []
    stacks = [s for s, _ in group(plan)]
    check_space = getattr(backend, "check_space", None)  # a backend that builds images
    if check_space is not None:
        check_space(stacks)
    try:
        _prefetch(backend, stacks)
        for i, stack in enumerate(stacks, 1):
            console.line(f"[{i}/{len(stacks)}] {stack.slug}")
            try:
                with console.group(stack.slug):
                    targets.append(backend.prepare(stack))
            except NotRunnableHere as exc:
                console.step(stack.slug, exc.message)
    finally:
        _close(backend)
    return targets
