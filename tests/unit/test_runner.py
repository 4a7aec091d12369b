"""The runner against one FakeBackend (only the seam is faked): a journal line per result, resume
by key, one prepare per stack, stacks that cannot be prepared or run here, interruption, harness
bugs as results; and the drift rule."""

from __future__ import annotations

import dataclasses
import errno
import io
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from harness import console as console_mod
from harness.backends import NotRunnableHere, PrepareFailed, Target
from harness.console import Console
from harness.errors import MachineFault
from harness.journal import append, finished, records, results
from harness.lock import WheelCache
from harness.model import (
    Cell,
    Driver,
    DriverTarget,
    Evidence,
    Expectation,
    Fault,
    Finished,
    Gpu,
    Lock,
    Machine,
    NoGpu,
    Observed,
    Outcome,
    Plan,
    Reason,
    RunSpec,
    Scenario,
    SetEnv,
    Stack,
    Stage,
    Status,
    Where,
)
from harness.runner import Loop, drifted, run_plan, spec_for, work
from harness.signatures import classify, read_catalog
from tests.conftest import ROOT, TORCH_STACK

CATALOG = read_catalog(ROOT / "scenarios" / "signatures.yaml")
TF_STACK = Stack(
    framework="tensorflow",
    framework_version="2.21.0",
    cuda="12.5",
    cudnn="9.3.0.75",
    python="3.11",
    base="offline",
)
PASS = Expectation(outcome=Outcome.PASS)
FAIL_IMPORT = Expectation(outcome=Outcome.FAIL, signature="cudnn_missing", stage=Stage.IMPORT)
CUDNN_GONE = "libcudnn.so.9: cannot open shared object file: No such file or directory"


def probe_line(stage: str = "import", **fields: object) -> str:
    """One event line as harness/probes/stageprobe.py prints it."""
    return json.dumps({"probe": 1, "stage": stage, "event": "end", "seconds": 0, **fields})


OK = Finished(exit_code=0, output=probe_line(ok=True), oom_killed=False)
IMPORT_FAILURE = Finished(
    exit_code=1,
    output="\n".join(
        [
            json.dumps({"probe": 1, "stage": "import", "event": "start"}),
            probe_line(ok=False, error={"type": "ImportError", "message": CUDNN_GONE}),
        ]
    ),
    oom_killed=False,
)


def scenario(name: str) -> Scenario:
    # The fake backend sees only a RunSpec, so each scenario carries one harmless operation
    # naming it (env_set SCENARIO=<name>): that is how the fake picks its canned output.
    marker = Fault(primitive="env_set", args=(("name", "SCENARIO"), ("value", name)))
    return Scenario(
        id=name,
        title=name,
        cause="c",
        frameworks=("torch", "tensorflow"),
        faults=(marker,),
        expect=(),
        where=Where("x.yaml"),
    )


SCENARIOS = {n: scenario(n) for n in ("a", "b", "c")}


def cell(name: str, expected: Expectation = PASS, stack: Stack = TORCH_STACK) -> Cell:
    return Cell(
        id=f"{stack.slug}/{name}",
        stack=stack,
        scenario=name,
        expected=expected,
        evidence=Evidence.CPU,
        because=Reason(rule="r", detail="d", source="s"),
    )


def plan(*cells: Cell) -> Plan:
    return Plan(profile="p", driver=DriverTarget(version=None, origin="none"), cells=cells)


def empty_lock(stack: Stack) -> Lock:
    """A lock with no wheels: what a target needs where nothing is fetched."""
    return Lock(
        slug=stack.slug,
        requirements=(),
        overrides=(),
        index="https://example.org/simple",
        python=stack.python,
        platforms=(),
        wheels=(),
    )


