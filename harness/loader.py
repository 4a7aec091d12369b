"""Read YAML and keep where every key and value came from (file, line, column).

PyYAML's composer gives nodes with marks; we build plain values from them and keep a map from a
path (tuple of keys and indexes) to its place, so every later error can point at the exact spot.
Duplicate keys, which PyYAML silently overwrites, are an error here.

Bounded: the file comes through harness.inputs (a regular file under a size cap, UTF-8 without
control characters); composing stops past MAX_DEPTH nested collections or MAX_NODES nodes, and
building stops past MAX_EXPANDED values, so an alias bomb ("billion laughs") is refused after a
bounded amount of work wherever it sits, before any schema check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness import inputs
from harness.errors import ConfigError
from harness.model import Where

Path_ = tuple[str | int, ...]
MAX_DEPTH = 64  # nested collections; the shipped files nest 6 deep
MAX_NODES = 200_000  # nodes composed (what is written)
MAX_EXPANDED = 200_000  # values built (what aliases expand to)
_BUDGET_HELP = "the harness reads hand-written configuration; write the values out plainly"


class _Loader(yaml.SafeLoader):
    """PyYAML's SafeLoader with its (recursive) composer bounded in depth and node count."""

    def __init__(self, text: str, file: str):
        super().__init__(text)
        self.file, self.depth, self.nodes = file, 0, 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConfigError(
                f"more than {MAX_NODES} YAML nodes", where=self._here(), help=_BUDGET_HELP
            )
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ConfigError(
                    f"YAML nested more than {MAX_DEPTH} deep", where=self._here(), help=_BUDGET_HELP
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def _here(self) -> Where:
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        return Where(self.file, mark.line + 1, mark.column + 1)


@dataclass(frozen=True, slots=True)
class Doc:
    """A parsed YAML document: the data and the places of its parts."""

    file: str
    data: Any
    values: Mapping[Path_, Where] = field(default_factory=dict)
    keys: Mapping[Path_, Where] = field(default_factory=dict)
    raw: Mapping[Path_, str] = field(default_factory=dict)  # scalars as written ("3.10")

    def where(self, path: Path_, *, key: bool = False) -> Where:
        """The place of `path` (its key when `key`), else of its nearest known parent."""
        p = tuple(path)
        while True:
            if key and p in self.keys:
                return self.keys[p]
            if p in self.values:
                return self.values[p]
            if not p:
                return Where(self.file, 1, 1)
            p = p[:-1]
            key = False


def _where(file: str, node: yaml.Node) -> Where:
    mark = node.start_mark
    return Where(file, mark.line + 1, mark.column + 1)


class _Builder:
    """Turns composed nodes into plain values, recording where each came from."""

    def __init__(self, loader: yaml.SafeLoader, file: str):
        self.loader, self.file = loader, file
        self.values: dict[Path_, Where] = {}
        self.keys: dict[Path_, Where] = {}
        self.raw: dict[Path_, str] = {}
        self.built = 0

    def build(self, node: yaml.Node, path: Path_) -> Any:
        self.built += 1
        if self.built > MAX_EXPANDED:  # aliases reuse nodes: the composer cannot see this
            raise ConfigError(
                f"the YAML expands to more than {MAX_EXPANDED} values (aliases to aliases?)",
                where=_where(self.file, node),
                help=_BUDGET_HELP,
            )
        self.values[path] = _where(self.file, node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        self.raw[path] = str(node.value)
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            where = _where(self.file, key_node)
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConfigError(
                    "YAML merge keys ('<<') are not supported",
                    where=where,
                    help="write the keys out, or use an anchor for a whole value",
                )
            key = self.loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                raise ConfigError("a key must be a plain scalar", where=where)
            skey = key if isinstance(key, str) else str(key)
            key_path = (*path, skey)
            if skey in out:
                raise ConfigError(
                    f"duplicate key '{skey}' (first at line {self.keys[key_path].line})",
                    where=where,
                    help="YAML keeps only the last of repeated keys; remove or merge one of them",
                )
            self.keys[key_path] = where
            out[skey] = self.build(value_node, key_path)
        return out


# libyaml's parser (PyYAML's C extension), where PyYAML was built with it: the same values and
# places, ten to twenty times faster than the pure-Python reader and scanner.
_FAST: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)


def _fast(text: str, file: str) -> Doc | None:
    """The document as libyaml parses it, or None where the pure-Python parser must decide
    (any YAML error, an empty file, past MAX_DEPTH or MAX_NODES: its message names the place;
    a text with tabs, which libyaml takes in places PyYAML refuses).
    libyaml composes recursively in C, so the depth is bounded on its event stream first (the
    parser keeps a stack of its own, never the C stack's)."""
    assert _FAST is not None
    depth = nodes = 0
    try:
        for event in yaml.parse(text, Loader=_FAST):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return None
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                continue
            elif not isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                continue
            elif depth >= MAX_DEPTH:  # the composer counts a scalar as one level more
                return None
            nodes += 1
            if nodes > MAX_NODES:
                return None
        loader = _FAST(text)
    except (yaml.YAMLError, ValueError):  # ValueError: text libyaml cannot take as UTF-8
        return None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        builder = _Builder(loader, file)
        data = builder.build(node, ())
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return Doc(file=file, data=data, values=builder.values, keys=builder.keys, raw=builder.raw)


def parse_yaml(text: str, file: str) -> Doc:
    """Parse one YAML document from text; syntax errors become ConfigError with their place."""
    try:
        loader = _Loader(text, file)  # the reader checks the characters here already
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from None
    if _FAST is not None and "\t" not in text:  # libyaml allows tabs where PyYAML does not
        doc = _fast(text, file)
        if doc is not None:
            loader.dispose()
            return doc
    try:
        node = loader.get_single_node()
        if node is None:
            raise ConfigError(
                "the file is empty", where=Where(file, 1, 1), help="see matrix.yaml for an example"
            )
        builder = _Builder(loader, file)
        data = builder.build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Where(file, mark.line + 1, mark.column + 1) if mark else Where(file, 1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            f"invalid YAML: {problem}",
            where=where,
            help="check indentation, colons and quotes near this place",
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        raise _reader_error(exc, text, file) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", where=Where(file, 1, 1)) from None
    except RecursionError:  # a guard behind MAX_DEPTH, should PyYAML recurse elsewhere
        raise ConfigError(
            "YAML nested too deep", where=Where(file, 1, 1), help=_BUDGET_HELP
        ) from None
    finally:
        loader.dispose()
    return Doc(file=file, data=data, values=builder.values, keys=builder.keys, raw=builder.raw)


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str) -> ConfigError:
    line, col = inputs.position(text, exc.position)
    char = exc.character
    return ConfigError(
        f"invalid YAML: character U+{char:04X} is not allowed"
        if isinstance(char, int)
        else f"invalid YAML: {exc.reason}",
        where=Where(file, line, col),
        help="remove it; YAML text is printable UTF-8",
    )


def read_yaml(path: Path, *, display: str | None = None) -> Doc:
    """Read a YAML file (I/O only; parsing is `parse_yaml`)."""
    name = display or str(path)
    help = "pass an existing file with --matrix PATH"
    raw = inputs.read_regular(path, limit=inputs.YAML_LIMIT, display=name, help=help)
    return parse_yaml(inputs.decode(raw, name), name)
