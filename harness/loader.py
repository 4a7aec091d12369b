"""Read YAML and keep where every key and value came from (file, line, column).

PyYAML's composer gives nodes with marks; we build plain values from them and keep a map from a
path (tuple of keys and indexes) to its place, so every later error can point at the exact spot.
Duplicate keys, which PyYAML silently overwrites, are an error here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import ConfigError
from harness.model import Where

Path_ = tuple[str | int, ...]


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

    def build(self, node: yaml.Node, path: Path_) -> Any:
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


def parse_yaml(text: str, file: str) -> Doc:
    """Parse one YAML document from text; syntax errors become ConfigError with their place."""
    loader = yaml.SafeLoader(text)
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
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", where=Where(file, 1, 1)) from None
    finally:
        loader.dispose()
    return Doc(file=file, data=data, values=builder.values, keys=builder.keys, raw=builder.raw)


def read_yaml(path: Path, *, display: str | None = None) -> Doc:
    """Read a YAML file (I/O only; parsing is `parse_yaml`)."""
    name = display or str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"no such file: {name}", where=None, help="pass an existing file with --matrix PATH"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {name}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text (byte {exc.start})",
            where=Where(name, 1, 1),
            help="save the file as UTF-8",
        ) from None
    return parse_yaml(text, name)
