"""Pure modules stay pure: no child processes, no engine, no journal (DESIGN.md: plan as data)."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

PURE = ["model", "errors", "loader", "schema", "matrix", "compat", "scenarios", "plan", "select"]
FORBIDDEN = {
    "subprocess",
    "docker",
    "harness.proc",
    "harness.journal",
    "harness.backends",
    "harness.runner",
    "harness.host",
    "multiprocessing",
    "socket",
    "ctypes",
}


def imports_of(module: str) -> set[str]:
    tree = ast.parse((ROOT / "harness" / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def closure(module: str) -> set[str]:
    """Imports of a module and of every harness module it imports, transitively."""
    seen, todo, out = set(), [module], set()
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        for name in imports_of(mod):
            out.add(name)
            if name.startswith("harness.") and (ROOT / "harness" / f"{name[8:]}.py").exists():
                todo.append(name[8:])
    return out


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_effects(module: str) -> None:
    bad = {n for n in closure(module) for f in FORBIDDEN if n == f or n.startswith(f + ".")}
    assert not bad, f"harness.{module} reaches {sorted(bad)}"


def test_os_system_and_popen_only_in_proc() -> None:
    for path in (ROOT / "harness").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "proc.py":
            assert "import subprocess" not in text, path
            assert "os.system(" not in text and "os.popen(" not in text, path


@pytest.mark.parametrize("probe", ["stageprobe.py", "doctorprobe.py"])
def test_the_probe_uses_only_the_stdlib_and_the_frameworks(probe: str) -> None:
    """Probes run inside the target (an image, a user's interpreter): nothing else is there."""
    import sys

    tree = ast.parse((ROOT / "harness" / "probes" / probe).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    assert names - {"__future__"} <= set(sys.stdlib_module_names) | {"torch", "tensorflow"}
    assert "harness" not in names