class FakeBackend:
    """Canned `Finished` per scenario (an exception is raised instead); records what it was
    asked to do. `strict`: prepare and run fail the test."""

    name = "fake"

    def __init__(
        self,
        outputs: Mapping[str, Finished | BaseException] | None = None,
        *,
        identity: str | None = "ident-1",
        broken: frozenset[Stack] = frozenset(),
        elsewhere: frozenset[Stack] = frozenset(),
        journal: Path | None = None,
        strict: bool = False,
    ):
        self.outputs = dict(outputs or {})
        self.ident = identity
        self.broken, self.elsewhere = broken, elsewhere
        self.journal, self.strict = journal, strict
        self.prepared: list[Stack] = []
        self.ran: list[str] = []  # "<framework>/<scenario>"
        self.journaled: list[int] = []  # journal lines already written when each run began

    def identity(self, stack: Stack) -> str | None:
        if stack in self.elsewhere:
            raise NotRunnableHere(f"{stack.slug}: needs a registry", help="run it elsewhere")
        return self.ident

    def prepare(self, stack: Stack) -> Target:
        if self.strict:
            pytest.fail(f"prepare({stack.slug}) called")
        self.prepared.append(stack)
        if stack in self.broken:
            raise PrepareFailed(f"{stack.slug}: the build failed", help="see the build log")
        lock = empty_lock(stack)
        ident = self.ident or f"ident-of-{stack.slug}"  # known once prepared
        return Target(stack=stack, ref=f"ref-{stack.framework}", identity=ident, lock=lock)

    def run(self, spec: RunSpec, target: Target) -> Finished:
        if self.strict:
            pytest.fail(f"run on {target.ref} called")
        env = {op.name: op.value for op in spec.ops if isinstance(op, SetEnv)}
        self.ran.append(f"{target.stack.framework}/{env['SCENARIO']}")
        if self.journal is not None:
            self.journaled.append(len(records(self.journal)))
        out = self.outputs[env["SCENARIO"]]
        if isinstance(out, BaseException):
            raise out
        return out

    def sweep(self) -> list[str]:
        return []


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def wheels(tmp_path: Path) -> WheelCache:
    return WheelCache(tmp_path / "cache")


def loop(
    backend: FakeBackend, folder: Path, wheels: WheelCache, **kw: object
) -> tuple[Loop, io.StringIO]:
    said = io.StringIO()
    made = Loop(
        backend=backend,
        scenarios=SCENARIOS,
        results=folder,
        catalog=CATALOG,
        console=Console(said),
        wheels=wheels,
        **kw,  # type: ignore[arg-type]
    )
    return made, said


def dry_run(p: Plan, backend: FakeBackend, folder: Path) -> dict[str, str]:
    """`harness run --dry-run`: cell id -> what a run would do."""
    items = work(p, SCENARIOS, backend.identity, finished(folder), catalog=CATALOG.digest)
    return {w.cell.id: w.action for w in items}


# ---------------------------------------------------------------- journal and resume


def test_each_result_is_journaled_as_it_lands_and_a_rerun_skips_it(
    folder: Path, wheels: WheelCache
) -> None:
    p = plan(cell("a"), cell("b", FAIL_IMPORT))
    backend = FakeBackend({"a": OK, "b": IMPORT_FAILURE}, journal=folder)
    first, hits = run_plan(p, loop(backend, folder, wheels)[0])
    assert [r.status for r in first] == [Status.PASSED, Status.FAILED]
    assert hits == 0 and not any(r.drift for r in first)
    assert backend.journaled == [0, 1], "each result is on disk before the next cell runs"
    assert backend.prepared == [TORCH_STACK], "one prepare per stack"
    observed = first[1].observed
    assert observed is not None and observed.signature == "cudnn_missing"
    assert observed.stage is Stage.IMPORT
    assert observed.decisive_line == f"ImportError: {CUDNN_GONE}"
    assert first[0].image == "ref-torch" and first[0].backend == "fake"

    again, hits = run_plan(p, loop(FakeBackend(strict=True), folder, wheels)[0])
    assert (again, hits) == ([], 2)
    assert len(records(folder)) == 2


def test_a_new_identity_is_a_new_key_and_runs_again(folder: Path, wheels: WheelCache) -> None:
    p = plan(cell("a"))
    [old], _ = run_plan(p, loop(FakeBackend({"a": OK}), folder, wheels)[0])
    changed = FakeBackend({"a": OK}, identity="ident-2")  # e.g. a rebuilt image
    assert dry_run(p, changed, folder) == {cell("a").id: "run"}
    [new], hits = run_plan(p, loop(changed, folder, wheels)[0])
    assert hits == 0 and changed.ran == ["torch/a"]
    assert new.key != old.key
    assert [r["key"] for r in records(folder)] == [old.key, new.key]


def test_a_key_known_only_after_prepare_still_skips_the_run(
    folder: Path, wheels: WheelCache
) -> None:
    """No lock yet: identity is None, so the stack is prepared; the cell is then a cache hit."""
    p = plan(cell("a"))
    run_plan(p, loop(FakeBackend({"a": OK}, identity=None), folder, wheels)[0])
    again = FakeBackend({}, identity=None)
    assert dry_run(p, again, folder) == {cell("a").id: "run"}
    out, hits = run_plan(p, loop(again, folder, wheels)[0])
    assert (out, hits) == ([], 1)
    assert again.prepared == [TORCH_STACK] and again.ran == []


