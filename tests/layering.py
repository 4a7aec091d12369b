"""The harness's layering, checked on syntax trees: nothing here imports a harness module.

Three rules (DESIGN.md, habits 1, 3, 4):

* Layers: a module imports only modules of a lower layer or of its own family (a subpackage, or
  the `doctor_*`/`report_*` prefix that becomes one), plus the explicit edge rules below.
* Pure modules (PURE) write no files, touch no environment and import no effectful library.
  They reach no effectful harness module either: every PURE module sits below EFFECT_LAYER and
  every effectful one at or above it (tests/unit/test_layering.py holds both ways).
* Child processes start only in harness/proc.py.

To add a module: give it a layer in LAYERS (a glob over its name inside the package); if it is
pure, add it to PURE as well. Every module below EFFECT_LAYER must be pure (or only read files).
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "harness"
ROOT_INIT = "__init__"  # the package root's own name in LAYERS and PURE
SKIP = ("probes",)  # run inside the target; they import only the stdlib and the frameworks

# Module glob (name inside the package) -> layer. Derived from the imports of the current tree.
LAYERS: dict[str, int] = {
    **dict.fromkeys([ROOT_INIT, "model", "ids", "regexcheck", "probes", "probes.*"], 0),
    "errors": 1,  # HarnessError tree over model.Where
    **dict.fromkeys(["inputs", "loader"], 2),  # bounded reads; YAML with positions
    **dict.fromkeys(["schema", "compat", "faults", "drivers", "codes"], 3),  # cited tables; ops
    **dict.fromkeys(["matrix", "scenarios", "signatures", "render", "events", "advice"], 4),
    **dict.fromkeys(["plan", "select", "diagnose"], 5),  # pure, over the plan and signatures
    "args": 6,  # the command line's shape
    **dict.fromkeys(["proc", "fs", "console"], 7),  # the effect choke points
    **dict.fromkeys(["host", "lock", "journal"], 8),  # effects built on proc and fs
    "backends": 9,  # the backend protocol: what the runner is handed
    "fetcher": 9,  # locked wheels into the cache (over lock and console)
    **dict.fromkeys(["runner", "backends.*", "doctor", "doctor_*", "doctor.*"], 10),
    **dict.fromkeys(["report", "report_*", "report.*"], 10),
    "cli": 11,
    "__main__": 12,
}
EFFECT_LAYER = 7  # every module below it is pure, or only reads files (READS_FILES)
READS_FILES = ("loader", "inputs")
FAMILIES = ("backends", "doctor", "report")  # a family may import its own members freely

PURE = (
    *("model", "ids", "regexcheck", "errors", "schema", "matrix", "compat", "scenarios"),
    *("faults", "render", "plan", "events", "signatures", "diagnose", "select", "args"),
    *("drivers", "codes", "advice"),
)

# (importer glob, imported glob) -> why not; checked before the layers, so the reason shows.
FORBIDDEN_EDGES: dict[tuple[str, str], str] = {
    ("runner", "backends.*"): "the runner imports no backend; it is handed one",
}
# Imported glob -> the only importers allowed (globs).
ONLY_IMPORTED_BY: dict[str, tuple[str, ...]] = {
    "backends.*": ("cli", "backends", "backends.*"),
}
# (importer, imported) names that break the layers
ALLOWED_EDGES: set[tuple[str, str]] = {("loader", "inputs")}  # the loader reads through inputs

# Layering bugs in the current tree, as "importer -> imported". The backend-seam refactor
# (values such as Finished/Mount move to model; build/base go through the Backend protocol)
# removes them: delete each entry as its edge goes; the test fails on a stale entry.
KNOWN_VIOLATIONS: set[str] = set()

PROCESS = (
    *("subprocess", "pty", "os.system", "os.popen", "os.exec*", "os.spawn*", "os.fork*"),
    *("os.posix_spawn*", "asyncio.create_subprocess_*"),
)
EFFECT_MODULES = (
    *("docker", "socket", "shutil", "multiprocessing", "ctypes", "tempfile", "requests"),
    *("urllib.request", "http.client", "concurrent.futures.process"),
)
FILE_FUNCS = (
    *("os.remove", "os.unlink", "os.replace", "os.rename", "os.rmdir", "os.removedirs"),
    *("os.mkdir", "os.makedirs", "os.truncate", "os.chmod", "shutil.*"),
)
FILE_METHODS = frozenset(
    {"write_text", "write_bytes", "unlink", "rmdir", "mkdir", "touch", "rename", "chmod"}
    | {"symlink_to", "hardlink_to"}
)
ENV = ("os.environ", "os.environb", "os.getenv", "os.getenvb", "os.putenv", "os.unsetenv")
MODE = re.compile(r"[rwaxbtU+]{1,4}")


@dataclass(frozen=True, slots=True)
class Ref:
    line: int
    name: str  # fully qualified: os.environ, subprocess.run, harness.backends.docker.Mount


@dataclass(frozen=True, slots=True)
class Binding:
    ref: Ref  # what an import statement names
    local: str  # the name it binds
    stands_for: str  # what that name means: `import os.path` binds os -> os


@dataclass(frozen=True, slots=True)
class Module:
    name: str  # harness.backends.docker
    path: str  # harness/backends/docker.py
    bindings: tuple[Binding, ...]  # its imports, function-level ones too
    uses: tuple[Ref, ...]  # names and attribute chains rooted in an import, qualified
    writes: tuple[Ref, ...]  # calls that write or delete files, whatever the object

    @property
    def rel(self) -> str:
        """The name inside the package, as LAYERS and PURE spell it."""
        return rel_of(self.name)

    @property
    def imported(self) -> list[Ref]:
        return [b.ref for b in self.bindings]


@dataclass(frozen=True, slots=True, order=True)
class Violation:
    path: str
    line: int
    message: str
    key: str  # what KNOWN_VIOLATIONS lists

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def matches(name: str, pattern: str) -> bool:
    """`subprocess` matches subprocess.run; `os.exec*` matches os.execv."""
    return fnmatch.fnmatchcase(name, pattern) or name.startswith(pattern.rstrip("*") + ".")


def matches_any(name: str, patterns: tuple[str, ...]) -> bool:
    return any(matches(name, p) for p in patterns)


def load(root: Path) -> dict[str, Module]:
    """Every module of the package under root, probes excepted, by dotted name."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[1] in SKIP or "__pycache__" in parts:
            continue
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        rel_path = path.relative_to(root).as_posix()
        found[name] = analyse(name, rel_path, is_package, path.read_text(encoding="utf-8"))
    return found


