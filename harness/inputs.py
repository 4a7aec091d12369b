"""The bounded input layer: every file the harness reads from a user comes through here.

Only regular files are read (a FIFO blocks forever, /dev/zero never ends, a folder is not
text), each with a size cap; text must be UTF-8 without control characters; JSON is parsed
with its nesting bounded and lone surrogates refused. Every refusal is a ConfigError that names
the file (and the line and column where there is one) and says how to fix it: exit 2.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.model import Where

try:  # a JSON parser in C, four times json's speed on journal lines (the `report` extra)
    import orjson
except ImportError:  # pragma: no cover - the stdlib's parser decides alone
    orjson = None  # type: ignore[assignment]

KIB, MIB = 1 << 10, 1 << 20
YAML_LIMIT = 1 * MIB  # matrix, scenario and catalog files (the largest shipped: 30 KiB)
LOCK_LIMIT = 8 * MIB
PLAN_LIMIT = 256 * MIB  # plan.json of a 100,000-cell matrix is about 60 MiB
LINE_LIMIT = 1 * MIB  # one journal record
JSON_DEPTH = 64  # deeper JSON is not ours (and json.loads recurses: RecursionError near 1000)

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}
# C0 controls but tab, newline and carriage return; DEL; C1 controls. YAML forbids them too.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)
_SURROGATE = re.compile("[\ud800-\udfff]")


def kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def open_regular(path: Path, display: str, help: str) -> int:
    """A read-only descriptor of a regular file; a FIFO is opened without blocking, then refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigError(f"no such file: {display}", help=help) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {display}: {exc.strerror}", help=help) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ConfigError(
            f"{display} is {kind(mode)}, not a regular file", where=Where(display), help=help
        )
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path, *, limit: int, display: str | None = None, help: str) -> bytes:
    """All of a regular file of at most `limit` bytes."""
    name = display or str(path)
    fd = open_regular(path, name, help)
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {name}: {exc.strerror}", help=help) from None
    if len(data) > limit:
        raise ConfigError(
            f"{name} is larger than {limit // KIB} KiB",
            where=Where(name),
            help=f"this file is read whole; keep it under {limit // KIB} KiB ({help})",
        )
    return data


def position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of a character index."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def decode(raw: bytes, display: str) -> str:
    """UTF-8 text (a leading BOM dropped) with no control characters, or a ConfigError there."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        good = raw[: exc.start].decode("utf-8-sig", errors="replace")
        line, col = position(good, len(good))
        raise ConfigError(
            f"not UTF-8 text (byte {exc.start})",
            where=Where(display, line, col),
            help="save the file as UTF-8",
        ) from None
    bad = _CONTROL.search(text) or _SURROGATE.search(text)
    if bad is not None:
        line, col = position(text, bad.start())
        raise ConfigError(
            f"control character U+{ord(bad.group()):04X} in the text",
            where=Where(display, line, col),
            help="remove it (only tab, newline and carriage return may appear in text files)",
        )
    return text


def depth(value: Any, limit: int = JSON_DEPTH) -> bool:
    """Whether a parsed JSON value nests at most `limit` deep (level by level: no recursion)."""
    level, d = [value], 1
    while level:
        boxes = [v for v in level if isinstance(v, dict | list)]
        if boxes and d > limit:
            return False
        level = [x for b in boxes for x in (b.values() if isinstance(b, dict) else b)]
        d += 1
    return True


def loads(text: str, *, surrogates: str = "refuse") -> Any:
    """JSON, or ValueError: nesting past JSON_DEPTH, NaN or Infinity, a lone surrogate (which no
    UTF-8 writer can write back; with surrogates="replace" it becomes U+FFFD instead)."""
    try:
        value = _decode(text)
    except RecursionError:
        raise ValueError(f"nested more than {JSON_DEPTH} deep") from None
    # A value holds no more arrays and objects than its text has brackets: a journal record
    # (a few) needs no walk.
    if text.count("{") + text.count("[") > JSON_DEPTH and not depth(value):
        raise ValueError(f"nested more than {JSON_DEPTH} deep")
    if _SURROGATE_ESCAPE.search(text) and _has_surrogate(value):
        if surrogates != "replace":
            raise ValueError("a lone surrogate (\\ud800-\\udfff) in a string")
        value = json.loads(_SURROGATE_PAIRS.sub(_replace, text))
    return value


def loads_utf8(raw: bytes, *, surrogates: str = "refuse") -> Any:
    """loads(raw.decode("utf-8")): the same value or the same error. orjson parses what it
    can; what it refuses (NaN, a lone surrogate, bad UTF-8, nesting past its limit, anything
    not JSON), an integer too wide for it (19 digits or more: it would give a float), and
    anything nested past JSON_DEPTH go the standard library's way, which says why."""
    if orjson is not None and _WIDE not in raw.translate(_DIGITS):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if raw.count(b"{") + raw.count(b"[") <= JSON_DEPTH or depth(value):
                return value
    return loads(raw.decode("utf-8"), surrogates=surrogates)


# A run of 19 digits, found as 19 zeros once every digit is a zero and every other byte a space
# (ten times as fast as re's [0-9]{19} on a journal line).
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_WIDE = b"0" * 19


# A \\uXXXX escape of a surrogate not part of a pair (a high one followed by a low one).
_SURROGATE_PAIRS = re.compile(
    r"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[dD][89a-fA-F][0-9a-fA-F]{2})",
    re.ASCII,
)


def _replace(m: re.Match[str]) -> str:
    escape = m.group(2)
    return m.group(1) + (escape if len(escape) == 12 else "\\ufffd")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _decode(text: str) -> Any:
    """json.loads with NaN and Infinity refused; one decoder for every call (json.loads builds
    one per call when given an argument), and json.loads itself for its BOM error."""
    if text.startswith("\ufeff"):
        return json.loads(text, parse_constant=_no_constant)
    return _DECODER.decode(text)


def _has_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_json(path: Path, *, limit: int, display: str | None = None, help: str) -> Any:
    """A JSON file, bounded: a regular file under `limit`, UTF-8, nesting bounded."""
    name = display or str(path)
    raw = read_regular(path, limit=limit, display=name, help=help)
    try:
        return loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 (byte {exc.start})", where=Where(name), help=help) from None
    except ValueError as exc:
        raise ConfigError(f"not JSON: {exc}", where=Where(name), help=help) from None