def test_a_stack_whose_cells_are_all_cached_is_not_prepared(
    folder: Path, wheels: WheelCache
) -> None:
    first = plan(cell("a"), cell("a", stack=TF_STACK))
    run_plan(first, loop(FakeBackend({"a": OK}), folder, wheels)[0])
    backend = FakeBackend({"b": OK})
    out, hits = run_plan(plan(*first.cells, cell("b")), loop(backend, folder, wheels)[0])
    assert hits == 2 and [r.cell for r in out] == [cell("b").id]
    assert backend.prepared == [TORCH_STACK], "the tensorflow stack had nothing to run"


def test_the_dry_run_says_run_or_cached_and_touches_nothing(
    folder: Path, wheels: WheelCache
) -> None:
    outputs: dict[str, Finished | BaseException] = {
        "a": OK,
        "b": IMPORT_FAILURE,
        "c": ValueError("bug"),
    }
    cells = (cell("a"), cell("b", FAIL_IMPORT), cell("c"), cell("a", stack=TF_STACK))
    run_plan(plan(*cells[:3]), loop(FakeBackend(outputs), folder, wheels)[0])
    strict = FakeBackend(strict=True)
    assert dry_run(plan(*cells), strict, folder) == {
        cells[0].id: "cached",
        cells[1].id: "cached",  # failed is final: the same key gives the same result
        cells[2].id: "run",  # errored runs again
        cells[3].id: "run",  # never ran
    }
    forced = work(plan(*cells), SCENARIOS, strict.identity, finished(folder), catalog="x")
    assert {w.action for w in forced} == {"run"}, "another catalog re-judges every cell"
    assert len(records(folder)) == 3, "nothing was written"


def test_records_read_back_equal_the_results_returned(folder: Path, wheels: WheelCache) -> None:
    outputs: dict[str, Finished | BaseException] = {
        "a": OK,
        "b": IMPORT_FAILURE,
        "c": ValueError("bug"),
    }
    cells = (cell("a"), cell("b", FAIL_IMPORT), cell("c", stack=TF_STACK))
    machine = Machine(driver="580.1", gpu="G (cc 9.0)")
    out, _ = run_plan(plan(*cells), loop(FakeBackend(outputs), folder, wheels, machine=machine)[0])
    back = results(folder)
    # The journal keeps seconds to the millisecond.
    assert back == [dataclasses.replace(r, seconds=round(r.seconds, 3)) for r in out]
    assert [r.status for r in back] == [Status.PASSED, Status.FAILED, Status.ERRORED]
    assert all(type(r.status) is Status for r in back)
    assert [(r.stack, r.scenario) for r in back] == [(c.stack, c.scenario) for c in cells]


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_afresh(tmp_path: Path) -> None:
    append(tmp_path, {"schema": 1, "cell": "a", "key": "k", "status": "passed"})
    with (tmp_path / "journal.jsonl").open("a") as f:
        f.write('{"schema": 1, "cell": "b", "ke')  # killed mid-line
    append(tmp_path, {"schema": 1, "cell": "c", "key": "k", "status": "failed"})
    assert [r["cell"] for r in records(tmp_path)] == ["a", "c"]


# ---------------------------------------------------------------- what goes wrong becomes data


def test_an_interrupt_is_recorded_then_propagates(folder: Path, wheels: WheelCache) -> None:
    p = plan(cell("a"), cell("b"))
    backend = FakeBackend({"a": KeyboardInterrupt(), "b": OK})
    with pytest.raises(KeyboardInterrupt):
        run_plan(p, loop(backend, folder, wheels)[0])
    assert backend.ran == ["torch/a"], "nothing runs after Ctrl-C"
    [rec] = records(folder)
    assert rec["status"] == "interrupted" and rec["cell"] == cell("a").id
    assert finished(folder) == {}, "an interrupted cell runs again"
    assert dry_run(p, backend, folder) == {cell("a").id: "run", cell("b").id: "run"}