@functools.cache  # the tests check copies of one tree
def analyse(name: str, path: str, is_package: bool, source: str) -> Module:
    nodes = tuple(ast.walk(ast.parse(source, filename=path)))
    bindings = tuple(bind(nodes, name if is_package else name.rpartition(".")[0]))
    stands_for = {b.local: b.stands_for for b in bindings}
    return Module(name, path, bindings, tuple(qualify(nodes, stands_for)), tuple(file_calls(nodes)))


def bind(nodes: tuple[ast.AST, ...], package: str) -> Iterator[Binding]:
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.partition(".")[0]
                yield Binding(
                    Ref(node.lineno, a.name), a.asname or top, a.name if a.asname else top
                )
        elif isinstance(node, ast.ImportFrom):
            base = import_base(package, node)
            for a in node.names:
                name = base if a.name == "*" else f"{base}.{a.name}"
                yield Binding(Ref(node.lineno, name), a.asname or a.name, name)


def import_base(package: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names, relative imports resolved against package."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    parts = parts[: len(parts) - node.level + 1]
    return ".".join([*parts, node.module] if node.module else parts)


def dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def qualify(nodes: tuple[ast.AST, ...], stands_for: dict[str, str]) -> Iterator[Ref]:
    """`o.environ` with `import os as o` -> os.environ (one scope for the whole module)."""
    for node in nodes:
        if isinstance(node, ast.Name | ast.Attribute):
            parts = dotted(node)
            if parts and parts[0] in stands_for:
                yield Ref(node.lineno, ".".join([stands_for[parts[0]], *parts[1:]]))


def file_calls(nodes: tuple[ast.AST, ...]) -> Iterator[Ref]:
    """`.write_text(...)` and friends on any object, and `open(...)` in a writing mode."""
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if isinstance(func, ast.Attribute) and attr in FILE_METHODS:
            yield Ref(node.lineno, f".{attr}()")
        elif attr == "open" and writes(node):
            yield Ref(node.lineno, "open() for writing")


def writes(call: ast.Call) -> bool:
    """A mode keyword we cannot read, or any mode-like string with w, a, x or +."""
    modes = [k.value for k in call.keywords if k.arg == "mode"] + list(call.args)
    for mode in modes:
        text = mode.value if isinstance(mode, ast.Constant) else None
        if isinstance(text, str) and MODE.fullmatch(text) and set(text) & set("wax+"):
            return True
    return any(k.arg == "mode" and not isinstance(k.value, ast.Constant) for k in call.keywords)


def layer_of(rel: str) -> int | None:
    """The layer of a name inside the package (the highest, should two globs match)."""
    hits = [n for glob, n in LAYERS.items() if fnmatch.fnmatchcase(rel, glob)]
    return max(hits) if hits else None


def family(rel: str) -> str | None:
    return next((f for f in FAMILIES if re.match(rf"{f}($|[._])", rel)), None)


def target(name: str, known: dict[str, Module]) -> str | None:
    """The harness module an import reaches: the longest known prefix of what it names."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return None


def rel_of(name: str) -> str:
    return name.removeprefix(PACKAGE + ".") if name != PACKAGE else ROOT_INIT


def edge_reason(src: str, dst: str) -> str | None:
    """Why src may not import dst (names inside the package): a reason, "" for the layers alone,
    or None where the edge is allowed."""
    for (a, b), why in FORBIDDEN_EDGES.items():
        if fnmatch.fnmatchcase(src, a) and fnmatch.fnmatchcase(dst, b):
            return why
    for b, importers in ONLY_IMPORTED_BY.items():
        if fnmatch.fnmatchcase(dst, b) and not any(fnmatch.fnmatchcase(src, a) for a in importers):
            return f"only {', '.join(importers)} may import {b}"
    if (src, dst) in ALLOWED_EDGES or (family(src) and family(src) == family(dst)):
        return None
    return None if below(dst, src) else ""


def below(dst: str, src: str) -> bool:
    low, high = layer_of(dst), layer_of(src)
    return low is not None and high is not None and low < high


def edge_violations(module: Module, known: dict[str, Module]) -> Iterator[Violation]:
    src = module.rel
    for ref in module.imported:
        dst_name = target(ref.name, known)
        if dst_name is None or dst_name == module.name:
            continue
        reason = edge_reason(src, rel_of(dst_name))
        if reason is None:
            continue
        layers = f"layer {layer_of(src)} -> {layer_of(rel_of(dst_name))}"
        text = f"imports {dst_name} ({layers})" + (f": {reason}" if reason else "")
        yield Violation(module.path, ref.line, text, f"{module.name} -> {dst_name}")


def process_violations(module: Module) -> Iterator[Violation]:
    if module.rel == "proc":
        return
    refs = module.imported + list(module.uses)
    for ref in refs:
        if matches_any(ref.name, PROCESS):
            text = f"starts processes via {ref.name} (only harness/proc.py may)"
            yield Violation(module.path, ref.line, text, f"{module.name}: {ref.name}")


def pure_violations(module: Module) -> Iterator[Violation]:
    if module.rel not in PURE:
        return
    effectful = [r for r in module.imported if matches_any(r.name, EFFECT_MODULES)]
    found = [(r, "imports an effectful library") for r in effectful]
    for ref in module.imported + list(module.uses):
        if matches_any(ref.name, ENV):
            found.append((ref, "reads the environment (take env: Mapping)"))
        elif matches_any(ref.name, FILE_FUNCS):
            found.append((ref, "changes files"))
    found += [(r, "changes files") for r in module.writes]
    for ref, what in found:
        text = f"pure module {what}: {ref.name}"
        yield Violation(module.path, ref.line, text, f"{module.name}: {ref.name}")


def unplaced(module: Module) -> Iterator[Violation]:
    if layer_of(module.rel) is None:
        text = f"{module.name} has no layer: add it to LAYERS in tests/layering.py"
        yield Violation(module.path, 1, text, f"{module.name}: no layer")


def check(root: Path = ROOT) -> list[Violation]:
    """Every violation in the tree under root, one per file and line, sorted."""
    known = load(root)
    found: dict[tuple[str, int], Violation] = {}
    for module in known.values():
        for v in [
            *unplaced(module),
            *edge_violations(module, known),
            *process_violations(module),
            *pure_violations(module),
        ]:
            found.setdefault((v.path, v.line), v)
    return sorted(found.values())
