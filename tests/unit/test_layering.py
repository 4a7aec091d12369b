"""The harness keeps its layers (tests/layering.py), and the checker catches what it should.

Source is parsed, never imported, so these tests run on a tree that does not import.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest

from tests import layering
from tests.layering import KNOWN_VIOLATIONS, ROOT, check


def test_the_harness_keeps_its_layers() -> None:
    found = [str(v) for v in check(ROOT) if v.key not in KNOWN_VIOLATIONS]
    assert not found, "\n".join(found)


def test_every_known_violation_is_still_there() -> None:
    """Delete an entry from KNOWN_VIOLATIONS once the refactor removes its edge."""
    stale = KNOWN_VIOLATIONS - {v.key for v in check(ROOT)}
    assert not stale, sorted(stale)


def test_every_module_below_the_effect_layer_is_pure() -> None:
    low = {m.rel for m in layering.load(ROOT).values() if below_effects(m.rel)}
    assert low <= {*layering.PURE, *layering.READS_FILES, layering.ROOT_INIT}


def test_every_pure_module_sits_below_the_effect_layer() -> None:
    present = [n for n in layering.PURE if (ROOT / "harness" / f"{n}.py").exists()]
    assert [n for n in present if not below_effects(n)] == []


def below_effects(rel: str) -> bool:
    layer = layering.layer_of(rel)
    return layer is not None and layer < layering.EFFECT_LAYER


ENV = "pure module reads the environment (take env: Mapping)"
ONLY_BACKENDS = "only cli, backends, backends.* may import backends.*"
PROC = "(only harness/proc.py may)"
NO_BACKEND = "the runner imports no backend; it is handed one"

# (file, planted lines, [(planted line number, message)]), one violation each.
PLANTS = {
    "subprocess-in-events": (
        "events.py",
        ["from subprocess import run"],
        [(1, f"starts processes via subprocess.run {PROC}")],
    ),
    "write-text-in-matrix": (
        "matrix.py",
        ["from pathlib import Path", 'Path("x").write_text("y")'],
        [(2, "pure module changes files: .write_text()")],
    ),
    "os-environ-in-matrix": (
        "matrix.py",
        ["import os", '_HOME = os.environ.get("HOME")'],
        [(2, f"{ENV}: os.environ.get")],
    ),
    "from-os-import-environ": (
        "scenarios.py",
        ["from os import environ", '_HOME = environ["HOME"]'],
        [(1, f"{ENV}: os.environ"), (2, f"{ENV}: os.environ")],
    ),
    "os-alias-getenv": (
        "compat.py",
        ["import os as o", '_HOME = o.getenv("HOME")'],
        [(2, f"{ENV}: os.getenv")],
    ),
    "backend-in-signatures": (
        "signatures.py",
        ["from harness.backends.docker import X"],
        [(1, f"imports harness.backends.docker (layer 4 -> 10): {ONLY_BACKENDS}")],
    ),
    "relative-backend-in-signatures": (
        "signatures.py",
        ["from .backends import docker"],
        [(1, f"imports harness.backends.docker (layer 4 -> 10): {ONLY_BACKENDS}")],
    ),
    "import-in-a-function": (
        "signatures.py",
        ["def _planted():", "    import harness.runner"],
        [(2, "imports harness.runner (layer 4 -> 10)")],
    ),
    "upward-edge": (
        "model.py",
        ["from harness import errors"],
        [(1, "imports harness.errors (layer 0 -> 1)")],
    ),
    "runner-imports-a-backend": (
        "runner.py",
        ["from harness.backends.docker import DockerBackend"],
        [(1, f"imports harness.backends.docker (layer 10 -> 10): {NO_BACKEND}")],
    ),
    "os-system-in-a-pure-module": (
        "faults.py",
        ["import os", 'os.system("true")'],
        [(2, f"starts processes via os.system {PROC}")],
    ),
    "subprocess-outside-proc": (
        "lock.py",
        ["import subprocess as sp"],
        [(1, f"starts processes via subprocess {PROC}")],
    ),
    "shutil-in-a-pure-module": (
        "plan.py",
        ["import shutil"],
        [(1, "pure module imports an effectful library: shutil")],
    ),
    "from-shutil-import-rmtree": (
        "render.py",
        ["from shutil import rmtree", 'rmtree("x")'],
        [
            (1, "pure module imports an effectful library: shutil.rmtree"),
            (2, "pure module changes files: shutil.rmtree"),
        ],
    ),
    "os-remove-in-a-pure-module": (
        "events.py",
        ["import os", 'os.remove("x")'],
        [(2, "pure module changes files: os.remove")],
    ),
    "open-for-writing": (
        "diagnose.py",
        ["def _planted():", '    open("x", mode="a").close()'],
        [(2, "pure module changes files: open() for writing")],
    ),
    "module-without-a-layer": (
        "newthing.py",
        ["X = 1"],
        [(1, "harness.newthing has no layer: add it to LAYERS in tests/layering.py")],
    ),
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the package's sources (only the .py files: the checker reads nothing else)."""
    for source in (ROOT / "harness").rglob("*.py"):
        copy = tmp_path / source.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
    return tmp_path


def test_the_unmodified_copy_is_clean(tree: Path) -> None:
    assert {v.key for v in check(tree)} == KNOWN_VIOLATIONS


@pytest.mark.parametrize("case", PLANTS, ids=list(PLANTS))
def test_the_checker_reports_a_planted_violation(tree: Path, case: str) -> None:
    name, planted, expected = PLANTS[case]
    before = {str(v) for v in check(tree)}
    path = tree / "harness" / name
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    path.write_text("\n".join([*lines, *planted]) + "\n", encoding="utf-8")
    after = {str(v) for v in check(tree)}
    assert after >= before
    assert sorted(after - before) == [f"harness/{name}:{len(lines) + n}: {m}" for n, m in expected]


@pytest.mark.parametrize("probe", ["stageprobe.py", "doctorprobe.py"])
def test_the_probe_uses_only_the_stdlib_and_the_frameworks(probe: str) -> None:
    """Probes run inside the target (an image, a user's interpreter): nothing else is there."""
    tree = ast.parse((ROOT / "harness" / "probes" / probe).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, "a probe imports nothing relative to the harness"
            names.add((node.module or "").split(".")[0])
    assert names - {"__future__"} <= set(sys.stdlib_module_names) | {"torch", "tensorflow"}
    assert "harness" not in names