@pytest.mark.parametrize(
    "fault",
    [
        MachineFault("the Docker engine stopped answering", detail="unix:///x.sock: refused"),
        OSError(errno.ENOSPC, "No space left on device", "/cache/extracted/x"),
        OSError(errno.EROFS, "Read-only file system", "/cache/extracted/x"),
    ],
)
def test_a_machine_fault_stops_the_run_with_the_cell_in_flight_interrupted(
    folder: Path, wheels: WheelCache, fault: Exception
) -> None:
    p = plan(cell("a"), cell("b"), cell("c"))
    backend = FakeBackend({"a": OK, "b": fault, "c": OK})
    with pytest.raises(MachineFault) as err:
        run_plan(p, loop(backend, folder, wheels)[0])
    assert backend.ran == ["torch/a", "torch/b"], "nothing runs after the machine failed"
    assert err.value.exit_code == 3 and " after 1 of 3 results" in err.value.message
    a, b = records(folder)
    assert (a["status"], b["status"]) == ("passed", "interrupted")
    assert b["drift"] is False and "Traceback" not in str(b["error"])
    assert finished(folder) == {cell("a").id: a["key"]}, "the interrupted cell runs again"


def test_an_interrupted_result_is_never_drift() -> None:
    assert not drifted(PASS, Status.INTERRUPTED, None)
    assert drifted(PASS, Status.ERRORED, None), "errored stays: a harness bug in one cell"


def test_a_harness_bug_is_an_errored_result_with_its_traceback(
    folder: Path, wheels: WheelCache
) -> None:
    backend = FakeBackend({"a": ValueError("boom"), "b": OK})
    [bug, ok], _ = run_plan(plan(cell("a"), cell("b")), loop(backend, folder, wheels)[0])
    assert bug.status is Status.ERRORED and bug.drift and bug.observed is None
    assert bug.error is not None
    assert bug.error.startswith("Traceback (most recent call last):")
    assert bug.error.rstrip().endswith("ValueError: boom")
    assert ok.status is Status.PASSED, "the next cell still runs"


def test_a_stack_that_cannot_be_prepared_errors_its_cells_and_the_others_run(
    folder: Path, wheels: WheelCache
) -> None:
    cells = (cell("a"), cell("b"), cell("a", stack=TF_STACK))
    backend = FakeBackend({"a": OK, "b": OK}, broken=frozenset({TORCH_STACK}))
    out, _ = run_plan(plan(*cells), loop(backend, folder, wheels)[0])
    assert [(r.cell, r.status) for r in out] == [
        (cells[0].id, Status.ERRORED),
        (cells[1].id, Status.ERRORED),
        (cells[2].id, Status.PASSED),
    ]
    message = f"error: {TORCH_STACK.slug}: the build failed\nhelp: see the build log"
    assert [r.error for r in out[:2]] == [message, message]
    assert all(r.key and r.drift and r.image == TORCH_STACK.slug for r in out[:2])
    assert backend.prepared == [TORCH_STACK, TF_STACK] and backend.ran == ["tensorflow/a"]
    assert set(finished(folder)) == {cells[2].id}, "errored cells run again"


def test_a_harness_bug_in_prepare_errors_that_stack_only(folder: Path, wheels: WheelCache) -> None:
    class Buggy(FakeBackend):
        def prepare(self, stack: Stack) -> Target:
            if stack == TORCH_STACK:
                raise RuntimeError("bug in prepare")
            return super().prepare(stack)

    out, _ = run_plan(
        plan(cell("a"), cell("a", stack=TF_STACK)), loop(Buggy({"a": OK}), folder, wheels)[0]
    )
    assert [r.status for r in out] == [Status.ERRORED, Status.PASSED]
    assert out[0].error is not None and "RuntimeError: bug in prepare" in out[0].error


def test_a_stack_not_runnable_here_is_left_out(folder: Path, wheels: WheelCache) -> None:
    cells = (cell("a"), cell("a", stack=TF_STACK))
    backend = FakeBackend({"a": OK}, elsewhere=frozenset({TF_STACK}))
    here = f"not run here: {TF_STACK.slug}: needs a registry"
    assert dry_run(plan(*cells), backend, folder) == {cells[0].id: "run", cells[1].id: here}
    made, said = loop(backend, folder, wheels)
    out, hits = run_plan(plan(*cells), made)
    assert [r.cell for r in out] == [cells[0].id] and hits == 0
    assert backend.prepared == [TORCH_STACK]
    assert [r["cell"] for r in records(folder)] == [cells[0].id], "no result for it"
    assert f"[run 2/2] {cells[1].id}: {here}" in said.getvalue().splitlines()


def test_each_result_names_the_host_it_ran_on(folder: Path, wheels: WheelCache) -> None:
    gpus = [Gpu(index=i, name="NVIDIA H100 80GB HBM3", capability="9.0") for i in range(2)]
    backend = FakeBackend({"a": OK, "b": OK})
    run_plan(plan(cell("a")), loop(backend, folder, wheels, machine=Machine.of("580.1", gpus))[0])
    run_plan(plan(cell("b")), loop(backend, folder, wheels)[0])
    first, second = records(folder)
    assert first["driver"] == "580.1"
    assert first["gpu"] == "NVIDIA H100 80GB HBM3 (cc 9.0); NVIDIA H100 80GB HBM3 (cc 9.0)"
    assert (second["driver"], second["gpu"]) == (None, None)


def test_the_run_spec_is_the_probe_with_the_cells_operations(
    folder: Path, wheels: WheelCache
) -> None:
    seen: list[RunSpec] = []

    class Watching(FakeBackend):
        def run(self, spec: RunSpec, target: Target) -> Finished:
            seen.append(spec)
            return super().run(spec, target)

    run_plan(plan(cell("a")), loop(Watching({"a": OK}), folder, wheels)[0])
    [spec] = seen
    assert spec.argv == ("python", "/probe/stageprobe.py", "torch")
    assert spec.ops == (SetEnv(name="SCENARIO", value="a"),)
    assert spec.gpu is False and spec.sources == ()
    assert [m.target for m in spec.mounts] == ["/probe"]


class FakeDrivers:
    """Placed drivers' folders made in `root` (each `slow` seconds the first time); what the
    runner asked of it."""

    def __init__(self, root: Path, slow: float = 0.0):
        self.root, self.slow = root, slow
        self.prefetched: list[list[str]] = []
        self.asked: list[str] = []
        self.closed = False

    def folder(self, driver: str) -> Path:
        self.asked.append(driver)
        if not (self.root / driver).exists():
            time.sleep(self.slow)
            (self.root / driver).mkdir(parents=True)
        return self.root / driver

    def prefetch(self, drivers: Sequence[str]) -> None:
        self.prefetched.append(list(drivers))

    def close(self) -> None:
        self.closed = True


def test_the_drivers_of_the_cells_to_run_are_prefetched_and_a_slow_fetch_shows_progress(
    folder: Path, wheels: WheelCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console_mod, "HEARTBEAT", 0.1)
    monkeypatch.setattr(console_mod, "TICK", 0.01)
    cached, a, b = (
        dataclasses.replace(cell(n), id=f"{cell(n).id}@{d}", driver=d)
        for n, d in (("c", "470.256.02"), ("a", "stub"), ("b", "stub"))
    )
    first = FakeDrivers(tmp_path / "drivers")
    run_plan(plan(cached), loop(FakeBackend({"c": OK}), folder, wheels, drivers=first)[0])
    drivers = FakeDrivers(tmp_path / "drivers", slow=0.5)
    made, said = loop(FakeBackend({"a": OK, "b": OK}), folder, wheels, drivers=drivers)
    out, hits = run_plan(plan(cell("a"), cached, a, b), made)
    assert hits == 1 and [r.status for r in out] == [Status.PASSED] * 3
    assert drivers.prefetched == [["stub"]], "once each, only for the cells that run"
    assert drivers.asked == ["stub", "stub"] and drivers.closed
    lines = said.getvalue().splitlines()
    running = lines.index(f"[run 3/4] {a.id}: running: 0 s")  # while its driver is fetched
    landed = next(i for i, ln in enumerate(lines) if ln.startswith(f"[run 3/4] {a.id}: passed"))
    assert running < landed


# ---------------------------------------------------------------- drift


@pytest.mark.parametrize(
    ("expected", "status", "stage", "signature", "drift"),
    [
        (PASS, Status.PASSED, None, None, False),
        (PASS, Status.FAILED, Stage.IMPORT, "cudnn_missing", True),
        (Expectation(outcome=Outcome.UNOBSERVABLE), Status.PASSED, None, None, False),
        (Expectation(outcome=Outcome.UNOBSERVABLE), Status.FAILED, Stage.IMPORT, "unknown", True),
        (FAIL_IMPORT, Status.FAILED, Stage.IMPORT, "cudnn_missing", False),
        (FAIL_IMPORT, Status.FAILED, Stage.BUILD_INFO, "cudnn_missing", True),
        (FAIL_IMPORT, Status.FAILED, Stage.IMPORT, "cuda_runtime_missing", True),  # another cause
        (FAIL_IMPORT, Status.PASSED, None, None, True),
        (PASS, Status.TIMEOUT, None, "timeout", True),
        (FAIL_IMPORT, Status.TIMEOUT, Stage.IMPORT, "cudnn_missing", True),
        (PASS, Status.ERRORED, None, None, True),
    ],
)
def test_drift(
    expected: Expectation, status: Status, stage: Stage | None, signature: str | None, drift: bool
) -> None:
    observed = Observed(
        outcome=Outcome.PASS if status is Status.PASSED else Outcome.FAIL,
        stage=stage,
        decisive_line=None,
        exit_code=0,
        signal=None,
        signature=signature,
    )
    assert drifted(expected, status, observed) is drift


def test_a_run_planned_for_the_hosts_gpu_tells_the_probe_so(tmp_path: Path) -> None:
    """`--gpu` on runs planned for a GPU, so finding none fails (the no-gpu-visible cell on a
    GPU host passed before: the GPU stages skipped); never on a placed driver's run, which is
    given no device by design."""
    target = Target(stack=TORCH_STACK, ref="r", identity="i", lock=empty_lock(TORCH_STACK))
    wheels = WheelCache(tmp_path / "cache")
    assert spec_for((), target, wheels, gpu=True).argv[-1] == "--gpu"
    assert spec_for((NoGpu(),), target, wheels, gpu=True).argv[-1] == "--gpu"
    assert "--gpu" not in spec_for((), target, wheels, gpu=False).argv
    placed = (NoGpu(), Driver(version="535.104.05", links=()))
    spec = spec_for(placed, target, wheels, gpu=True, drivers=lambda v: tmp_path)
    assert "--gpu" not in spec.argv


def test_the_probe_fails_a_run_planned_for_a_gpu_that_finds_none_in_the_runtimes_words() -> None:
    from harness.probes import stageprobe

    gate = {
        "libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04",
        "driver_api": 13000,
        "cudart": "/opt/stack/nvidia/cu13/lib/libcudart.so.13",
        "runtime": 13000,
        "code": 100,
        "name": "cudaErrorNoDevice",
        "message": "no CUDA-capable device is detected",
    }
    assert "passed the version gate" in stageprobe.no_device(dict(gate))["verdict"]
    with pytest.raises(RuntimeError) as err:
        stageprobe.no_device(dict(gate), "No CUDA GPUs are available", want=True)
    text = str(err.value)
    assert text.startswith("No CUDA GPUs are available\ncudaGetDeviceCount returned 100")
    catalog = read_catalog(ROOT / "scenarios" / "signatures.yaml")
    assert classify(f"RuntimeError: {text}", catalog).signature == "no_gpu_or_driver"
    driverless = {"libcuda": None, "libcuda_error": "libcuda.so.1: cannot open shared object file"}
    with pytest.raises(RuntimeError, match=r"^libcuda\.so\.1: cannot open"):
        stageprobe.no_device(driverless, want=True)
    assert stageprobe.main(["stageprobe.py", "torch", "--gpus"]) == 2


def test_the_probe_fills_twice_the_limit_it_sees_and_never_a_machine_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """STACKMATRIX_PROBE_HOST_OOM (scenario host-memory-limit): F times the process's limit
    (its cgroup's, else its data rlimit); with no limit at all the stage is skipped."""
    import resource

    from harness.probes import stageprobe

    monkeypatch.delenv("STACKMATRIX_PROBE_HOST_OOM", raising=False)
    assert stageprobe.host_oom_size() is None
    monkeypatch.setenv("STACKMATRIX_PROBE_HOST_OOM", "2")
    monkeypatch.setattr(stageprobe, "memory_limit", lambda: 1 << 30)
    assert stageprobe.host_oom_size() == 2 << 30
    monkeypatch.setattr(stageprobe, "memory_limit", lambda: None)
    with pytest.raises(stageprobe.Skip, match="no memory limit"):
        stageprobe.host_oom_size()
    # the data rlimit is what the local backend sets (`ulimit -d`), read where no cgroup limits
    # the process (a cgroup's limit, where one is set, comes first)
    monkeypatch.undo()
    limit = 3 << 30
    code = "from harness.probes import stageprobe; print(stageprobe.memory_limit())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)),
    ).stdout.strip()  # fmt: skip
    cgroup = [
        int(t)
        for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
        if Path(f).is_file() and (t := Path(f).read_text().strip()).isdigit() and int(t) < 1 << 50
    ]
    assert out == str(cgroup[0] if cgroup else limit)
